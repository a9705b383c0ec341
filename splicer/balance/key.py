"""The hashing key of a request: one pure function per hash algorithm, chosen once per backend.

Rule: a request's key is computed from what its head says (target, header fields) and who
sent it (the client address), by the algorithm's own module (source.py, uri.py,
url_param.py, hdr.py) with the backend's `hash-type` function and modifier; None means
"no key" and the balancer falls back to round-robin, as haproxy does. Nothing here reads
a socket or the clock.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence

from splicer.balance.hdr import hdr_key
from splicer.balance.source import source_key
from splicer.balance.uri import uri_key
from splicer.balance.url_param import url_param_key

KeyFunction = Callable[[bytes, Sequence[tuple[bytes, bytes]], str], "int | None"]
"""(request target, header fields, client IP text) -> 32-bit key or None."""

HASHED = frozenset({"source", "uri", "url_param", "hdr"})
"""`balance` algorithms that hash a request key (the others need none)."""


def key_function(balance, hash_type) -> KeyFunction | None:
    """The key function of a backend's `balance` and `hash-type`, or None when the
    algorithm does not hash (roundrobin, static-rr, leastconn, first, random).

    Args:
        balance: a config.model.Balance (algorithm and its arguments).
        hash_type: a config.model.HashType (method, function, avalanche).

    Returns:
        A function (target, headers, client_ip) -> int | None.
    """
    algo = balance.algorithm
    fn, aval = hash_type.function, hash_type.avalanche
    if algo == "source":
        return lambda target, headers, ip: source_key(ip, aval)
    if algo == "uri":
        length, depth, whole, path_only = (balance.uri_len, balance.uri_depth, balance.uri_whole,
                                           balance.uri_path_only)
        return lambda target, headers, ip: uri_key(target, length, depth, whole, path_only, fn, aval)
    if algo == "url_param":
        name = balance.param.encode("latin-1")
        return lambda target, headers, ip: url_param_key(target, name, fn, aval)
    if algo == "hdr":
        name = balance.param.encode("latin-1")
        domain = balance.use_domain_only
        return lambda target, headers, ip: hdr_key(headers, name, domain, fn, aval)
    return None
