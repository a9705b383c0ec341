"""admin/errors.py: `show errors` captures and haproxy's escaped, offset-prefixed byte dump."""
import pytest

from splicer.admin.errors import ErrorCapture, dump_lines, escape_byte, plain_reason, render_errors


def test_escapes():
    assert [escape_byte(b) for b in b"\t\n\r\x1b\\a\x01\x7f\xff"] == [
        "\\t", "\\n", "\\r", "\\e", "\\\\", "a", "\\x01", "\\x7F", "\\xFF"]


def test_one_input_line_per_output_line_with_offsets():
    assert dump_lines(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n") == [
        "  00000  GET / HTTP/1.1\\r\\n", "  00016  Host: x\\r\\n", "  00025  \\r\\n"]


def test_long_lines_continue_with_a_plus_and_stay_within_79_columns():
    lines = dump_lines(b"A" * 150 + b"\x01" * 10 + b"\r\n")
    assert all(len(line) <= 79 for line in lines)
    assert lines[0].startswith("  00000  A")
    assert lines[1].startswith("  00070+ A")
    assert "".join(line[9:] for line in lines) == "A" * 150 + "\\x01" * 10 + "\\r\\n"
    # an escape is never split across two lines
    assert all(not line.endswith("\\") or line.endswith("\\\\") for line in lines)


def test_render_orders_by_time_and_has_no_empty_line():
    a = ErrorCapture(100.5, "fe", 1, "127.0.0.1:4000", 1, 2, 431, "head too large", b"GET /b\r\n")
    b = ErrorCapture(100.25, "fe", 1, "127.0.0.1:3999", 0, 1, 400, "bad", b"GET /a\x00\r\n\r\n")
    out = render_errors([a, b], 101.0)
    assert out.startswith("Total events captured on [") and out.split("\n")[0].endswith("] : 2")
    assert out.index("GET /a\\x00") < out.index("GET /b")
    assert "frontend fe (#1): invalid request" in out
    assert "event #0, src 127.0.0.1:3999" in out and "worker 2, answered 431: head too large" in out
    assert "\n\n" not in out
    assert out.endswith("\n")


def test_captures_survive_the_channel():
    c = ErrorCapture(1.0, "fe", 1, "x:1", 0, 1, 400, "r", bytes(range(256)), "be")
    assert ErrorCapture.from_dict(c.as_dict()) == c


@pytest.mark.parametrize("message, data, result", [
    ("illegal request line: bytearray(b'GET /bad path HTTP/1.1')", b"GET /bad path HTTP/1.1\r\n\r\n",
     ("illegal request line", 0)),
    ("illegal header line: bytearray(b'Bad header')", b"GET / HTTP/1.1\r\nBad header\r\n\r\n",
     ("illegal header line", 16)),
    ("illegal header line: bytearray(b'Ho\"st: x')", b"GET / HTTP/1.1\r\n\r\n", ("illegal header line", -1)),
    ("bad: b'\\x00\\n' here", b"a\x00\n", ("bad here", 1)),
    ("request head too large", b"GET", ("request head too large", -1)),
    ("two\nlines", b"", ("two\\x0alines", -1)),
])
def test_plain_reason_drops_the_bytes_repr(message, data, result):
    assert plain_reason(message, data) == result


def test_the_fault_position_is_printed_and_kept_across_workers():
    c = ErrorCapture(0.0, "fe", 1, "127.0.0.1:1", 0, 1, 400, "illegal request line", b"GET / x\r\n", pos=0)
    assert ErrorCapture.from_dict(c.as_dict()) == c
    assert "\n  len 9, error at position 0\n" in render_errors([c], 0.0)
