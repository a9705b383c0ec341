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


class FramingError(ValueError):
    """The head's framing fields are invalid or ambiguous; `status` is the answer to send."""

    def __init__(self, msg: str, status: int = 400) -> None:
        super().__init__(msg)
        self.status = status


_MAX_LENGTH = 2**63 - 1


def _content_length(headers: Headers) -> int | None:
    values = []
    for n, v in headers:
        if n.lower() == b"content-length":
            values += [x.strip() for x in v.split(b",")]
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
    te = tokens(headers, b"transfer-encoding")
    cl = _content_length(headers)
    if te:
        if cl is not None:
            raise FramingError("both Transfer-Encoding and Content-Length")
        if te[-1] != b"chunked" or te.count(b"chunked") != 1:
            raise FramingError("Transfer-Encoding final coding is not chunked")
        return Framing(BodyKind.CHUNKED)
    if cl:
        return Framing(BodyKind.LENGTH, cl)
    return Framing(BodyKind.NONE, 0)


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
        return Framing(BodyKind.NONE, 0)
    te = tokens(headers, b"transfer-encoding")
    if te:
        has_cl = any(n.lower() == b"content-length" for n, _ in headers)
        if te[-1] == b"chunked":
            return Framing(BodyKind.CHUNKED, must_close=has_cl)
        return Framing(BodyKind.CLOSE, must_close=True)
    try:
        cl = _content_length(headers)
    except FramingError as exc:
        raise FramingError(str(exc), 502) from None
    if cl is not None:
        return Framing(BodyKind.LENGTH, cl) if cl else Framing(BodyKind.NONE, 0)
    return Framing(BodyKind.CLOSE, must_close=True)
