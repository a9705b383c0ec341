"""splicer.http.acl: ACL lines, pattern matching methods, conditions and predefined ACLs
(haproxy configuration.txt 7.1, 7.2, 7.4), as tables of words x request -> bool."""
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from splicer.http.acl import (PREDEFINED, AclError, compile_matcher, parse_acl, parse_acl_expr,
                              parse_condition, parse_ipv4, split_condition)
from splicer.http.sample import RequestView
from splicer.http.acl import Acl


def req(url=b"/static/img/logo.png?id=42", method=b"GET", version=b"1.1", fields=None,
        src="192.0.2.7", src_port=40000, target=None, has_body=False, nbsrv=None):
    fields = [(b"Host", b"www.Example.com"), (b"Accept", b"text/html, */*")] if fields is None else fields
    return RequestView(method, url, target or url, version, fields, src, src_port, "10.0.0.1", 80,
                       has_body, nbsrv)


def acl(text: str):
    return parse_acl_expr(text.split(), "acl 't'")


@pytest.mark.parametrize("words, expected", [
    # strings: exact, case, prefix, suffix, substring, regex, dir, dom, len, found
    ("hdr(host) www.Example.com", True),
    ("hdr(accept) TEXT/html", False),
    ("hdr(accept) -i TEXT/html", True),
    # the Host field is also offered as the origin reads it: lower case, no port or dot
    ("hdr(host) www.example.com", True),
    ("hdr(host) WWW.example.com", False),
    ("hdr(host) -i www.example.com", True),
    ("hdr_beg(host) www.", True),
    ("hdr_beg(host) -i WWW.", True),
    ("hdr_beg(host) WWW.", False),
    ("hdr_end(host) -i .com", True),
    ("hdr_sub(host) Example", True),
    ("hdr_sub(host) example", True),  # the Host as the origin reads it: lower case
    ("hdr_sub(host) EXAMPLE", False),
    ("hdr_reg(host) ^www\\.[A-Z]", True),
    ("hdr_reg(host) -i ^WWW\\.EXAMPLE", True),
    ("hdr_dom(host) -i example", True),
    ("hdr_dom(host) -i exam", False),
    ("hdr_dom(host) -i .example.com.", True),
    ("hdr_len(host) 15", True),
    ("hdr_len(host) gt 20", False),
    ("hdr(accept) */*", True),
    ("req.fhdr(accept) */*", False),
    ("req.fhdr(accept) -m end */*", True),
    ("hdr(x-none) -m found", False),
    ("hdr(host) -m found", True),
    ("hdr_cnt(accept) eq 2", True),
    ("hdr_cnt(x-none) eq 0", True),
    ("hdr(host) -m beg -i WWW", True),
    ("hdr(host) -- -i", False),
    # paths
    ("path /static/img/logo.png", True),
    ("path /static/img/logo.png?id=42", False),
    ("path_beg /static/ /api/", True),
    ("path_beg /api/", False),
    ("path_end .png .jpg", True),
    ("path_sub /img/", True),
    ("path_reg ^/static/.*\\.png$", True),
    ("path_dir img", True),
    ("path_dir img/logo.png", True),
    ("path_dir ing", False),
    ("path_dir /static/img", True),
    ("path_len 20", True),
    ("path -m beg /static", True),
    ("url_beg /static", True),
    ("url_sub id=42", True),
    ("url_param(id) 42", True),
    ("url_param(id) -m int gt 41", True),
    ("urlp(id) 43", False),
    ("query id=42", True),
    ("query -m found", True),
    # method, version
    ("method GET HEAD", True),
    ("method get", True),
    ("method POST", False),
    ("req.ver 1.1", True),
    ("req.ver 1.0", False),
    # addresses and ports
    ("src 192.0.2.0/24", True),
    ("src 192.0.2.8", False),
    ("src 192.0.2.7", True),
    ("src 192.0.2.0/255.255.255.0", True),
    ("src 10.0.0.0/8 ::1", False),
    ("src ::ffff:192.0.2.7", True),
    ("src -m str 192.0.2.7", True),
    ("dst 10.0.0.1", True),
    ("src_port 1024:65535", True),
    ("src_port :1023", False),
    ("src_port 40000:", True),
    ("src_port ge 40000", True),
    ("src_port gt 40000", False),
    ("src_port lt 40001", True),
    ("src_port le 39999", False),
    ("src_port eq 1 40000", True),
    ("dst_port 80", True),
    # booleans
    ("always_true", True),
    ("always_false", False),
])
def test_acl_table(words, expected):
    assert acl(words)(req()) is expected


@pytest.mark.parametrize("src, patterns, expected", [
    ("::1", "::1", True),
    ("::1", "127.0.0.1/8", False),
    ("2001:db8::5", "2001:db8::/32", True),
    ("2001:db8::5", "2001:db9::/32", False),
    ("::ffff:10.1.2.3", "10.0.0.0/8", True),
    ("::10.1.2.3", "10.0.0.0/8", True),
    ("2002:a01:203::", "10.1.2.3", True),
    ("10.1.2.3", "::ffff:10.1.2.0/120", True),
    ("127.0.0.5", "127.1/8", True),
    ("unknown", "0.0.0.0/0", False),
])
def test_ip_matching_across_families(src, patterns, expected):
    assert acl("src " + patterns)(req(src=src)) is expected


def test_abbreviated_ipv4_as_inet_aton():
    assert str(parse_ipv4("127.1")) == "127.0.0.1"
    assert str(parse_ipv4("10.12")) == "10.0.0.12"
    assert str(parse_ipv4("192.168.1")) == "192.168.0.1"
    with pytest.raises(ValueError):
        parse_ipv4("256.1.1.1")


def test_i_applies_to_the_patterns_after_it_only(tmp_path):
    (tmp_path / "exact.lst").write_text("WWW.EXAMPLE.COM\n")
    (tmp_path / "folded.lst").write_text("IMG.EXAMPLE.COM\n")
    _, a = parse_acl(["x", "hdr(host)", "-f", "exact.lst", "-i", "-f", "folded.lst", "TEST"], str(tmp_path))
    hits = [h for h in (b"www.example.com", b"WWW.EXAMPLE.COM", b"img.example.com", b"test")
            if a(req(fields=[(b"Host", h)]))]
    assert hits == [b"WWW.EXAMPLE.COM", b"img.example.com", b"test"]


def test_a_flag_after_a_value_is_a_pattern():
    assert acl("hdr(x-a) www.example.com -i")(req(fields=[(b"X-A", b"-i")])) is True
    assert acl("hdr(x-a) www.example.com -i")(req(fields=[(b"X-A", b"www.Example.com")])) is False


def test_absent_sample_never_matches_and_negation_is_true_for_it():
    cond = parse_condition(["unless", "{", "hdr(x-token)", "secret", "}"]).bind({})
    assert cond(req()) is True
    assert parse_condition(["if", "!", "{", "hdr(x-token)", "-m", "found", "}"]).bind({})(req()) is True


def test_many_prefixes_use_one_probe_per_distinct_length():
    pats = [(f"/p{i}/", False) for i in range(5000)]
    m = compile_matcher("beg", pats, "t")
    assert m([b"/p4999/x"]) and m([b"/p0/"]) and not m([b"/p5000/"]) and not m([b"/p"])
    m = compile_matcher("end", [(f".x{i}", True) for i in range(1000)], "t")
    assert m([b"file.X999"]) and not m([b"file.x1000"])


def test_pattern_files(tmp_path):
    (tmp_path / "hosts.lst").write_text("# comment\n\n   static.example\n\tIMG.example\n #not a comment\n")
    name, expr = parse_acl(["h", "hdr(host)", "-i", "-f", "hosts.lst", "extra"], str(tmp_path))
    assert name == "h"
    hit = [w for w in (b"static.example", b"img.example", b"#not a comment", b"extra", b"# comment")
           if expr(req(fields=[(b"Host", w)]))]
    assert hit == [b"static.example", b"img.example", b"#not a comment", b"extra"]


def test_pattern_file_lines_end_at_lf_only(tmp_path):
    """Lines end at LF (a CR before it dropped), as haproxy reads them: a pattern may hold
    U+2028, U+0085 or a form feed, which str.splitlines() would break at."""
    (tmp_path / "p.lst").write_bytes("abc\u2028def\r\nx\x0cy\nnel\u0085z".encode())
    from splicer.http.acl import read_pattern_file
    assert read_pattern_file("p.lst", str(tmp_path), "acl 'x'") == ["abc\u2028def", "x\x0cy", "nel\u0085z"]
    _, expr = parse_acl(["x", "req.hdr(x)", "-m", "sub", "-f", "p.lst"], str(tmp_path))
    assert not expr(req(fields=[(b"X", b"abc")])) and not expr(req(fields=[(b"X", b"def")]))
    assert expr(req(fields=[(b"X", "-abc\u2028def-".encode())]))


def test_a_pattern_ends_at_its_lines_first_cr_or_nul(tmp_path):
    """haproxy's pattern.c ends a pattern at the first CR or LF (or NUL) of its line: the
    line "cr\rmid" is the pattern "cr", not one that can never match (found by a fresh
    tester against haproxy 2.6)."""
    (tmp_path / "p.lst").write_bytes(b"cr\rmid\nnul\x00after\n\rgone\n  sp\rx\r\n")
    from splicer.http.acl import read_pattern_file
    assert read_pattern_file("p.lst", str(tmp_path), "acl 'x'") == ["cr", "nul", "sp"]
    _, expr = parse_acl(["x", "req.hdr(x)", "-m", "sub", "-f", "p.lst"], str(tmp_path))
    assert expr(req(fields=[(b"X", b"-cr-")])) and not expr(req(fields=[(b"X", b"mid")]))


def test_m_must_precede_f_and_file_must_exist(tmp_path):
    (tmp_path / "p.lst").write_text("/a\n")
    with pytest.raises(AclError) as exc:
        parse_acl(["x", "path", "-f", "p.lst", "-m", "beg"], str(tmp_path))
    assert str(exc.value) == "acl 'x': '-m' must come before '-f'"
    with pytest.raises(AclError) as exc:
        parse_acl(["x", "path", "-f", "none.lst"], str(tmp_path))
    assert str(exc.value) == "acl 'x': cannot read pattern file 'none.lst': No such file or directory"


@pytest.mark.parametrize("words, message", [
    (["x"], "'acl' expects a name and a criterion: acl <name> <criterion> [flags] [values]"),
    (["a b", "path", "/"], "character ' ' is not permitted in acl name 'a b'"),
    (["x", "paht", "/"], "acl 'x': unknown fetch method 'paht'; did you mean 'path'?"),
    (["x", "path", "-z", "/"], "acl 'x': unknown flag '-z' (supported: -i, -f, -m, -n, --)"),
    (["x", "path", "-m", "begin", "/"], "acl 'x': unknown matching method 'begin' (supported: found, bool, "
                                        "int, ip, bin, len, str, sub, reg, beg, end, dir, dom)"),
    (["x", "path", "-m", "beg", "-m", "end", "/"], "acl 'x': only one '-m' matching method is allowed"),
    (["x", "path_beg", "-m", "end", "/"], "acl 'x': '-m' cannot be used with the ACL derivative 'path_beg' "
                                           "(use its base fetch instead)"),
    (["x", "path_reg", "(unclosed"], "acl 'x': invalid regex '(unclosed': missing ), unterminated subpattern "
                                     "at position 0"),
    (["x", "src", "10.0.0.300"], "acl 'x': '10.0.0.300' is not an IP address or network"),
    (["x", "src", "www.example.com"], "acl 'x': 'www.example.com' is not an IP address or network"),
    (["x", "src_port", "eighty"], "acl 'x': 'eighty' is not an integer or a range (e.g. 80, 1024:65535, :1023)"),
    (["x", "src_port", "gt"], "acl 'x': operator 'gt' expects a value"),
    (["x", "src_port", "gt", "1:2"], "acl 'x': operator 'gt' cannot be used with the range '1:2'"),
    (["x", "path"], "acl 'x': no pattern to match 'path' against (use '-m found' to test presence)"),
    (["x", "path", "-m", "found", "/"], "acl 'x': '-m found' takes no pattern, got '/'"),
    (["x", "path", "-f"], "acl 'x': '-f' expects a file name"),
    (["x", "path", "-M", "m.map"], "acl 'x': flag '-M' is not supported"),
    (["x", "path", "-m", "bin", "zz"], "acl 'x': '-m bin' patterns are hexadecimal strings of even length"),
])
def test_acl_errors_are_exact(words, message):
    with pytest.raises(AclError) as exc:
        parse_acl(words)
    assert str(exc.value) == message


# -- conditions --------------------------------------------------------------------------------

ACLS = {"get": Acl("get", (acl("method GET"),)), "post": Acl("post", (acl("method POST"),)),
        "static": Acl("static", (acl("path_beg /static"), acl("path_end .css"))),
        "api": Acl("api", (acl("path_beg /api"),))}


@pytest.mark.parametrize("words, expected", [
    ("if get", True),
    ("unless get", False),
    ("if get static", True),
    ("if get api", False),
    ("if api || static", True),
    ("if api or post", False),
    ("if !api", True),
    ("if ! api", True),
    ("if !!api", False),
    ("if api || get !post static", True),
    ("if post || api || { path_sub logo }", True),
    ("if get { path_beg /static } !{ hdr(host) -i www.example.com }", False),
    ("unless api || post", True),
    ("if TRUE", True),
    ("if FALSE || METH_GET HTTP_1.1 HTTP_URL_SLASH", True),
])
def test_conditions(words, expected):
    assert parse_condition(words.split()).bind(ACLS)(req()) is expected


def test_same_name_lines_or_together_in_order():
    # "static" above: path_beg /static OR path_end .css
    assert ACLS["static"](req(b"/x/site.css")) is True
    assert ACLS["static"](req(b"/x/site.js")) is False


def test_names_are_bound_later_and_unknown_ones_raise_keyerror():
    cond = parse_condition(["if", "get", "!nope"])
    assert cond.names == ("get", "nope")
    with pytest.raises(KeyError) as exc:
        cond.bind(ACLS)
    assert exc.value.args == ("nope",)


@pytest.mark.parametrize("words, message", [
    (["if"], "'if' expects a condition (e.g. 'if host_www' or 'if { path_beg /api }')"),
    (["if", "{", "path_beg", "/a"], "missing '}' in condition 'if { path_beg /a'"),
    (["if", "a", "}"], "unexpected '}' in condition 'if a }'"),
    (["if", "{", "}"], "empty anonymous acl '{ }'"),
    (["if", "||", "a"], "'||' has no ACL on its left in 'if || a'"),
    (["if", "a", "or"], "'or' has no ACL on its right in 'if a or'"),
    (["if", "a", "!"], "'!' without an ACL in 'if a !'"),
    (["if", "a$"], "invalid ACL name 'a$' in condition"),
    (["if", "{", "paht", "/", "}"], "anonymous acl: unknown fetch method 'paht'; did you mean 'path'?"),
    (["when", "a"], "a condition starts with 'if' or 'unless'"),
])
def test_condition_errors_are_exact(words, message):
    with pytest.raises(AclError) as exc:
        parse_condition(words)
    assert str(exc.value) == message


def test_split_condition():
    assert split_condition(["set-header", "A", "b", "if", "x"]) == (["set-header", "A", "b"], ["if", "x"])
    assert split_condition(["deny"]) == (["deny"], None)


# -- predefined ACLs ---------------------------------------------------------------------------

@pytest.mark.parametrize("name, request_, expected", [
    ("TRUE", req(), True),
    ("FALSE", req(), False),
    ("HTTP", req(), True),
    ("HTTP_1.0", req(version=b"1.0"), True),
    ("HTTP_1.0", req(), False),
    ("HTTP_1.1", req(), True),
    ("HTTP_2.0", req(), False),
    ("METH_GET", req(method=b"HEAD"), True),
    ("METH_GET", req(method=b"POST"), False),
    ("METH_POST", req(method=b"POST"), True),
    ("METH_PUT", req(method=b"PUT"), True),
    ("METH_DELETE", req(method=b"DELETE"), True),
    ("METH_HEAD", req(method=b"GET"), False),
    ("METH_OPTIONS", req(method=b"OPTIONS"), True),
    ("METH_TRACE", req(method=b"TRACE"), True),
    ("METH_CONNECT", req(method=b"CONNECT"), True),
    ("LOCALHOST", req(src="127.0.0.1"), True),
    ("LOCALHOST", req(src="127.9.9.9"), True),
    ("LOCALHOST", req(src="::1"), True),
    ("LOCALHOST", req(), False),
    ("HTTP_URL_ABS", req(b"http://a/b", target=b"/b"), True),
    ("HTTP_URL_ABS", req(b"/b"), False),
    ("HTTP_URL_SLASH", req(b"/b"), True),
    ("HTTP_URL_SLASH", req(b"*", method=b"OPTIONS"), False),
    ("HTTP_URL_STAR", req(b"*", method=b"OPTIONS"), True),
    ("HTTP_CONTENT", req(fields=[(b"Content-Length", b"3")]), True),
    ("HTTP_CONTENT", req(fields=[(b"Content-Length", b"0")]), False),
    ("HTTP_CONTENT", req(), False),
    ("REQ_CONTENT", req(has_body=True), True),
    ("REQ_CONTENT", req(), False),
])
def test_predefined_acls(name, request_, expected):
    assert PREDEFINED[name](request_) is expected


def test_nbsrv_acl():
    assert acl("nbsrv(app) lt 2")(req(nbsrv={"app": 1}.get)) is True
    assert acl("nbsrv(app) lt 2")(req(nbsrv={"app": 2}.get)) is False


_SUB_ALPHABET = b"aAbB.*+?()[]\\|^$-%=/ \xff"


@given(st.lists(st.tuples(st.binary(max_size=4).map(lambda b: bytes(_SUB_ALPHABET[x % len(_SUB_ALPHABET)] for x in b)),
                          st.booleans()), min_size=1, max_size=8),
       st.binary(max_size=12).map(lambda b: bytes(_SUB_ALPHABET[x % len(_SUB_ALPHABET)] for x in b)))
@settings(max_examples=400, deadline=None)
def test_sub_matches_when_some_pattern_occurs(patterns, sample):
    """-m sub (the patterns searched as latin-1 text) holds exactly when one pattern, as it
    is or ASCII-lower-cased on both sides with -i, occurs in the sample: any byte, regex
    metacharacters included, is literal, an empty pattern occurs everywhere."""
    m = compile_matcher("sub", [(p.decode("latin-1"), i) for p, i in patterns], "acl 't'")
    texts = [(p.decode("latin-1").encode(), i) for p, i in patterns]  # (what the config's text gives)
    naive = any((p.lower() in sample.lower()) if i else (p in sample) for p, i in texts)
    assert m.test_one(sample) is naive


@given(st.lists(st.tuples(st.binary(max_size=4).map(lambda b: bytes(_SUB_ALPHABET[x % len(_SUB_ALPHABET)] for x in b)),
                          st.booleans()), min_size=1, max_size=60),
       st.binary(max_size=40).map(lambda b: bytes(_SUB_ALPHABET[x % len(_SUB_ALPHABET)] for x in b)))
@settings(max_examples=300, deadline=None)
def test_sub_with_many_patterns_is_the_same_one_pass(patterns, sample):
    """From acl.AUTOMATON_MIN patterns on, -m sub is one Aho-Corasick pass: the same verdicts
    as the searches one by one (and as a plain substring test)."""
    from splicer.http import acl as acl_mod
    many = [(p.decode("latin-1"), i) for p, i in patterns]
    while len(many) < acl_mod.AUTOMATON_MIN:  # (padding that never occurs: \x01 is not in the alphabet)
        many.append((f"\x01{len(many)}", len(many) % 2 == 0))
    m = compile_matcher("sub", many, "acl 't'")
    texts = [(p.encode(), i) for p, i in many]
    naive = any((p.lower() in sample.lower()) if i else (p in sample) for p, i in texts)
    assert m.test_one(sample) is naive


def test_sub_with_hundreds_of_patterns_uses_one_automaton():
    from splicer.http import acl as acl_mod
    pats = [(f"bot{i}x", i % 2 == 1) for i in range(500)]
    m = compile_matcher("sub", pats, "acl 't'")
    exact = frozenset(p.encode() for p, i in pats if not i)
    folded = frozenset(p.encode().lower() for p, i in pats if i)
    assert acl_mod._substring_tester(exact, folded).__name__ == "test_sub_many"
    assert acl_mod._substring_tester(frozenset([b"a"]), frozenset()).__name__ == "test_sub"
    ua = b"Mozilla/5.0 " * 700  # an 8 KB header
    assert not m.test_one(ua)
    assert m.test_one(ua + b"BOT499X") and not m.test_one(ua + b"BOT498X") and m.test_one(ua + b"bot498x")
    assert acl_mod.AUTOMATON_MIN <= 500
