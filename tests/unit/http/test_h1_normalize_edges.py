"""splicer.http.normalize and splicer.http.h1: edge cases the main tests leave open
(haproxy 2.6 configuration.txt 4.2 "http-request normalize-uri"; RFC 3986 sections 3 and
5.2.4; RFC 9112 section 3.2): targets with several '#', escapes after a valid one, ".."
segments at the root, the ambiguity memo's bound, the normalizers' factories, and heads
with several values of a field read through the engine's index."""
from __future__ import annotations

import pytest

from splicer.http import h1
from splicer.http import normalize as nz
from tests.unit.http.test_h1_index import index_of

# -- split_target and the fragment normalizers ------------------------------------------------

@pytest.mark.parametrize("target, parts", [
    (b"/a#b#c", (b"/a", None, b"b#c")),       # the fragment starts at the first '#'
    (b"/a?x#b?y#c", (b"/a", b"x", b"b?y#c")),
    (b"?x", (b"", b"x", None)),                # an empty path before the query
    (b"?", (b"", b"", None)),
])
def test_split_target_cuts_at_the_first_hash_then_the_first_question_mark(target, parts):
    """split_target: the fragment is everything after the first '#', the query everything
    between the first '?' and it, even when the path is empty (RFC 3986 section 3)."""
    assert nz.split_target(target) == parts
    assert nz.join_target(*parts) == target


@pytest.mark.parametrize("name, target, out", [
    ("fragment-strip", b"/a#b#c", b"/a"),
    ("fragment-strip", b"/a?q#b?c#d", b"/a?q"),
    ("fragment-encode", b"#top", b"%23top"),
    ("fragment-encode", b"/a#b#c", b"/a%23b%23c"),
])
def test_fragment_normalizers_act_from_the_first_hash(name, target, out):
    """fragment-strip removes everything from the first '#'; fragment-encode writes every
    '#' as "%23", a '#' at the very start too (haproxy 4.2 normalize-uri)."""
    assert nz.NORMALIZERS[(name, "")](target) == out


# -- the factories behind NORMALIZERS ----------------------------------------------------------
# NORMALIZERS is built when the module is imported; the factories are called here so that
# what they build is checked, not only what was built at import.

@pytest.mark.parametrize("target, out", [
    (b"//a//?x//#y//", b"/a/?x//#y//"),
    (b"//a", b"/a"),
    (b"//a#b//", b"/a#b//"),
])
def test_path_normalizers_rewrite_the_path_and_keep_query_and_fragment(target, out):
    """A path normalizer (_on_path) rewrites the path only: the query and the fragment,
    present or not, come back as they were."""
    assert nz._on_path(nz.merge_slashes)(target) == out


@pytest.mark.parametrize("target, out", [
    (b"/%2f?%2f#%2f", b"/%2F?%2F#%2f"),
    (b"/%2f#%2f", b"/%2F#%2f"),
    (b"/%2f?", b"/%2F?"),
])
def test_percent_normalizers_rewrite_path_and_query_not_the_fragment(target, out):
    """A percent normalizer (_on_path_and_query) rewrites the path and the query, keeps the
    fragment, and adds no query to a target without one."""
    assert nz._on_path_and_query(nz.uppercase_escapes)(target) == out


# -- path-strip-dotdot at the root --------------------------------------------------------------

@pytest.mark.parametrize("path, out, full", [
    (b"/../../a", b"/../../a", b"/a"),         # a ".." after a kept ".." is kept too
    (b"/a/b/..", b"/a/", b"/a/"),              # a final ".." leaves its parent's slash
    (b"/..", b"/..", b"/"),
    (b"/bar/../..", b"/..", b"/"),
    (b"/a/../../..", b"/../..", b"/"),
])
def test_path_strip_dotdot_at_the_root(path, out, full):
    """path-strip-dotdot: a ".." with nothing before it is kept (also after another kept
    one), and removed with `full`; a final ".." that removed a segment ends the path with
    '/' (haproxy 4.2: "/bar/../../" -> "/../", full -> "/")."""
    assert nz.strip_dotdot(path) == out
    assert nz.strip_dotdot(path, True) == full


# -- strict percent normalizers ----------------------------------------------------------------

@pytest.mark.parametrize("target", [
    b"/%41%zz",          # an invalid escape after a valid one
    b"/%41%4",
    b"/?%zz",            # at the very start of the query
    b"/a?x=%41&y=%g1",
])
@pytest.mark.parametrize("name", ["percent-decode-unreserved", "percent-to-uppercase"])
def test_strict_normalizers_check_every_escape(name, target):
    """A `strict` percent normalizer refuses a target with any invalid escape, wherever it
    stands, with NormalizeError "invalid percent-encoding" and status 400."""
    with pytest.raises(nz.NormalizeError) as exc:
        nz.NORMALIZERS[(name, "strict")](target)
    assert str(exc.value) == "invalid percent-encoding"
    assert exc.value.status == 400


@pytest.mark.parametrize("name, target, out", [
    ("percent-decode-unreserved", b"/%41%42?%43%2f", b"/AB?C%2f"),
    ("percent-to-uppercase", b"/%4a%4b?%2f", b"/%4A%4B?%2F"),
])
def test_strict_normalizers_pass_valid_escapes(name, target, out):
    """A `strict` percent normalizer rewrites a target whose escapes are all valid."""
    assert nz.NORMALIZERS[(name, "strict")](target) == out


def test_parse_normalize_defaults():
    """parse_normalize without a condition or a position: cond None, file "", line 0."""
    rule = nz.parse_normalize(["fragment-strip"])
    assert rule == nz.NormalizeRule("fragment-strip", "", nz.NORMALIZERS[("fragment-strip", "")], None, "", 0)


# -- ambiguity ----------------------------------------------------------------------------------

@pytest.mark.parametrize("target, reason", [
    (b"../admin", "dot segment in the path"),
    (b"./a", "dot segment in the path"),
    (b".", "dot segment in the path"),
    (b"../" + b"a" * 1100, "dot segment in the path"),   # longer than the memo's bound
    (b".well-known", None),
])
def test_ambiguity_of_a_target_starting_with_a_dot(target, reason):
    """A target whose first segment is a dot segment is ambiguous even without a "/."."""
    assert nz.ambiguity(target) == reason


def test_ambiguity_remembers_targets_up_to_the_memo_bound():
    """ambiguity() remembers the verdict of a target of at most AMBIGUITY_MEMO_MAX bytes,
    not of a longer one; the verdict is the same either way."""
    at_bound = b"/%41" + b"a" * (nz.AMBIGUITY_MEMO_MAX - 4)
    assert len(at_bound) == nz.AMBIGUITY_MEMO_MAX
    assert nz.ambiguity(at_bound) is None
    assert nz._remembered_ambiguity.cache_info().currsize == 1
    nz._remembered_ambiguity.cache_clear()
    assert nz.ambiguity(at_bound + b"a") is None
    assert nz._remembered_ambiguity.cache_info().currsize == 0


# -- canonical_host -----------------------------------------------------------------------------

@pytest.mark.parametrize("value, out", [
    (b" \tXbox.example.COM.:80\t ", b"Xbox.example.COM"),
    (b"X", b"X"),
    (b"\t[::1]:8080 ", b"[::1]"),
])
def test_canonical_host_strips_only_blanks_port_and_trailing_dots(value, out):
    """canonical_host strips surrounding spaces and tabs, the port and trailing dots, and
    nothing else of the name."""
    assert nz.canonical_host(value) == out


# -- h1: Host, and several values read through the engine's index -------------------------------

def test_request_with_two_host_fields_is_400():
    """RFC 9112 section 3.2: more than one Host field line is answered 400, by splicer's own
    check as well as by h11's."""
    with pytest.raises(h1.HeadError) as exc:
        h1._request(b"GET", b"/", b"1.1", [(b"Host", b"a"), (b"Host", b"a")], h1.F_ALL)
    assert (str(exc.value), exc.value.status) == ("more than one Host field", 400)
    with pytest.raises(h1.HeadError) as exc:
        h1.parse_request(b"GET / HTTP/1.1\r\nHost: a\r\nHost: a\r\n\r\n")
    assert exc.value.status == 400


@pytest.mark.parametrize("fields, upgrade, expect, keep_alive", [
    (b"Connection: upgrade\r\nUpgrade: websocket\r\nUpgrade: h2c\r\n", b"websocket, h2c", False, True),
    (b"Connection: upgrade\r\n", None, False, True),
    (b"Connection: keep-alive\r\nConnection: upgrade\r\nUpgrade: websocket\r\n", b"websocket", False, True),
    (b"Connection: upgrade\r\nConnection: close\r\nUpgrade: a\r\n", b"a", False, False),
    (b"Expect: x\r\nExpect: 100-continue\r\n", None, True, True),
    (b"Expect: x\r\nExpect: y\r\n", None, False, True),
])
def test_indexed_request_reads_every_value_of_a_repeated_field(fields, upgrade, expect, keep_alive):
    """A head parsed from the engine's index reads every Upgrade, Expect and Connection
    field, as the h11 parse does: Upgrade values joined, 100-continue in any Expect field,
    Connection tokens of every line (RFC 9110 sections 7.6.1, 7.8, 10.1.1)."""
    head = b"GET /chat HTTP/1.1\r\nHost: h\r\n" + fields + b"\r\n"
    req = h1.parse_request(head, 101, index_of(head))
    assert req.source is not None  # (the index was used)
    assert (req.upgrade, req.expect_continue, req.keep_alive) == (upgrade, expect, keep_alive)
    assert req == h1._parse_request(head)
