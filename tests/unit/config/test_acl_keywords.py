"""acl, use_backend and conditional http-request / http-response rules through the loader:
the model they give, and the exact "file:line: msg" of every refusal."""
import pytest

from splicer.config import loads
from splicer.config.model import SwitchingRule
from splicer.errors import ConfigErrors
from splicer.http.actions import LocalRule
from splicer.http.rules import HeaderRule
from splicer.http.sample import RequestView

HEAD = """\
defaults
    mode http
frontend www
    bind 127.0.0.1:8080
"""
BACKENDS = """\
backend app
    server s1 127.0.0.1:81
backend static
    server s1 127.0.0.1:82
"""


def load(frontend: str, backends: str = BACKENDS):
    return loads(HEAD + frontend + backends, "site.cfg")


def errors(frontend: str, backends: str = BACKENDS) -> list[str]:
    with pytest.raises(ConfigErrors) as exc:
        load(frontend, backends)
    return [str(e) for e in exc.value.errors]


def view(path=b"/", host=b"www.example", method=b"GET"):
    return RequestView(method, path, path, b"1.1", [(b"Host", host)], "127.0.0.1", 5000, "127.0.0.1", 8080)


def test_use_backend_rules_are_bound_to_the_sections_acls_in_order():
    cfg = load("""\
    acl st path_beg /static
    acl st hdr(host) -i static.example
    use_backend static if st
    use_backend app
""")
    fe = cfg.frontends[0]
    assert fe.default_backend is None
    assert [(r.backend, r.line) for r in fe.use_backend] == [("static", 7), ("app", 8)]
    assert isinstance(fe.use_backend[0], SwitchingRule) and fe.use_backend[1].cond is None
    cond = fe.use_backend[0].cond
    assert [cond(view(b"/static/x")), cond(view(host=b"STATIC.example")), cond(view())] == [True, True, False]


def test_acl_lines_after_the_rule_still_join_the_acl():
    # haproxy: a later line with the same name extends the ACL the rule already uses
    cfg = load("""\
    acl st path_beg /static
    use_backend static if st
    acl st path_beg /img
    default_backend app
""")
    cond = cfg.frontends[0].use_backend[0].cond
    assert cond(view(b"/img/a")) is True


def test_conditional_rules_of_each_kind():
    cfg = load("""\
    acl api path_beg /api
    http-request set-header X-Api 1 if api
    http-request deny deny_status 429 unless api || METH_GET
    http-response del-header Server if { status 404 }
    default_backend app
""")
    fe = cfg.frontends[0]
    set_hdr, deny = fe.http_request
    assert isinstance(set_hdr, HeaderRule) and set_hdr.cond(view(b"/api/x")) is True
    assert isinstance(deny, LocalRule) and (deny.action, deny.status) == ("deny", 429)
    assert deny.cond(view(method=b"POST")) is True and deny.cond(view(b"/api", method=b"POST")) is False
    assert fe.http_response[0].cond.text == "if { status 404 }"


def test_backend_acls_are_the_backends_own():
    cfg = load("    default_backend app\n", """\
backend app
    acl secret path_beg /secret
    http-request deny if secret
    server s1 127.0.0.1:81
""")
    assert cfg.backends["app"].http_request[0].cond(view(b"/secret")) is True


@pytest.mark.parametrize("frontend, messages", [
    ("    use_backend static if nope\n    default_backend app\n",
     ["site.cfg:5: frontend 'www': unknown ACL 'nope' in a 'use_backend' condition"]),
    ("    use_backend static if is_st\n    acl is_st path /\n    default_backend app\n",
     ["site.cfg:5: frontend 'www': ACL 'is_st' is used in a 'use_backend' condition before it is declared (at line 6)"]),
    ("    acl is_api path_beg /api\n    http-request deny if is_apy\n    default_backend app\n",
     ["site.cfg:6: frontend 'www': unknown ACL 'is_apy' in a 'http-request' condition; did you mean 'is_api'?"]),
    ("    http-response del-header Server if METH_GTE\n    default_backend app\n",
     ["site.cfg:5: frontend 'www': unknown ACL 'METH_GTE' in a 'http-response' condition; did you mean 'METH_GET'?"]),
    ("    use_backend nowhere\n",
     ["site.cfg:5: frontend 'www': use_backend 'nowhere' not found"]),
    ("    use_backend statik if TRUE\n    default_backend app\n",
     ["site.cfg:5: frontend 'www': use_backend 'statik' not found; did you mean 'static'?"]),
    ("    use_backend www\n    default_backend app\n",
     ["site.cfg:5: frontend 'www': use_backend 'www' is a frontend, not a backend"]),
    ("    use_backend be_%[req.hdr(host),lowr]\n",
     ["site.cfg:5: 'use_backend be_%[req.hdr(host),lowr]': unknown converter 'lowr' in 'req.hdr(host),lowr' "
      "(supported: lower, upper, map, map_str, map_beg, map_end, map_dom, "
     "map_reg, field, word, regsub)"]),
    ("    use_backend be_%[path\n",
     ["site.cfg:5: 'use_backend be_%[path': unclosed '%[' in 'be_%[path'"]),
    ("    use_backend be_%h\n",
     ["site.cfg:5: 'use_backend be_%h': a '%' must start a sample ('%[fetch]') in 'be_%h'"]),
    ("    use_backend\n",
     ["site.cfg:5: 'use_backend' expects a backend name: use_backend <backend> [if|unless <condition>]"]),
    ("    use_backend app when x\n",
     ["site.cfg:5: 'use_backend app': expected 'if' or 'unless', got 'when'"]),
    ("    use_backend app if\n",
     ["site.cfg:5: 'use_backend app': 'if' expects a condition (e.g. 'if host_www' or 'if { path_beg /api }')"]),
    ("    use_backend app if { path_beg /a\n",
     ["site.cfg:5: 'use_backend app': missing '}' in condition 'if { path_beg /a'"]),
    ("    acl x paht /a\n    default_backend app\n",
     ["site.cfg:5: acl 'x': unknown fetch method 'paht'; did you mean 'path'?"]),
    ("    acl x path -m begins /a\n    default_backend app\n",
     ["site.cfg:5: acl 'x': unknown matching method 'begins' (supported: found, bool, int, ip, bin, len, "
      "str, sub, reg, beg, end, dir, dom)"]),
    ("    acl x path_reg [a-\n    default_backend app\n",
     ["site.cfg:5: acl 'x': invalid regex '[a-': unterminated character set at position 0"]),
    ("    acl x path -f missing.lst\n    default_backend app\n",
     ["site.cfg:5: acl 'x': cannot read pattern file 'missing.lst': No such file or directory"]),
    ("    acl x src 300.1.1.1\n    acl y src_port big\n    default_backend app\n",
     ["site.cfg:5: acl 'x': '300.1.1.1' is not an IP address or network",
      "site.cfg:6: acl 'y': 'big' is not an integer or a range (e.g. 80, 1024:65535, :1023)"]),
    ("    acl x\n    default_backend app\n",
     ["site.cfg:5: 'acl' expects a name and a criterion: acl <name> <criterion> [flags] [values]"]),
    ("    http-request redirect location /x code 304\n    default_backend app\n",
     ["site.cfg:5: 'http-request redirect': invalid code '304' (supported: 301, 302, 303, 307, 308)"]),
    ("    http-request return status 200 string hi\n    default_backend app\n",
     ["site.cfg:5: 'http-request return': 'string' needs a 'content-type'"]),
    ("    http-request deny status 400\n    default_backend app\n",
     ["site.cfg:5: 'http-request deny': unknown option 'status' (use 'deny_status')"]),
    ("    http-request return file /nonexistent/x content-type text/plain\n    default_backend app\n",
     ["site.cfg:5: 'http-request return': cannot read '/nonexistent/x': No such file or directory"]),
    ("    http-request allow now\n    default_backend app\n",
     ["site.cfg:5: 'http-request allow' takes no argument, got 'now'"]),
    ("    http-response cache-store c\n    default_backend app\n",
     ["site.cfg:5: 'http-response cache-store' is not supported (supported: "
      "set-header, add-header, del-header, replace-header, replace-value, allow, deny, return, redirect, set-status, set-var, set-var-fmt, unset-var)"]),
    ("    http-response set-status 101\n    http-response redirect prefix /x\n    default_backend app\n",
     ["site.cfg:5: 'http-response set-status': invalid status code '101' (expected 200..999) "
      "(a 1xx is an interim response: a client would wait for another)",
      "site.cfg:6: 'http-response redirect prefix' is not allowed: a response may only be redirected "
      "with 'location <loc>' (haproxy)"]),
])
def test_errors_are_exact(frontend, messages):
    assert errors(frontend) == messages


def test_acl_is_refused_in_defaults_and_use_backend_in_a_backend():
    with pytest.raises(ConfigErrors) as exc:
        loads("defaults\n    acl x path /\n" + HEAD.replace("defaults\n", "", 1) + "    default_backend app\n"
              + BACKENDS.replace("    server s1 127.0.0.1:82\n", "    server s1 127.0.0.1:82\n    use_backend app\n"),
              "site.cfg")
    assert [str(e) for e in exc.value.errors] == [
        "site.cfg:2: 'acl' is not allowed in defaults section (allowed in: frontend, listen, backend)",
        "site.cfg:11: 'use_backend' is not allowed in backend 'static' (allowed in: frontend, listen)"]


def test_use_backend_needs_mode_http():
    with pytest.raises(ConfigErrors) as exc:
        loads("frontend f\n    mode tcp\n    bind 127.0.0.1:1\n    use_backend b\n    default_backend b\n"
              "backend b\n    mode tcp\n    server s 127.0.0.1:2\n", "site.cfg")
    assert [str(e) for e in exc.value.errors] == [
        "site.cfg:4: frontend 'f': 'use_backend' needs mode http (this frontend is in mode tcp)"]


def test_use_backend_mode_mismatch():
    assert errors("    use_backend t\n    default_backend app\n", BACKENDS + "backend t\n    mode tcp\n"
                  "    server s 127.0.0.1:3\n") == [
        "site.cfg:5: frontend 'www' is in mode http but its use_backend 't' is in mode tcp"]


def test_pattern_files_relative_to_the_configuration(tmp_path):
    (tmp_path / "hosts.lst").write_text("img.example\n")
    cfg_path = tmp_path / "site.cfg"
    cfg_path.write_text(HEAD + "    use_backend static if { hdr(host) -f hosts.lst }\n    default_backend app\n"
                        + BACKENDS)
    from splicer.config import load as load_file
    cfg = load_file(str(cfg_path))
    assert cfg.frontends[0].use_backend[0].cond(view(host=b"img.example")) is True


def test_dynamic_use_backend_names_are_not_checked_at_load():
    from splicer.http.sample import render_name

    cfg = load("    use_backend %[req.hdr(host),lower,upper]_x if TRUE\n    use_backend be_%[path]\n")
    first, second = cfg.frontends[0].use_backend
    assert first.backend == "%[req.hdr(host),lower,upper]_x"
    assert render_name(first.dynamic, view(host=b"a.b")) == b"A.B_x"
    assert render_name(second.dynamic, view(b"/p")) == b"be_/p"
