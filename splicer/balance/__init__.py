"""Server selection algorithms (haproxy `balance`): pure decisions, no I/O, no clock."""
from __future__ import annotations

import random as _random

from splicer.balance.base import Balancer  # noqa: F401
from splicer.balance.chash import ConsistentHash
from splicer.balance.first import First
from splicer.balance.key import HASHED, key_function  # noqa: F401
from splicer.balance.lbmap import StaticRR
from splicer.balance.leastconn import LeastConn
from splicer.balance.maphash import MapHash
from splicer.balance.rnd import Random
from splicer.balance.roundrobin import RoundRobin

ALGORITHMS = {"roundrobin": RoundRobin, "leastconn": LeastConn, "static-rr": StaticRR,
              "first": First, "random": Random}
"""`balance` keyword value -> Balancer class, for the algorithms that need no key; the
hash algorithms (key.HASHED) use MapHash or ConsistentHash as `hash-type` says."""


def make_balancer(model, rng: _random.Random | None = None) -> Balancer:
    """The Balancer of a backend model (config.model.Backend).

    Args:
        model: the backend: `balance`, `hash-type`, `hash-balance-factor`,
            `option allbackups` and its servers' weight, maxconn, backup, slowstart.
        rng: random source of `balance random` (None: unseeded).

    Returns:
        A new Balancer; every server starts up (the caller marks disabled ones down).
    """
    servers = model.servers
    kwargs = dict(weights=[s.weight for s in servers], maxconns=[s.maxconn for s in servers],
                  backups=[s.backup for s in servers], allbackups=model.allbackups,
                  slowstarts=[s.slowstart for s in servers])
    algo = model.balance
    if algo in HASHED:
        if model.hash_type.method == "consistent":
            return ConsistentHash(balance_factor=model.hash_balance_factor, **kwargs)
        return MapHash(**kwargs)
    if algo == "random":
        return Random(balance_factor=model.hash_balance_factor, draws=model.balance_args.draws,
                      rng=rng, **kwargs)
    return ALGORITHMS[algo](**kwargs)
