"""Error responses splicer generates itself: small HTML bodies with an exact Content-Length.

Every one ends its connection (`Connection: close`), as haproxy's do. Nothing here does I/O.
"""
from __future__ import annotations

REASONS = {
    400: "Bad Request", 401: "Unauthorized", 403: "Forbidden", 404: "Not Found",
    405: "Method Not Allowed", 408: "Request Timeout", 410: "Gone", 429: "Too Many Requests",
    413: "Content Too Large", 414: "URI Too Long", 431: "Request Header Fields Too Large", 500: "Internal Server Error",
    501: "Not Implemented", 502: "Bad Gateway", 503: "Service Unavailable", 504: "Gateway Timeout",
    505: "HTTP Version Not Supported",
}

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
