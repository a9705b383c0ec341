"""Request-line rewrites (splicer/http/rewrite.py) and replace-header / replace-value
(splicer/http/rules.py): parsing and application on a RequestView, without sockets."""
from __future__ import annotations

import pytest

from splicer.http.actions import BAD_REQUEST, first_local
from splicer.http.logformat import RuleError, StreamInfo
from splicer.http.rules import Message, apply, parse_rule
from splicer.http.sample import RequestView

INFO = StreamInfo("192.0.2.7", 40000, "198.51.100.1", 80, "www", "app")


def view(target=b"/a/b?q=1", method=b"GET", fields=None, url=None):
    fields = [(b"Host", b"h.example")] if fields is None else fields
    return RequestView(method, url or target, target, b"1.1", fields, "192.0.2.7", 40000, "198.51.100.1", 80)


def run(lines, v):
    """Run http-request rules in order on view `v` (as route.Switching.choose does)."""
    rules = tuple(parse_rule(line.split(" "), "request") for line in lines)
    return first_local(rules, v, INFO)


@pytest.mark.parametrize("line, target, want", [
    ("set-path /x/%[path]", b"/a/b?q=1", b"/x//a/b?q=1"),
    ("set-path /new", b"/a/b", b"/new"),
    ("set-path /new", b"*", b"/new"),
    ("set-pathq /p?r=2", b"/a/b?q=1", b"/p?r=2"),
    ("set-pathq /p", b"/a/b?q=1", b"/p"),  # the only way to drop the '?'
    ("set-query r=2", b"/a/b?q=1", b"/a/b?r=2"),
    ("set-query r=2", b"/a/b", b"/a/b?r=2"),
    ("set-query %[query]", b"/a/b", b"/a/b"),  # no '?' added for an empty value
    ("set-query %[hdr(x-none)]", b"/a/b?q=1", b"/a/b?"),  # a '?' is never removed
    ("set-uri /u?v=%HM", b"/a/b?q=1", b"/u?v=GET"),
    ("replace-path /a/(.*) /\\1", b"/a/b?q=1", b"/b?q=1"),  # the query is not matched nor replaced
    ("replace-path (.*) /foo\\1", b"/bar?q=1", b"/foo/bar?q=1"),
    ("replace-path ^/nomatch /x", b"/a/b?q=1", b"/a/b?q=1"),
    ("replace-pathq ([^?]*)(\\?(.*))? \\1/foo\\2", b"/bar?q=1", b"/bar/foo?q=1"),
    ("replace-pathq ([^?]*)(\\?(.*))? \\1/foo\\2", b"/bar", b"/bar/foo"),  # a group not taken: empty
    ("replace-uri ^/a/(b)\\?q=(.*) /\\2/\\1/\\0", b"/a/b?q=1", b"/1/b//a/b?q=1"),
])
def test_target_rewrites(line, target, want):
    v = view(target, url=target)
    assert run([line], v) == (None, 1)
    assert (v.target, v.url) == (want, want)


def test_set_method_and_later_rules_read_the_rewrites():
    v = view()
    run(["set-method PURGE", "set-path /p", "set-header X-Seen %HM:%[path]:%[url]"], v)
    assert v.method == b"PURGE"
    assert v.fields == [(b"Host", b"h.example"), (b"X-Seen", b"PURGE:/p:/p?q=1")]


def test_absolute_form_url_keeps_its_scheme_and_authority():
    v = view(b"/a/b?q=1", url=b"http://h.example/a/b?q=1")
    run(["set-path /z"], v)
    assert (v.target, v.url) == (b"/z?q=1", b"http://h.example/z?q=1")


@pytest.mark.parametrize("lines", [
    ["set-path /a%[hdr(x-sp)]b"],          # a space from a sample
    ["set-uri %[hdr(x-empty)]"],           # an empty target
    ["set-path relative"],                 # not origin-form
    ["set-uri http://other.example/"],     # absolute-form: refused, not forwarded as is
    ["set-path /a/../b"],                  # a dot segment (normalize.ambiguity)
    ["set-path /a%%2fb"],                  # an escaped slash
    ["replace-path (.*) \\1#frag"],         # a fragment
    ["set-pathq /%[hdr(x-hi)]"],           # a byte above 0x7e
    ["set-method %[hdr(x-sp)]"],           # not a token
    ["set-method CONNECT"],
    ["set-method %[hdr(x-empty)]"],
])
def test_a_result_that_may_not_be_forwarded_answers_400(lines):
    v = view(fields=[(b"Host", b"h"), (b"X-Sp", b"a b"), (b"X-Empty", b""), (b"X-Hi", b"\xe9")])
    assert run(lines + ["set-header X-After 1"], v) == (BAD_REQUEST, 0)
    assert (v.target, v.method) == (b"/a/b?q=1", b"GET")  # left as it was
    assert (b"X-After", b"1") not in v.fields           # and the rules after it never ran


def test_asterisk_stays_only_for_options():
    v = view(b"*", method=b"OPTIONS")
    assert run(["set-uri *"], v) == (None, 1)
    v = view(b"/x")
    assert run(["set-uri *"], v) == (BAD_REQUEST, 0)


def test_back_references_come_from_the_literal_text_only():
    # a sample's value holding "\1" is not expanded: a client cannot inject one
    v = view(b"/a/b", fields=[(b"Host", b"h"), (b"X-Inj", b"\\1")])
    run(["replace-pathq ^/(a)/b$ /\\1?v=%[hdr(x-inj)]"], v)
    assert v.target == b"/a?v=\\1"


# -- replace-header / replace-value ---------------------------------------------------------

def hdr_run(lines, fields, side="request", msg=Message(b"GET", b"/")):
    rules = tuple(parse_rule(line.split(" "), side) for line in lines)
    return apply(rules, fields, INFO, msg)


def test_replace_header_replaces_whole_values_with_back_references():
    fields = [(b"Cookie", b"foo=foobar; expires=Tue, 14-Jun-2016 01:40:45 GMT;"), (b"User-Agent", b"curl/7.47.0"),
              (b"cookie", b"bar=1")]
    out = hdr_run(["replace-header Cookie foo=([^;]*);(.*) foo=\\1;ip=%ci;\\2", "replace-header User-Agent curl foo"],
                  fields)
    assert out == [(b"Cookie", b"foo=foobar;ip=192.0.2.7; expires=Tue, 14-Jun-2016 01:40:45 GMT;"),
                   (b"User-Agent", b"foo"), (b"cookie", b"bar=1")]


def test_replace_value_works_on_each_element_and_keeps_the_separators():
    fields = [(b"X-Forwarded-For", b"192.168.10.1, 192.168.13.24,10.0.0.37"), (b"Cache-Control", b"max-age=3600, public")]
    out = hdr_run(["replace-value X-Forwarded-For ^192\\.168\\.(.*)$ 172.16.\\1",
                   "replace-value Cache-control ^public$ private"], fields)
    assert out == [(b"X-Forwarded-For", b"172.16.10.1, 172.16.13.24,10.0.0.37"),
                   (b"Cache-Control", b"max-age=3600, private")]


def test_replace_is_case_sensitive_and_leaves_unmatched_fields():
    fields = [(b"X-A", b"Value")]
    assert hdr_run(["replace-header X-A value v"], fields) == [(b"X-A", b"Value")]


def test_replace_header_on_responses_reads_the_response():
    msg = Message(b"GET", b"/", 200, [(b"Host", b"h")])
    out = hdr_run(["replace-header Set-Cookie (C=[^;]*);(.*) \\1;st=%ST;\\2"],
                  [(b"Set-Cookie", b"C=1; path=/")], "response", msg)
    assert out == [(b"Set-Cookie", b"C=1;st=200; path=/")]


@pytest.mark.parametrize("words, message", [
    (["set-path"], "'http-request set-path' expects exactly 1 argument(s): set-path <fmt>"),
    (["set-uri", "/a", "/b"], "'http-request set-uri' expects exactly 1 argument(s): set-uri <fmt> "
                              "(quote a value that holds spaces)"),
    (["replace-path", "/a"], "'http-request replace-path' expects exactly 2 argument(s): replace-path "
                             "<match-regex> <replace-fmt>"),
    (["replace-uri", "(", "/x"], "'http-request replace-uri': invalid regex '(': missing ), unterminated "
                                 "subpattern at position 0"),
    (["replace-path", "/(a)", "/\\2"], "'http-request replace-path': '\\2' refers to a group the regex "
                                       "'/(a)' does not have"),
    (["set-method", "%[hdr(x),lower]"], "converters are not supported in '%[hdr(x),lower]' (only a bare "
                                        "sample fetch)"),
    (["replace-header", "X-A", "a"], "'http-request replace-header' expects exactly 3 argument(s): "
                                     "replace-header <name> <match-regex> <replace-fmt>"),
    (["replace-value", "Content-Length", "1", "2"], "'Content-Length' cannot be rewritten: splicer writes "
                                                    "the framing and connection fields itself"),
    (["replace-header", "X-A", "[", "b"], "'http-request replace-header': invalid regex '[': unterminated "
                                          "character set at position 0"),
])
def test_rewrite_errors_are_exact(words, message):
    with pytest.raises(RuleError) as exc:
        parse_rule(words, "request")
    assert str(exc.value) == message


def test_rewrites_are_request_only():
    with pytest.raises(RuleError) as exc:
        parse_rule(["set-path", "/x"], "response")
    assert str(exc.value).startswith("unknown 'http-response' action 'set-path' (supported: set-header, ")
