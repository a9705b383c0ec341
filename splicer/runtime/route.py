"""A frontend's route: every setting its streams read, resolved once when the config loads.

Rule: what a session or a stream of a frontend needs to know (its backend, the splice policy
of each direction, forwardfor, header rules, error pages, limits and timeouts) is merged here
from the frontend, its backend and the global section, once, into a frozen Route; nothing is
merged per request, and nothing here does I/O. haproxy's precedences are kept: header rules
run frontend-then-backend on requests and backend-then-frontend on responses, a backend's
`errorfile` wins over the frontend's, and a splice direction is on when either proxy sets it
(haproxy#2510).
"""
from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Mapping

from splicer.config.model import Backend, Frontend, Global
from splicer.runtime.transfer import SplicePolicy

DEFAULT_SPLICE = SplicePolicy.AUTO
"""The splice policy of both directions when neither the frontend nor the backend names any
`option splice-*` (a haproxy config carried over usually names none): splice what pays,
copy the rest (SplicePolicy.AUTO's thresholds, measured by benchmarks/crossover.py and
chunk_crossover.py). haproxy copies by default; on this design splicing big bodies costs
less CPU than copying them (docs/benchmarks.md)."""


def splice_policy(request: bool, *flags) -> SplicePolicy:
    """Combine the `option splice-*` flags of a frontend and its backend for one direction.

    haproxy enables a direction when either proxy sets it (haproxy#2510).

    Args:
        request: True for client -> server (splice-request), False for server -> client.
        flags: the (splice_request, splice_response, splice_auto) triples of each proxy.
    """
    if any(f[0] if request else f[1] for f in flags):
        return SplicePolicy.ALWAYS
    if any(f[2] for f in flags):
        return SplicePolicy.AUTO
    return SplicePolicy.NEVER


@dataclass(frozen=True, slots=True)
class Route:
    """What the streams of one frontend read, resolved at load (see route_of()).

    Attributes:
        frontend, backend: the proxies' names.
        bufsize: largest head accepted, bytes (tune.bufsize).
        maxhdr: most header fields in a head (tune.http.maxhdr).
        forwardfor: add X-Forwarded-For (option forwardfor on either proxy).
        forwarded: the backend's `option forwarded` parameters (None: off).
        http_buffer_request: option http-buffer-request on either proxy.
        abortonclose: the backend's option abortonclose.
        errorpages: {status: raw response bytes} from `errorfile` (read-only).
        request_rules, response_rules: header rules in the order they run.
        splice_request, splice_response: the SplicePolicy of each direction.
        t_client, t_server: `timeout client` / `timeout server`, seconds (None: none).
        t_request: `timeout http-request` (default: timeout client).
        t_keepalive: `timeout http-keep-alive` (default: timeout http-request).
        t_tunnel: idle limit of a tunnel (101): `timeout tunnel`, else the larger of
            client and server.
    """

    frontend: str
    backend: str
    bufsize: int
    maxhdr: int
    forwardfor: bool
    forwarded: object
    http_buffer_request: bool
    abortonclose: bool
    errorpages: Mapping[int, bytes]
    request_rules: tuple
    response_rules: tuple
    splice_request: SplicePolicy
    splice_response: SplicePolicy
    t_client: float | None
    t_server: float | None
    t_request: float | None
    t_keepalive: float | None
    t_tunnel: float | None

    @property
    def rules(self) -> bool:
        """True when some header rule applies (a stream then gathers its rule samples)."""
        return bool(self.request_rules or self.response_rules)


def route_of(g: Global, fe: Frontend, be: Backend) -> Route:
    """Resolve the Route of frontend `fe` whose streams go to backend `be`.

    Args:
        g: the global section; fe, be: the resolved models (config/model.py).
    """
    flags = ((fe.splice_request, fe.splice_response, fe.splice_auto),
             (be.splice_request, be.splice_response, be.splice_auto))
    if fe.splice_named or be.splice_named:
        up, down = splice_policy(True, *flags), splice_policy(False, *flags)
    else:
        up = down = DEFAULT_SPLICE
    t_fe, t_be = fe.timeouts, be.timeouts
    t_request = t_fe.http_request if t_fe.http_request is not None else t_fe.client
    t_keepalive = t_fe.http_keep_alive if t_fe.http_keep_alive is not None else t_request
    tunnel = t_be.tunnel
    if tunnel is None:
        known = [t for t in (t_fe.client, t_be.server) if t is not None]
        tunnel = max(known) if known else None
    return Route(
        frontend=fe.name, backend=be.name, bufsize=g.bufsize, maxhdr=g.maxhdr,
        forwardfor=bool(fe.forwardfor or be.forwardfor), forwarded=be.forwarded,
        http_buffer_request=bool(fe.http_buffer_request or be.http_buffer_request),
        abortonclose=bool(be.abortonclose),
        errorpages=MappingProxyType(dict(fe.errorfiles) | dict(be.errorfiles)),
        request_rules=tuple(fe.http_request) + tuple(be.http_request),
        response_rules=tuple(be.http_response) + tuple(fe.http_response),
        splice_request=up, splice_response=down,
        t_client=t_fe.client, t_server=t_be.server, t_request=t_request, t_keepalive=t_keepalive,
        t_tunnel=tunnel)
