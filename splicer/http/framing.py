"""Message body framing (RFC 9112 section 6): where a body ends, decided from the head alone.

Rule: every framing decision lives here, made from the method, status and header fields;
the runtime only follows the Framing it is given. Stricter than h11 where a proxy must be:
an ambiguous request is refused, never guessed at. Nothing here does I/O.
"""
from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from splicer.http.headers import Headers, tokens


class BodyKind(Enum):
    """How the body of one message is delimited."""

    NONE = "none"          # no body at all (length 0, HEAD response, 1xx/204/304)
    LENGTH = "length"      # exactly `length` bytes (Content-Length)
    CHUNKED = "chunked"    # chunked transfer coding, ends with the last-chunk and trailers
    CLOSE = "close"        # response only: until the server closes the connection


@dataclass(frozen=True, slots=True)
class Framing:
    """A body framing decision.

    Attributes:
        kind: BodyKind.
        length: bytes of body for LENGTH (0 for NONE), else None.
        must_close: the connection this message came on cannot be reused after it
            (RFC 9112 section 6.3 rule 3: TE and CL together).
    """

    kind: BodyKind
    length: int | None = None
    must_close: bool = False


NO_BODY = Framing(BodyKind.NONE, 0)
CHUNKED = Framing(BodyKind.CHUNKED)
"""The framings most heads have, made once (a Framing is immutable)."""


class FramingError(ValueError):
    """The head's framing fields are invalid or ambiguous; `status` is the answer to send."""

    def __init__(self, msg: str, status: int = 400) -> None:
        super().__init__(msg)
        self.status = status


_MAX_LENGTH = 2**63 - 1


def _content_length_values(headers: Headers) -> list[bytes]:
    """Every element of every Content-Length field, stripped (a list form gives several)."""
    values = []
    for n, v in headers:
        if n.lower() == b"content-length":
            values += [x.strip() for x in v.split(b",")]
    return values


def _content_length(headers: Headers) -> int | None:
    return content_length_of(_content_length_values(headers))


def content_length_of(values: list[bytes]) -> int | None:
    """The body length that Content-Length values give (RFC 9112 section 6.3 rule 5), None
    without any.

    Args:
        values: the elements of the Content-Length fields, each stripped.

    Raises:
        FramingError: values that differ, one that is not a decimal number, or too large (400).
    """
    if not values:
        return None
    first = values[0]
    if any(x != first for x in values):
        raise FramingError("differing Content-Length values")
    if not first.isdigit() or not first.isascii():
        raise FramingError("Content-Length is not a decimal number")
    n = int(first)
    if n > _MAX_LENGTH:
        raise FramingError("Content-Length too large")
    return n


def request_framing(headers: Headers) -> Framing:
    """Body framing of a request (RFC 9112 section 6.3, rules 3 to 6).

    Args:
        headers: the request's header fields.

    Returns:
        NONE, LENGTH or CHUNKED (a request is never close-delimited).

    Raises:
        FramingError: Transfer-Encoding together with Content-Length (refused rather than
            guessed, the request-smuggling vector of rule 3), a final coding other than
            chunked (rule 4), differing or malformed Content-Length values (rule 5).
    """
    return framing_of_request(tokens(headers, b"transfer-encoding"), _content_length(headers))


def framing_of_request(te: list[bytes], cl: int | None) -> Framing:
    """request_framing() from the request's transfer codings (headers.tokens() of its
    Transfer-Encoding fields) and its Content-Length (content_length_of()); same errors."""
    if te:
        if cl is not None:
            raise FramingError("both Transfer-Encoding and Content-Length")
        if te[-1] != b"chunked" or te.count(b"chunked") != 1:
            raise FramingError("Transfer-Encoding final coding is not chunked")
        return CHUNKED
    if cl:
        return Framing(BodyKind.LENGTH, cl)
    return NO_BODY


def response_framing(method: bytes, status: int, headers: Headers) -> Framing:
    """Body framing of a response to `method` (RFC 9112 section 6.3, rules 1 to 7).

    Args:
        method: the request method, e.g. b"GET"; a response to HEAD has no body.
        status: the response status code; 1xx, 204 and 304 have no body.
        headers: the response's header fields.

    Returns:
        The framing. TE with CL: TE wins and the connection must close (rule 3); a final
        coding other than chunked: close-delimited (rule 4).

    Raises:
        FramingError: differing or malformed Content-Length (rule 5), with status 502.
    """
    if method == b"HEAD" or status < 200 or status in (204, 304):
        return NO_BODY
    return framing_of_response(method, status, tokens(headers, b"transfer-encoding"),
                               _content_length_values(headers))


def framing_of_response(method: bytes, status: int, te: list[bytes], cl_values: list[bytes]) -> Framing:
    """response_framing() from the response's transfer codings (headers.tokens() of its
    Transfer-Encoding fields) and the elements of its Content-Length fields, each stripped
    (empty without the field); same results and errors."""
    if method == b"HEAD" or status < 200 or status in (204, 304):
        return NO_BODY
    if te:
        if te[-1] == b"chunked":
            return Framing(BodyKind.CHUNKED, must_close=True) if cl_values else CHUNKED
        return Framing(BodyKind.CLOSE, must_close=True)
    try:
        cl = content_length_of(cl_values)
    except FramingError as exc:
        raise FramingError(str(exc), 502) from None
    if cl is not None:
        return Framing(BodyKind.LENGTH, cl) if cl else NO_BODY
    return Framing(BodyKind.CLOSE, must_close=True)
