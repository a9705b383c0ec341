"""splicer.http.chunked: the step-by-step chunked reader (RFC 9112 section 7.1)."""
import pytest

from splicer.http.chunked import MAX_LINE, MAX_TRAILERS, ChunkedReader, Need
from splicer.http.framing import FramingError


def run(lines_and_data):
    """Drive a reader over a list of lines (bytes) and data counts (int); return it."""
    r = ChunkedReader()
    for step in lines_and_data:
        if isinstance(step, int):
            assert r.need is Need.DATA
            r.data_done(step)
        else:
            assert r.need is Need.LINE
            r.feed_line(step)
    return r


def size_of(line):
    r = ChunkedReader()
    r.feed_line(line)
    assert r.need is Need.DATA
    return r.data_left


def test_new_reader_needs_a_line():
    r = ChunkedReader()
    assert (r.need, r.data_left, r.total_data) == (Need.LINE, 0, 0)


def test_whole_body_step_by_step():
    r = ChunkedReader()
    r.feed_line(b"5\r\n")
    assert (r.need, r.data_left) == (Need.DATA, 5)
    r.data_done(2)
    assert (r.need, r.data_left, r.total_data) == (Need.DATA, 3, 2)
    r.data_done(3)
    assert (r.need, r.data_left, r.total_data) == (Need.LINE, 0, 5)
    r.feed_line(b"\r\n")
    assert r.need is Need.LINE
    r.feed_line(b"a\r\n")
    assert (r.need, r.data_left) == (Need.DATA, 10)
    r.data_done(10)
    r.feed_line(b"\r\n")
    r.feed_line(b"0\r\n")
    assert r.need is Need.LINE
    r.feed_line(b"\r\n")
    assert (r.need, r.total_data) == (Need.DONE, 15)


@pytest.mark.parametrize("line, size", [
    (b"1\r\n", 1), (b"a\r\n", 10), (b"A\r\n", 10), (b"fF\r\n", 255), (b"0010\r\n", 16),
    (b"100000000\r\n", 2**32), (b"1000000001\r\n", 2**36 + 1), (b"7fffffffffffffff\r\n", 2**63 - 1),
    (b"0000000000000001\r\n", 1),
])
def test_hex_sizes(line, size):
    assert size_of(line) == size


def test_size_above_4gib_counts_exactly():
    r = ChunkedReader()
    r.feed_line(b"100000005\r\n")
    r.data_done(2**32)
    assert (r.need, r.data_left, r.total_data) == (Need.DATA, 5, 2**32)
    r.data_done(5)
    assert (r.need, r.total_data) == (Need.LINE, 2**32 + 5)


@pytest.mark.parametrize("line, size", [
    (b"5;name=value\r\n", 5), (b"5;a;b=\"q;x\"\r\n", 5), (b"5 ;ext\r\n", 5), (b"5\t;ext\r\n", 5),
    (b"5 \t ;ext\r\n", 5), (b"5;\r\n", 5),
])
def test_chunk_extensions_are_ignored(line, size):
    assert size_of(line) == size


def test_last_chunk_with_extension():
    r = run([b"0;ext=1\r\n", b"\r\n"])
    assert (r.need, r.total_data) == (Need.DONE, 0)


@pytest.mark.parametrize("line", [
    b"-5\r\n", b"+5\r\n", b"0x5\r\n", b"\r\n", b";ext\r\n", b"g\r\n", b" 5\r\n", b"5 \r\n", b"5\t\r\n",
    b"1_0\r\n", b"5 5\r\n", b"\xef\xbc\x95\r\n",
    b"10000000000000000\r\n",        # 17 digits: more than 64 bits
    b"00000000000000001\r\n",        # 17 digits, even with leading zeros
])
def test_bad_chunk_size_rejected(line):
    r = ChunkedReader()
    with pytest.raises(FramingError, match="invalid chunk size") as exc:
        r.feed_line(line)
    assert exc.value.status == 400


@pytest.mark.parametrize("line", [b"5", b"5\n", b"5\r", b"5\n\r", b""])
def test_line_without_crlf_rejected(line):
    with pytest.raises(FramingError, match="does not end with CRLF"):
        ChunkedReader().feed_line(line)


def test_missing_crlf_after_data_rejected():
    r = run([b"3\r\n", 3])
    with pytest.raises(FramingError, match="not followed by CRLF"):
        r.feed_line(b"abc\r\n")


def test_data_longer_than_size_rejected():
    # the byte after the 3 announced ones lands where the CRLF must be
    r = run([b"3\r\n", 3])
    with pytest.raises(FramingError, match="not followed by CRLF"):
        r.feed_line(b"d\r\n")


def test_bare_lf_after_data_rejected():
    r = run([b"3\r\n", 3])
    with pytest.raises(FramingError, match="CRLF"):
        r.feed_line(b"\n")


def test_trailers_are_accepted_and_end_on_empty_line():
    r = run([b"2\r\n", 2, b"\r\n", b"0\r\n", b"Expires: never\r\n", b"X-Sum:abc\r\n"])
    assert r.need is Need.LINE
    r.feed_line(b"\r\n")
    assert (r.need, r.total_data) == (Need.DONE, 2)


@pytest.mark.parametrize("line", [b"no colon here\r\n", b" X: folded\r\n", b"\tX: folded\r\n"])
def test_invalid_trailer_rejected(line):
    r = run([b"0\r\n"])
    with pytest.raises(FramingError, match="invalid trailer field"):
        r.feed_line(line)


def test_trailer_section_limit_exact():
    r = run([b"0\r\n"])
    line = b"X: " + b"a" * 1019 + b"\r\n"           # 1024 bytes
    assert len(line) == 1024 and MAX_TRAILERS % 1024 == 0
    for _ in range(MAX_TRAILERS // 1024):
        r.feed_line(line)
    assert r.need is Need.LINE                       # exactly MAX_TRAILERS bytes: accepted
    with pytest.raises(FramingError, match="trailer section too large"):
        r.feed_line(b"Y: 1\r\n")


def test_line_at_max_line_accepted_and_one_more_rejected():
    ext = b"5;" + b"x" * (MAX_LINE - 4) + b"\r\n"
    assert len(ext) == MAX_LINE
    assert size_of(ext) == 5
    with pytest.raises(FramingError, match="chunked line too long"):
        ChunkedReader().feed_line(b"5;" + b"x" * (MAX_LINE - 3) + b"\r\n")


def test_trailer_line_too_long_rejected():
    r = run([b"0\r\n"])
    with pytest.raises(FramingError, match="too long"):
        r.feed_line(b"X: " + b"a" * MAX_LINE + b"\r\n")


@pytest.mark.parametrize("n", [0, 6, -1])
def test_data_done_outside_range_raises_value_error(n):
    r = run([b"5\r\n"])
    with pytest.raises(ValueError, match=rf"data_done\({n}\) with 5 left"):
        r.data_done(n)
    assert (r.need, r.data_left, r.total_data) == (Need.DATA, 5, 0)


def test_data_done_without_pending_data_raises_value_error():
    with pytest.raises(ValueError):
        ChunkedReader().data_done(1)


def test_chunk_size_above_int63_rejected_like_content_length():
    with pytest.raises(FramingError):
        ChunkedReader().feed_line(b"ffffffffffffffff\r\n")


# --- exact messages and bounds (mutation-testing gaps) --------------------------------------------

def error_of(*lines):
    r = ChunkedReader()
    with pytest.raises(FramingError) as exc:
        for line in lines:
            if r.need is Need.DATA:
                r.data_done(r.data_left)
            r.feed_line(line)
    return str(exc.value)


@pytest.mark.parametrize("lines, message", [
    ((b"5\n",), "chunked line does not end with CRLF"),
    ((b"5" * (MAX_LINE - 1) + b"\r\n",), "chunked line too long"),
    ((b"5\x00\r\n",), "control character in a chunked line"),
    ((b"zz\r\n",), "invalid chunk size"),
    ((b"1X;ext\r\n",), "invalid chunk size"),
    ((b"8000000000000000\r\n",), "chunk size too large"),
    ((b"1\r\n", b"x\r\n"), "chunk data not followed by CRLF"),
    ((b"0\r\n", b"bad trailer\r\n"), "invalid trailer field"),
])
def test_chunked_errors_are_exact(lines, message):
    assert error_of(*lines) == message


def test_trailer_section_too_large_message():
    line = b"X: " + b"a" * 4000 + b"\r\n"
    assert error_of(b"0\r\n", *[line] * 5) == "trailer section too large"


def test_data_done_accepts_a_single_byte():
    r = ChunkedReader()
    r.feed_line(b"2\r\n")
    r.data_done(1)
    assert (r.need, r.data_left, r.total_data) == (Need.DATA, 1, 1)
