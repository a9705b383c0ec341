"""runtime/route.py: a frontend's settings merged once, with haproxy's precedences."""
from __future__ import annotations

import dataclasses

import pytest

from splicer.config import loads
from splicer.runtime.route import DEFAULT_SPLICE, Route, route_of
from splicer.runtime.transfer import SplicePolicy


def route(text: str) -> Route:
    cfg = loads(text)
    fe = cfg.frontends[0]
    return route_of(cfg.global_, fe, cfg.backends[fe.default_backend])


BASE = """\
defaults
    mode http
{defaults}
frontend f
    bind 127.0.0.1:1
    default_backend b
{frontend}
backend b
{backend}
    server s 127.0.0.1:2
"""


def r(defaults: str = "", frontend: str = "", backend: str = "") -> Route:
    return route(BASE.format(defaults=defaults, frontend=frontend, backend=backend))


def test_route_is_frozen():
    with pytest.raises(dataclasses.FrozenInstanceError):
        r().bufsize = 1
    with pytest.raises(TypeError):
        r().errorpages[503] = b"x"


def test_timeouts_fall_back_as_haproxy_documents():
    t = r("    timeout client 7s\n    timeout server 9s\n")
    assert (t.t_client, t.t_request, t.t_keepalive, t.t_server, t.t_tunnel) == (7.0, 7.0, 7.0, 9.0, 9.0)
    t = r("    timeout client 7s\n    timeout http-request 3s\n    timeout server 2s\n")
    assert (t.t_request, t.t_keepalive, t.t_tunnel) == (3.0, 3.0, 7.0)
    t = r("    timeout client 7s\n    timeout http-request 3s\n    timeout http-keep-alive 1s\n"
          "    timeout tunnel 1h\n")
    assert (t.t_request, t.t_keepalive, t.t_tunnel) == (3.0, 1.0, 3600.0)
    t = r()
    assert (t.t_client, t.t_request, t.t_keepalive, t.t_server, t.t_tunnel) == (None,) * 5


@pytest.mark.parametrize("fe, be, up, down", [
    ("", "", DEFAULT_SPLICE, DEFAULT_SPLICE),                        # none named: measured default
    ("    no option splice-auto\n", "", SplicePolicy.NEVER, SplicePolicy.NEVER),
    ("    option splice-request\n", "", SplicePolicy.ALWAYS, SplicePolicy.NEVER),
    ("", "    option splice-response\n", SplicePolicy.NEVER, SplicePolicy.ALWAYS),
    ("    option splice-auto\n", "    option splice-request\n", SplicePolicy.ALWAYS, SplicePolicy.AUTO),
])
def test_splice_policy_per_direction(fe, be, up, down):
    t = r(frontend=fe, backend=be)
    assert (t.splice_request, t.splice_response) == (up, down)


def test_flags_on_either_proxy():
    assert r(frontend="    option forwardfor\n").forwardfor
    assert r(backend="    option forwardfor\n").forwardfor
    assert not r().forwardfor
    assert r(backend="    option http-buffer-request\n").http_buffer_request
    assert r(frontend="    option http-buffer-request\n").http_buffer_request
    assert r(backend="    option abortonclose\n").abortonclose and not r().abortonclose


def test_rule_order_and_errorfile_precedence(tmp_path):
    fe_page, be_page = tmp_path / "fe.http", tmp_path / "be.http"
    fe_page.write_bytes(b"HTTP/1.1 503 fe\r\n\r\n")
    be_page.write_bytes(b"HTTP/1.1 503 be\r\n\r\n")
    t = r(frontend=f"    http-request set-header X-A fe\n    http-response set-header X-B fe\n"
                   f"    errorfile 503 {fe_page}\n    errorfile 502 {fe_page}\n",
          backend=f"    http-request set-header X-A be\n    http-response set-header X-B be\n"
                  f"    errorfile 503 {be_page}\n")
    assert [rule.value for rule in t.request_rules] == [(b"fe",), (b"be",)]    # frontend's first
    assert [rule.value for rule in t.response_rules] == [(b"be",), (b"fe",)]   # backend's first
    assert t.errorpages[503] == b"HTTP/1.1 503 be\r\n\r\n"             # the backend's wins
    assert t.errorpages[502] == b"HTTP/1.1 503 fe\r\n\r\n"
    assert t.rules and not r().rules


def test_limits_from_global():
    t = route("global\n    tune.bufsize 32768\n    tune.http.maxhdr 50\n" + BASE.format(
        defaults="", frontend="", backend=""))
    assert (t.bufsize, t.maxhdr, t.frontend, t.backend) == (32768, 50, "f", "b")
