"""cookie, server cookie / pool-max-conn, use-server, force-persist, ignore-persist,
option persist and http-reuse: what the configuration model holds, and the exact errors."""
import textwrap

import pytest

from splicer.config import loads
from splicer.errors import ConfigErrors
from splicer.http.persist import CookiePolicy

HEAD = """\
defaults
    mode http
frontend www
    bind 127.0.0.1:9000
    default_backend farm
backend farm
"""


def backend(body: str):
    return loads(HEAD + textwrap.indent(textwrap.dedent(body), "    "), "site.cfg").backends["farm"]


def errors(body: str) -> list[str]:
    with pytest.raises(ConfigErrors) as exc:
        backend(body)
    return [str(e) for e in exc.value.errors]


def test_cookie_line_and_server_values():
    b = backend("""\
        cookie SRV insert indirect nocache httponly secure postonly domain .a.com domain .b.com
        server s1 127.0.0.1:8001 cookie one
        server s2 127.0.0.1:8002
    """)
    assert b.cookie == CookiePolicy("SRV", "insert", indirect=True, nocache=True, postonly=True,
                                    httponly=True, secure=True, domains=(".a.com", ".b.com"))
    assert [s.cookie for s in b.servers] == ["one", ""]


def test_cookie_without_mode_is_rewrite_and_inherited_from_defaults():
    cfg = HEAD.replace("    mode http\n", "    mode http\n    cookie JSESSIONID prefix\n", 1)
    b = loads(cfg + "    server s1 127.0.0.1:8001 cookie a\n", "site.cfg").backends["farm"]
    assert b.cookie == CookiePolicy("JSESSIONID", "prefix")
    assert backend("cookie X\n").cookie == CookiePolicy("X", "rewrite")


def test_defaults_of_the_new_settings():
    b = backend("server s1 127.0.0.1:8001\n")
    assert (b.cookie, b.persist, b.use_server, b.force_persist, b.ignore_persist, b.http_reuse) == (
        None, False, (), (), (), "safe")
    assert b.servers[0].pool_max_conn == -1


def test_default_server_cookie_and_pool_max_conn():
    b = backend("""\
        default-server pool-max-conn 0 cookie dflt
        server s1 127.0.0.1:8001
        server s2 127.0.0.1:8002 pool-max-conn -1 cookie two
    """)
    assert [(s.cookie, s.pool_max_conn) for s in b.servers] == [("dflt", 0), ("two", -1)]


def test_use_server_force_ignore_persist_option_persist_http_reuse():
    b = backend("""\
        acl api path_beg /api
        option persist
        http-reuse aggressive
        use-server s2 if api
        force-persist if { hdr(x-force) 1 }
        ignore-persist unless api
        server s1 127.0.0.1:8001
        server s2 127.0.0.1:8002
    """)
    assert b.persist and b.http_reuse == "aggressive"
    assert [(r.server, r.line, r.cond.text) for r in b.use_server] == [("s2", 10, "if api")]
    assert [(r.kind, r.cond.unless) for r in b.force_persist + b.ignore_persist] == [
        ("force-persist", False), ("ignore-persist", True)]


@pytest.mark.parametrize("line, message", [
    ("cookie SRV rewrite indirect", "'cookie SRV': 'rewrite' and 'indirect' modes are mutually exclusive"),
    ("cookie SRV insert prefix", "'cookie SRV': 'insert' and 'prefix' modes are mutually exclusive"),
    ("cookie SRV rewrite preserve", "'cookie SRV': 'preserve' requires at least 'insert' or 'indirect'"),
    ("cookie SRV insert maxidle", "'cookie SRV': 'maxidle' expects <idletime> in seconds as argument"),
    ("cookie SRV insert maxlife 500ms", "'cookie SRV': 'maxlife': time '500ms' is under the minimum "
                                        "non-null value of 1 s"),
    ("cookie SRV insert maxidle 2x", "'cookie SRV': 'maxidle': invalid time '2x': unknown unit 'x' "
                                     "(expected us, ms, s, m, h or d)"),
    ("cookie SRV insert maxlife 3000000000", "'cookie SRV': 'maxlife': time '3000000000' is too large "
                                             "(maximum is 2147483647 s, about 68 years)"),
    ("cookie SRV insert dynamic", "'cookie SRV': 'dynamic' is not supported"),
    ("cookie SRV insert attr SameSite=Lax", "'cookie SRV': 'attr' is not supported"),
    ("cookie SRV insrt", "'cookie SRV': unknown option 'insrt'; did you mean 'insert'?"),
    ("cookie SRV insert domain", "'cookie SRV': 'domain' expects <domain> as argument"),
    ("cookie", "'cookie' expects <name> [rewrite|insert|prefix] [options]"),
    ("cookie S;X insert", "'cookie': invalid cookie name 'S;X' (RFC 6265: a token)"),
    ("use-server s1", "'use-server s1' requires either 'if' or 'unless' followed by a condition"),
    ("force-persist", "'force-persist' requires either 'if' or 'unless' followed by a condition"),
    ("http-reuse sometimes", "'http-reuse' expects one of never, safe, aggressive, always, got 'sometimes'"),
    ("http-reuse safe never", "'http-reuse' cannot handle unexpected argument 'never'"),
    ("server s2 127.0.0.1:8002 cookie a;b", "server 's2': 'cookie' value 'a;b' is not a valid cookie value "
                                            "(RFC 6265: no space, comma, semicolon, quote, backslash or '=')"),
    ("server s2 127.0.0.1:8002 pool-max-conn -2", "server 's2': 'pool-max-conn' expects an integer, got '-2'"),
    ("server s2 127.0.0.1:8002 cookie", "server 's2': 'cookie' expects a value"),
])
def test_errors_name_file_and_line(line, message):
    assert errors(f"server s1 127.0.0.1:8001\n{line}\n") == [f"site.cfg:8: {message}"]


def test_use_server_must_name_a_server_of_the_backend():
    assert errors("use-server web3 if TRUE\nserver web1 127.0.0.1:8001\n") == [
        "site.cfg:7: backend 'farm': use-server 'web3' names no server of this backend; did you mean 'web1'?"]


def test_use_server_condition_with_unknown_acl():
    assert errors("use-server s1 if nope\nserver s1 127.0.0.1:8001\n") == [
        "site.cfg:7: backend 'farm': unknown ACL 'nope' in a 'use-server' condition"]


def test_use_server_is_refused_in_defaults():
    with pytest.raises(ConfigErrors) as exc:
        loads("defaults\n    mode http\n    use-server s1 if TRUE\n", "site.cfg")
    assert str(exc.value.errors[0]).startswith("site.cfg:3: ")
    assert "use-server" in str(exc.value.errors[0])


def test_cookie_in_mode_tcp_is_ignored_with_a_warning():
    cfg = ("backend farm\n    mode tcp\n    cookie SRV insert\n    server s1 127.0.0.1:8001 cookie a\n"
           "frontend www\n    mode tcp\n    bind 127.0.0.1:9000\n    default_backend farm\n")
    c = loads(cfg, "site.cfg")
    assert c.backends["farm"].cookie is None
    assert "site.cfg:3: backend 'farm': 'cookie' needs mode http; it is ignored in mode tcp" in c.warnings


def test_cookie_maxidle_maxlife_count_seconds_by_default():
    b = backend("""\
        cookie SRV insert indirect nocache maxidle 30m maxlife 8h
        server s1 127.0.0.1:8001 cookie one
    """)
    assert (b.cookie.maxidle, b.cookie.maxlife) == (1800, 28800)
    b = backend("""\
        cookie SRV insert maxidle 90
        server s1 127.0.0.1:8001 cookie one
    """)
    assert (b.cookie.maxidle, b.cookie.maxlife) == (90, 0)
