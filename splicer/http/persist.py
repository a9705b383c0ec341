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


@dataclass(frozen=True, slots=True)
class RequestCookie:
    """What a request's cookie said (request_cookie()).

    Attributes:
        value: the server value the cookie designates (b"" when it designates none).
        present: the request carried a pair named NAME at all.
        fields: the request's fields as they go to the server.
        edited: fields differs from the request's.
    """

    value: bytes
    present: bool
    fields: Fields
    edited: bool = False


def _split_pairs(value: bytes) -> list[bytes]:
    return value.split(b";")


def _pair_name_value(pair: bytes) -> tuple[bytes, bytes] | None:
    name, eq, val = pair.partition(b"=")
    if not eq:
        return None
    return name.strip(), val.strip()


def request_cookie(policy: CookiePolicy, fields: Sequence[tuple[bytes, bytes]]) -> RequestCookie:
    """Find the persistence cookie in a request and edit it for the server.

    Args:
        policy: the backend's CookiePolicy.
        fields: the request's header fields, wire order.

    Returns:
        A RequestCookie; its fields differ from the request's only where a pair was
        removed (insert indirect) or its prefix stripped (prefix mode): the other fields
        keep their bytes.
    """
    name = policy.name.encode("latin-1")
    found = b""
    present = False
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
                found = val
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
        return RequestCookie(found, present, list(fields))
    return RequestCookie(found, present, out, True)


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


def set_cookie_value(policy: CookiePolicy, value: bytes) -> bytes:
    """The Set-Cookie value splicer inserts for a server whose cookie value is `value`
    (b"": the server has none, the cookie is deleted)."""
    name = policy.name.encode("latin-1")
    if value:
        out = name + b"=" + value + b"; path=/"
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
                    *, direct: bool, present: bool, method: bytes, ignore: bool = False) -> Fields | None:
    """The response's fields with the persistence cookie handled.

    Args:
        policy: the backend's CookiePolicy.
        fields: the response's header fields, wire order.
        server_value: the `cookie` value of the server that answered (b"": none).
        direct: the request went to the server its use-server rule or cookie designated.
        present: the request carried the cookie (request_cookie().present).
        method: the request's method (postonly).
        ignore: an ignore-persist condition held for the request.

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
    if (policy.mode == "insert" and not direct and not ignore
            and not (policy.preserve and server_set)
            and (not policy.postonly or method == b"POST")
            and (server_value or present)):
        out.append((b"Set-Cookie", set_cookie_value(policy, server_value)))
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
