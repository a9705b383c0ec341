"""runtime/express.py lane_of(): which frontends get an express lane, from their config
alone (a Proxy is built, not served: no socket is opened)."""
from __future__ import annotations

import asyncio

import pytest

from splicer.config.loader import loads
from splicer.runtime.proxy import Proxy

BASE = """
global
    nbthread 1
defaults
    mode http
    option forwardfor
    timeout client 5s
    timeout server 5s
    timeout connect 2s
frontend www
    bind 127.0.0.1:19999
{fe}
    default_backend farm
backend farm
{be}
    server a 127.0.0.1:19998 {srv}
    server b 127.0.0.1:19997 {srv}
"""


def lane(fe: str = "", be: str = "    balance roundrobin", srv: str = "", cfg=None):
    cfg = cfg or loads(BASE.format(fe=fe, be=be, srv=srv))
    loop = asyncio.new_event_loop()
    p = Proxy(cfg, loop, {f.name: [] for f in cfg.frontends})
    try:
        return p.frontends[0].lane
    finally:
        p.engine.close()
        loop.close()


def test_a_plain_frontend_gets_a_lane_with_x_forwarded_for():
    got = lane()
    assert got is not None and got.index == 0 and got.maxhdr == 101
    from splicer.engine.binding import RELAY_EXPRESS, RELAY_XFF
    assert got.flags == RELAY_EXPRESS | RELAY_XFF


@pytest.mark.parametrize("fe, be, srv", [
    ("    http-request set-header X-A %[path]", "    balance roundrobin", ""),  # a header rule the
    ("    http-request replace-header X-A a b", "    balance roundrobin", ""),  # engine does not make
    ("    http-request set-header X-A 1\n    http-request set-header X-B %[req.hdr(x-a)]",
     "    balance roundrobin", ""),  # (it reads the fields as received: not one a rule before set)
    ("    log stdout format raw local0", "    balance roundrobin", ""),      # an access log
    ("    log stdout format raw local0\n    option httplog\n    capture request header Host len 20",
     "    balance roundrobin", ""),                                    # httplog with a capture
    ("    log stdout format raw local0\n    log-format \"%ci %r\"", "    balance roundrobin", ""),
    ("    http-request deny if { path /x }", "    balance roundrobin", ""),  # a rule that decides
    ("", "    balance leastconn", ""),                                     # counts connections in use
    ("", "    balance source", ""),                                        # a key
    ("", "    balance uri", ""),
    ("", "    balance roundrobin\n    cookie SRV insert", "cookie x"),    # persistence
    ("", "    balance roundrobin", "maxconn 10"),                          # a slot per request
    ("", "    balance roundrobin\n    http-reuse never", ""),
    ("", "    balance roundrobin\n    option forwarded", ""),
    ("", "    balance roundrobin\n    option abortonclose", ""),
    ("", "    balance roundrobin\n    http-response set-header X-B 1", ""),
])
def test_what_keeps_a_frontend_off_the_lane(fe, be, srv):
    assert lane(fe, be, srv) is None


def test_plain_header_rules_are_the_engines_to_make():
    """set-header, add-header and del-header without condition, with literal, `src` and
    `req.hdr()` values (conf/site.cfg's): the engine makes them on the lane's requests."""
    got = lane("    http-request set-header X-Forwarded-Proto http\n"
               "    http-request set-header X-Forwarded-Host %[req.hdr(host)]\n"
               "    http-request add-header Via \"1.1 splicer\"\n"
               "    http-request add-header X-Real-IP %ci\n"
               "    http-request del-header X-Debug")
    assert got is not None


def test_the_default_config_has_a_lane():
    """conf/site.cfg, the README's first command: its rules are the engine's to make."""
    from pathlib import Path
    text = (Path(__file__).resolve().parents[3] / "conf" / "site.cfg").read_text()
    assert lane(cfg=loads(text, "site.cfg")) is not None


def test_the_other_reuse_modes_have_one_static_rr_none():
    assert lane(be="    balance roundrobin\n    http-reuse always") is not None
    assert lane(be="    balance roundrobin\n    http-reuse aggressive") is not None
    assert lane(be="    balance static-rr") is None  # (its turn cannot be taken back)


def test_splicer_express_off_turns_it_off(monkeypatch):
    monkeypatch.setenv("SPLICER_EXPRESS", "off")
    assert lane() is None


def test_a_first_request_takes_what_http_reuse_allows_a_first_request():
    """safe: a new connection (None: no idle one may serve it); aggressive: an idle one that
    served at least 2 requests; always: any idle one (pool.reuse_floor)."""
    assert lane()._first_floor is None
    assert lane(be="    balance roundrobin\n    http-reuse aggressive")._first_floor == 2
    assert lane(be="    balance roundrobin\n    http-reuse always")._first_floor == 0


def test_no_socket_for_a_new_connection_takes_the_pick_back(monkeypatch):
    """Backend.credit_connect() when no socket can be made (EMFILE): None, the balancer's
    turn as before and no slot taken (the request goes the stream's way)."""
    import errno

    from splicer.runtime import io

    def no_socket(host, port):
        raise OSError(errno.EMFILE, "Too many open files")

    cfg = loads(BASE.format(fe="", be="    balance roundrobin", srv=""))
    loop = asyncio.new_event_loop()
    p = Proxy(cfg, loop, {f.name: [] for f in cfg.frontends})
    try:
        be = p.backends["farm"]
        before = be.balancer.turn_state()
        monkeypatch.setattr(io, "start_connect", no_socket)
        assert be.credit_connect() is None
        assert be.balancer.turn_state() == before and list(be.balancer.active) == [0, 0]
        assert all(not s.credits for s in be.servers)
    finally:
        p.engine.close()
        loop.close()


def test_an_httplog_frontend_gets_a_lane_whose_requests_bring_their_heads():
    """`option httplog` without a capture: a lane whose credits' X_DONE carry the request
    head (RELAY_XLOG), and no first request of a connection on it (no relay terms to arm
    its first head: the stream path times its accept and connect)."""
    from splicer.engine.binding import RELAY_EXPRESS, RELAY_XFF, RELAY_XLOG
    got = lane("    log stdout format raw local0\n    option httplog")
    assert got is not None and got.flags == RELAY_EXPRESS | RELAY_XFF | RELAY_XLOG
    assert got.logger is not None and got._terms is None
    plain = lane()
    assert plain.logger is None and plain._terms is not None
