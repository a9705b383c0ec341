"""Cookie persistence: which server a request goes to, and the cookie edits on both heads.

Rule: every decision of haproxy's `cookie`, `use-server`, `force-persist`, `ignore-persist`
and `option persist` lives here, as pure functions of header fields and server states;
nothing here does I/O, reads the clock or knows about connections. The stream asks
`request_cookie()` what the request's cookie says (and what is left of it for the server),
`choose()` where the request goes, and `response_fields()` what the response's
Set-Cookie fields become.

Theory of operation (haproxy configuration.txt "cookie", "use-server", "force-persist",
"ignore-persist", "option persist"; cookie syntax from RFC 6265 sections 4.1 and 4.2):

- The request: every `Cookie` field is split into `name=value` pairs at ";" (RFC 6265
  section 4.2.1). The first pair named NAME (case-sensitive) whose value designates a
  server decides: in `insert` and `rewrite` modes the value is a server's `cookie` value;
  in `prefix` mode the value is `VALUE~original` and the server's part is stripped before
  the request goes to the server. In `insert indirect` mode the pair is removed from the
  request altogether (the server never sees splicer's cookie); a field left empty is dropped.
- The choice: a matching `use-server` rule wins (haproxy evaluates them before the
  cookie's assignment; the cookie is still stripped). Then the cookie's server, unless an
  `ignore-persist` condition holds. A designated server that is DOWN is used anyway only
  with `option persist` or a matching `force-persist`; otherwise the request is balanced
  as if it had no cookie (and a fresh cookie is set). A request sent to the designated
  server is "direct": no cookie is inserted in its response. Whether a failed connection
  to it may be redispatched is `option redispatch`'s business (http/retry.py).
- The response, `insert` mode: a response to a request that was not direct gets
  `Set-Cookie: NAME=VALUE; path=/` (then `; domain=D` per `domain`, `; HttpOnly`,
  `; Secure`), unless `postonly` is set and the request is not a POST, or `preserve` is set
  and the server set NAME itself, or `ignore-persist` held. A Set-Cookie for NAME from the
  server is removed, unless `preserve`. A server without a `cookie` value gets none inserted;
  when the client sent NAME, it is told to delete it (an expired, empty cookie).
  `rewrite` mode replaces the value of the server's own Set-Cookie NAME with the server's
  value; `prefix` mode prepends `VALUE~` to it. With `nocache`, a response in which splicer
  sets or changes the cookie gets `Cache-control: private` unless its Cache-Control already
  forbids shared caching (private, no-cache or no-store).
- Dates, `maxidle` / `maxlife` (haproxy src/http_ana.c, src/base64.c s30tob64()): in every
  mode but prefix, a request cookie's value is `SRV[|LAST[|FIRST]]`: the server's value,
  then the date the cookie was last emitted and the date it was first emitted, each the
  UNIX time in 4-second units as 5 characters of base64 (30 bits, most significant first,
  no padding). A cookie older than `maxlife` by its first date, or idle longer than
  `maxidle` by its last date, or with either date more than 24 hours in the future, is
  ignored: the request is balanced and gets a fresh cookie. With `maxidle` or `maxlife`,
  an inserted cookie carries `|LAST` (now, rounded up to the next 4-second unit), and with
  `maxlife` also `|FIRST` (the request cookie's first date, else now). A request sent to its
  cookie's server gets the cookie again when its dates need it: its last date has passed
  (so it is refreshed at most every 4 seconds), or it lacks the first date `maxlife`
  wants, or has one `maxlife` no longer wants.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

Fields = list[tuple[bytes, bytes]]

MODES = ("insert", "rewrite", "prefix")
"""The cookie modes of haproxy's `cookie` keyword."""

PREFIX_SEP = b"~"
"""What separates the server's value from the application's in `prefix` mode (haproxy's)."""

EXPIRED = b"Expires=Thu, 01-Jan-1970 00:00:01 GMT"
"""The attribute that makes a client delete a cookie (RFC 6265 section 3.1, an old date)."""

_NO_SHARED_CACHE = (b"private", b"no-cache", b"no-store")

DATE_SEP = b"|"
"""What separates the server's value from the cookie's dates (haproxy COOKIE_DELIM_DATE)."""

FUTURE_SLACK = 86400
"""Seconds a cookie date may lie in the future before the cookie is ignored (haproxy: a day)."""

_B64 = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
_B64_REV = {c: i for i, c in enumerate(_B64)}


def s30tob64(value: int) -> bytes:
    """The low 30 bits of `value` as 5 base64 characters, most significant first, unpadded
    (haproxy src/base64.c s30tob64())."""
    return bytes(_B64[(value >> shift) & 0x3F] for shift in (24, 18, 12, 6, 0))


def b64tos30(text: bytes) -> int:
    """The 30-bit value of the first 5 characters of `text` (b64tos30()'s inverse of
    s30tob64()); -1 when one of them is not a base64 character or there are fewer than 5."""
    if len(text) < 5:
        return -1
    out = 0
    for c in text[:5]:
        v = _B64_REV.get(c)
        if v is None:
            return -1
        out = (out << 6) | v
    return out


def date_value(now: int) -> int:
    """A cookie date for the UNIX time `now` (seconds): 4-second units, rounded up, as
    haproxy emits them ((now + 3) >> 2)."""
    return (now + 3) >> 2


def cookie_dates(value: bytes) -> tuple[bytes, int, int]:
    """Split a request cookie value `SRV[|LAST[|FIRST]]` (haproxy http_manage_client_side_cookies()).

    Returns:
        (server value, last date, first date), the dates in UNIX seconds (multiples of 4),
        0 where absent or unreadable.
    """
    srv, sep, rest = value.partition(DATE_SEP)
    if not sep:
        return value, 0, 0
    last = first = 0
    if len(rest) >= 5:
        v = b64tos30(rest)
        if v > 0:
            last = v << 2
    bar = rest.find(DATE_SEP)
    if bar >= 0 and len(rest) - bar > 5:
        v = b64tos30(rest[bar + 1:])
        if v > 0:
            first = v << 2
    return srv, last, first


def cookie_expired(policy: "CookiePolicy", last: int, first: int, now: int) -> bool:
    """True when a request cookie with dates `last` / `first` (UNIX seconds, 0: none) must be
    ignored at `now`: older than `maxlife` by its first date or idle longer than `maxidle` by
    its last one, or dated more than FUTURE_SLACK seconds ahead (haproxy's TX_CK_OLD and
    TX_CK_EXPIRED)."""
    if first and policy.maxlife and (now - first > policy.maxlife or first - now > FUTURE_SLACK):
        return True
    return bool(last and policy.maxidle and (now - last > policy.maxidle or last - now > FUTURE_SLACK))


@dataclass(frozen=True)
class CookiePolicy:
    """A backend's `cookie` line (haproxy configuration.txt 4.2 "cookie").

    Attributes:
        name: the cookie's name (case-sensitive, as RFC 6265 compares names).
        mode: "insert", "rewrite" or "prefix".
        indirect: insert mode: splicer's cookie is removed from the forwarded request.
        nocache: add `Cache-control: private` where splicer sets or changes the cookie.
        postonly: insert mode: insert the cookie only in responses to POST requests.
        preserve: insert mode: a server that sets the cookie itself keeps it untouched.
        httponly, secure: add the `HttpOnly` / `Secure` attribute to an inserted cookie.
        domains: one `; domain=D` attribute per `domain` argument, in order.
        maxidle, maxlife: haproxy `maxidle` / `maxlife`, whole seconds (0: not set): a
            cookie idle or alive longer is ignored (see the module docstring).
    """

    name: str
    mode: str = "rewrite"
    indirect: bool = False
    nocache: bool = False
    postonly: bool = False
    preserve: bool = False
    httponly: bool = False
    secure: bool = False
    domains: tuple[str, ...] = ()
    maxidle: int = 0
    maxlife: int = 0


@dataclass(frozen=True, slots=True)
class RequestCookie:
    """What a request's cookie said (request_cookie()).

    Attributes:
        value: the server value the cookie designates (b"" when it designates none).
        present: the request carried a pair named NAME at all.
        fields: the request's fields as they go to the server.
        edited: fields differs from the request's.
        last_date, first_date: the dates the deciding cookie carried (UNIX seconds, 0: none;
            both 0 when it was ignored as expired).
        expired: the cookie was ignored for its dates (maxidle / maxlife).
    """

    value: bytes
    present: bool
    fields: Fields
    edited: bool = False
    last_date: int = 0
    first_date: int = 0
    expired: bool = False


def _split_pairs(value: bytes) -> list[bytes]:
    return value.split(b";")


def _pair_name_value(pair: bytes) -> tuple[bytes, bytes] | None:
    name, eq, val = pair.partition(b"=")
    if not eq:
        return None
    return name.strip(), val.strip()


def request_cookie(policy: CookiePolicy, fields: Sequence[tuple[bytes, bytes]], now: int = 0) -> RequestCookie:
    """Find the persistence cookie in a request and edit it for the server.

    Args:
        policy: the backend's CookiePolicy.
        fields: the request's header fields, wire order.
        now: the UNIX time in seconds, against which the cookie's dates are judged.

    Returns:
        A RequestCookie; its fields differ from the request's only where a pair was
        removed (insert indirect) or its prefix stripped (prefix mode): the other fields
        keep their bytes.
    """
    name = policy.name.encode("latin-1")
    found = b""
    present = False
    last = first = 0
    expired = False
    out: Fields | None = None
    for k, (n, v) in enumerate(fields):
        if n.lower() != b"cookie":
            if out is not None:
                out.append((n, v))
            continue
        pairs = _split_pairs(v)
        kept: list[bytes] = []
        changed = False
        for pair in pairs:
            nv = _pair_name_value(pair)
            if nv is None or nv[0] != name:
                kept.append(pair)
                continue
            present = True
            val = nv[1]
            if policy.mode == "prefix":
                srv, sep, rest = val.partition(PREFIX_SEP)
                if sep:
                    if not found:
                        found = srv
                    lead = pair[:len(pair) - len(pair.lstrip())]
                    kept.append(lead + name + b"=" + rest)
                    changed = True
                else:
                    kept.append(pair)
                continue
            if not found:
                srv, last, first = cookie_dates(val)
                if cookie_expired(policy, last, first, now):
                    expired = True  # as if it designated no server (a fresh one is set)
                    last = first = 0
                else:
                    found = srv
            if policy.mode == "insert" and policy.indirect:
                changed = True  # splicer's own cookie: the server never sees it
                continue
            kept.append(pair)
        if changed:
            if out is None:
                out = list(fields[:k])
            joined = b";".join(kept).strip()
            if joined:
                out.append((n, joined))
        elif out is not None:
            out.append((n, v))
    if out is None:
        return RequestCookie(found, present, list(fields), False, last, first, expired and not found)
    return RequestCookie(found, present, out, True, last, first, expired and not found)


@dataclass(frozen=True, slots=True)
class Choice:
    """Where a request goes (choose()).

    Attributes:
        server: the server's index, or None: balance it.
        direct: the server was designated by a use-server rule or the cookie (no cookie
            is inserted in the response).
        ignore: an ignore-persist condition held (no cookie is inserted either).
    """

    server: int | None
    direct: bool
    ignore: bool = False


def choose(cookie_server: int | None, alive: Callable[[int], bool], *, persist: bool = False,
           force: bool = False, ignore: bool = False, use_server: int | None = None) -> Choice:
    """Decide the server of a request from its use-server rule and its cookie.

    Args:
        cookie_server: the index of the server the request's cookie designates (None:
            none, or no cookie policy).
        alive: tells whether a server is UP (not down by checks, not in maintenance);
            a weight of 0 does not matter, as in haproxy.
        persist: `option persist`: a designated server is used even when DOWN.
        force: a `force-persist` condition held (same effect, for this request).
        ignore: an `ignore-persist` condition held: the cookie does not choose.
        use_server: the index named by the first `use-server` rule whose condition held.

    Returns:
        The Choice (haproxy: a designated DOWN server without persist is balanced over).
    """
    if use_server is not None and (alive(use_server) or persist or force):
        return Choice(use_server, True, ignore)
    if ignore:
        return Choice(None, False, True)
    if cookie_server is not None and (alive(cookie_server) or persist or force):
        return Choice(cookie_server, True)
    return Choice(None, False)


def set_cookie_value(policy: CookiePolicy, value: bytes, now: int = 0, first_date: int = 0) -> bytes:
    """The Set-Cookie value splicer inserts for a server whose cookie value is `value`
    (b"": the server has none, the cookie is deleted). With maxidle or maxlife the value
    carries `|LAST` (the date of `now`, UNIX seconds), with maxlife also `|FIRST`
    (`first_date`, UNIX seconds, or now when 0)."""
    name = policy.name.encode("latin-1")
    if value:
        out = name + b"=" + value
        if policy.maxidle or policy.maxlife:
            out += DATE_SEP + s30tob64(date_value(now))
            if policy.maxlife:
                out += DATE_SEP + s30tob64((first_date >> 2) if first_date else date_value(now))
        out += b"; path=/"
    else:
        out = name + b"=; " + EXPIRED + b"; path=/"
    for d in policy.domains:
        out += b"; domain=" + d.encode("latin-1")
    if policy.httponly:
        out += b"; HttpOnly"
    if policy.secure:
        out += b"; Secure"
    return out


def _set_cookie_name(value: bytes) -> tuple[bytes, bytes, bytes]:
    """(name, value, the rest from the first ';') of a Set-Cookie field value."""
    first, semi, rest = value.partition(b";")
    name, _, val = first.partition(b"=")
    return name.strip(), val.strip(), semi + rest


def response_fields(policy: CookiePolicy, fields: Sequence[tuple[bytes, bytes]], server_value: bytes,
                    *, direct: bool, present: bool, method: bytes, ignore: bool = False, now: int = 0,
                    last_date: int = 0, first_date: int = 0) -> Fields | None:
    """The response's fields with the persistence cookie handled.

    Args:
        policy: the backend's CookiePolicy.
        fields: the response's header fields, wire order.
        server_value: the `cookie` value of the server that answered (b"": none).
        direct: the request went to the server its use-server rule or cookie designated.
        present: the request carried the cookie (request_cookie().present).
        method: the request's method (postonly).
        ignore: an ignore-persist condition held for the request.
        now: the UNIX time in seconds (the dates of an inserted cookie).
        last_date, first_date: the request cookie's dates (RequestCookie), 0: none.

    Returns:
        The new field list, or None when nothing changes.
    """
    name = policy.name.encode("latin-1")
    out: Fields = []
    changed = False
    server_set = False
    for n, v in fields:
        if n.lower() == b"set-cookie":
            cname, cval, rest = _set_cookie_name(v)
            if cname == name:
                server_set = True
                if policy.mode == "insert":
                    if not policy.preserve:
                        changed = True
                        continue
                elif server_value:
                    if policy.mode == "rewrite":
                        v = name + b"=" + server_value + rest
                    else:
                        v = name + b"=" + server_value + PREFIX_SEP + cval + rest
                    changed = True
        out.append((n, v))
    set_here = changed and policy.mode != "insert"
    # a direct request gets the cookie again only when its dates need it (haproxy)
    stale = ((policy.maxidle or last_date) and (not last_date or last_date < now)
             or (policy.maxlife and not first_date) or (not policy.maxlife and first_date))
    if (policy.mode == "insert" and (not direct or stale) and not ignore
            and not (policy.preserve and server_set)
            and (not policy.postonly or method == b"POST")
            and (server_value or present)):
        out.append((b"Set-Cookie", set_cookie_value(policy, server_value, now, first_date)))
        changed = set_here = True
    if set_here and policy.nocache and not _not_shared(out):
        out.append((b"Cache-control", b"private"))
    return out if changed else None


def _not_shared(fields: Fields) -> bool:
    """True when a Cache-Control field already keeps shared caches from storing it."""
    for n, v in fields:
        if n.lower() == b"cache-control":
            for d in v.split(b","):
                if d.strip().split(b"=", 1)[0].lower() in _NO_SHARED_CACHE:
                    return True
    return False


def server_by_value(values: Mapping[bytes, int], value: bytes) -> int | None:
    """The index of the server whose `cookie` value is `value` (None: no such server)."""
    return values.get(value) if value else None
