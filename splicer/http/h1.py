"""HTTP/1.1 heads, parsed with h11 and rewritten for forwarding.

Rule: h11 parses; this module turns h11's events and errors into the proxy's RequestHead /
ResponseHead and HeadError (the single place where h11's protocol errors are caught).
Bodies never pass through h11: the head bytes alone are fed to it, and the body framing is
decided by framing.py. Nothing here does I/O.

Speed: a head is parsed with h11's own head readers (the functions its Connection calls for
a request line or a status line and the fields), fed a ReceiveBuffer holding the head. This
skips the Connection state machine, whose bookkeeping (and, for a response, serialising a
dummy request first) cost more than the parse itself, while the grammar, validation and
error messages stay h11's. Those readers are h11 internals, so when they are missing (an h11
whose layout changed) the public Connection path is used instead; both give equal results
(tests/unit/http/test_h1.py checks it).

Heads read by the engine come with an index: the engine's C tokenizer (native/src/h1.c,
spl_h1_parse) walks each head once and gives the start line's parts and every field's name
and value as offsets into the head, plus flags for the fields framing and forwarding look at.
When it is certain that h11 and the strict rules accept the head (INDEX_OK), the fields are
sliced out of the head with no h11 call; whatever it is not certain of goes through h11 as
before. Both roads then share one pass of splicer's own checks (_request, _response), and
tests/unit/http/test_h1_tokenizer.py holds the tokenizer to h11 on every head it is fed.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

import h11

try:  # h11's head readers (see the module docstring); public Connection path otherwise
    from h11._readers import maybe_read_from_IDLE_client as _read_request_line
    from h11._readers import maybe_read_from_SEND_RESPONSE_server as _read_status_line
    from h11._receivebuffer import ReceiveBuffer as _ReceiveBuffer
except ImportError:  # pragma: no cover - depends on the installed h11
    _read_request_line = _read_status_line = _ReceiveBuffer = None

from splicer.http import headers as hdr
from splicer.http import rules as rules_mod
from splicer.http.framing import (BodyKind, Framing, FramingError, content_length_of, framing_of_request,
                                  framing_of_response, request_framing, response_framing)

HEAD_END = re.compile(rb"\r?\n\r?\n")
"""End of a head: an empty line (h11 accepts bare LF line endings; so does this search)."""

# The engine's head index (native/include/splicer/engine.h, spl_h1_parse; a list of ints):
# word 0 is the verdict, 1 the kind of start line, 2 the number of fields, 3 the flags of the
# fields present, 4-7 the start line's offsets, then 4 offsets per field (name start and end,
# value start and end). tests/unit/engine checks these values against the C ones.
INDEX_OK, INDEX_REFUSE, INDEX_UNSURE = 0, 1, 2
INDEX_REQUEST, INDEX_RESPONSE = 1, 2
F_HOST, F_CONTENT_LENGTH, F_TRANSFER_ENCODING, F_CONNECTION, F_EXPECT, F_UPGRADE, F_HOP = (
    1, 2, 4, 8, 16, 32, 64)
F_ALL = 127
"""Flags of a head whose fields are not known: every check runs (a head h11 parsed)."""
F_PLAIN = 128
"""Every field line is "name: value" CRLF, as headers.serialize() writes it."""
F_HOST_OK, F_CONN_KEEP_ALIVE, F_CONN_CLOSE = 256, 512, 1024
"""The tokenizer's verdicts on values (engine.h): the Host value is one _HOST takes; the one
Connection field is just "keep-alive" / "close" (any case)."""
INDEX_HDR, FIELD_WORDS = 8, 5
ID_HOST, ID_CONTENT_LENGTH, ID_TRANSFER_ENCODING, ID_CONNECTION, ID_EXPECT, ID_UPGRADE = 1, 2, 3, 4, 5, 6
HOP_IDS = frozenset({3, 4, 6, 7, 8, 9, 10, 11, 12})
"""The name ids (index word 4 of a field) of headers.HOP_BY_HOP's names: Transfer-Encoding,
Connection, Upgrade, Keep-Alive, Proxy-Connection, TE, Trailer, Proxy-Authenticate and
Proxy-Authorization."""


class HeadError(ValueError):
    """A head that cannot be forwarded; `status` is the answer (400, 431, 501, 502)."""

    def __init__(self, msg: str, status: int = 400) -> None:
        super().__init__(msg)
        self.status = status


def head_complete(head: bytes) -> bool:
    """True when `head`, as read by a head reader (io.recv_head, the engine: bytes up to the
    first end of head, or fewer at an end of stream), holds a whole head: it then ends with
    the empty line (find_head_end's match, \r?\n\r?\n, always ends in \n\n or \n\r\n)."""
    return head.endswith(b"\n\n") or head.endswith(b"\n\r\n")


def find_head_end(buf: bytes | bytearray, start: int = 0) -> int:
    """Length of the head at the start of `buf` (up to and including its empty line), or -1.

    Args:
        buf: bytes received so far.
        start: offset to search from (a few bytes before the previous end of `buf`).
    """
    m = HEAD_END.search(buf, start)
    return m.end() if m else -1


class RequestHead:
    """A parsed request head.

    Attributes:
        method: e.g. b"GET".
        target: request-target in origin-form (an absolute-form one is rewritten; its
            authority became Host), or b"*" for OPTIONS.
        version: b"1.1" or b"1.0".
        headers: fields in wire order, names in the case received. A head parsed from the
            engine's index slices them out of its bytes on first read only (most requests
            are forwarded by their byte ranges and balanced without a field being read).
        framing: body framing (framing.request_framing).
        keep_alive: the client allows the connection to persist after this exchange
            (RFC 9112 section 9.3: 1.1 unless "close"; 1.0 only with "keep-alive").
        expect_continue: the request carries Expect: 100-continue.
        upgrade: the Upgrade field value when the client asks to switch protocols
            (RFC 9110 section 7.8: GET, HTTP/1.1, "upgrade" listed in Connection), else None.
        source: (head bytes, engine index, fields list or None while not sliced, name ids,
            Connection tokens) when the head was parsed from the engine's index:
            forwarded_request() then copies the head's own byte ranges while `headers` was
            never set to another list (not compared).

    Equality compares every attribute but `source`, as a dataclass would.
    """

    __slots__ = ("method", "target", "version", "_headers", "framing", "keep_alive", "expect_continue",
                 "upgrade", "source")

    def __init__(self, method: bytes, target: bytes, version: bytes, headers: hdr.Headers | None,
                 framing: Framing, keep_alive: bool, expect_continue: bool = False, upgrade: bytes | None = None,
                 source: tuple | None = None) -> None:
        self.method = method
        self.target = target
        self.version = version
        self._headers = headers  # None: still to slice out of `source`
        self.framing = framing
        self.keep_alive = keep_alive
        self.expect_continue = expect_continue
        self.upgrade = upgrade
        self.source = source

    @property
    def headers(self) -> hdr.Headers:
        h = self._headers
        if h is None:
            src = self.source
            h = self._headers = _slice_fields(src[0], src[1])
            self.source = (src[0], src[1], h, src[3], src[4])
        return h

    @headers.setter
    def headers(self, value: hdr.Headers) -> None:
        self._headers = value

    def _key(self) -> tuple:
        return (self.method, self.target, self.version, self.headers, self.framing, self.keep_alive,
                self.expect_continue, self.upgrade)

    def __eq__(self, other) -> bool:
        if other.__class__ is not RequestHead:
            return NotImplemented
        return self._key() == other._key()

    __hash__ = None  # (mutable, as the dataclass was)

    def __repr__(self) -> str:
        return ("RequestHead(method=%r, target=%r, version=%r, headers=%r, framing=%r, keep_alive=%r, "
                "expect_continue=%r, upgrade=%r)" % self._key())

    def copy(self) -> "RequestHead":
        """A shallow copy (the fields list is shared: reassign it, never mutate it)."""
        return RequestHead(self.method, self.target, self.version, self._headers, self.framing,
                           self.keep_alive, self.expect_continue, self.upgrade, self.source)


@dataclass(slots=True)
class ResponseHead:
    """A parsed response head (final or 1xx).

    Attributes:
        status: status code.
        reason: reason phrase as received.
        version: b"1.1" or b"1.0".
        headers: fields in wire order.
        framing: body framing (framing.response_framing).
        keep_alive: the server allows its connection to be reused after this response.
        source: as RequestHead.source, for forwarded_response().
    """

    status: int
    reason: bytes
    version: bytes
    headers: hdr.Headers
    framing: Framing
    keep_alive: bool
    source: tuple | None = field(default=None, compare=False)

    def copy(self) -> "ResponseHead":
        """A shallow copy (the fields list is shared: reassign it, never mutate it)."""
        return ResponseHead(self.status, self.reason, self.version, self.headers, self.framing,
                            self.keep_alive, self.source)


def _persistent(version: bytes, conn_tokens: list[bytes]) -> bool:
    if b"close" in conn_tokens:
        return False
    return version == b"1.1" or b"keep-alive" in conn_tokens


def _request_event_public(head: bytes):
    conn = h11.Connection(h11.SERVER, max_incomplete_event_size=len(head) + 1)
    conn.receive_data(head)
    return conn.next_event()


def _response_event_public(head: bytes, method: bytes):
    conn = h11.Connection(h11.CLIENT, max_incomplete_event_size=len(head) + 1)
    conn.send(h11.Request(method=method, target="/", headers=[("Host", "x")]))
    conn.send(h11.EndOfMessage())
    conn.receive_data(head)
    return conn.next_event()


def _request_event(head: bytes):
    """h11's Request event for a whole request head (or NEED_DATA); raises h11.ProtocolError."""
    if _ReceiveBuffer is None:
        return _request_event_public(head)
    buf = _ReceiveBuffer()
    buf += head
    ev = _read_request_line(buf)
    return h11.NEED_DATA if ev is None else ev


def _response_event(head: bytes, method: bytes):
    """h11's Response/InformationalResponse event for a whole response head."""
    if _ReceiveBuffer is None:
        return _response_event_public(head, method)
    buf = _ReceiveBuffer()
    buf += head
    ev = _read_status_line(buf)
    return h11.NEED_DATA if ev is None else ev


_HOST = re.compile(rb"(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9\-._~%!$&'()*+;=]*)(:[0-9]*)?")
"""Host = uri-host [ ":" port ] (RFC 9110 section 7.2, RFC 3986 reg-name without the comma,
which would make a list of hosts)."""

_BARE_LF = re.compile(rb"(?<!\r)\n")
_BARE_CR = re.compile(rb"\r(?!\n)")
_CTL = re.compile(rb"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")  # every CTL but HTAB, CR and LF


def strict_syntax_error(head: bytes) -> str | None:
    """The first line-level violation in a head, or None (RFC 9112 sections 2.2 and 5.2).

    splicer takes the strict option the RFC allows everywhere: every line ends with CRLF (a
    bare LF is refused, not accepted as a line end), a bare CR, a NUL or any other control
    character but HTAB is refused (RFC 9110 section 5.5 lets a recipient keep them; haproxy
    refuses them too, and a downstream parser may split on them), and obs-fold (a field line
    continued on the next line starting with SP or HTAB) is refused. h11 alone would accept
    bare LF, control characters such as DEL, and unfold obs-fold.
    """
    ctl = _CTL.search(head)
    if ctl is not None:
        return "NUL byte in head" if ctl.group() == b"\x00" else "control character in head"
    if _BARE_LF.search(head):
        return "bare LF line ending (CRLF required)"
    if _BARE_CR.search(head):
        return "bare CR in head"
    if b"\r\n " in head or b"\r\n\t" in head:
        return "obsolete line folding (obs-fold)"
    return None


def _request_transfer_coding_error(head: bytes) -> HeadError | None:
    """Transfer-Encoding of a request, checked on the raw lines before h11 sees them.

    RFC 9112 section 6.3 rule 4: a final coding other than chunked -> 400; chunked more
    than once -> 400 (section 6.1: a sender must not apply it twice); other codings before
    a final chunked -> 501 (RFC 9112 section 6.1, a coding splicer cannot re-frame).
    """
    codings: list[bytes] = []
    present = False
    for line in head.split(b"\r\n")[1:]:
        name, sep, value = line.partition(b":")
        if sep and name.lower() == b"transfer-encoding":
            present = True
            codings += [t.strip().lower() for t in value.split(b",") if t.strip()]
    if not present:
        return None
    if not codings or codings[-1] != b"chunked" or codings.count(b"chunked") != 1:
        return HeadError("Transfer-Encoding: chunked is not the final coding, once", 400)
    if len(codings) != 1:
        return HeadError("only the chunked transfer coding is supported", 501)
    return None


class HeadMemo:
    """Parsed heads by their bytes: a head seen before is not parsed again, while heads repeat.

    Parsing is a pure function of the head's bytes (and of the few arguments in the key), so
    the result for bytes already parsed is the same. Lab clients and some origins send the
    same heads again and again; real browsers and API clients never do (a path, a cookie, a
    token changes), and there every lookup would miss and every miss would pay for a copy
    and an insertion. So the memo measures itself: over each WINDOW lookups, if fewer than
    MIN_HITS hit, it empties itself and stands aside for the next OFF lookups (get() answers
    None at once, put() keeps nothing), then tries again. On heads that do not repeat it
    costs a counter decrement per lookup but for one window in every OFF + WINDOW lookups.

    Only valid heads are kept, up to `max_len` bytes each and `max_entries` of them (the
    oldest goes first); `get` returns a copy, whose attributes the caller may reassign
    (never mutate the fields list in place: it is shared).

    Args:
        max_entries: heads kept at most.
        max_len: longest head kept, bytes.
        copies: values are RequestHead/ResponseHead, kept and returned as copies; False for
            immutable values (the bytes of a forwarded head).
    """

    WINDOW = 512
    MIN_HITS = 32
    OFF = 8192

    __slots__ = ("max_entries", "max_len", "copies", "_d", "_left", "_hits", "_off")

    def __init__(self, max_entries: int = 1024, max_len: int = 4096, copies: bool = True) -> None:
        self.max_entries = max_entries
        self.max_len = max_len
        self.copies = copies
        self._d: dict = {}
        self.reset()

    def reset(self) -> None:
        """Forget every head and the hit counts: a new memo."""
        self._d.clear()
        self._left = self.WINDOW
        self._hits = 0
        self._off = 0

    def get(self, key):
        """What was kept for `key` (a copy, with `copies`), or None."""
        if self._off:
            self._off -= 1
            return None
        hit = self._d.get(key)
        if hit is not None:
            self._hits += 1
        self._left -= 1
        if not self._left:
            if self._hits < self.MIN_HITS:  # heads do not repeat: stand aside for a while
                self._d.clear()
                self._off = self.OFF
            self._left = self.WINDOW
            self._hits = 0
        return hit.copy() if hit is not None and self.copies else hit

    def put(self, key, head_len: int, value) -> None:
        """Keep `value` for `key` when the head (`head_len` bytes) is short enough and the
        memo is not standing aside."""
        if head_len > self.max_len or self._off:
            return
        d = self._d
        if len(d) >= self.max_entries:
            del d[next(iter(d))]
        d[key] = value.copy() if self.copies else value


_REQUESTS = HeadMemo()
_RESPONSES = HeadMemo()
_FORWARDED_REQUESTS = HeadMemo(copies=False)
_FORWARDED_RESPONSES = HeadMemo(copies=False)


def parse_request(head: bytes, maxhdr: int = 101, index: list[int] | None = None) -> RequestHead:
    """Parse one request head (request line + fields + empty line).

    Args:
        head: exactly the head's bytes, as found by find_head_end().
        maxhdr: most header fields accepted (haproxy `tune.http.maxhdr`).
        index: the engine's index of `head` (spl_h1_parse; see INDEX_OK), or None. A head
            it is certain of is sliced by it; any other goes through h11. Either way a head
            seen before comes from HeadMemo while heads repeat.

    Same contract as _parse_request, which gives the same result for any head.
    """
    key = (head, maxhdr)
    req = _REQUESTS.get(key)
    if req is None:
        if index is not None and index[0] == INDEX_OK and index[1] == INDEX_REQUEST:
            req = _request_from_index(head, index, maxhdr)
        else:
            req = _parse_request(head, maxhdr)
        _REQUESTS.put(key, len(head), req)
    return req


def _fields_of(head: bytes, ix: list[int]) -> tuple[hdr.Headers, list[int]]:
    """The fields of an indexed head, sliced out of it, and the name id of each."""
    words = ix[INDEX_HDR:INDEX_HDR + FIELD_WORDS * ix[2]]
    it = iter(words)
    return [(head[a:b], head[c:d]) for a, b, c, d, _ in zip(it, it, it, it, it)], words[4::FIELD_WORDS]


def _slice_fields(head: bytes, ix: list[int]) -> hdr.Headers:
    """The fields of an indexed head, sliced out of it."""
    it = iter(ix[INDEX_HDR:INDEX_HDR + FIELD_WORDS * ix[2]])
    return [(head[a:b], head[c:d]) for a, b, c, d, _ in zip(it, it, it, it, it)]


def _values_at(head: bytes, ix: list[int], ids: list[int], name_id: int) -> list[bytes]:
    """The values of the fields whose name id is `name_id`, in order, read by the index."""
    if ids.count(name_id) == 1:
        j = INDEX_HDR + FIELD_WORDS * ids.index(name_id)
        return [head[ix[j + 2]:ix[j + 3]]]
    return [head[ix[j + 2]:ix[j + 3]] for j in
            (INDEX_HDR + FIELD_WORDS * i for i, t in enumerate(ids) if t == name_id)]


def _values(fields: hdr.Headers, ids: list[int], name_id: int) -> list[bytes]:
    """The values of the fields whose name id is `name_id`, in order."""
    if ids.count(name_id) == 1:
        return [fields[ids.index(name_id)][1]]
    return [fields[i][1] for i, t in enumerate(ids) if t == name_id]


def _request_from_index(head: bytes, ix: list[int], maxhdr: int) -> RequestHead:
    """The RequestHead of a head the tokenizer accepted (INDEX_OK, INDEX_REQUEST): what h11
    would give, sliced out of `head` by the index, then _request()'s checks, which read
    the few fields they need by their name ids (no name is lowered)."""
    if ix[2] > maxhdr:
        raise HeadError(f"more than {maxhdr} header fields", 400)
    flags = ix[3]
    v = ix[7]
    method, target, version = head[:ix[4]], head[ix[5]:ix[6]], head[v:v + 3]
    if method == b"CONNECT" or not target.startswith(b"/"):
        # a target to rewrite: field by field
        return _request(method, target, version, _slice_fields(head, ix), flags)
    ids = ix[INDEX_HDR + 4:INDEX_HDR + FIELD_WORDS * ix[2]:FIELD_WORDS]
    # the checks of _request(), in its order (the tokenizer allows one Host, one
    # Content-Length of digits and one Transfer-Encoding "chunked" at most); the fields
    # are read by the index, and sliced out as a list only when something asks for them
    if flags & F_HOST and not flags & F_HOST_OK and not _HOST.fullmatch(_values_at(head, ix, ids, ID_HOST)[0]):
        raise HeadError("invalid Host field value", 400)  # RFC 9112 section 3.2
    if flags & F_TRANSFER_ENCODING and version == b"1.0":
        raise HeadError("Transfer-Encoding in an HTTP/1.0 request", 400)  # RFC 9112 section 6.1
    try:
        framing = framing_of_request(
            _CHUNKED if flags & F_TRANSFER_ENCODING else _NO_FIELDS,
            content_length_of(_values_at(head, ix, ids, ID_CONTENT_LENGTH)) if flags & F_CONTENT_LENGTH else None)
    except FramingError as exc:
        raise HeadError(str(exc), exc.status) from None
    conn = _connection(head, ix, ids, flags)
    expect = bool(flags & F_EXPECT) and any(
        e.lower().strip() == b"100-continue" for e in _values_at(head, ix, ids, ID_EXPECT))
    upgrade = None
    if b"upgrade" in conn and version == b"1.1" and method == b"GET":
        upgrade = b", ".join(u.strip() for u in _values_at(head, ix, ids, ID_UPGRADE)) or None
    return RequestHead(method, target, version, None, framing, _persistent(version, conn), expect, upgrade,
                       (head, ix, None, ids, conn))


def _connection(head: bytes, ix: list[int], ids: list[int], flags: int) -> list[bytes]:
    """The Connection tokens of an indexed head (headers.tokens_of of its Connection values),
    from the tokenizer's verdict when the field is just one option."""
    if not flags & F_CONNECTION:
        return _NO_FIELDS
    if flags & F_CONN_KEEP_ALIVE:
        return [b"keep-alive"]
    if flags & F_CONN_CLOSE:
        return [b"close"]
    return hdr.tokens_of(_values_at(head, ix, ids, ID_CONNECTION))


_CHUNKED = (b"chunked",)
"""The transfer codings of a Transfer-Encoding the tokenizer accepted (immutable, shared)."""


def _parse_request(head: bytes, maxhdr: int = 101) -> RequestHead:
    """Parse one request head (request line + fields + empty line), with h11.

    Args:
        head: exactly the head's bytes, as found by find_head_end().
        maxhdr: most header fields accepted (haproxy `tune.http.maxhdr`).

    Returns:
        RequestHead.

    Raises:
        HeadError: unparseable head (400; h11's error_status_hint), too many fields (400),
            Transfer-Encoding other than chunked (501), invalid framing (400), an HTTP
            version other than 1.0/1.1 (505), a bad request-target or CONNECT (400/405).
    """
    bad = strict_syntax_error(head)
    if bad is not None:
        raise HeadError(bad, 400)
    te_error = _request_transfer_coding_error(head)
    if te_error is not None:
        raise te_error
    try:
        ev = _request_event(head)
    except h11.ProtocolError as exc:
        raise HeadError(str(exc), exc.error_status_hint) from None
    if not isinstance(ev, h11.Request):
        raise HeadError("incomplete request head", 400)
    if ev.http_version not in (b"1.0", b"1.1"):
        raise HeadError(f"HTTP version {ev.http_version.decode('ascii', 'replace')} not supported", 505)
    fields = list(ev.headers.raw_items())
    if len(fields) > maxhdr:
        raise HeadError(f"more than {maxhdr} header fields", 400)
    return _request(ev.method, ev.target, ev.http_version, fields, F_ALL)


_NO_FIELDS: tuple = ()
"""No fields, no values, no tokens: what framing reads of a head without Content-Length and
Transfer-Encoding, and the Connection tokens of a head without Connection (immutable, shared)."""


def _request(method: bytes, target: bytes, version: bytes, fields: hdr.Headers, flags: int) -> RequestHead:
    """splicer's own checks of a request h11 accepted (version 1.0/1.1, at most maxhdr
    fields), and its RequestHead.

    Args:
        flags: the F_* bits of the fields present (F_ALL: unknown); a check of a field
            that is absent is skipped, with the same result.

    Raises:
        HeadError: as _parse_request, for a Host, target or framing fault.
    """
    if flags & F_HOST:
        hosts = 0
        for n, v in fields:
            if n.lower() == b"host":
                hosts += 1
                if not _HOST.fullmatch(v):
                    raise HeadError("invalid Host field value", 400)  # RFC 9112 section 3.2
        if hosts > 1:
            # RFC 9112 section 3.2: a server MUST answer 400 to more than one Host field line;
            # a rule and the origin could each read a different one
            raise HeadError("more than one Host field", 400)
    if method == b"CONNECT" or not target.startswith(b"/"):
        target, fields = _request_target(method, target, fields)
    if (version == b"1.0" and flags & F_TRANSFER_ENCODING
            and any(n.lower() == b"transfer-encoding" for n, _ in fields)):
        # RFC 9112 section 6.1: a 1.0 message with Transfer-Encoding has faulty framing
        raise HeadError("Transfer-Encoding in an HTTP/1.0 request", 400)
    try:
        framing = request_framing(fields if flags & (F_CONTENT_LENGTH | F_TRANSFER_ENCODING) else _NO_FIELDS)
    except FramingError as exc:
        raise HeadError(str(exc), exc.status) from None
    conn_tokens = hdr.tokens(fields, b"connection") if flags & F_CONNECTION else _NO_FIELDS
    expect = bool(flags & F_EXPECT) and any(
        v.lower().strip() == b"100-continue" for n, v in fields if n.lower() == b"expect")
    upgrade = None
    if b"upgrade" in conn_tokens and version == b"1.1" and method == b"GET":
        upgrade = b", ".join(v.strip() for n, v in fields if n.lower() == b"upgrade") or None
    return RequestHead(method, target, version, fields, framing,
                       _persistent(version, conn_tokens), expect, upgrade)


def _request_target(method: bytes, target: bytes, fields: hdr.Headers) -> tuple[bytes, hdr.Headers]:
    """Check the request-target's form and turn it into origin-form (RFC 9112 section 3.2).

    Returns:
        (target to forward, fields): an absolute-form target becomes its path and query,
        and its authority becomes the Host field (section 3.2.2).

    Raises:
        HeadError: CONNECT (405: splicer is no forward proxy), asterisk-form for another
            method than OPTIONS, authority-form, an absolute-form target without authority or
            whose authority disagrees with Host (400).
    """
    if method == b"CONNECT":
        raise HeadError("CONNECT is not allowed", 405)
    if target.startswith(b"/"):
        return target, fields
    if target == b"*":
        if method != b"OPTIONS":
            raise HeadError("asterisk-form request-target is only for OPTIONS", 400)
        return target, fields
    scheme, sep, rest = target.partition(b"://")
    if not sep or scheme.lower() not in (b"http", b"https"):
        raise HeadError("request-target is neither origin-form nor absolute-form", 400)
    cut = min((i for i in (rest.find(b"/"), rest.find(b"?")) if i >= 0), default=len(rest))
    authority, path = rest[:cut], rest[cut:]
    if not authority or b"@" in authority:
        raise HeadError("absolute-form request-target without a valid authority", 400)
    if not path and method == b"OPTIONS":
        path = b"*"  # RFC 9112 section 3.2.4: the last proxy sends OPTIONS * for an empty path
    elif not path.startswith(b"/"):
        path = b"/" + path
    hosts = [v for n, v in fields if n.lower() == b"host"]
    if hosts and hosts[0].strip().lower() != authority.lower():
        raise HeadError("Host disagrees with the absolute-form request-target", 400)
    if not hosts:
        fields = [(b"Host", authority)] + fields
    return path, fields


def parse_response(head: bytes, method: bytes, upgrade_requested: bool = False,
                   index: list[int] | None = None) -> ResponseHead:
    """Parse one response head; same contract as _parse_response.

    Args:
        index: the engine's index of `head` (spl_h1_parse), or None: as parse_request's.
    """
    key = (head, method, upgrade_requested)
    resp = _RESPONSES.get(key)
    if resp is None:
        if index is not None and index[0] == INDEX_OK and index[1] == INDEX_RESPONSE:
            resp = _response_from_index(head, index, method, upgrade_requested)
        else:
            resp = _parse_response(head, method, upgrade_requested)
        _RESPONSES.put(key, len(head), resp)
    return resp


def _response_from_index(head: bytes, ix: list[int], method: bytes, upgrade_requested: bool) -> ResponseHead:
    """The ResponseHead of a head the tokenizer accepted (INDEX_OK, INDEX_RESPONSE): _response()
    with the fields it needs read by their name ids."""
    fields, ids = _fields_of(head, ix)
    flags = ix[3]
    status = ix[5]
    v = ix[4]
    version = head[v:v + 3]
    if status == 101 and not upgrade_requested:
        raise HeadError("unsolicited 101 Switching Protocols", 502)
    try:
        framing = framing_of_response(
            method, status, _CHUNKED if flags & F_TRANSFER_ENCODING else _NO_FIELDS,
            _values(fields, ids, ID_CONTENT_LENGTH) if flags & F_CONTENT_LENGTH else _NO_FIELDS)
    except FramingError as exc:
        raise HeadError(str(exc), 502) from None
    conn = _connection(head, ix, ids, flags)
    keep = _persistent(version, conn) and not framing.must_close
    return ResponseHead(status, head[ix[6]:ix[7]], version, fields, framing, keep, (head, ix, fields, ids, conn))


def _parse_response(head: bytes, method: bytes, upgrade_requested: bool = False) -> ResponseHead:
    """Parse one response head received for a request with `method`, with h11.

    Args:
        head: exactly the head's bytes.
        method: the request's method (a response to HEAD has no body).
        upgrade_requested: the request asked to switch protocols (RequestHead.upgrade); a
            101 is refused otherwise (RFC 9110 section 15.2.2: only in answer to Upgrade).

    Returns:
        ResponseHead (status < 200 for an interim 1xx response).

    Raises:
        HeadError: unparseable or invalidly framed response (502).
    """
    bad = strict_syntax_error(head)
    if bad is not None:
        raise HeadError(f"invalid response from server: {bad}", 502)
    try:
        ev = _response_event(head, method)
    except h11.ProtocolError as exc:
        raise HeadError(f"invalid response from server: {exc}", 502) from None
    if not isinstance(ev, (h11.Response, h11.InformationalResponse)):
        raise HeadError("incomplete response head", 502)
    return _response(ev.status_code, ev.reason, ev.http_version, list(ev.headers.raw_items()), method,
                     upgrade_requested, F_ALL)


def _response(status: int, reason: bytes, version: bytes, fields: hdr.Headers, method: bytes,
              upgrade_requested: bool, flags: int) -> ResponseHead:
    """splicer's own checks of a response h11 accepted, and its ResponseHead (`flags` as
    _request's).

    Raises:
        HeadError: an unsolicited 101, or invalid framing (502).
    """
    if status == 101 and not upgrade_requested:
        raise HeadError("unsolicited 101 Switching Protocols", 502)
    try:
        framing = response_framing(method, status,
                                   fields if flags & (F_CONTENT_LENGTH | F_TRANSFER_ENCODING) else _NO_FIELDS)
    except FramingError as exc:
        raise HeadError(str(exc), 502) from None
    conn_tokens = hdr.tokens(fields, b"connection") if flags & F_CONNECTION else _NO_FIELDS
    keep = _persistent(version, conn_tokens) and not framing.must_close
    return ResponseHead(status, reason, version, fields, framing, keep)


def forward_request_head(req: RequestHead, client_ip: str | None,
                         forwarded: tuple[tuple[str, ...], str, str] | None = None,
                         rules: tuple = (), stream: rules_mod.StreamInfo | None = None,
                         view=None, xff_name: bytes = b"X-Forwarded-For", xff_if_none: bool = False) -> bytes:
    """The request head to send to the server: HTTP/1.1, hop-by-hop fields removed.

    Args:
        req: the parsed request.
        client_ip: add X-Forwarded-For with it when not None (haproxy `option forwardfor`),
            after hop-by-hop removal so the client cannot strip it via Connection.
        forwarded: (RFC 7239 parameters, client address, proxy address) to add a Forwarded
            field (haproxy `option forwarded`), likewise after hop-by-hop removal.
        rules: `http-request` header rules (http/rules.py), run after hop-by-hop removal and
            before X-Forwarded-For / Forwarded are added; `stream` is what their samples read.
        view: the request's sample.RequestView, which rule conditions read (None: no rule
            has one).
        xff_name, xff_if_none: `option forwardfor header <name>` and `if-none` (the field
            is added only when the request, after the rules, has none of that name).

    Returns:
        Head bytes. Server connections are kept alive (HTTP/1.1 default, no Connection
        field); the framing fields are written from req.framing (headers.set_framing).
    """
    fields = hdr.set_framing(hdr.strip_hop_by_hop(req.headers), req.framing.kind.value, req.framing.length)
    if not any(n.lower() == b"host" for n, _ in fields):
        # an HTTP/1.0 request may lack Host, but it is forwarded as 1.1, which requires one:
        # empty, as RFC 9112 section 3.2 says when the target has no authority
        fields.insert(0, (b"Host", b""))
    if rules and stream is not None:
        fields = rules_mod.apply(rules, fields, stream, rules_mod.Message(req.method, req.target), view)
    if req.upgrade is not None:
        # Upgrade is hop-by-hop, but this hop passes the request to switch on, as asked
        fields += [(b"Connection", b"upgrade"), (b"Upgrade", req.upgrade)]
    if client_ip is not None:
        fields = hdr.append_forwarded_for(fields, client_ip, xff_name, xff_if_none)
    if forwarded is not None:
        params, for_ip, by_ip = forwarded
        host = next((v for n, v in fields if n.lower() == b"host"), None)
        fields = hdr.append_forwarded(fields, params, for_ip, by_ip, host)
    return hdr.serialize(b"%s %s HTTP/1.1" % (req.method, req.target), fields)


def forward_response_head(resp: ResponseHead, client_version: bytes, keep_alive: bool,
                          rules: tuple = (), stream: rules_mod.StreamInfo | None = None,
                          req: RequestHead | None = None, view=None,
                          fields: hdr.Headers | None = None) -> bytes:
    """The response head to send to the client.

    Args:
        resp: the parsed server response.
        client_version: the request's HTTP version; a 1.0 client gets an explicit
            "Connection: keep-alive", and a chunked body without its Transfer-Encoding (the
            caller de-chunks it and closes: keep_alive must be False then).
        keep_alive: whether splicer keeps the client connection open after this response.
        rules: `http-response` header rules (http/rules.py), run on final and 101 responses
            after hop-by-hop removal; `stream` and `req` are what their samples read.
        view: the request's sample.RequestView for rule conditions and variables; its
            status and response_fields are set to this response's before the rules run
            (response_fields then follow each rule), and its variables enter the response
            phase (variables.Vars.response).
        fields: the fields to send as they are, instead of resp.headers stripped and
            framed (response_fields()) and rewritten by `rules`: the result of
            http/response_actions.py evaluate() (no rules run then).

    Returns:
        Head bytes with hop-by-hop fields removed, framing fields written from resp.framing
        (headers.set_framing), and a Connection field stating what splicer will do.
    """
    if fields is not None:
        fields = list(fields)
    else:
        fields = response_fields(resp, client_version)
    if rules and stream is not None and (resp.status >= 200 or resp.status == 101):
        store = view.vars if view is not None else None
        if store is not None:
            store.response()  # "req" variables end where "res" ones start (haproxy 2.8)
        msg = rules_mod.Message(req.method if req else b"", req.target if req else b"", resp.status,
                                req.headers if req else None, store)
        if view is not None:
            view.status, view.response_fields = resp.status, fields
        fields = rules_mod.apply(rules, fields, stream, msg, view)
    if resp.status == 101:
        upgrade = b", ".join(v.strip() for n, v in resp.headers if n.lower() == b"upgrade")
        fields += [(b"Connection", b"upgrade")] + ([(b"Upgrade", upgrade)] if upgrade else [])
    elif resp.status >= 200:
        if not keep_alive:
            fields.append((b"Connection", b"close"))
        elif client_version == b"1.0":
            fields.append((b"Connection", b"keep-alive"))
    return hdr.serialize(b"HTTP/1.1 %d %s" % (resp.status, resp.reason), fields)


def response_fields(resp: ResponseHead, client_version: bytes) -> hdr.Headers:
    """The fields of `resp` as they are forwarded to a client of `client_version`, before
    any rule: hop-by-hop fields removed and the framing fields written from resp.framing
    (headers.set_framing; a chunked body to an HTTP/1.0 client loses its Transfer-Encoding,
    RFC 9112 section 6.1). A new list."""
    kind = resp.framing.kind.value
    if kind == "chunked" and client_version == b"1.0":
        kind = "dechunked"  # RFC 9112 section 6.1: no chunked coding to a 1.0 recipient
    return hdr.set_framing(hdr.strip_hop_by_hop(resp.headers), kind, resp.framing.length)


def forwarded_request(raw: bytes, req: RequestHead, client_ip: str | None,
                      forwarded: tuple[tuple[str, ...], str, str] | None = None) -> bytes:
    """forward_request_head(req, client_ip, forwarded) without header rules, memoized.

    Args:
        raw: the head bytes `req` was parsed from (unchanged since but for its target,
            which a ``normalize-uri`` rule may have rewritten: it is part of the key).

    Without rules the forwarded head is a function of exactly the key (raw bytes, the
    target, the X-Forwarded-For address, the `option forwarded` tuple), so a head that comes again is
    not built again (HeadMemo).
    """
    src = req.source
    if src is not None and src[0] is raw and src[2] is req._headers:
        out = _request_by_ranges(req, src, client_ip, forwarded)
        if out is not None:
            return out
    key = (raw, req.target, client_ip, forwarded)
    out = _FORWARDED_REQUESTS.get(key)
    if out is None:
        out = forward_request_head(req, client_ip, forwarded)
        _FORWARDED_REQUESTS.put(key, len(raw), out)
    return out


def forwarded_response(raw: bytes, resp: ResponseHead, req: RequestHead, keep_alive: bool) -> bytes:
    """forward_response_head(resp, req.version, keep_alive) without header rules, memoized.

    Args:
        raw: the response head bytes `resp` was parsed from for `req`.

    The key holds everything the result depends on: the raw bytes and what parse_response
    took besides them (the request's method: a response to HEAD has no body; whether it
    asked to upgrade), the client's HTTP version and keep_alive.
    """
    src = resp.source
    if src is not None and src[0] is raw and src[2] is resp.headers:
        out = _response_by_ranges(resp, src, req.version, keep_alive)
        if out is not None:
            return out
    key = (raw, req.method, req.upgrade is not None, req.version, keep_alive)
    out = _FORWARDED_RESPONSES.get(key)
    if out is None:
        out = forward_response_head(resp, req.version, keep_alive)
        _FORWARDED_RESPONSES.put(key, len(raw), out)
    return out


_HOP_FLAGS = F_CONNECTION | F_HOP | F_UPGRADE | F_TRANSFER_ENCODING
_NEVER_NAMED = hdr.HOP_BY_HOP | hdr.PROTECTED
"""Connection tokens that name no field beyond those HOP_IDS drop (PROTECTED ones stay)."""


def _kept_lines(src: tuple) -> bytes:
    """The field lines of an indexed head that strip_hop_by_hop() keeps, as they were
    received, each with its CRLF: one slice when no hop-by-hop field is present.

    Args:
        src: the head's (bytes, index, fields or None while not sliced, name ids,
            Connection tokens).
    """
    raw, ix, fields, ids, conn = src
    n = ix[2]
    if not n:
        return b""
    end = len(raw) - 2
    if not ix[3] & _HOP_FLAGS:
        return raw[ix[INDEX_HDR]:end]
    named = [t for t in conn if t not in _NEVER_NAMED]  # other fields Connection names
    if named:
        if fields is None:
            fields = _slice_fields(raw, ix)
        drop = [i for i, (name, _) in enumerate(fields) if ids[i] in HOP_IDS or name.lower() in named]
    else:
        drop = [i for i, t in enumerate(ids) if t in HOP_IDS]
    parts = []
    at = ix[INDEX_HDR]
    for i in drop:
        j = INDEX_HDR + FIELD_WORDS * i
        parts.append(raw[at:ix[j]])
        at = ix[j + FIELD_WORDS] if i + 1 < n else end
    parts.append(raw[at:end])
    return b"".join(parts)


def _length_as_written(src: tuple, length: int) -> bool:
    """True when the Content-Length field (the index allows one) reads exactly `length` as
    set_framing() would write it (no leading zeros)."""
    raw, ix, _, ids, _ = src
    return ID_CONTENT_LENGTH in ids and _values_at(raw, ix, ids, ID_CONTENT_LENGTH)[0] == b"%d" % length


def _request_by_ranges(req: RequestHead, src: tuple, client_ip: str | None,
                       forwarded: tuple | None) -> bytes | None:
    """forward_request_head(req, client_ip, forwarded) as the head's own byte ranges plus
    the edits (a new request line, hop-by-hop lines left out, X-Forwarded-For appended),
    when the result is the same bytes; None when it may not be (then build it field by
    field): field lines not written as serialize() writes them, no Host, an upgrade, a
    Forwarded field to add, a Content-Length to rewrite, a target rewritten."""
    raw, ix = src[0], src[1]
    flags = ix[3]
    if (not flags & F_PLAIN or not flags & F_HOST or forwarded is not None or req.upgrade is not None
            or raw[ix[5]:ix[6]] != req.target):
        return None
    fr = req.framing
    if fr.kind is BodyKind.CHUNKED or (fr.kind is BodyKind.LENGTH and not _length_as_written(src, fr.length)):
        return None
    out = b"%s %s HTTP/1.1\r\n%s" % (req.method, req.target, _kept_lines(src))
    if client_ip is not None:
        out += b"X-Forwarded-For: %s\r\n" % client_ip.encode("ascii")
    return out + b"\r\n"


def _response_by_ranges(resp: ResponseHead, src: tuple, client_version: bytes, keep_alive: bool) -> bytes | None:
    """forward_response_head(resp, client_version, keep_alive) as the head's own byte ranges
    plus the edits (status line, hop-by-hop lines left out, Transfer-Encoding and Connection
    appended), when the result is the same bytes; None otherwise (as _request_by_ranges)."""
    flags = src[1][3]
    if not flags & F_PLAIN or resp.status < 200:
        return None
    fr = resp.framing
    tail = b""
    if fr.kind is BodyKind.CHUNKED:
        if client_version == b"1.0" or flags & F_CONTENT_LENGTH:
            return None
        tail = b"Transfer-Encoding: chunked\r\n"
    elif fr.kind is BodyKind.LENGTH:
        if not _length_as_written(src, fr.length):
            return None
    elif fr.kind is not BodyKind.NONE:
        return None
    if not keep_alive:
        tail += b"Connection: close\r\n"
    elif client_version == b"1.0":
        tail += b"Connection: keep-alive\r\n"
    return b"HTTP/1.1 %d %s\r\n%s%s\r\n" % (resp.status, resp.reason, _kept_lines(src), tail)
