"""http/normalize.py: haproxy's normalize-uri normalizers, the path rules compare, what is
refused as ambiguous, the canonical Host; exact bytes in and out, and the table of ACL
bypass spellings from public reports against proxies."""
from __future__ import annotations

import pytest

from splicer.http import normalize as nz
from splicer.http.acl import parse_condition
from splicer.http.actions import BAD_REQUEST, first_local
from splicer.http.rules import RuleError, parse_rule
from splicer.http.sample import RequestView, parse_fetch


def run(name: str, option: str, target: bytes) -> bytes:
    return nz.NORMALIZERS[(name, option)](target)


@pytest.mark.parametrize("target, out", [
    (b"/a//b///c/", b"/a/b/c/"),
    (b"//admin", b"/admin"),
    (b"/a/b", b"/a/b"),
    (b"/a//b?x=//y", b"/a/b?x=//y"),          # the query is not the path
    (b"/a//b#//c", b"/a/b#//c"),
])
def test_path_merge_slashes(target, out):
    assert run("path-merge-slashes", "", target) == out


@pytest.mark.parametrize("target, out", [
    (b"/.", b"/"),
    (b"/./bar/", b"/bar/"),
    (b"/a/./a", b"/a/a"),
    (b"/a/.", b"/a/"),
    (b"/.well-known/", b"/.well-known/"),
    (b"/a/%2E/b", b"/a/%2E/b"),               # an escaped dot is not a dot segment
    (b"/a/./b?x=/./", b"/a/b?x=/./"),
    (b"*", b"*"),
])
def test_path_strip_dot(target, out):
    assert run("path-strip-dot", "", target) == out


@pytest.mark.parametrize("target, out, full", [
    (b"/foo/../", b"/", b"/"),
    (b"/foo/../bar/", b"/bar/", b"/bar/"),
    (b"/foo/bar/../", b"/foo/", b"/foo/"),
    (b"/../bar/", b"/../bar/", b"/bar/"),
    (b"/bar/../../", b"/../", b"/"),
    (b"/foo//../", b"/foo/", b"/foo/"),
    (b"/foo/%2E%2E/", b"/foo/%2E%2E/", b"/foo/%2E%2E/"),
    (b"/foo/..", b"/", b"/"),
    (b"/a/b/../../c?d=/../", b"/c?d=/../", b"/c?d=/../"),
    (b"/..a/b..", b"/..a/b..", b"/..a/b.."),
])
def test_path_strip_dotdot(target, out, full):
    assert run("path-strip-dotdot", "", target) == out
    assert run("path-strip-dotdot", "full", target) == full


@pytest.mark.parametrize("target, out", [
    (b"/%61%62%63", b"/abc"),
    (b"/%2e%2E/%7e%5F%2d", b"/../~_-"),
    (b"/a%2Fb%2fc", b"/a%2Fb%2fc"),            # '/' is reserved: stays escaped
    (b"/a?q=%41%26", b"/a?q=A%26"),            # the query too
    (b"/a%zz%4", b"/a%zz%4"),                  # invalid escapes left alone
    (b"/a#%41", b"/a#%41"),                    # not the fragment
])
def test_percent_decode_unreserved(target, out):
    assert run("percent-decode-unreserved", "", target) == out


def test_percent_decode_unreserved_strict_refuses_invalid_escapes():
    assert run("percent-decode-unreserved", "strict", b"/%41?b=%42") == b"/A?b=B"
    for bad in (b"/a%zz", b"/a%4", b"/a%", b"/a?b=%g0"):
        with pytest.raises(nz.NormalizeError):
            run("percent-decode-unreserved", "strict", bad)


@pytest.mark.parametrize("target, out", [
    (b"/a%2fb%3a?c=%5b", b"/a%2Fb%3A?c=%5B"),
    (b"/%ab%Cd", b"/%AB%CD"),
    (b"/a%zz", b"/a%zz"),
])
def test_percent_to_uppercase(target, out):
    assert run("percent-to-uppercase", "", target) == out


def test_percent_to_uppercase_strict_refuses_invalid_escapes():
    assert run("percent-to-uppercase", "strict", b"/%2f") == b"/%2F"
    with pytest.raises(nz.NormalizeError):
        run("percent-to-uppercase", "strict", b"/%2")


@pytest.mark.parametrize("name, target, out", [
    ("fragment-strip", b"/a?b#c", b"/a?b"),
    ("fragment-strip", b"/#", b"/"),
    ("fragment-strip", b"/a", b"/a"),
    ("fragment-encode", b"/a?b#c", b"/a?b%23c"),
    ("fragment-encode", b"/a#b#c", b"/a%23b%23c"),
    ("fragment-encode", b"/a", b"/a"),
    ("query-sort-by-name", b"/?c=3&a=1&b=2&a=0", b"/?a=1&a=0&b=2&c=3"),
    ("query-sort-by-name", b"/p?b&a=1&ab=2", b"/p?a=1&ab=2&b"),
    ("query-sort-by-name", b"/p?z=1#y&x", b"/p?z=1#y&x"),
    ("query-sort-by-name", b"/p", b"/p"),
])
def test_fragment_and_query_normalizers(name, target, out):
    assert run(name, "", target) == out


def test_split_and_join_target():
    assert nz.split_target(b"/a/b?x=1#top") == (b"/a/b", b"x=1", b"top")
    assert nz.split_target(b"/a?#") == (b"/a", b"", b"")
    assert nz.split_target(b"/a#x?y") == (b"/a", None, b"x?y")
    for t in (b"/a/b?x=1#top", b"/a?#", b"/a#x?y", b"/"):
        assert nz.join_target(*nz.split_target(t)) == t


@pytest.mark.parametrize("path, out", [
    (b"//%61dmin/%2f", b"/admin/%2F"),
    (b"/%41DMIN", b"/ADMIN"),
    (b"/a/b", b"/a/b"),
    (b"/a%zz", b"/a%zz"),
])
def test_rule_path(path, out):
    assert nz.rule_path(path) == out


@pytest.mark.parametrize("target, reason", [
    (b"/a#b", "fragment in the request-target"),
    (b"/admin%2fx", "escaped '/' in the path"),
    (b"/admin%2Fx", "escaped '/' in the path"),
    (b"/admin\\x", "backslash in the path"),
    (b"/admin%5cx", "escaped backslash in the path"),
    (b"/x/%252e%252e/admin", "double-escaped dot, slash or backslash in the path"),
    (b"/x%252fadmin", "double-escaped dot, slash or backslash in the path"),
    (b"/x/../admin", "dot segment in the path"),
    (b"/x/./admin", "dot segment in the path"),
    (b"/x/%2e%2e/admin", "dot segment in the path"),
    (b"/x/%2E./admin", "dot segment in the path"),
    (b"/x/..;/admin", "dot segment in the path"),
    (b"/x/.;a=b/admin", "dot segment in the path"),
    (b"/x/..", "dot segment in the path"),
    (b"/;x/admin", "parameters on an empty path segment"),
    (b"/.", "dot segment in the path"),
])
def test_ambiguity_refuses(target, reason):
    assert nz.ambiguity(target) == reason


@pytest.mark.parametrize("target", [
    b"/", b"/admin", b"/.well-known/acme", b"/a..b/c.", b"/a?next=/../x%2f#", b"*",
    b"/%41/%25", b"/files/a%20b", b"/a;jsessionid=1/b",
])
def test_ambiguity_lets_plain_targets_through(target):
    # b"/a?next=/../x%2f#" holds a '#' after the query: a fragment, refused
    expected = "fragment in the request-target" if b"#" in target else None
    assert nz.ambiguity(target) == expected


@pytest.mark.parametrize("value, out", [
    (b"Admin.Example.com.:8080", b"Admin.Example.com"),
    (b"admin.example.com", b"admin.example.com"),
    (b"admin.example.com..", b"admin.example.com"),
    (b"[::1]:80", b"[::1]"),
    (b"127.0.0.1:80", b"127.0.0.1"),
    (b".", b"."),
])
def test_canonical_host(value, out):
    assert nz.canonical_host(value) == out


# -- the rule: parsing, and through first_local -------------------------------------------

def test_parse_normalize_uri_rules():
    r = parse_rule(["normalize-uri", "path-strip-dotdot", "full"], "request", "a.cfg", 3)
    assert (r.normalizer, r.option, r.file, r.line, r.cond) == ("path-strip-dotdot", "full", "a.cfg", 3, None)
    assert r.fn(b"/../a") == b"/a"
    r = parse_rule(["normalize-uri", "fragment-strip", "if", "{", "path_beg", "/x", "}"], "request")
    assert r.cond is not None


@pytest.mark.parametrize("words, msg", [
    (["normalize-uri"], "'http-request normalize-uri' expects a normalizer (one of: fragment-encode, "
     "fragment-strip, path-merge-slashes, path-strip-dot, path-strip-dotdot, percent-decode-unreserved, "
     "percent-to-uppercase, query-sort-by-name)"),
    (["normalize-uri", "path-strip-dots"], "'http-request normalize-uri': unknown normalizer 'path-strip-dots' "
     "(one of: fragment-encode, fragment-strip, path-merge-slashes, path-strip-dot, path-strip-dotdot, "
     "percent-decode-unreserved, percent-to-uppercase, query-sort-by-name)"),
    (["normalize-uri", "path-strip-dotdot", "half"],
     "'http-request normalize-uri path-strip-dotdot': unexpected argument 'half' (only 'full')"),
    (["normalize-uri", "path-merge-slashes", "strict"],
     "'http-request normalize-uri path-merge-slashes': unexpected argument 'strict' (it takes none)"),
    (["normalize-uri", "percent-to-uppercase", "strict", "x"],
     "'http-request normalize-uri percent-to-uppercase': unexpected argument 'x' (only 'strict')"),
])
def test_parse_normalize_uri_errors(words, msg):
    with pytest.raises(RuleError) as exc:
        parse_rule(words, "request")
    assert str(exc.value) == msg


def view(target: bytes, host: bytes = b"www.example.com", url: bytes | None = None) -> RequestView:
    return RequestView(b"GET", url or target, target, b"1.1", [(b"Host", host)])


def rules(*lines: str) -> tuple:
    return tuple(parse_rule(line.split(), "request") for line in lines)


def test_normalize_rules_run_in_order_and_rewrite_the_target():
    rs = rules("normalize-uri path-strip-dotdot", "deny if { path_beg /admin }")
    v = view(b"/x/../admin?a=1")
    rule, cut = first_local(rs, v)
    assert (rule.action, rule.status, cut) == ("deny", 403, 1)
    assert v.target == b"/admin?a=1"
    # a deny before the normalizer reads the target as sent: no match, then rewritten
    rs = rules("deny if { path_beg /admin }", "normalize-uri path-strip-dotdot")
    v = view(b"/x/../admin")
    assert first_local(rs, v) == (None, 2)
    assert v.target == b"/admin"


def test_normalize_rule_condition_and_url_follow_the_target():
    rs = rules("normalize-uri percent-to-uppercase if { path_beg /up }")
    v = view(b"/up/%2f", url=b"http://www.example.com/up/%2f")
    first_local(rs, v)
    assert (v.target, v.url) == (b"/up/%2F", b"http://www.example.com/up/%2F")
    v = view(b"/down/%2f")
    first_local(rs, v)
    assert v.target == b"/down/%2f"


def test_strict_normalizer_answers_400():
    rs = rules("normalize-uri percent-decode-unreserved strict", "allow")
    v = view(b"/a%zz")
    assert first_local(rs, v) == (BAD_REQUEST, 0)
    assert (BAD_REQUEST.action, BAD_REQUEST.status) == ("deny", 400)


def test_path_fetches_compare_the_rule_path():
    cond = parse_condition(["if", "{", "path_beg", "/admin", "}"])
    for t in (b"/admin", b"//admin", b"/%61dmin", b"/%61%64%6D%69%6E/x", b"///%61dmin?x"):
        assert cond(view(t)) is True, t
    assert cond(view(b"/Admin")) is False
    assert parse_fetch("path")(view(b"//%61b%2fc?%41")) == [b"/ab%2Fc"]
    assert parse_fetch("url")(view(b"//%61b?%41")) == [b"/ab?%41"]
    assert parse_fetch("url")(view(b"//%61b?%41", url=b"http://h//%61b?%41")) == [b"http://h/ab?%41"]
    assert parse_fetch("query")(view(b"/a?%41")) == [b"%41"]


def test_host_acls_match_without_port_and_trailing_dot():
    cond = parse_condition(["if", "{", "hdr(host)", "-i", "admin.example.com", "}"])
    for h in (b"admin.example.com", b"Admin.Example.COM", b"admin.example.com:80",
              b"admin.example.com.", b"ADMIN.example.com.:8080"):
        assert cond(view(b"/", host=h)) is True, h
    assert cond(view(b"/", host=b"admin.example.com.evil")) is False
    # host names ignore case (RFC 3986 section 3.2.2): without -i too (haproxy differs)
    cond = parse_condition(["if", "{", "req.hdr(host)", "admin.example.com", "}"])
    assert cond(view(b"/", host=b"admin.example.com:443")) is True
    assert cond(view(b"/", host=b"ADMIN.example.com:443")) is True
    # a pattern with capitals and no -i matches the field as sent only
    cond = parse_condition(["if", "{", "req.hdr(host)", "ADMIN.example.com", "}"])
    assert cond(view(b"/", host=b"ADMIN.example.com")) is True
    assert cond(view(b"/", host=b"admin.example.com")) is False
    cond = parse_condition(["if", "{", "hdr(host),lower", "admin.example.com", "}"])
    assert cond(view(b"/", host=b"ADMIN.example.com.:443")) is True
    # outside ACLs the fetch gives the field as sent (haproxy)
    assert parse_fetch("hdr(host)")(view(b"/", host=b"A.b.:80")) == [b"A.b.:80"]
    assert parse_fetch("hdr(host)").text(view(b"/", host=b"A.b.:80")) == b"A.b.:80"


# -- the bypass table: each spelling either still matches the deny rule, or is refused ----

DENY_PATH = rules("deny if { path_beg /admin }")
DENY_HOST = rules("deny if { hdr(host) -i admin.example.com }")


@pytest.mark.parametrize("target, outcome", [
    (b"/admin", "deny"),
    (b"//admin", "deny"),
    (b"///admin/x", "deny"),
    (b"/./admin", "400"),
    (b"/x/../admin", "400"),
    (b"/%2e/admin", "400"),
    (b"/%2E%2E/admin", "400"),
    (b"/x/%2e%2e/admin", "400"),
    (b"/.%2e/admin", "400"),
    (b"/%61dmin", "deny"),
    (b"/%61%64%6d%69%6e", "deny"),
    (b"/%2fadmin", "400"),
    (b"/%2Fadmin", "400"),
    (b"/x%2f..%2fadmin", "400"),
    (b"/%252fadmin", "400"),
    (b"/x/%252e%252e/admin", "400"),
    (b"/admin;x=1", "deny"),
    (b"/x/..;/admin", "400"),
    (b"/;/admin", "400"),
    (b"/;x=1/admin", "400"),
    (b"/\\admin", "400"),
    (b"/x\\..\\admin", "400"),
    (b"/%5cadmin", "400"),
    (b"/admin#x", "deny"),
    (b"/x#/../admin", "400"),
    (b"/public", "pass"),
])
def test_bypass_spellings_of_the_path(target, outcome):
    v = view(target)
    rule, _ = first_local(DENY_PATH, v)
    if rule is not None:
        got = "deny"
    elif nz.ambiguity(v.target) is not None:
        got = "400"
    else:
        got = "pass"
    assert got == outcome


@pytest.mark.parametrize("host, outcome", [
    (b"admin.example.com", "deny"),
    (b"ADMIN.EXAMPLE.COM", "deny"),
    (b"admin.example.com.", "deny"),
    (b"admin.example.com:80", "deny"),
    (b"admin.example.com.:8080", "deny"),
    (b"www.example.com", "pass"),
])
def test_bypass_spellings_of_the_host(host, outcome):
    rule, _ = first_local(DENY_HOST, view(b"/", host=host))
    assert ("deny" if rule is not None else "pass") == outcome
