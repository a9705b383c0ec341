"""The express lane's request heads (native/src/xhead.c) against the stream path's.

What the engine sends for a request it routes by itself (spl_xhead_write, with the
frontend's request rules as its program: http/rules.py plain_edits(), binding.
xrules_program()) must be, byte for byte, what the stream path sends for the same request
under the same rules: splicer/http/h1.py forward_request_head() over the reference parse
(h11 and the strict rules), with X-Forwarded-For. Every head the lane takes must be one the
reference accepts, with the body the engine sends. Heads: the tokenizer's corpus (real
browser and API heads, their mutations, every head of tests/cases), hypothesis heads built
from the fields the rules name; rules: conf/site.cfg's and sets that delete, override,
repeat, and read fields by occurrence. `python -m tests.unit.engine.test_xhead` prints the
counts.
"""
from __future__ import annotations

import ipaddress
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from splicer.engine import binding
from splicer.errors import EngineError
from splicer.http import h1
from splicer.http.framing import BodyKind
from splicer.http.h1 import HeadError
from splicer.http.logformat import StreamInfo
from splicer.http.rules import parse_rule, plain_edits
from tests.unit.engine.test_h1_tokenizer import REQUESTS, corpus

CLIENT = "192.0.2.77"
ADDR = int(ipaddress.IPv4Address(CLIENT))
INFO = StreamInfo(CLIENT, 40000, "127.0.0.1", 8080, "www", "farm")

RULESETS = [
    [],
    # conf/site.cfg's
    [["set-header", "X-Forwarded-Proto", "http"], ["set-header", "X-Forwarded-Host", "%[req.hdr(host)]"],
     ["add-header", "Via", "1.1 splicer"]],
    [["del-header", "cookie"], ["del-header", "X-Forwarded-For"]],
    [["set-header", "Host", "backend.internal"], ["add-header", "X-Real-IP", "%[src]"]],
    [["add-header", "X-Client", "%ci"], ["set-header", "X-A", "%[req.hdr(accept,1)]"],
     ["set-header", "X-B", "%[req.hdr(accept,-2)]"], ["set-header", "X-C", "%[req.hdr(accept,3)]"]],
    [["add-header", "X-C", "pre-%[req.hdr(x-spaces)]-%[req.hdr(x-tab,2)]-post"],
     ["add-header", "X-E", "%[req.hdr(x-empty)]|%[req.hdr(x-none)]|%[req.hdr(accept,0)]|%[req.hdr(accept,99)]"]],
    [["add-header", "X-T", "1"], ["add-header", "x-t", "2"], ["del-header", "X-T"], ["add-header", "X-T", "3"]],
    [["del-header", "USER-AGENT"], ["set-header", "accept-encoding", "identity"], ["add-header", "X-P", "100%%"]],
    [["set-header", "X-Same", "%[req.hdr(x-same)]"], ["set-header", "X-Obs", "%[req.hdr(x-obs,-1)]"]],
    [["set-header", "Referer", "%[req.hdr(referer)]"], ["add-header", "Sec-Fetch-Mode", "%[req.hdr(sec-fetch-mode)]"],
     ["del-header", "Sec-Fetch-Site"]],
]


def rules_of(words: list[list[str]]) -> tuple:
    return tuple(parse_rule(list(w), "request") for w in words)


PROGRAMS = []
for _words in RULESETS:
    _rules = rules_of(_words)
    _edits = plain_edits(_rules)
    assert _edits is not None, _words
    PROGRAMS.append((_rules, binding.xrules_program(_edits)))


def reference(head: bytes):
    """The reference parse of a request head, or None when it refuses it."""
    for memo in (h1._REQUESTS, h1._FORWARDED_REQUESTS):
        memo.reset()
    try:
        return h1._parse_request(head)
    except HeadError:
        return None


def disagreements(head: bytes, stats: dict | None = None) -> list[str]:
    """Feed one head to the lane's writer under every rule set; the disagreements with the
    stream path, if any."""
    bad = []
    for rules, program in PROGRAMS:
        for xff in (False, True):
            got = binding.xhead(head, program, ADDR, xff)
            if got is None:
                continue
            if stats is not None:
                stats["compared"] += 1
            req = reference(head)
            if req is None:
                bad.append("the lane takes a head the reference refuses")
                return bad
            if req.method not in (b"GET", b"HEAD", b"POST", b"PUT", b"PATCH", b"DELETE") or req.version != b"1.1":
                bad.append(f"the lane takes a {req.method!r} HTTP/{req.version!r} request")
            fr = req.framing
            if fr.kind not in (BodyKind.NONE, BodyKind.LENGTH) or (req.method in (b"GET", b"HEAD") and fr.length):
                bad.append(f"the lane takes a request framed {fr}")
            want = h1.forward_request_head(req, CLIENT if xff else None, rules=rules, stream=INFO)
            if got != want:
                bad.append(f"rules {[r.action + ' ' + r.name.decode() for r in rules]} xff={xff}: "
                           f"lane {got!r} != stream path {want!r}")
    return bad


# --- heads -------------------------------------------------------------------------------------

FIELD_NAMES = [b"Host", b"host", b"Accept", b"Cookie", b"X-Forwarded-For", b"X-Forwarded-Proto", b"x-t",
               b"X-Same", b"Referer", b"X-Obs", b"User-Agent", b"Content-Length", b"Connection", b"X-Tab"]
FIELD_VALUES = [b"a", b"a, b", b"a,b,,c", b" x ", b"", b",", b"q=0.9, text/html ,  */*", b"example.com",
                b"example.com:8080", b"keep-alive", b"close", b"3", b"caf\xc3\xa9", b"a\tb", b"1.1 other",
                b"a,\tb\t, \tc"]


@st.composite
def request_heads(draw):
    method = draw(st.sampled_from([b"GET", b"HEAD", b"POST", b"DELETE"]))
    target = draw(st.sampled_from([b"/", b"/a?b=1", b"/x/y.html", b"/%41", b"/./a"]))
    fields = draw(st.lists(st.tuples(st.sampled_from(FIELD_NAMES), st.sampled_from(FIELD_VALUES)), max_size=9))
    if draw(st.booleans()):
        fields.insert(draw(st.integers(0, len(fields))), (b"Host", b"example.com"))
    head = method + b" " + target + b" HTTP/1.1\r\n" + b"".join(n + b": " + v + b"\r\n" for n, v in fields) + b"\r\n"
    return head


def test_site_cfg_rules_on_a_browser_head_are_the_stream_paths():
    rules, program = PROGRAMS[1]
    head = REQUESTS[0]
    got = binding.xhead(head, program, ADDR, True)
    assert got is not None
    assert got.endswith(b"X-Forwarded-Proto: http\r\nX-Forwarded-Host: www.example.com\r\nVia: 1.1 splicer\r\n"
                        b"X-Forwarded-For: 192.0.2.77\r\n\r\n")
    assert b"Connection:" not in got
    assert disagreements(head) == []


def test_the_lane_writes_what_the_stream_path_sends_on_every_head_of_the_corpus():
    stats = {"compared": 0}
    bad = {}
    for head in corpus(n_mutations=300):
        d = disagreements(head, stats)
        if d:
            bad[head] = d
    assert not bad, list(bad.items())[:5]
    assert stats["compared"] > 2000  # (the corpus' heads the lane takes, under every rule set)


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(request_heads())
def test_the_lane_writes_what_the_stream_path_sends_on_heads_of_the_rules_fields(head):
    assert disagreements(head) == []


def test_an_occurrence_is_read_without_its_blanks():
    rules, program = PROGRAMS[5]
    head = b"GET / HTTP/1.1\r\nHost: h\r\nX-Tab: a,\tb\t, \tc\r\nX-Spaces: x\r\n\r\n"
    got = binding.xhead(head, program, ADDR)
    assert b"\r\nX-C: pre-x-b-post\r\n" in got
    assert disagreements(head) == []


def test_a_head_that_does_not_fit_goes_to_the_caller():
    rules, program = PROGRAMS[1]
    head = b"GET / HTTP/1.1\r\nHost: " + b"h" * 200 + b"\r\n\r\n"
    full = binding.xhead(head, program, ADDR, True)
    ix = binding.h1_index(head)
    lib, ffi = binding.lib, binding.ffi
    out = ffi.new("char[]", len(full))
    idx = ffi.new("uint32_t[]", ix)
    assert lib.spl_xhead_write(head, len(head), idx, program, len(program), 1, ADDR, out, len(full)) == len(full)
    assert lib.spl_xhead_write(head, len(head), idx, program, len(program), 1, ADDR, out, len(full) - 1) == 0
    assert lib.spl_xhead_write(head, len(head), idx, program, len(program), 1, ADDR, ffi.NULL, len(full)) == len(full)
    for cap in range(len(full) - 40, len(full)):  # nothing is written beyond cap
        guard = ffi.new("char[]", len(full) + 8)
        ffi.memmove(guard, b"\xa5" * (len(full) + 8), len(full) + 8)
        assert lib.spl_xhead_write(head, len(head), idx, program, len(program), 1, ADDR, guard, cap) == 0
        assert ffi.unpack(guard, len(full) + 8)[cap:] == b"\xa5" * (len(full) + 8 - cap), cap


def test_only_whole_programs_are_taken():
    """Every cut of a program inside an op or a part is refused (the engine reads programs
    unchecked on the hot path); a cut between ops is a shorter program."""
    program = PROGRAMS[5][1] + PROGRAMS[1][1] + PROGRAMS[6][1]
    ends = {0}
    for edits in (plain_edits(rules_of(RULESETS[5])), plain_edits(rules_of(RULESETS[1])),
                  plain_edits(rules_of(RULESETS[6]))):
        for e in edits:
            ends.add(max(ends) + len(binding.xrules_program((e,))))
    assert max(ends) == len(program)
    for n in range(len(program) + 1):
        rc = binding.lib.spl_xrules_check(program[:n], n)
        assert (rc == 0) == (n in ends), n
    for bad in (b"\x03\x01a", b"\x01\x00", b"\x02\x01a\x01\x04", b"\x02\x01a\x01\x02\x01\x00",
                b"\x02\x01a\x01\x01\x05\x00abc"):
        assert binding.lib.spl_xrules_check(bad, len(bad)) != 0, bad
        with pytest.raises(EngineError):
            binding.xhead(b"GET / HTTP/1.1\r\nHost: a\r\n\r\n", bad)


def test_programs_beyond_the_engines_limits_are_none():
    many = tuple(("add", b"X-%d" % i, (b"v",)) for i in range(binding.lib.SPL_XRULES_ADDS + 1))
    assert binding.xrules_program(many[:-1]) is not None
    assert binding.xrules_program(many) is None
    assert binding.xrules_program((("add", b"X", (b"v" * 1100,)),)) is None
    assert binding.xrules_program((("add", b"X", (("hdr", b"a", 128),)),)) is None
    assert binding.xrules_program((("add", b"X", (("hdr", b"a", -128),)),)) is not None


@pytest.mark.parametrize("words", [
    ["set-header", "X-A", "%[path]"],                      # a fetch the engine does not make
    ["set-header", "X-A", "%cp"],
    ["replace-header", "X-A", "a", "b"],
    ["set-header", "X-A", "1", "if", "{", "path", "/x", "}"],  # a condition
    ["set-header", "X-A", "%[req.hdr(connection)]"],     # hop-by-hop: gone before the rules run
    ["set-header", "X-A", "%[req.hdr(content-length)]"],  # framing: rewritten before the rules run
])
def test_rules_the_engine_does_not_make(words):
    assert plain_edits(rules_of([words])) is None


def test_a_field_a_rule_before_touched_is_not_read_as_received():
    assert plain_edits(rules_of([["add-header", "X-A", "1"], ["set-header", "X-B", "%[req.hdr(x-a)]"]])) is None
    assert plain_edits(rules_of([["del-header", "X-A"], ["set-header", "X-B", "%[req.hdr(x-a)]"]])) is None
    # a rule that reads its own field reads it before it deletes it
    assert plain_edits(rules_of([["set-header", "X-A", "<%[req.hdr(x-a)]>"]])) == (
        ("del", b"x-a"), ("add", b"X-A", (b"<", ("hdr", b"x-a", -1), b">")))


def main() -> int:
    stats = {"compared": 0}
    heads = corpus()
    bad = 0
    for head in heads:
        d = disagreements(head, stats)
        bad += bool(d)
        for line in d:
            print(f"{head!r}: {line}")
    print(f"heads: {len(heads)}, rule sets: {len(PROGRAMS)}, heads written and compared: {stats['compared']}, "
          f"disagreements: {bad}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
