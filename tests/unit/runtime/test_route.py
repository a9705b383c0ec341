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


# -- Switching: per-request decisions resolved at load --------------------------------------

from splicer.http.sample import RequestView  # noqa: E402
from splicer.runtime.route import Decision, switching_of  # noqa: E402

SW = """\
defaults
    mode http
frontend f
    bind 127.0.0.1:1
{frontend}
backend a
{a}
    server s 127.0.0.1:2
backend b
    server s 127.0.0.1:3
"""


def switching(frontend: str, a: str = ""):
    cfg = loads(SW.format(frontend=frontend, a=a))
    return switching_of(cfg.frontends[0], cfg.backends), cfg


def rv(path: bytes = b"/", method: bytes = b"GET") -> RequestView:
    return RequestView(method, path, path, b"1.1", [(b"Host", b"h")], "127.0.0.1", 1, "127.0.0.1", 1)


def test_a_frontend_without_deciding_rules_has_no_switching():
    sw, _ = switching("    default_backend a\n    http-request set-header X 1\n",
                      "    http-response set-header Y 2\n")
    assert sw is None


@pytest.mark.parametrize("frontend, a", [
    ("    use_backend b\n    default_backend a\n", ""),
    ("    http-request deny if FALSE\n    default_backend a\n", ""),
    ("    http-request set-header X 1 if TRUE\n    default_backend a\n", ""),
    ("    default_backend a\n", "    http-request allow\n"),
    ("    default_backend a\n", "    http-response del-header X if TRUE\n"),
])
def test_deciding_rules_anywhere_on_the_path_make_a_switching(frontend, a):
    assert switching(frontend, a)[0] is not None


def test_choose_order_frontend_rules_use_backend_then_backend_rules():
    sw, _ = switching("""\
    http-request deny if { path_beg /deny }
    http-request allow if { path_beg /allowed }
    http-request set-header X 1
    use_backend b if { path_beg /b }
    default_backend a
""", "    http-request return status 200 if { path /a/ret }\n    http-request set-header Y 2\n")
    d = sw.choose(rv(b"/deny/x"))
    assert (d.rule.action, d.backend, d.cut_fe) == ("deny", None, 0)
    assert sw.choose(rv(b"/allowed/b")) == Decision(None, "a", 1, 2)  # allow stops the frontend's rules only
    assert sw.choose(rv(b"/b/x")) == Decision(None, "b", 3, 0)
    assert sw.choose(rv(b"/x")) == Decision(None, "a", 3, 2)
    d = sw.choose(rv(b"/a/ret"))
    assert (d.rule.action, d.backend, d.cut_fe, d.cut_be) == ("return", "a", 3, 0)


def test_no_default_backend_and_no_match_chooses_none():
    sw, _ = switching("    use_backend b if { path_beg /b }\n")
    assert sw.choose(rv(b"/x")) == Decision(None, None, 0, 0)


def test_local_rules_are_not_header_rules_of_the_route():
    cfg = loads(SW.format(frontend="    http-request deny if FALSE\n    http-request set-header X 1\n"
                                   "    default_backend a\n", a=""))
    fe = cfg.frontends[0]
    rt = route_of(cfg.global_, fe, cfg.backends["a"])
    assert [r.action for r in rt.request_rules] == ["set-header"]


def test_conf_farm_cfg_routes_by_host_and_path():
    """conf/farm.cfg, the example web farm: which rule answers or which backend serves."""
    import pathlib

    from splicer.config import load

    path = pathlib.Path(__file__).resolve().parents[3] / "conf" / "farm.cfg"
    cfg = load(str(path))
    sw = switching_of(cfg.frontends[0], cfg.backends)

    def pick(target=b"/", host=b"www.example.com", method=b"GET", src="192.0.2.1", api_up=2):
        v = RequestView(method, target, target, b"1.1", [(b"Host", host)], src, 1, "127.0.0.1", 8080,
                        nbsrv={"api": api_up}.get)
        d = sw.choose(v)
        return (d.rule.action, d.rule.status) if d.rule else d.backend

    assert [pick(), pick(b"/x.css"), pick(b"/x.css", method=b"POST"), pick(host=b"IMG.example.com"),
            pick(b"/api/v1"), pick(b"/api/v1", api_up=0), pick(b"/users", host=b"api.example.com"),
            pick(b"/users", host=b"api.example.com", method=b"PATCH"), pick(b"/healthz"), pick(b"/admin"),
            pick(b"/admin", src="127.0.0.1"), pick(host=b"example.com"), pick(host=b"api.example.com")] == [
        "app", "static", "app", "static", "api", "app", "api", ("deny", 405), ("return", 200), ("deny", 403),
        "app", ("redirect", 301), ("redirect", 308)]


def test_dynamic_use_backend_picks_any_backend_of_the_mode_else_the_default():
    cfg = loads(SW.format(frontend="    use_backend %[req.hdr(x-be),lower] if { req.hdr(x-be) -m found }\n"
                                   "    use_backend b\n    default_backend a\n", a="")
                + "backend t\n    mode tcp\n    server s 127.0.0.1:4\n")
    sw = switching_of(cfg.frontends[0], cfg.backends)
    assert sorted(sw.be_rules) == ["a", "b"]

    def pick(be):
        v = RequestView(b"GET", b"/", b"/", b"1.1", [(b"X-Be", be)], "127.0.0.1", 1, "127.0.0.1", 1)
        return sw.choose(v).backend
    # a name that is no http backend stops the rules: the default, not the next rule
    assert [pick(b"B"), pick(b"A"), pick(b"t"), pick(b"nope"), pick(b"")] == ["b", "a", "a", "a", "a"]
    v = RequestView(b"GET", b"/", b"/", b"1.1", [], "127.0.0.1", 1, "127.0.0.1", 1)
    assert sw.choose(v).backend == "b"


# -- in-order evaluation: each http-request rule sees what the ones before it did -----------

def test_a_set_header_is_seen_by_a_later_deny():
    sw, _ = switching("    http-request set-header X-A 1\n    http-request deny if { req.hdr(x-a) 1 }\n"
                      "    default_backend a\n")
    v = rv()
    d = sw.choose(v)
    assert (d.rule.action, d.backend) == ("deny", None)
    assert v.fields == [(b"Host", b"h"), (b"X-A", b"1")]


def test_a_deny_before_the_set_header_does_not_see_it():
    sw, _ = switching("    http-request deny if { req.hdr(x-a) 1 }\n    http-request set-header X-A 1\n"
                      "    default_backend a\n")
    assert sw.choose(rv()) == Decision(None, "a", 2, 0)


def test_set_path_then_use_backend_on_the_new_path_and_backend_rules_after():
    sw, _ = switching("    http-request set-path /b%[path] if { path_beg /old }\n"
                      "    use_backend b if { path_beg /b/ }\n    default_backend a\n",
                      "    http-request set-header X-In-A %[path]\n")
    v = rv(b"/old/x?q")
    assert sw.choose(v).backend == "b"
    assert (v.target, v.url) == (b"/b/old/x?q", b"/b/old/x?q")
    v = rv(b"/y")
    assert sw.choose(v).backend == "a"
    assert v.fields[-1] == (b"X-In-A", b"/y")


def test_allow_stops_the_header_rules_after_it():
    sw, _ = switching("    http-request allow if { path /ok }\n    http-request set-header X 1\n"
                      "    default_backend a\n")
    v = rv(b"/ok")
    assert sw.choose(v) == Decision(None, "a", 0, 0)
    assert v.fields == [(b"Host", b"h")]


def test_be_name_is_the_frontend_in_its_rules_and_the_backend_in_the_backends():
    sw, _ = switching("    http-request set-header X-Fe %f/%b if TRUE\n    default_backend a\n",
                      "    http-request set-header X-Be %f/%b\n")
    v = rv()
    sw.choose(v)
    assert v.fields[1:] == [(b"X-Fe", b"f/f"), (b"X-Be", b"f/a")]


def test_variables_decide_use_backend():
    sw, _ = switching("    http-request set-var(txn.be) req.hdr(host),lower\n"
                      "    use_backend %[var(txn.be)]\n    default_backend a\n")
    v = RequestView(b"GET", b"/", b"/", b"1.1", [(b"Host", b"B")], "127.0.0.1", 1, "127.0.0.1", 1,
                    vars=__import__("splicer.http.variables", fromlist=["Vars"]).Vars())
    assert sw.choose(v).backend == "b"


@pytest.mark.parametrize("rule", ["http-request set-path /x", "http-request set-var(txn.a) str(1)",
                                  "http-response set-var(res.a) str(1)", "http-request set-method GET"])
def test_rewrites_and_variables_make_a_switching(rule):
    assert switching(f"    {rule}\n    default_backend a\n")[0] is not None


def test_replace_header_alone_keeps_the_path_without_switching():
    sw, _ = switching("    http-request replace-header X-A a b\n    default_backend a\n",
                      "    http-response replace-value X-B a b\n")
    assert sw is None


def test_set_method_into_or_out_of_head_is_refused():
    # the client's response framing follows its own method: a HEAD made GET would get a
    # body it does not expect, a GET made HEAD would wait for one that never comes
    sw, _ = switching("    http-request set-method %[req.hdr(x-m)] if { req.hdr(x-m) -m found }\n"
                      "    default_backend a\n")
    def decide(method, new):
        v = RequestView(method, b"/", b"/", b"1.1", [(b"Host", b"h"), (b"X-M", new)], "127.0.0.1", 1, "127.0.0.1", 1)
        d = sw.choose(v)
        return (d.rule.status, d.backend) if d.rule else d.backend
    assert [decide(b"GET", b"POST"), decide(b"HEAD", b"HEAD"), decide(b"HEAD", b"GET"),
            decide(b"GET", b"HEAD")] == ["a", "a", (400, None), (400, None)]
    # an origin may read a method in any case: "head" is a HEAD for this check, "connect"
    # a CONNECT (both refused as rewrites)
    assert [decide(b"GET", b"head"), decide(b"HEAD", b"get"), decide(b"GET", b"connect"),
            decide(b"HEAD", b"head")] == [(400, None), (400, None), (400, None), "a"]


def test_option_forwardfor_arguments_merge_as_haproxy_does():
    """haproxy 2.6 http_process_request: the backend's name wins when it has the option;
    either proxy's except network counts; if-none holds when every option says it."""
    import ipaddress
    plain = r(frontend="    option forwardfor")
    assert (plain.forwardfor, plain.xff_header, plain.xff_except, plain.xff_if_none, plain.xff_plain) == (
        True, b"X-Forwarded-For", (), False, True)
    assert (r().forwardfor, r().xff_for("192.0.2.1")) == (False, None)
    both = r(frontend="    option forwardfor header X-A except 10.0.0.0/8 if-none",
             backend="    option forwardfor header X-B except 192.0.2.0/24")
    assert both.xff_header == b"X-B" and not both.xff_if_none and not both.xff_plain
    assert both.xff_except == (ipaddress.ip_network("10.0.0.0/8"), ipaddress.ip_network("192.0.2.0/24"))
    assert [both.xff_for(ip) for ip in ("10.1.2.3", "192.0.2.9", "198.51.100.1", None)] == [
        None, None, "198.51.100.1", None]
    assert r(frontend="    option forwardfor header X-A").xff_header == b"X-A"
    assert r(backend="    option forwardfor if-none").xff_if_none
    assert r(frontend="    option forwardfor if-none", backend="    option forwardfor if-none").xff_if_none
    assert not r(defaults="    option forwardfor", backend="    option forwardfor if-none").xff_if_none
