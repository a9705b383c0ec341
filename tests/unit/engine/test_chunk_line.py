"""The engine's chunked-framing checker (native/src/chunked.c) against the Python one
(splicer/http/chunked.py): both must accept and refuse exactly the same lines, and agree on
where the body is after each, because the engine relays chunked bodies with the C one while
the loop's fallback uses the Python one. A disagreement would be a smuggling vector."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from splicer.engine.binding import ChunkLines
from splicer.http.chunked import MAX_LINE, MAX_TRAILERS, ChunkedReader, Need
from splicer.http.framing import FramingError


def py_state(r: ChunkedReader) -> tuple[int, int]:
    if r.need is Need.DONE:
        return ChunkLines.END, 0
    if r.need is Need.DATA:
        return ChunkLines.DATA, r.data_left
    return {"size": ChunkLines.SIZE, "data-crlf": ChunkLines.CRLF, "trailer": ChunkLines.TRAILER}[r._state], 0


def both(lines: list[bytes]) -> list[tuple[bool, tuple[int, int]]]:
    """Feed `lines` to both readers; after a size line with data, both take the data as
    moved. Returns the C verdicts and states, after asserting that Python's are the same."""
    py, c = ChunkedReader(), ChunkLines()
    out = []
    for line in lines:
        if c.state == ChunkLines.END:
            break
        if c.state == ChunkLines.DATA:
            py.data_done(py.data_left)
            c.data_done()
        try:
            py.feed_line(line)
            py_ok = True
        except FramingError:
            py_ok = False
        c_ok = c.feed(line)
        assert c_ok == py_ok, (line, c_ok, py_ok)
        if not c_ok:
            out.append((False, (0, 0)))
            break
        assert (c.state, c.data) == py_state(py), line
        out.append((True, (c.state, c.data)))
    return out


@pytest.mark.parametrize("lines, verdicts", [
    ([b"5\r\n", b"\r\n", b"0\r\n", b"\r\n"], [True, True, True, True]),
    ([b"A;ext=1\r\n", b"\r\n", b"0 ;x\r\n", b"Trailer: x\r\n", b"\r\n"], [True] * 5),
    ([b"7fffffffffffffff\r\n"], [True]),
    ([b"8000000000000000\r\n"], [False]),                 # over 2^63-1
    ([b"00000000000000001\r\n"], [False]),                # 17 digits
    ([b"5\n"], [False]),                                  # bare LF
    ([b"5\r\r\n"], [False]),                              # bare CR
    ([b"5;a\x00b\r\n"], [False]),                         # NUL in an extension
    ([b"5;a\x7fb\r\n"], [False]),                         # DEL
    ([b"5;a\tb\r\n"], [True]),                            # HTAB is fine
    ([b" 5\r\n"], [False]), ([b"5 \r\n"], [False]), ([b"+5\r\n"], [False]), ([b"0x5\r\n"], [False]),
    ([b"\r\n"], [False]),                                 # empty size
    ([b"1\r\n", b"x\r\n"], [True, False]),                # data not followed by CRLF
    ([b"0\r\n", b" X: y\r\n"], [True, False]),            # trailer starting with a blank
    ([b"0\r\n", b"no colon\r\n"], [True, False]),
    ([b"1;" + b"e" * (MAX_LINE - 4) + b"\r\n"], [True]),  # exactly MAX_LINE
    ([b"1;" + b"e" * (MAX_LINE - 3) + b"\r\n"], [False]),
    ([b"0\r\n"] + [b"X: " + b"v" * 1000 + b"\r\n"] * (MAX_TRAILERS // 1005 + 1), None),
])
def test_same_verdicts_on_known_lines(lines, verdicts):
    got = [ok for ok, _ in both(lines)]
    if verdicts is None:  # the trailer section grows past MAX_TRAILERS: refused at the end
        assert got[-1] is False and all(got[:-1])
    else:
        assert got == verdicts


VALID = [b"1\r\n", b"ff\r\n", b"10;name=value\r\n", b"0\r\n", b"\r\n", b"X-T: 1\r\n", b"a ; e\r\n"]
ALPHABET = b"0123456789abcdefABCDEFxg;=\" \t:\r\x00\x7f\x80Z"


@st.composite
def line(draw) -> bytes:
    base = draw(st.sampled_from(VALID))
    body = bytearray(base[:-1])  # without its LF
    for _ in range(draw(st.integers(0, 3))):
        op = draw(st.sampled_from(["ins", "del", "rep"]))
        pos = draw(st.integers(0, len(body)))
        ch = draw(st.sampled_from(ALPHABET))
        if op == "ins":
            body.insert(pos, ch)
        elif body and pos < len(body):
            if op == "del":
                del body[pos]
            else:
                body[pos] = ch
    return bytes(body) + b"\n"


@settings(max_examples=800, deadline=None)
@given(st.lists(line(), min_size=1, max_size=8))
def test_same_verdicts_on_mutated_lines(lines):
    both(lines)
