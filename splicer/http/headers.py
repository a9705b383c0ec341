"""Header rewriting for forwarding: pure functions over lists of (name, value) byte pairs.

Everything that decides which fields a proxy removes or adds lives here: hop-by-hop removal
(RFC 9110 section 7.6.1) and X-Forwarded-For (haproxy `option forwardfor`). Names keep the
case the peer sent; comparisons are case-insensitive. Nothing here does I/O.
"""
from __future__ import annotations

import functools
import ipaddress
import re

Headers = list[tuple[bytes, bytes]]
"""A header section: (name, value) pairs in wire order, names in the case the peer sent."""

TOKEN = re.compile(rb"[!#$%&'*+\-.^_`|~0-9A-Za-z]+\Z")
"""A token (RFC 9110 section 5.6.2): a field name (5.1), a method (9.1)."""

HOP_BY_HOP = frozenset({
    b"connection", b"keep-alive", b"proxy-connection", b"proxy-authenticate",
    b"proxy-authorization", b"te", b"trailer", b"transfer-encoding", b"upgrade",
})
"""Fields that describe one connection, not the message (RFC 9110 section 7.6.1, plus the
legacy Keep-Alive and Proxy-Connection). Transfer-Encoding is listed because splicer
re-frames from its own framing decision (framing.py) and writes it back itself."""


def tokens(headers: Headers, name: bytes) -> list[bytes]:
    """All comma-separated tokens of every field `name`, lowercased and stripped.

    Args:
        headers: the header section.
        name: lowercase field name, e.g. b"connection".

    Returns:
        e.g. [b"keep-alive", b"x-foo"] for ``Connection: Keep-Alive, X-Foo``. Empty elements
        are dropped (RFC 9110 section 5.6.1 list syntax).
    """
    return tokens_of([v for n, v in headers if n.lower() == name])


def tokens_of(values: list[bytes]) -> list[bytes]:
    """The comma-separated tokens of field values, lowercased and stripped, empty elements
    dropped: tokens() of the fields those values are of."""
    out = []
    for v in values:
        for t in v.split(b","):
            t = t.strip().lower()
            if t:
                out.append(t)
    return out


PROTECTED = frozenset({b"host", b"content-length"})
"""Fields a Connection token can never remove: they frame and route the message, so
honouring ``Connection: content-length`` would let a client smuggle a body past the proxy."""


def strip_hop_by_hop(headers: Headers) -> Headers:
    """Remove hop-by-hop fields and every field named in Connection (RFC 9110 section 7.6.1).

    Args:
        headers: the received header section.

    Returns:
        A new list with the end-to-end fields only, in their original order. Host and
        Content-Length stay even when Connection names them (PROTECTED).
    """
    drop = hop_by_hop_names(headers)
    return [(n, v) for n, v in headers if n.lower() not in drop]


def hop_by_hop_names(headers: Headers) -> frozenset[bytes]:
    """The lowercase names strip_hop_by_hop() removes from `headers`: HOP_BY_HOP and every
    name a Connection field lists, but PROTECTED ones (RFC 9110 section 7.6.1)."""
    return HOP_BY_HOP.union(t for t in tokens(headers, b"connection") if t not in PROTECTED)


def set_framing(headers: Headers, kind: str, length: int | None) -> Headers:
    """Write the framing fields of a forwarded message from splicer's own framing decision.

    Args:
        headers: fields already stripped of hop-by-hop ones (Transfer-Encoding is gone).
        kind: "length", "chunked", "dechunked" (a chunked body relayed without its chunk
            framing to an HTTP/1.0 client, delimited by the close), or anything else to
            leave Content-Length as received
            (a response to HEAD, a 304: there it describes the resource, not this message).
        length: the body length for "length".

    Returns:
        For "length", a single Content-Length with `length`, where the first one was (so
        list-form values like "5, 5" never reach the peer); for "chunked", Content-Length removed and
        ``Transfer-Encoding: chunked`` appended (RFC 9112 section 6.3 rule 3).
    """
    if kind == "length":
        out = []
        for n, v in headers:
            if n.lower() != b"content-length":
                out.append((n, v))
            elif length is not None:  # the first one is rewritten in place, the others go
                out.append((n, b"%d" % length))
                length = None
        if length is not None:
            out.append((b"Content-Length", b"%d" % length))
        return out
    if kind in ("chunked", "dechunked"):
        out = [(n, v) for n, v in headers if n.lower() != b"content-length"]
        if kind == "chunked":
            out.append((b"Transfer-Encoding", b"chunked"))
        return out
    return headers


def append_forwarded_for(headers: Headers, client_ip: str, name: bytes = b"X-Forwarded-For",
                         if_none: bool = False) -> Headers:
    """Add ``X-Forwarded-For: <client_ip>`` as the last field (haproxy `option forwardfor`).

    haproxy appends a new header line rather than editing an existing one, so the origin sees
    every hop; we do the same. Call it after strip_hop_by_hop() so a client cannot remove it
    by naming it in Connection.

    Args:
        headers: header section to extend (not modified).
        client_ip: the client's address as text ("192.0.2.1" or "2001:db8::1").
        name: the field's name (`option forwardfor header <name>`).
        if_none: add nothing when a field of that name is there (`if-none`).
    """
    if if_none:
        low = name.lower()
        if any(n.lower() == low for n, _ in headers):
            return headers
    return headers + [(name, client_ip.encode("ascii"))]


def in_networks(address: str, networks: tuple) -> bool:
    """Whether the address `address` (text) is in one of `networks` (ipaddress networks:
    `option forwardfor except`). As haproxy 2.6 compares them, an IPv4 client on an IPv6
    listener (``::ffff:a.b.c.d``) is in an IPv6 network only (``::ffff:0:0/96``), not in
    an IPv4 one."""
    ip = address_of(address)
    return ip is not None and any(ip in net for net in networks)


@functools.lru_cache(maxsize=4096)
def address_of(text: str):
    """The ipaddress object of the address `text`, or None; memoized (a client's address
    repeats for each request of its connection, and parsing it costs more than what reads it:
    ACLs, `option forwardfor except`)."""
    try:
        return ipaddress.ip_address(text)
    except ValueError:
        return None


def serialize(start_line: bytes, headers: Headers) -> bytes:
    """Render a head: start line, fields, blank line, with CRLF endings (RFC 9112 section 2.1)."""
    parts = [start_line, b"\r\n"]
    for n, v in headers:
        parts += (n, b": ", v, b"\r\n")
    parts.append(b"\r\n")
    return b"".join(parts)


def _node(ip: str) -> bytes:
    # RFC 7239 section 6: an IPv6 address is bracketed and the value quoted
    return b'"[%s]"' % ip.encode("ascii") if ":" in ip else ip.encode("ascii")


def append_forwarded(headers: Headers, params: tuple[str, ...], client_ip: str, proxy_ip: str,
                     host: bytes | None) -> Headers:
    """Add an RFC 7239 ``Forwarded`` field as the last one (haproxy `option forwarded`).

    Args:
        headers: fields after hop-by-hop removal (so a client cannot strip it).
        params: which of "proto", "host", "by", "for" to send, in that order.
        client_ip: the client's address ("for").
        proxy_ip: the address the client connected to ("by").
        host: the request's Host value ("host"; omitted when None or empty).
    """
    parts = []
    for p in ("proto", "host", "by", "for"):
        if p not in params:
            continue
        if p == "proto":
            parts.append(b"proto=http")
        elif p == "host" and host:
            parts.append(b'host="%s"' % host.replace(b'"', b"").replace(b"\\", b""))
        elif p == "by":
            parts.append(b"by=" + _node(proxy_ip))
        elif p == "for":
            parts.append(b"for=" + _node(client_ip))
    return headers + [(b"Forwarded", b";".join(parts))] if parts else headers
