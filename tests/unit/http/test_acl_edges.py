"""splicer.http.acl at its edges: sample conversions, integer and address patterns at their
limits, -m dir/dom case, regexes that cannot be joined, conditions' messages and lines,
what a condition reads, and the parts acl.any_of() compiles (haproxy configuration.txt
7.1, 7.1.2, 7.1.6, 7.2, 7.4)."""
from __future__ import annotations

import pytest

from splicer.http import acl as acl_mod
from splicer.http.acl import (
    PREDEFINED,
    PREDEFINED_WORDS,
    Acl,
    AclError,
    any_of,
    condition_reads,
    parse_acl_expr,
    parse_condition,
    parse_ipv4,
    parse_network,
)
from splicer.http.sample import RequestView


def req(url=b"/static/img/logo.png?id=42", method=b"GET", fields=None, src="192.0.2.7", src_port=40000,
        has_body=False, nbsrv=None):
    fields = [(b"Host", b"www.example.com")] if fields is None else fields
    return RequestView(method, url, url, b"1.1", fields, src, src_port, "10.0.0.1", 80, has_body, nbsrv)


def expr(text: str):
    return parse_acl_expr(text.split(), "acl 't'")


def named(**lines: str | list[str]) -> dict[str, Acl]:
    """ACLs by name, each from one or more lines (a list of texts)."""
    out = {}
    for name, texts in lines.items():
        texts = [texts] if isinstance(texts, str) else texts
        out[name] = Acl(name, tuple(expr(t) for t in texts))
    return out


def compiled(conds: list[str], acls: dict | None = None):
    """(the AnyOf of the conditions, [(part key, remembered, number of tests)])."""
    anyof = any_of([parse_condition(c.split()).bind(acls or {}) for c in conds])
    return anyof, [(p.key, p.remember, len(p.tests)) for p in type(anyof).__call__.parts]


# -- samples of other types matched as strings and integers ------------------------------------

@pytest.mark.parametrize("words, expected", [
    # a boolean sample is "1" or "0" as a string, 1 or 0 as an integer
    ("always_true -m str 1", True),
    ("always_true -m str 0", False),
    ("always_false -m str 0", True),
    ("always_false -m str 1", False),
    ("always_true -m int 1", True),
    ("always_false -m int 0", True),
    ("always_true -m int 0", False),
    # an integer sample as a string: its decimal digits
    ("src_port -m str 40000", True),
    ("src_port -m beg 400", True),
    ("src_port -m len 5", True),
    ("src_port -m len 4", False),
])
def test_non_string_samples_are_converted_before_string_and_integer_matching(words, expected):
    """A boolean sample is the string "1"/"0" and the integer 1/0, an integer sample its
    decimal text (haproxy's sample casts), whatever the matching method."""
    assert expr(words)(req()) is expected


@pytest.mark.parametrize("words, value, expected", [
    ("hdr(x-a) -m int 5", b"abc", False),
    ("hdr(x-a) -m int 0:", b"abc", False),
    ("hdr(x-a) -m int le 10", b"", False),
    ("hdr(x-a) -m int 0:", b"7", True),
    ("hdr(x-a) -m int eq -3", b"-3", True),
])
def test_a_string_that_is_no_integer_matches_no_integer_pattern(words, value, expected):
    """-m int on a string sample that is not an integer: no range holds, not even an open one."""
    assert expr(words)(req(fields=[(b"X-A", value)])) is expected


# -- integer patterns ---------------------------------------------------------------------------

@pytest.mark.parametrize("words, port, expected", [
    ("src_port gt 39999", 40000, True),
    ("src_port gt 39999", 39999, False),
    ("src_port ge 40000", 40000, True),
    ("src_port ge 40000", 39999, False),
    ("src_port lt 40000", 39999, True),
    ("src_port lt 40000", 40000, False),
    ("src_port le 40000", 40000, True),
    ("src_port le 40000", 40001, False),
    ("src_port eq 40000", 40000, True),
    ("src_port eq 40000", 40001, False),
    ("src_port 1:2", 2, True),
    ("src_port 1:2", 3, False),
    ("src_port 10:", 10, True),
    ("src_port 10:", 9, False),
    ("src_port :10", 10, True),
    ("src_port :10", 11, False),
])
def test_integer_operators_and_ranges_at_their_bounds(words, port, expected):
    """eq/ge/gt/le/lt and the ranges a:b, a:, :b hold exactly up to their bounds (haproxy 7.1.2)."""
    assert expr(words)(req(src_port=port)) is expected


@pytest.mark.parametrize("words, message", [
    (["src_port", ""], "acl 't': '' is not an integer or a range (e.g. 80, 1024:65535, :1023)"),
    (["src_port", ":"], "acl 't': ':' is not an integer or a range (e.g. 80, 1024:65535, :1023)"),
    (["src_port", "1:2:3"], "acl 't': '1:2:3' is not an integer or a range (e.g. 80, 1024:65535, :1023)"),
    (["src_port", "le", "a:b"], "acl 't': 'a:b' is not an integer or a range (e.g. 80, 1024:65535, :1023)"),
    (["src_port", "lt", ":9"], "acl 't': operator 'lt' cannot be used with the range ':9'"),
])
def test_integer_pattern_errors_are_exact(words, message):
    """An empty word or a lone ':' is no integer pattern; an operator takes no range."""
    with pytest.raises(AclError) as exc:
        parse_acl_expr(words, "acl 't'")
    assert str(exc.value) == message


# -- flags and the words after the criterion -----------------------------------------------------

@pytest.mark.parametrize("words, message", [
    ([], "acl 't': missing criterion (e.g. 'path_beg /static')"),
    (["path", "-m"], ("acl 't': '-m' expects a matching method (found, bool, int, ip, bin, len, str, sub, reg, "
                      "beg, end, dir, dom)")),
    (["path", "-u", "1"], "acl 't': flag '-u' is not supported"),
    (["path", "-m", "int", "-x"], "acl 't': unknown flag '-x' (supported: -i, -f, -m, -n, --)"),
    (["src_port", "-1a"], "acl 't': '-1a' is not an integer or a range (e.g. 80, 1024:65535, :1023)"),
    (["src_port", "-m", "bool", "1"], "acl 't': '-m bool' takes no pattern, got '1'"),
])
def test_flag_errors_are_exact(words, message):
    """A missing criterion or -m method, the unsupported -u, -m bool with a pattern; a word
    of a dash and a digit after an integer fetch is a (bad) value, not a flag."""
    with pytest.raises(AclError) as exc:
        parse_acl_expr(words, "acl 't'")
    assert str(exc.value) == message


@pytest.mark.parametrize("words, fields, expected", [
    # "-<digit>" is a negative value for an integer fetch or -m int / -m len, not a flag
    ("req.hdr_val(x-n) -5", [(b"X-N", b"-5")], True),
    ("req.hdr_val(x-n) -5", [(b"X-N", b"5")], False),
    ("hdr(x-n) -m int -5", [(b"X-N", b"-5")], True),
    ("hdr(x-n) -m len -1", [(b"X-N", b"")], False),
])
def test_a_negative_integer_is_a_value(words, fields, expected):
    """After an integer fetch, ``-m int`` or ``-m len``, a word of a dash and digits is a
    value (haproxy 7.1.2 integers may be negative)."""
    assert expr(words)(req(fields=fields)) is expected


@pytest.mark.parametrize("words, expected", [
    ("src -n 192.0.2.0/24", True),
    ("src -n 10.0.0.0/8", False),
    ("src -m sub 192.0.2", True),
    ("src -m sub 192.0.3", False),
    ("src -m len 9", True),
    ("src -m len 8", False),
])
def test_address_fetches_take_n_and_string_methods(words, expected):
    """-n (no name resolution) is accepted and changes nothing; an address fetch may be
    matched as text (-m sub, -m len on "192.0.2.7") besides -m ip."""
    assert expr(words)(req()) is expected


def test_an_expression_keeps_its_patterns_and_where_it_was_written():
    """AclExpr.patterns: (text, ignore case) pairs, case flags exact booleans; file and line
    default to "" and 0."""
    e = expr("path /a /B")
    assert e.patterns == (("/a", False), ("/B", False))
    assert (e.file, e.line) == ("", 0)
    e = parse_acl_expr(["path", "-i", "/a"], "acl 't'", "", "site.cfg", 12)
    assert (e.patterns, e.file, e.line) == ((("/a", True),), "site.cfg", 12)


def test_pattern_files_are_read_from_the_current_directory_by_default(tmp_path, monkeypatch):
    """Without a base directory a relative -f file is read from the current directory."""
    (tmp_path / "p.lst").write_text("/a\n")
    monkeypatch.chdir(tmp_path)
    e = parse_acl_expr(["path", "-f", "p.lst"], "acl 't'")
    assert e.patterns == (("/a", False),)
    assert e(req(b"/a")) is True


# -- addresses ----------------------------------------------------------------------------------

@pytest.mark.parametrize("text", ["1.2.3.4.0", "1.2.3.4.5", "1..2", "", "1.2.3.-4", "0x7f.1"])
def test_ipv4_with_more_than_four_parts_or_a_bad_part_is_refused(text):
    """parse_ipv4 takes one to four dotted decimal parts: a fifth part, even a zero one, or
    an empty or non-decimal part is ValueError (its argument the text)."""
    with pytest.raises(ValueError) as exc:
        parse_ipv4(text)
    assert exc.value.args == (text,)


@pytest.mark.parametrize("text, expected", [
    ("1.2.3.4", "1.2.3.4"),
    ("4294967295", "255.255.255.255"),
    ("10.65535", "10.0.255.255"),
    ("10.1.65536", None),
    ("1.16777216", None),
])
def test_ipv4_last_part_fills_exactly_the_remaining_bytes(text, expected):
    """The last part of an abbreviated address fills the bytes left (inet_aton): one that
    does not fit them is refused."""
    if expected is None:
        with pytest.raises(ValueError):
            parse_ipv4(text)
    else:
        assert str(parse_ipv4(text)) == expected


@pytest.mark.parametrize("many", [False, True])
def test_many_prefixes_keep_exact_patterns_case_sensitive(many):
    """Beyond SMALL_SET prefixes, patterns without -i still compare case-sensitively and
    those with -i ignore case (both algorithms agree)."""
    n = acl_mod.SMALL_SET + 4 if many else 3
    exact = expr("path_beg " + " ".join(f"/A{i}/" for i in range(n)))
    folded = expr("path_beg -i " + " ".join(f"/B{i}/" for i in range(n)))
    assert [exact(req(p)) for p in (b"/A2/x", b"/a2/x", b"/A2")] == [True, False, False]
    assert [folded(req(p)) for p in (b"/B2/x", b"/b2/x", b"/c2/x")] == [True, True, False]


@pytest.mark.parametrize("pattern, src, expected", [
    # host bits set in a network pattern are ignored, IPv4 and IPv6 alike
    ("10.1.2.3/8", "10.200.0.1", True),
    ("10.1.2.3/255.0.0.0", "10.200.0.1", True),
    ("10.1.2.3/255.0.0.0", "11.0.0.1", False),
    ("2001:db8::5/32", "2001:db8:ffff::1", True),
    ("2001:db8::5/32", "2001:db9::1", False),
    ("2001:db8::5", "2001:db8::5", True),
    ("2001:db8::5", "2001:db8::6", False),
    # a /32 and a /31 at the boundary
    ("192.0.2.7/32", "192.0.2.7", True),
    ("192.0.2.6/31", "192.0.2.7", True),
    ("192.0.2.6/31", "192.0.2.8", False),
])
def test_network_patterns(pattern, src, expected):
    """An IP pattern is an address or a network whose host bits are ignored (haproxy 7.1.6)."""
    assert expr("src " + pattern)(req(src=src)) is expected


def test_network_pattern_values():
    """parse_network: a bare IPv6 address is a /128, a bare IPv4 one a /32, a dotted mask
    its prefix length."""
    assert str(parse_network("2001:db8::5/32", "t")) == "2001:db8::/32"
    assert str(parse_network("::1", "t")) == "::1/128"
    assert str(parse_network("127.1", "t")) == "127.0.0.1/32"
    assert str(parse_network("10.9.8.7/255.255.0.0", "t")) == "10.9.0.0/16"


# -- -m dir / -m dom, regexes ------------------------------------------------------------------

@pytest.mark.parametrize("words, path, expected", [
    ("path_dir img", b"/x/img/y", True),
    ("path_dir img", b"/x/IMG/y", False),
    ("path_dir Img", b"/x/img/y", False),
    ("path_dir -i IMG", b"/x/img/y", True),
    ("path_dir -i img", b"/x/Img/y", True),
    ("path -m dom -i EXAMPLE", b"/www.example.com", True),
    ("path -m dom example", b"/www.Example.com", False),
    ("path -m dom Example", b"/www.Example.com", True),
])
def test_dir_and_dom_words_are_case_sensitive_unless_i(words, path, expected):
    """-m dir/-m dom compare the word exactly, ignoring case only with -i (haproxy 7.1)."""
    assert expr(words)(req(path)) is expected


@pytest.mark.parametrize("path, expected", [(b"/a", True), (b"/b", True), (b"/c", False)])
def test_regexes_that_cannot_be_joined_still_match_each(path, expected):
    """Two regexes naming a group alike cannot make one alternation: each is searched
    on its own, and the ACL matches when one of them does."""
    assert expr("path_reg (?P<n>/a) (?P<n>/b)")(req(path)) is expected


# -- conditions ---------------------------------------------------------------------------------

@pytest.mark.parametrize("words, message", [
    (["if", "a", "b", "or"], "'or' has no ACL on its right in 'if a b or'"),
    (["if", "a", "||", "b", "c", "||"], "'||' has no ACL on its right in 'if a || b c ||'"),
])
def test_a_trailing_operator_is_named_in_the_message(words, message):
    """The last word of a condition ending in an operator is the one named."""
    with pytest.raises(AclError) as exc:
        parse_condition(words)
    assert str(exc.value) == message


def test_a_condition_keeps_its_line_text_and_names():
    """parse_condition records where it was written, its text and its ACL names in order."""
    cond = parse_condition(["unless", "a", "||", "!b"], line=7)
    assert (cond.line, cond.text, cond.names, cond.unless) == (7, "unless a || !b", ("a", "b"), True)
    assert cond.terms == (((False, "a"),), ((True, "b"),))


@pytest.mark.parametrize("words, reads", [
    (None, frozenset()),
    ("if { path_beg /a }", frozenset()),
    ("if { src 10.0.0.0/8 } { dst_port 80 }", frozenset({"src", "dst_port"})),
    ("if { hdr(host) -i a } || !{ src_port 1:1023 }", frozenset({"src_port"})),
    ("if { nbsrv(app) lt 1 }", None),
    ("if { path_beg /a } || { nbsrv(app) lt 1 }", None),
    ("if LOCALHOST", frozenset({"src"})),
])
def test_condition_reads_the_addresses_its_fetches_read(words, reads):
    """condition_reads: the union of the connection addresses the fetches read, frozenset()
    for none (and for no condition), None when some fetch reads anything else."""
    cond = None if words is None else parse_condition(words.split()).bind({})
    assert condition_reads(cond) == reads


def test_an_anonymous_acl_ends_at_its_first_closing_brace():
    """As haproxy's parse_acl_cond: `{` ... the first `}`; a `{` inside is a pattern, and a
    `}` after the ACL is a stray one."""
    cond = parse_condition(["if", "{", "path_beg", "{", "}"])
    ((neg, expr),), = cond.terms
    assert not neg and expr.patterns == (("{", False),)
    with pytest.raises(AclError, match="unexpected '}' in condition"):
        parse_condition(["if", "{", "path_beg", "{", "}", "}"])


def test_condition_reads_cannot_tell_for_what_is_not_a_bound_condition():
    """An unbound name or an AnyOf: what it reads cannot be told (None)."""
    assert condition_reads(parse_condition(["if", "x"])) is None
    assert condition_reads(any_of([parse_condition(["if", "TRUE"]).bind({})])) is None


# -- predefined ACLs ----------------------------------------------------------------------------

def test_predefined_acls_are_named_after_their_keys():
    """Every predefined ACL (haproxy 7.4) is an Acl of its own name; REQ_CONTENT stands for
    ``req.len`` with a boolean match (built afresh by acl._predefined, as at import)."""
    built = acl_mod._predefined()
    assert set(built) == set(PREDEFINED_WORDS) | {"REQ_CONTENT"} == set(PREDEFINED)
    assert {name: a.name for name, a in built.items()} == {name: name for name in built}
    (req_content,) = built["REQ_CONTENT"].exprs
    assert (req_content.criterion, req_content.method) == ("req.len", "bool")
    assert [built["REQ_CONTENT"](req(has_body=b)) for b in (True, False)] == [True, False]
    assert built["METH_GET"](req(method=b"HEAD")) and not built["METH_GET"](req(method=b"PUT"))


# -- any_of: the parts it compiles ---------------------------------------------------------------

ACLS = named(a="path_beg /a", b="path_end .b", m="path -m str /x", n="path -m str /y",
             two=["url_param(k) -m found", "path_beg /two"])


@pytest.mark.parametrize("conds, parts", [
    # negated ACLs on one part of the request are OR-ed into one remembered test
    (["if !a", "if !b"], [("path", True, 2)]),
    (["if !{ path_beg /a }", "if !{ path_end .b }"], [("path", True, 2)]),
    # one set probe alone is not remembered, negated or not; two are
    (["if !m"], [("path", False, 1)]),
    (["if m"], [("path", False, 1)]),
    (["if !m", "if !n"], [("path", True, 2)]),
    (["if { url_param(k) -m found }"], [("urlp", False, 1)]),
    (["if a"], [("path", True, 1)]),
    # a conjunction reads no single part
    (["if a b"], [("", False, 1)]),
])
def test_any_of_groups_tests_by_the_part_they_read(conds, parts):
    """any_of: tests that read one part of the request make one part, remembered unless it
    is a single set probe (a -m str line, url_param -m found)."""
    assert compiled(conds, ACLS)[1] == parts


@pytest.mark.parametrize("conds, path, expected", [
    (["if !a", "if !b"], b"/a.b", False),
    (["if !a", "if !b"], b"/a", True),
    (["if two"], b"/two", True),
    (["if two"], b"/x?k=1", True),
    (["if two"], b"/x?j=1", False),
    (["if REQ_CONTENT"], b"/", False),
])
def test_any_of_decides_as_its_conditions(conds, path, expected):
    """The compiled disjunction holds exactly when one of its conditions does: every line
    of a multi-line ACL counts (url_param -m found among them), internal fetches too."""
    anyof, _ = compiled(conds, ACLS)
    assert anyof(req(path)) is expected
    assert any(parse_condition(c.split()).bind(ACLS)(req(path)) for c in conds) is expected


def test_lines_of_integer_operators_on_one_fetch_are_not_merged():
    """An integer line's operator applies to its own values only: two lines on one fetch
    (``lt 1024``, ``gt 60000``) in a compiled disjunction keep their own operators."""
    acls = named(p=["src_port lt 1024", "src_port gt 60000"])
    anyof, parts = compiled(["if p"], acls)
    assert parts == [("src_port", True, 1)]
    assert [anyof(req(src_port=p)) for p in (80, 1024, 40000, 60000, 61000)] == [True, False, False, False, True]


def test_any_of_with_an_internal_fetch():
    """REQ_CONTENT (an internal fetch, never merged) works inside a compiled disjunction."""
    anyof, _ = compiled(["if REQ_CONTENT", "if a"], ACLS)
    assert anyof(req(b"/x", has_body=True)) is True and anyof(req(b"/x")) is False
    assert anyof(req(b"/a")) is True


def test_every_line_after_an_internal_fetch_line_counts():
    """An ACL whose first line reads an internal fetch (REQ_CONTENT's, never merged) still
    matches by its later lines in a compiled disjunction (an ACL matches when any line does)."""
    (body,) = PREDEFINED["REQ_CONTENT"].exprs
    acls = {"x": Acl("x", (body, expr("path_beg /a")))}
    anyof, _ = compiled(["if x"], acls)
    assert [anyof(req(b"/a")), anyof(req(b"/b", has_body=True)), anyof(req(b"/b"))] == [True, True, False]


def test_any_of_text_joins_the_conditions():
    """AnyOf.text: the conditions as written, joined with ' || '."""
    anyof, _ = compiled(["if !a", "unless b"], ACLS)
    assert anyof.text == "if !a || unless b"


def test_query_prefilter_with_many_literals_lets_a_matching_query_through():
    """From AUTOMATON_MIN query literals on the prefilter is one Aho-Corasick pass: a
    query holding one of them is still tested, one holding none is not a match."""
    n = acl_mod.AUTOMATON_MIN + 2
    conds = ["if { path_beg /a }", "if { hdr(host) -i a.example }"] + [f"if {{ query -m sub k{i}= }}"
                                                                       for i in range(n)]
    anyof, parts = compiled(conds)
    assert parts == [("path", True, 1), ("query", True, 1), ("field", False, 1)]
    pre = type(anyof).__call__.__globals__["PRE"]
    assert pre(b"/p?k5=1") and pre(b"/p?x=1&k25=") and not pre(b"/p?k=1")
    assert anyof(req(b"/p?k5=1")) is True and anyof(req(b"/p?x=1&k25=")) is True
    assert anyof(req(b"/p?k=1")) is False
