"""splicer.http.framing: body framing from the head alone (RFC 9112 section 6.3)."""
import pytest

from splicer.http.framing import (
    BodyKind,
    Framing,
    FramingError,
    request_framing,
    response_framing,
)

CL5 = [(b"Content-Length", b"5")]
TE_CHUNKED = [(b"Transfer-Encoding", b"chunked")]


# --- requests -------------------------------------------------------------------------------

def test_request_without_framing_fields_has_no_body():
    assert request_framing([(b"Host", b"x")]) == Framing(BodyKind.NONE, 0, False)


def test_request_content_length_gives_exact_length():
    assert request_framing([(b"Host", b"x"), (b"Content-Length", b"12345")]) == Framing(BodyKind.LENGTH, 12345)


def test_request_content_length_zero_has_no_body():
    assert request_framing([(b"Content-Length", b"0")]) == Framing(BodyKind.NONE, 0)


def test_request_content_length_name_is_case_insensitive():
    assert request_framing([(b"cOnTeNt-LeNgTh", b"7")]) == Framing(BodyKind.LENGTH, 7)


def test_request_content_length_above_4gib_is_kept_exact():
    assert request_framing([(b"Content-Length", b"5000000000")]) == Framing(BodyKind.LENGTH, 5_000_000_000)


def test_request_content_length_max_int63_is_accepted():
    assert request_framing([(b"Content-Length", str(2**63 - 1).encode())]).length == 2**63 - 1


def test_request_content_length_overflow_rejected_400():
    with pytest.raises(FramingError, match="too large") as exc:
        request_framing([(b"Content-Length", str(2**63).encode())])
    assert exc.value.status == 400


def test_request_transfer_encoding_chunked():
    assert request_framing(TE_CHUNKED) == Framing(BodyKind.CHUNKED, None, False)


def test_request_transfer_encoding_is_case_insensitive():
    assert request_framing([(b"transfer-encoding", b"Chunked")]).kind is BodyKind.CHUNKED


def test_te_and_cl_rejected_400():
    with pytest.raises(FramingError, match="both Transfer-Encoding and Content-Length") as exc:
        request_framing(TE_CHUNKED + CL5)
    assert exc.value.status == 400


def test_te_and_cl_zero_rejected_400():
    with pytest.raises(FramingError) as exc:
        request_framing([(b"Content-Length", b"0")] + TE_CHUNKED)
    assert exc.value.status == 400


@pytest.mark.parametrize("te", [b"gzip", b"chunked, gzip", b"chunked, chunked", b"identity"])
def test_request_te_final_coding_not_chunked_rejected_400(te):
    with pytest.raises(FramingError, match="final coding is not chunked") as exc:
        request_framing([(b"Transfer-Encoding", te)])
    assert exc.value.status == 400


def test_request_te_gzip_then_chunked_is_chunked():
    assert request_framing([(b"Transfer-Encoding", b"gzip, chunked")]).kind is BodyKind.CHUNKED


def test_request_te_split_over_two_fields_is_one_list():
    fields = [(b"Transfer-Encoding", b"gzip"), (b"Transfer-Encoding", b"chunked")]
    assert request_framing(fields).kind is BodyKind.CHUNKED
    with pytest.raises(FramingError):
        request_framing(list(reversed(fields)))


def test_differing_content_length_fields_rejected_400():
    with pytest.raises(FramingError, match="differing Content-Length") as exc:
        request_framing([(b"Content-Length", b"5"), (b"Content-Length", b"6")])
    assert exc.value.status == 400


def test_differing_content_length_list_rejected_400():
    with pytest.raises(FramingError, match="differing") as exc:
        request_framing([(b"Content-Length", b"5, 6")])
    assert exc.value.status == 400


def test_repeated_identical_content_length_is_accepted():
    assert request_framing([(b"Content-Length", b"5, 5"), (b"Content-Length", b" 5 ")]) == \
        Framing(BodyKind.LENGTH, 5)


@pytest.mark.parametrize("value", [b"", b"+5", b"-5", b"0x10", b"5a", b"5.0", b"1e3", b"\xd9\xa5", b"5,"])
def test_non_decimal_content_length_rejected_400(value):
    with pytest.raises(FramingError) as exc:
        request_framing([(b"Content-Length", value)])
    assert exc.value.status == 400


# --- responses ------------------------------------------------------------------------------

@pytest.mark.parametrize("status", [100, 101, 103, 204, 304])
def test_response_status_without_body(status):
    assert response_framing(b"GET", status, CL5) == Framing(BodyKind.NONE, 0)
    assert response_framing(b"GET", status, TE_CHUNKED) == Framing(BodyKind.NONE, 0)


def test_response_to_head_has_no_body_whatever_the_fields_say():
    assert response_framing(b"HEAD", 200, CL5) == Framing(BodyKind.NONE, 0)
    assert response_framing(b"HEAD", 200, TE_CHUNKED + CL5) == Framing(BodyKind.NONE, 0, False)
    assert response_framing(b"HEAD", 200, []) == Framing(BodyKind.NONE, 0, False)


def test_response_content_length():
    assert response_framing(b"GET", 200, CL5) == Framing(BodyKind.LENGTH, 5, False)


def test_response_content_length_zero_is_no_body():
    assert response_framing(b"POST", 200, [(b"Content-Length", b"0")]) == Framing(BodyKind.NONE, 0)


def test_response_chunked_keeps_connection():
    assert response_framing(b"GET", 200, TE_CHUNKED) == Framing(BodyKind.CHUNKED, None, False)


def test_response_te_and_cl_is_chunked_and_must_close():
    assert response_framing(b"GET", 200, CL5 + TE_CHUNKED) == Framing(BodyKind.CHUNKED, None, True)


def test_response_te_not_chunked_is_close_delimited():
    assert response_framing(b"GET", 200, [(b"Transfer-Encoding", b"gzip")]) == \
        Framing(BodyKind.CLOSE, None, True)
    assert response_framing(b"GET", 200, [(b"Transfer-Encoding", b"chunked, gzip")] + CL5) == \
        Framing(BodyKind.CLOSE, None, True)


def test_response_without_length_is_close_delimited():
    assert response_framing(b"GET", 200, [(b"Content-Type", b"text/plain")]) == \
        Framing(BodyKind.CLOSE, None, True)


def test_response_differing_content_length_is_502():
    with pytest.raises(FramingError, match="differing") as exc:
        response_framing(b"GET", 200, [(b"Content-Length", b"5"), (b"Content-Length", b"7")])
    assert exc.value.status == 502


def test_response_non_decimal_content_length_is_502():
    with pytest.raises(FramingError, match="not a decimal") as exc:
        response_framing(b"GET", 200, [(b"Content-Length", b"-1")])
    assert exc.value.status == 502


def test_response_content_length_overflow_is_502():
    with pytest.raises(FramingError, match="too large") as exc:
        response_framing(b"GET", 200, [(b"Content-Length", b"9" * 20)])
    assert exc.value.status == 502


def test_response_bad_content_length_to_head_is_ignored():
    assert response_framing(b"HEAD", 200, [(b"Content-Length", b"bogus")]) == Framing(BodyKind.NONE, 0)


@pytest.mark.parametrize("headers, message", [
    ([(b"Content-Length", b"5"), (b"Content-Length", b"6")], "differing Content-Length values"),
    ([(b"Content-Length", b"5x")], "Content-Length is not a decimal number"),
    ([(b"Transfer-Encoding", b"chunked, gzip")], "Transfer-Encoding final coding is not chunked"),
    ([(b"Transfer-Encoding", b"chunked"), (b"Content-Length", b"1")], "both Transfer-Encoding and Content-Length"),
])
def test_request_framing_errors_are_exact(headers, message):
    with pytest.raises(FramingError) as exc:
        request_framing(headers)
    assert (exc.value.status, str(exc.value)) == (400, message)
