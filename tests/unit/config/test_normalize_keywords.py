"""http-request normalize-uri, option accept-invalid-http-request and map converters
through the loader: the model they give, and the exact "file:line: msg" of every refusal."""
import pytest

from splicer.config import loads
from splicer.errors import ConfigErrors
from splicer.http.normalize import NormalizeRule
from splicer.runtime.route import switching_of

HEAD = """\
defaults
    mode http
frontend www
    bind 127.0.0.1:8080
"""
BACKENDS = """\
backend app
    server s1 127.0.0.1:81
backend be_api
    server s1 127.0.0.1:82
"""


def load(frontend: str, path: str = "site.cfg"):
    return loads(HEAD + frontend + BACKENDS, path)


def errors(frontend: str, path: str = "site.cfg") -> list[str]:
    with pytest.raises(ConfigErrors) as exc:
        load(frontend, path)
    return [str(e) for e in exc.value.errors]


def test_normalize_uri_rules_keep_their_order_and_place():
    cfg = load("    http-request normalize-uri path-merge-slashes\n"
               "    http-request deny if { path_beg /admin }\n"
               "    http-request normalize-uri path-strip-dotdot full if { path_beg /x }\n"
               "    default_backend app\n")
    fe = cfg.frontends[0]
    r0, r1, r2 = fe.http_request
    assert (type(r0), r0.normalizer, r0.option, r0.line) == (NormalizeRule, "path-merge-slashes", "", 5)
    assert r1.action == "deny"
    assert (r2.normalizer, r2.option, r2.line, r2.cond is not None) == ("path-strip-dotdot", "full", 7, True)
    assert fe.accept_invalid_http_request is False
    assert switching_of(fe, cfg.backends).strict is True


def test_a_normalize_rule_alone_gives_the_frontend_a_switching():
    cfg = load("    http-request normalize-uri fragment-strip\n    default_backend app\n")
    assert switching_of(cfg.frontends[0], cfg.backends) is not None
    cfg = load("    default_backend app\n")
    assert switching_of(cfg.frontends[0], cfg.backends) is None


def test_option_accept_invalid_http_request():
    cfg = load("    option accept-invalid-http-request\n    http-request deny if { path /x }\n"
               "    default_backend app\n")
    fe = cfg.frontends[0]
    assert fe.accept_invalid_http_request is True
    assert switching_of(fe, cfg.backends).strict is False
    cfg = loads("defaults\n    mode http\n    option accept-invalid-http-request\n"
                "frontend www\n    bind 127.0.0.1:8080\n    no option accept-invalid-http-request\n"
                "    default_backend app\n" + BACKENDS, "site.cfg")
    assert cfg.frontends[0].accept_invalid_http_request is False


@pytest.mark.parametrize("frontend, messages", [
    ("    http-request normalize-uri\n    default_backend app\n",
     ["site.cfg:5: 'http-request normalize-uri' expects a normalizer (one of: fragment-encode, fragment-strip, "
      "path-merge-slashes, path-strip-dot, path-strip-dotdot, percent-decode-unreserved, percent-to-uppercase, "
      "query-sort-by-name)"]),
    ("    http-request normalize-uri path-strip-dotdot ful\n    default_backend app\n",
     ["site.cfg:5: 'http-request normalize-uri path-strip-dotdot': unexpected argument 'ful' (only 'full')"]),
    ("    http-request normalize-uri fragment-strip if { paht / }\n    default_backend app\n",
     ["site.cfg:5: 'http-request normalize-uri': anonymous acl: unknown fetch method 'paht'; did you mean 'path'?"]),
    ("    use_backend %[req.hdr(host),lower,map(hosts.map,app)]\n    default_backend app\n",
     ["site.cfg:5: 'use_backend %[req.hdr(host),lower,map(hosts.map,app)]': cannot read map file 'hosts.map': "
      "No such file or directory"]),
    ("    acl api req.hdr(host),map(nope.map) -m found\n    default_backend app\n",
     ["site.cfg:5: acl 'api': cannot read map file 'nope.map': No such file or directory"]),
    ("    use_backend %[path,field(0,/)]\n    default_backend app\n",
     ["site.cfg:5: 'use_backend %[path,field(0,/)]': converter 'field': index '0' must be a non-zero integer"]),
])
def test_errors_are_exact(frontend, messages):
    assert errors(frontend) == messages


def test_option_accept_invalid_http_request_is_refused_in_a_backend():
    with pytest.raises(ConfigErrors) as exc:
        loads(HEAD + "    default_backend app\n" + BACKENDS.replace(
            "    server s1 127.0.0.1:82\n", "    server s1 127.0.0.1:82\n    option accept-invalid-http-request\n"),
            "site.cfg")
    assert [str(e) for e in exc.value.errors] == [
        "site.cfg:10: 'option accept-invalid-http-request' is not allowed in backend 'be_api' "
        "(allowed in: defaults, frontend, listen)"]


def test_map_files_are_read_relative_to_the_config_file(tmp_path):
    (tmp_path / "hosts.map").write_text("# host -> backend\napi.example.com be_api\n")
    cfg = load("    use_backend %[req.hdr(host),lower,map(hosts.map,app)]\n    default_backend app\n",
               str(tmp_path / "site.cfg"))
    from splicer.http.sample import RequestView
    sw = switching_of(cfg.frontends[0], cfg.backends)
    for host, want in ((b"API.example.com", "be_api"), (b"www.example.com", "app")):
        v = RequestView(b"GET", b"/", b"/", b"1.1", [(b"Host", host)])
        assert sw.choose(v).backend == want
