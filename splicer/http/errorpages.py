"""Error responses splicer generates itself: small HTML bodies with an exact Content-Length.

Every one ends its connection (`Connection: close`), as haproxy's do. Nothing here does I/O.
"""
from __future__ import annotations

REASONS = {
    200: "OK", 201: "Created", 202: "Accepted", 203: "Non-Authoritative Information",
    204: "No Content", 205: "Reset Content", 206: "Partial Content",
    300: "Multiple Choices", 301: "Moved Permanently", 302: "Found", 303: "See Other",
    304: "Not Modified", 305: "Use Proxy", 307: "Temporary Redirect", 308: "Permanent Redirect",
    400: "Bad Request", 401: "Unauthorized", 402: "Payment Required", 403: "Forbidden",
    404: "Not Found", 405: "Method Not Allowed", 406: "Not Acceptable",
    407: "Proxy Authentication Required", 408: "Request Timeout", 409: "Conflict", 410: "Gone",
    411: "Length Required", 412: "Precondition Failed", 413: "Content Too Large",
    414: "URI Too Long", 415: "Unsupported Media Type", 416: "Range Not Satisfiable",
    417: "Expectation Failed", 421: "Misdirected Request", 422: "Unprocessable Content",
    425: "Too Early", 426: "Upgrade Required", 428: "Precondition Required",
    429: "Too Many Requests", 431: "Request Header Fields Too Large",
    451: "Unavailable For Legal Reasons",
    500: "Internal Server Error", 501: "Not Implemented", 502: "Bad Gateway",
    503: "Service Unavailable", 504: "Gateway Timeout", 505: "HTTP Version Not Supported",
}
"""The reason phrases of RFC 9110 section 15 (and RFC 6585 for 428, 429, 431; RFC 7725 for
451; RFC 8470 for 425), the reason ``set-status`` gives a status without ``reason``."""


CLASS_REASONS = {2: "Success", 3: "Redirection", 4: "Client Error", 5: "Server Error"}
"""The reason of a status REASONS does not name, by its class, as haproxy gives it
(http_get_reason); "Other" above 599."""


def reason_of(status: int) -> bytes:
    """The standard reason phrase of `status` (REASONS), else its class's (CLASS_REASONS),
    else b"Other"."""
    return REASONS.get(status, CLASS_REASONS.get(status // 100, "Other")).encode("ascii")


_TEXT = {
    400: "Your browser sent an invalid request.",
    408: "Your browser didn't send a complete request in time.",
    414: "The request-target is too long.",
    431: "The request's header section is too large.",
    501: "The request uses a feature this proxy does not implement.",
    502: "The server returned an invalid or incomplete response.",
    503: "No server is available to handle this request.",
    504: "The server didn't respond in time.",
}


def error_response(status: int, detail: str | None = None) -> bytes:
    """Build a whole HTTP/1.1 error response.

    Args:
        status: one of REASONS' keys (others get a generic reason "Error").
        detail: optional text replacing the default sentence (HTML-escaped by the caller).

    Returns:
        Bytes: status line, Content-Type, Content-Length, Cache-Control, Connection: close,
        and an HTML body.
    """
    reason = REASONS.get(status, "Error")
    text = detail or _TEXT.get(status, reason)
    body = f"<html><body><h1>{status} {reason}</h1>\n{text}\n</body></html>\n".encode()
    head = (f"HTTP/1.1 {status} {reason}\r\ncontent-length: {len(body)}\r\n"
            "cache-control: no-cache\r\ncontent-type: text/html\r\nconnection: close\r\n\r\n")
    return head.encode("ascii") + body
