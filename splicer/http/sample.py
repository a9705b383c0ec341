"""Sample fetches and converters: what an ACL reads from a request, as haproxy names it.

Rule: sans-I/O. A fetch expression (``req.hdr(host),lower``) is compiled once, at load
(parse_fetch), into a Fetch: a plain function of a RequestView that returns the list of
samples it finds (an empty list: the sample is absent). Nothing here reads a socket, the
clock or the runtime: what a fetch needs about the connection (addresses, ports, how many
servers a backend has up) is put into the RequestView by the caller, once per request.

Theory of operation (haproxy configuration.txt 7.3 "Fetching samples", 7.3.6 "Fetching
HTTP samples (Layer 7)"):

- A sample has one of four types: STR (bytes), INT (int), IP (an ipaddress address) or BOOL.
  Its type decides the default matching method of an ACL (acl.py): str, int, ip, bool.
- Some fetches give several samples when an ACL iterates over them: ``hdr(<name>)`` gives
  every comma-separated value of every field named <name> (``req.fhdr`` every whole field
  value), ``req.cook(<name>)`` every cookie of that name, ``url_param(<name>)`` every value
  of the parameter. ``hdr(<name>,<occ>)`` gives only occurrence <occ> (1 = first, -1 =
  last). An ACL matches when any of them matches.
- ``path`` is the target up to the first ``?`` (the origin-form path: the scheme and
  authority of an absolute-form target are not part of it), compared as the origin reads
  it (http/normalize.py rule_path: ``/%61dmin`` and ``//admin`` are ``/admin``), after
  the ``normalize-uri`` rules before it; ``query`` what follows the
  first ``?`` (absent without one, empty after a bare ``?``); ``url`` the target exactly as
  the client sent it.
- ACL derivatives (``hdr_beg``, ``path_end``, ``url_sub``...) are the base fetch with an
  implied matching method (DERIVATIVE_METHODS); a converter after one makes the method
  follow the converter's output type, as haproxy does.
- In an ACL, a fetch of the Host field (``hdr(host)``, ``req.hdr(host)``, ``req.fhdr(host)``
  and their derivatives) also offers each value as the origin picks its virtual host by
  it: without its port and trailing dots (normalize.canonical_host) and in lower case
  (host names ignore case, RFC 3986 section 3.2.2), so ``hdr(host) admin.example.com``
  matches ``ADMIN.example.com.:80`` too, with or without ``-i``; outside ACLs the fetch
  gives the field as sent.
- ``http_auth(<userlist>)`` and ``http_auth_group(<userlist>)`` read the verdict on the
  request's Basic credentials that the runtime put in RequestView.auth before the rules
  run (checking a password hash is too slow to do here: runtime/auth.py does it off the
  event loop); in an ACL ``http_auth_group`` gives the user's groups, which the patterns
  (group names) are matched against, elsewhere the user name. ``http_auth_type``,
  ``http_auth_user`` and ``http_auth_pass`` decode the Authorization field and check
  nothing (http/userlist.py basic_credentials).
- Converters: CONVERTERS (lower, upper, the map family, field, word, regsub).
- ``var(<scope>.<name>[,<default>])`` reads a variable (http/variables.py) from the
  view's Vars: a string (variables hold text), absent when not set unless a default is
  given (haproxy 7.3.2). ``str(<text>)``, ``int(<n>)`` and ``bool(<b>)`` give constants.
- The view is the request as the rules before left it (set_fields, set_target,
  set_method): each rule's fetches read what the earlier rules did.
"""
from __future__ import annotations

import operator
import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

from splicer.http.framing import BodyKind
from splicer.http.headers import address_of as _address
from splicer.http.normalize import canonical_host, rule_path
from splicer.http.userlist import auth_scheme, basic_credentials

STR, INT, IP, BOOL = "str", "int", "ip", "bool"
"""Sample types (haproxy: string, integer, ip, boolean)."""

DERIVATIVE_METHODS = ("beg", "end", "sub", "reg", "dom", "dir", "len")
"""Suffixes of ACL derivatives (``<fetch>_<method>``): the matching method they imply."""


class SampleError(ValueError):
    """A fetch expression is wrong; ``str()`` is the message that follows "file:line: "."""


class RequestView:
    """What fetches read about one message exchange: built once per request, cheaply (a few
    references; everything derived is computed on first use).

    Args:
        method: the request method (b"GET").
        url: the request target exactly as the client sent it (b"http://a/b?c" or b"/b?c").
        target: the target in origin-form (b"/b?c"); ``path`` and ``query`` read it.
        version: b"1.1" or b"1.0".
        fields: the request's fields as (name, value) pairs, names in any case.
        src, src_port: the client's address (text) and port; dst, dst_port: the address and
            port the client connected to.
        has_body: the request announces a body (Content-Length > 0 or chunked).
        nbsrv: function of a backend name to its number of usable servers (None: every
            backend counts 0).
        status: the response status in http-response rules, 0 for a request.
        response_fields: the response's fields in http-response rules, else None.
        auth: {userlist name: (user name, its groups)} for each userlist the request's
            Basic credentials are valid for, as the runtime checked them before the
            rules run (runtime/auth.py); None or absent: not authenticated.
        vars: the variables.Vars that ``var()`` reads and the set-var rules write (None:
            every variable is absent).

    The http-request rules of a proxy run in order on one view (route.Switching.choose):
    a header rule replaces its fields (set_fields), a rewrite its target or method
    (set_target, set_method), so each later rule reads what the earlier ones left.
    """

    # Built once per request on the rules' path (session.request_view): only what every
    # request has is stored; the rest reads these class defaults until a caller sets it
    # (a response's status and fields, credential verdicts, the caches below).
    src, src_port, dst, dst_port = "", 0, "", 0
    nbsrv = None
    status = 0
    response_fields = None
    auth = None
    vars = None
    framing = None  # the request's framing.Framing, which has_body reads (None: _body)
    _body = False
    _src_ip = _dst_ip = None
    _by_name = _parts = _path = None
    _raw = None  # the head's bytes (request_view_of), until a rule changes the request
    _hk = None  # head_key(), once asked

    def __init__(self, method: bytes, url: bytes, target: bytes, version: bytes, fields,
                 src: str = "", src_port: int = 0, dst: str = "", dst_port: int = 0,
                 has_body: bool = False, nbsrv: Callable[[str], int] | None = None,
                 status: int = 0, response_fields=None, auth=None, vars=None) -> None:
        self.method, self.url, self.target, self.version = method, url, target, version
        self.fields = fields
        self.src, self.src_port, self.dst, self.dst_port = src, src_port, dst, dst_port
        self.nbsrv = nbsrv
        self.vars = vars
        if has_body:
            self._body = True
        if status:
            self.status = status
        if response_fields is not None:
            self.response_fields = response_fields
        if auth is not None:
            self.auth = auth

    @property
    def has_body(self) -> bool:
        """The request announces a body (Content-Length > 0 or chunked)."""
        f = self.framing
        if f is None:
            return self._body
        return f.kind is BodyKind.CHUNKED or (f.kind is BodyKind.LENGTH and f.length > 0)

    def values(self, name: bytes | None) -> list[bytes]:
        """The values of the request's fields named `name` (lower case; None: every field),
        in order; the fields are indexed by name once, on the first call."""
        if name is None:
            return [v for _, v in self.fields]
        by_name = self._by_name
        if by_name is None:
            by_name = self._by_name = {}
            for n, v in self.fields:
                by_name.setdefault(n.lower(), []).append(v)
        return by_name.get(name, _EMPTY)

    def parts(self, name: bytes | None) -> list[bytes]:
        """values(name) split at commas and stripped (what ``hdr()`` iterates), cached."""
        parts = self._parts
        if parts is None:
            parts = self._parts = {}
        got = parts.get(name)
        if got is None:
            got = parts[name] = _split(self.values(name))
        return got

    def path(self) -> bytes:
        """The target up to its first '?', in the form rules compare (normalize.rule_path:
        escapes of unreserved characters decoded, runs of '/' merged), cached."""
        p = self._path
        if p is None:
            t = self.target
            q = t.find(b"?")
            p = t if q < 0 else t[:q]
            if p.find(b"%") >= 0 or p.find(b"//") >= 0:  # (find: quicker than ``in`` on CPython 3.11)
                p = rule_path(p)
            self._path = p
        return p

    def head_key(self) -> bytes:
        """The head's bytes without the query string (an origin-form request-target cut at
        its '?'; an absolute-form head whole), cached: what every part of the request but its query is a function of, so a key
        that the verdicts of those parts may be remembered by (http/disjunction.py).
        b"" when there is none: a view not built from a head (request_view_of), or whose
        target, method or fields a rule changed."""
        raw = self._raw
        if raw is None:
            self._hk = b""
            return b""
        sp = raw.find(b" ")
        end = raw.find(b" ", sp + 1)  # (the request line has exactly two spaces: parse_request)
        # only an origin-form target's path is its bytes up to the '?': an absolute-form one
        # without a path has one made by parse_request ("*" for OPTIONS, else "/"), whether
        # a query follows or not, so its whole head is the key
        q = raw.find(b"?", sp + 1, end) if raw.startswith(b"/", sp + 1) else -1
        k = self._hk = raw if q < 0 else raw[:q] + raw[end:]
        return k

    def rule_url(self) -> bytes:
        """The ``url`` rules compare: the target as sent, its path in the form path() gives
        (the scheme and authority of an absolute-form target kept)."""
        u, t = self.url, self.target
        q = t.find(b"?")
        raw = t if q < 0 else t[:q]
        p = self.path()
        if p is raw or p == raw or not u.endswith(t):
            return u
        return u[:len(u) - len(t)] + p + t[len(raw):]

    def set_target(self, target: bytes) -> None:
        """Take the target a ``normalize-uri`` rule rewrote: the later rules' fetches read
        it (``url`` too, whose scheme and authority of an absolute-form target stay)."""
        if target == self.target:
            return
        u = self.url
        if u == self.target:
            self.url = target
        elif u.endswith(self.target):
            self.url = u[:len(u) - len(self.target)] + target
        else:  # an absolute-form target without a path (`http://h?q`: its target is `/?q`)
            start = u.find(b"://") + 3
            end = len(u)
            for stop in (b"/", b"?"):
                k = u.find(stop, start)
                if 0 <= k < end:
                    end = k
            self.url = u[:end] + target
        self.target = target
        self._path = None
        self._raw, self._hk = None, b""

    def set_fields(self, fields) -> None:
        """Take the field list a header rule left (a new list: the old one is never
        changed); the later rules' fetches read it."""
        if fields is not self.fields:
            self.fields = fields
            self._by_name = self._parts = None
            self._raw, self._hk = None, b""

    def set_method(self, method: bytes) -> None:
        """Take the method a ``set-method`` rule wrote; ``method`` fetches read it."""
        if method != self.method:
            self._raw, self._hk = None, b""
        self.method = method

    def src_ip(self):
        """The client address as an ipaddress object (None when it is not an IP)."""
        if self._src_ip is None:
            self._src_ip = _address(self.src) or False
        return self._src_ip or None

    def dst_ip(self):
        """The local address as an ipaddress object (None when it is not an IP)."""
        if self._dst_ip is None:
            self._dst_ip = _address(self.dst) or False
        return self._dst_ip or None


def request_view_of(req, raw: bytes, src: str = "", src_port: int = 0, dst: str = "", dst_port: int = 0,
                    nbsrv: Callable[[str], int] | None = None, vars=None) -> RequestView:
    """The RequestView that http-request rules read for the request `req`
    (h1.RequestHead) whose head's bytes are `raw`: a function of `raw` (parse_request
    gives the same `req` for the same bytes) and of the other arguments alone.

    Args:
        req: the parsed head; raw: its bytes (the target as sent is read off its request
            line when parse_request turned an absolute-form target into origin-form).
        src, src_port, dst, dst_port, nbsrv, vars: as RequestView's.
    """
    target = req.target
    if raw.startswith(b"/", len(req.method) + 1):
        url = target  # origin-form: parse_request keeps it as sent
    else:
        start = 0
        while raw.startswith(b"\r\n", start):  # empty lines before the request line (RFC 9112 section 2.2)
            start += 2
        first = raw[start:raw.find(b"\r\n", start)].split(b" ")
        url = first[1] if len(first) == 3 else target
    # (built without __init__'s call: this runs once per request on the rules' path)
    view = _new(RequestView)
    view.method, view.url, view.target, view.version, view.fields = req.method, url, target, req.version, req.headers
    view.src, view.src_port, view.dst, view.dst_port = src, src_port, dst, dst_port
    view.framing, view.nbsrv, view.vars, view._raw = req.framing, nbsrv, vars, raw
    return view


_new = object.__new__
_EMPTY: list = []  # shared, never changed


@dataclass(frozen=True)
class Fetch:
    """A compiled fetch expression.

    Attributes:
        expr: the expression as written (``hdr_beg(host)``).
        type: the output type of the last step (STR, INT, IP, BOOL).
        method: the matching method an ACL uses by default (a derivative's implied one, else
            the type's default); "" when the type has none.
        derivative: the expression names an ACL derivative (``-m`` is refused with it).
        fn: RequestView -> list of samples (empty: absent).
        last: outside ACLs (a log-format ``%[...]``) the fetch gives its last sample (the
            header and cookie fetches: haproxy "returns the last occurrence"), else its first.
        acl_fn: what an ACL iterates instead of fn (None: fn): a Host fetch adds the
            canonical host of each value; ``http_auth_group`` gives the user's groups.
        key: what identifies the samples it gives: (fetch name, its arguments, its
            converters) as written, a derivative reduced to its base fetch
            (``hdr_dom(host)`` and ``hdr(host)`` share ``("hdr", ("host",), (), "")``),
            with the directory map files are read from when there are converters; two
            fetches with one key give the same samples of any view, so ACLs on them can
            be merged (acl.any_of). () for internal fetches (never merged).
        source: what of the request its samples are a pure function of (source_of():
            ``("line",)``, ``("field", b"host")``...), () when nothing that simple
            (server state, response fields, variables); acl.any_of remembers results
            by it.
        userlist: the userlist an ``http_auth*(<userlist>)`` fetch reads ("" for others):
            the runtime checks the credentials against it before the rules run, and
            config/resolve.py checks that it exists.
        reads: in an http-request rule, what its samples are a pure function of besides
            the request head's bytes (request_reads()): () the head alone, or some of
            "src", "src_port", "dst", "dst_port" (the connection's addresses); None when
            it reads anything else (server state, variables, credential verdicts, the
            response): what a routing decision may be remembered by
            (runtime/decisions.py).
    """

    expr: str
    type: str
    method: str
    derivative: bool
    fn: Callable
    last: bool = False
    acl_fn: Callable | None = None
    key: tuple = ()
    source: tuple = ()
    userlist: str = ""
    reads: tuple | None = None

    def __call__(self, view: RequestView) -> list:
        return self.fn(view)

    def text(self, view: RequestView) -> bytes:
        """The one sample a log-format ``%[...]`` shows, as text; b"" when it is absent."""
        samples = self.fn(view)
        if not samples:
            return b""
        v = samples[-1] if self.last else samples[0]
        if isinstance(v, bytes):
            return v
        if isinstance(v, bool):
            return b"1" if v else b"0"
        return str(v).encode("ascii")


# -- field helpers ---------------------------------------------------------------------------

def _named(fields, name: bytes) -> list[bytes]:
    """Values of every field named `name` (lower case; None: every field), in order."""
    if name is None:
        return [v for _, v in fields]
    return [v for n, v in fields if n.lower() == name]


def _split(values: list[bytes]) -> list[bytes]:
    """Comma-separated parts of each value, stripped (haproxy's hdr() view of a list field)."""
    out = []
    for v in values:
        if b"," in v:
            out += [p.strip(b" \t") for p in v.split(b",")]
        else:
            out.append(v.strip(b" \t"))
    return out


def _occurrence(values: list, occ: int | None) -> list:
    if occ is None:
        return values
    if occ == 0 or abs(occ) > len(values):
        return []
    return [values[occ - 1] if occ > 0 else values[occ]]


def _cookies(view: "RequestView", name: bytes | None) -> list[bytes]:
    """Values of the cookies named `name` (case-sensitive; None: the first cookie only)
    in every Cookie field, spaces around names and values ignored (RFC 6265 section 5.4)."""
    out = []
    for v in view.values(b"cookie"):
        for part in v.split(b";"):
            n, eq, val = part.partition(b"=")
            if not eq:
                continue
            if name is None:
                return [val.strip(b" \t")]
            if n.strip(b" \t") == name:
                out.append(val.strip(b" \t"))
    return out


def _params(target: bytes, name: bytes | None, delim: bytes, icase: bool) -> list[bytes]:
    """Values of URL parameter `name` in the query string: it starts after the first '?'
    (or `delim`) and parameters end at '&', ';' or `delim`, '?' when there is none
    (haproxy url_param: its default delimiter is '?', smp_fetch_url_param)."""
    if name is None:
        return _params_of(target, None, delim, icase)
    by_name = _param_index(target, delim, icase)
    got = by_name.get(name.lower() if icase else name)
    return list(got) if got else []


@lru_cache(maxsize=32)
def _param_index(target: bytes, delim: bytes, icase: bool) -> dict:
    """{parameter name (lower case when `icase`): its values in order} of `target`'s query
    string as _params_of() splits it: several url_param fetches on one URL split it once.
    Callers copy what they take (the dict and its lists are shared)."""
    out: dict = {}
    for p in _query_parts(target, delim):
        n, eq, val = p.partition(b"=")
        if eq:
            out.setdefault(n.lower() if icase else n, []).append(val)
    return out


def params_found(names: frozenset, delim: bytes, icase: bool) -> Callable[[RequestView], bool]:
    """view -> whether its URL has a parameter named one of `names` (as ``url_param(<name>,
    <delim>[,i]) -m found`` of each name would say, haproxy 7.3.6 "url_param"; lower case
    when `icase`): the ACLs of several names look the URL's parameters up once."""
    if not delim and names and not any(c in n for n in names for c in (b"=", b"&", b";", b"?")):
        # one regex search of the query string: a parameter starts it or follows '&', ';' or
        # '?' (haproxy's default delimiter) and is its name and '=' (what _param_index()
        # indexes), no index built
        search = re.compile(rb"(?:^|[&;?])(?:" + b"|".join(re.escape(n) for n in sorted(names)) + rb")=",
                            re.IGNORECASE if icase else 0).search

        def test_query(view) -> bool:
            url = view.url
            q = url.find(b"?")
            return q >= 0 and search(url[q + 1:]) is not None
        test_query.literals = (frozenset(n + b"=" for n in names), icase)  # (acl.query_prefilter)
        return test_query

    def test(view) -> bool:
        return not names.isdisjoint(_param_index(view.url, delim, icase))
    return test


def urlp_found_args(fetch) -> tuple | None:
    """(name, delim, icase) as params_found() takes them when `fetch` is a plain
    ``url_param(<name>[,<delim>[,i]])`` (or ``urlp``) without converters, else None."""
    key = fetch.key
    if len(key) != 4 or key[0] not in ("url_param", "urlp") or key[2] or not key[1] or not key[1][0]:
        return None
    args = key[1]
    name = args[0].encode("ascii", "replace")
    delim = args[1].encode("ascii", "replace")[:1] if len(args) > 1 else b""
    icase = len(args) > 2
    return (name.lower() if icase else name), delim, icase


_SEPS = re.compile(rb"[&;]")


def _query_parts(target: bytes, delim: bytes) -> list[bytes]:
    q = target.find(b"?")
    start = q + 1 if q >= 0 else -1
    if delim:
        d = target.find(delim)
        if d >= 0 and (start < 0 or d + 1 < start):
            start = d + 1
    if start < 0:
        return []
    parts = _SEPS.split(target[start:])
    sep = delim or b"?"  # (haproxy's default delimiter: a '?' in the query ends a parameter too)
    if sep not in b"&;":
        parts = [p for chunk in parts for p in chunk.split(sep)]
    return parts


def _params_of(target: bytes, name: bytes | None, delim: bytes, icase: bool) -> list[bytes]:
    q = target.find(b"?")
    start = q + 1 if q >= 0 else -1
    if delim:
        d = target.find(delim)
        if d >= 0 and (start < 0 or d + 1 < start):
            start = d + 1
    if start < 0:
        return []
    query = target[start:]
    seps = {b"&", b";", delim or b"?"}  # (haproxy's default delimiter is '?')
    parts = [query]
    for sep in seps:
        parts = [p for chunk in parts for p in chunk.split(sep)]
    out = []
    want = name.lower() if (name is not None and icase) else name
    for p in parts:
        n, eq, val = p.partition(b"=")
        if not eq:
            continue
        if want is None or (n.lower() if icase else n) == want:
            out.append(val)
    return out


def _int_of(v: bytes) -> int | None:
    """A decimal integer sample from text (haproxy's hdr_val), None when it is not one."""
    v = v.strip(b" \t")
    if _INT.match(v):
        return int(v)
    return None


_INT = re.compile(rb"[-+]?[0-9]+\Z")


# -- the fetch table ---------------------------------------------------------------------------

def path_samples(v: RequestView) -> list[bytes]:
    """The samples of ``path``: [RequestView.path()]."""
    return [v.path()]


def query_samples(v: RequestView) -> list[bytes]:
    """The samples of ``query``: [the target after its first '?'], or [] without one."""
    t = v.target
    q = t.find(b"?")
    return [] if q < 0 else [t[q + 1:]]


def _hdr_args(name: str, args: list[str], occ_allowed: bool = True) -> tuple[bytes | None, int | None]:
    if len(args) > (2 if occ_allowed else 1):
        raise SampleError(f"fetch '{name}' takes at most {2 if occ_allowed else 1} argument(s)")
    field = args[0].strip().lower().encode("ascii", "replace") if args and args[0] else None
    occ = None
    if len(args) == 2:
        if not re.fullmatch(r"-?[0-9]+", args[1]):
            raise SampleError(f"fetch '{name}': occurrence '{args[1]}' is not an integer")
        occ = int(args[1])
    return field, occ


def _no_args(name: str, args: list[str]) -> None:
    if args:
        raise SampleError(f"fetch '{name}' takes no argument")


def _fetch_hdr(name, args):
    field, occ = _hdr_args(name, args)
    if name in ("res.hdr", "shdr"):
        return STR, lambda v: _occurrence(_split(_named(v.response_fields or (), field)), occ)
    if name == "hdr":  # in a response rule hdr() reads the response, as in haproxy
        return STR, lambda v: _occurrence(v.parts(field) if v.response_fields is None
                                          else _split(_named(v.response_fields, field)), occ)
    return STR, lambda v: _occurrence(v.parts(field), occ)


def _fetch_fhdr(name, args):
    field, occ = _hdr_args(name, args)
    return STR, lambda v: _occurrence(v.values(field), occ)


def _fetch_hdr_cnt(name, args):
    field, _ = _hdr_args(name, args, occ_allowed=False)
    if name == "req.fhdr_cnt":
        return INT, lambda v: [len(v.values(field))]
    return INT, lambda v: [len(v.parts(field))]


def _fetch_hdr_val(name, args):
    field, occ = _hdr_args(name, args)
    return INT, lambda v: [i for i in map(_int_of, _occurrence(v.parts(field), occ))
                           if i is not None]


def _fetch_hdr_ip(name, args):
    field, occ = _hdr_args(name, args)

    def fn(v):
        out = []
        for text in _occurrence(v.parts(field), occ):
            ip = header_ip(text)
            if ip is not None:
                out.append(ip)
        return out
    return IP, fn


def header_ip(text: bytes):
    """An address from a field value (haproxy req.hdr_ip): IPv4 with an optional ``:port``,
    or IPv6 (bracketed when a port follows); None otherwise."""
    try:
        s = text.decode("ascii").strip()
    except UnicodeDecodeError:
        return None
    if s.startswith("["):
        s = s[1:].partition("]")[0]
    elif s.count(":") == 1:
        s, _, port = s.partition(":")
        if not port.isdigit() or int(port) > 65535:
            return None
    return _address(s)


def _fetch_cook(name, args):
    if len(args) > 1:
        raise SampleError(f"fetch '{name}' takes at most 1 argument(s)")
    cookie = args[0].strip().encode("ascii", "replace") if args and args[0] else None
    if name.endswith("_cnt"):
        return INT, lambda v: [len(_cookies(v, cookie))]
    if name.endswith("_val"):
        return INT, lambda v: [i for i in map(_int_of, _cookies(v, cookie)) if i is not None]
    return STR, lambda v: _cookies(v, cookie)


def _fetch_urlp(name, args):
    if len(args) > 3:
        raise SampleError(f"fetch '{name}' takes at most 3 argument(s)")
    param = args[0].encode("ascii", "replace") if args and args[0] else None
    delim = args[1].encode("ascii", "replace")[:1] if len(args) > 1 else b""
    if len(args) > 2 and args[2] != "i":
        raise SampleError(f"fetch '{name}': third argument must be 'i', got '{args[2]}'")
    icase = len(args) > 2
    if name == "urlp_val":
        return INT, lambda v: [i for i in map(_int_of, _params(v.url, param, delim, icase)) if i is not None]
    return STR, lambda v: _params(v.url, param, delim, icase)


def _fetch_nbsrv(name, args):
    if len(args) != 1 or not args[0]:
        raise SampleError("fetch 'nbsrv' expects a backend name: nbsrv(<backend>)")
    backend = args[0]
    return INT, lambda v: [v.nbsrv(backend) if v.nbsrv is not None else 0]


def _userlist_arg(name: str, args: list[str]) -> str:
    if len(args) != 1 or not args[0]:
        raise SampleError(f"fetch '{name}' expects a userlist: {name}(<userlist>)")
    return args[0]


def _fetch_http_auth(name, args):
    ul = _userlist_arg(name, args)
    if name == "http_auth":
        return BOOL, lambda v: [v.auth is not None and ul in v.auth]

    def user(v):
        got = v.auth.get(ul) if v.auth is not None else None
        return [] if got is None else [got[0]]
    return STR, user


def _auth_groups(ul: str) -> Callable:
    def groups(v):
        got = v.auth.get(ul) if v.auth is not None else None
        return [] if got is None else list(got[1])
    return groups


def _basic_part(index: int) -> Callable:
    def part(v):
        cred = basic_credentials(v.values(b"authorization"))
        return [] if cred is None else [cred[index]]
    return part


def _auth_type(v) -> list[bytes]:
    scheme = auth_scheme(v.values(b"authorization"))
    return [] if scheme is None else [scheme]


def _fetch_var(name, args):
    from splicer.http.logformat import RuleError, parse_var_name

    if not 1 <= len(args) <= 2 or not args[0]:
        raise SampleError("fetch 'var' expects a variable: var(<scope>.<name>[,<default>])")
    try:
        scope, var = parse_var_name(args[0], "fetch 'var'")
    except RuleError as exc:
        raise SampleError(str(exc)) from None
    default = [args[1].encode("utf-8")] if len(args) == 2 else []
    if default and _CTL.search(default[0]):
        raise SampleError("fetch 'var': the default cannot hold control characters (CR, LF, NUL...)")

    def fn(v):
        store = v.vars
        got = store.get(scope, var) if store is not None else None
        return default if got is None else [got]
    return STR, fn


_CTL = re.compile(rb"[\x00-\x08\x0a-\x1f\x7f]")


def _fetch_const(name, args):
    if len(args) > 1 or (name != "str" and not args):
        raise SampleError(f"fetch '{name}' expects one argument: {name}(<value>)")
    text = args[0] if args else ""
    if name == "str":
        value = text.encode("utf-8")
        if _CTL.search(value):
            raise SampleError("fetch 'str': the text cannot hold control characters (CR, LF, NUL...)")
        return STR, lambda v: [value]
    if name == "int":
        if not re.fullmatch(r"[-+]?[0-9]+", text.strip()):
            raise SampleError(f"fetch 'int': '{text}' is not an integer")
        n = int(text)
        return INT, lambda v: [n]
    if text.strip() not in ("0", "1", "true", "false"):
        raise SampleError(f"fetch 'bool': '{text}' is not 0, 1, true or false")
    b = text.strip() in ("1", "true")
    return BOOL, lambda v: [b]


def _simple(kind: str, fn: Callable) -> Callable:
    def build(name, args):
        _no_args(name, args)
        return kind, fn
    return build


def _ver(v: RequestView) -> list[bytes]:
    return [v.version]


FETCHES: dict[str, Callable] = {
    "hdr": _fetch_hdr, "req.hdr": _fetch_hdr, "res.hdr": _fetch_hdr, "shdr": _fetch_hdr,
    "req.fhdr": _fetch_fhdr,
    "hdr_cnt": _fetch_hdr_cnt, "req.hdr_cnt": _fetch_hdr_cnt, "req.fhdr_cnt": _fetch_hdr_cnt,
    "hdr_val": _fetch_hdr_val, "req.hdr_val": _fetch_hdr_val,
    "hdr_ip": _fetch_hdr_ip, "req.hdr_ip": _fetch_hdr_ip,
    "req.cook": _fetch_cook, "cook": _fetch_cook, "req.cook_cnt": _fetch_cook, "cook_cnt": _fetch_cook,
    "req.cook_val": _fetch_cook, "cook_val": _fetch_cook,
    "url_param": _fetch_urlp, "urlp": _fetch_urlp, "urlp_val": _fetch_urlp,
    "path": _simple(STR, path_samples),
    "query": _simple(STR, query_samples),
    "url": _simple(STR, lambda v: [v.rule_url()]),
    "method": _simple(STR, lambda v: [v.method]),
    "req.ver": _simple(STR, _ver), "req_ver": _simple(STR, _ver),
    "src": _simple(IP, lambda v: [ip] if (ip := v.src_ip()) is not None else []),
    "dst": _simple(IP, lambda v: [ip] if (ip := v.dst_ip()) is not None else []),
    "src_port": _simple(INT, lambda v: [v.src_port]),
    "dst_port": _simple(INT, lambda v: [v.dst_port]),
    "status": _simple(INT, lambda v: [v.status] if v.status else []),
    "nbsrv": _fetch_nbsrv,
    "http_auth": _fetch_http_auth, "http_auth_group": _fetch_http_auth,
    "http_auth_type": _simple(STR, _auth_type),
    "http_auth_user": _simple(STR, _basic_part(0)),
    "http_auth_pass": _simple(STR, _basic_part(1)),
    "var": _fetch_var,
    "str": _fetch_const, "int": _fetch_const, "bool": _fetch_const,
    "always_true": _simple(BOOL, lambda v: [True]),
    "always_false": _simple(BOOL, lambda v: [False]),
    "req.proto_http": _simple(BOOL, lambda v: [True]),
    "req.body_announced": _simple(BOOL, lambda v: [v.has_body]),
}
"""Fetch name -> builder(name, args) returning (output type, RequestView -> samples)."""

_VIEW_SOURCES = {
    "path": "line", "query": "line", "url_param": "line", "urlp": "line", "urlp_val": "line",
    "url": "line", "method": "line", "req.ver": "line", "req_ver": "line",
    "src": "src", "dst": "dst", "src_port": "src_port", "dst_port": "dst_port",
}
_HEAD_FETCHES = frozenset({
    "hdr", "req.hdr", "req.fhdr", "hdr_cnt", "req.hdr_cnt", "req.fhdr_cnt", "hdr_val", "req.hdr_val",
    "hdr_ip", "req.hdr_ip", "req.cook", "cook", "req.cook_cnt", "cook_cnt", "req.cook_val", "cook_val",
    "url_param", "urlp", "urlp_val", "path", "query", "url", "method", "req.ver", "req_ver",
    "http_auth_type", "http_auth_user", "http_auth_pass", "str", "int", "bool", "always_true",
    "always_false", "req.proto_http", "req.body_announced"})
"""Fetches whose samples in an http-request rule are a pure function of the request head's
bytes (its line, its fields, the body its framing announces) and of their arguments: the
converters after them are pure too (a map is read once, at load)."""

_ADDRESS_FETCHES = frozenset({"src", "src_port", "dst", "dst_port"})


def request_reads(name: str) -> tuple | None:
    """What the samples of fetch `name` in an http-request rule are a pure function of
    besides the request head: () for the head alone (_HEAD_FETCHES), (name,) for an
    address of the connection (``src``, ``src_port``, ``dst``, ``dst_port``), None for
    any other fetch (``nbsrv``: server state; ``var``: variables; ``http_auth``,
    ``http_auth_group``: verdicts of the runtime; ``status``, ``res.hdr``: the response;
    and every fetch not listed, so that a new one is never remembered by mistake)."""
    if name in _HEAD_FETCHES:
        return ()
    if name in _ADDRESS_FETCHES:
        return (name,)
    return None


_FIELD_FETCHES = frozenset({"hdr", "req.hdr", "req.fhdr", "hdr_cnt", "req.hdr_cnt", "req.fhdr_cnt",
                            "hdr_val", "req.hdr_val", "hdr_ip", "req.hdr_ip"})
_COOKIE_FETCHES = frozenset({"req.cook", "cook", "req.cook_cnt", "cook_cnt", "req.cook_val", "cook_val"})


def source_of(name: str, args: list[str]) -> tuple:
    """What of the request the samples of fetch `name(args)` are a pure function of: its
    request line (``("line",)``: the method, the target as sent and as the rules left it,
    the version), the values of one request field (``("field", b"host")``; None: every
    field), the client's or the local address or port (``("src",)``...), or () for
    anything else (server state, the response, the body). source_key() reads it off a
    view."""
    if name in _VIEW_SOURCES:
        return (_VIEW_SOURCES[name],)
    if name in _FIELD_FETCHES:
        return ("field", args[0].strip().lower().encode("ascii", "replace") if args and args[0] else None)
    if name in _COOKIE_FETCHES:
        return ("field", b"cookie")
    return ()


_LINE = operator.attrgetter("method", "url", "target", "version")


def source_key(source: tuple) -> Callable[[RequestView], object]:
    """view -> a hashable value that determines every sample of a fetch whose
    Fetch.source is `source` (two views with equal keys give equal samples), or None
    when it cannot be told (a field source in an http-response rule, where ``hdr()``
    reads the response).

    Raises:
        ValueError: `source` is ().
    """
    kind = source[0] if source else ""
    if kind == "field":
        name = source[1]
        return lambda v: tuple(v.values(name)) if v.response_fields is None else None
    if kind == "line":
        return _LINE
    if kind in ("src", "dst", "src_port", "dst_port"):
        return operator.attrgetter(kind)
    raise ValueError(f"no source key for {source!r}")


def _query_key(v: RequestView) -> bytes:
    t = v.target
    q = t.find(b"?")
    return b"" if q < 0 else t[q:]  # the '?' kept: an empty query is not an absent one


_LINE_PARTS: dict[str, Callable[[RequestView], object]] = {
    "path": RequestView.path,
    "query": _query_key,
    "urlp": operator.attrgetter("url"),
    "url": operator.attrgetter("url", "target"),
    "method": operator.attrgetter("method"),
    "version": operator.attrgetter("version"),
}
"""The parts of the request line that request-line fetches read, and a key of each:
``path`` the path as rules compare it (RequestView.path), ``query`` the target from its
'?', ``urlp`` (``url_param()``) the URL as sent (a delimiter may start the parameters
before the '?'), ``url`` the URL as sent and the target it reads its path from
(rule_url), ``method`` and ``version`` themselves."""

_PART_OF = {"path": "path", "query": "query", "url_param": "urlp", "urlp": "urlp", "urlp_val": "urlp",
            "url": "url", "method": "method", "req.ver": "version", "req_ver": "version"}


def line_part(name: str) -> str | None:
    """The part of the request line (a key of _LINE_PARTS: ``"path"``, ``"query"``,
    ``"urlp"``, ``"url"``, ``"method"``, ``"version"``) that the samples of fetch `name`
    (a Fetch.key's name: a derivative reduced to its base) are a pure function of, None
    when `name` is not a request-line fetch (source_of() gives ``("line",)`` exactly for
    those that have a part)."""
    return _PART_OF.get(name)


def part_key(part: str) -> Callable[[RequestView], object]:
    """view -> a hashable value that determines every sample of a fetch of line_part()
    `part` (two views with equal keys give equal samples): a path test is remembered by
    the path alone, so a new query string does not miss it.

    Raises:
        KeyError: `part` is not a line_part() value.
    """
    return _LINE_PARTS[part]


MEMO_SIZE = 4096
"""Most keys a remembered() function keeps a result for; its memo starts over when full."""

MEMO_KEY_MAX = 1024
"""Largest key (bytes, summed over a tuple's items) remembered() keeps a result for."""


def _key_size(k) -> int:
    if isinstance(k, (bytes, str)):
        return len(k)
    if isinstance(k, tuple):
        return sum(_key_size(x) for x in k)
    return 8


def remembered(fn: Callable[[RequestView], object], key_of: Callable[[RequestView], object]) -> Callable:
    """`fn` (view -> a result other than None) remembering its results by key_of(view),
    for up to MEMO_SIZE keys of at most MEMO_KEY_MAX bytes (a None key is never
    remembered). Sound only when fn's result is a pure function of that key (source_key()
    gives such keys). What it saves repeats request after request on a real site: its few
    Host values, its hot paths, a client's User-Agent and address."""
    memo: dict = {}
    get = memo.get

    def run(view):
        k = key_of(view)
        if k is None:
            return fn(view)
        r = get(k)
        if r is None:
            r = fn(view)
            if len(memo) >= MEMO_SIZE:
                memo.clear()
            if _key_size(k) <= MEMO_KEY_MAX:
                memo[k] = r
        return r
    return run


PAY_CALLS = MEMO_SIZE * 4 // 3
"""Calls within which a memo that fills up (MEMO_SIZE new keys) is judged not to pay: fewer
than one probe in four hit (remembered_by_head, http/disjunction.py)."""

PAUSE_CALLS = MEMO_SIZE * 8
"""Calls for which a memo that did not pay is left alone (no probe, no insert)."""


def remembered_by_head(fn: Callable[[RequestView], object]) -> Callable:
    """`fn` (view -> a result other than None, a pure function of the request's fields: a
    remembered() function of their values) remembering its results by the head without
    its query (RequestView.head_key), for views that have one: a request that repeats its
    head but for the query costs one probe, and no field index. Views without a head key,
    and every view while the memo pauses (it filled within PAY_CALLS calls: heads do not
    repeat, as with per-user cookies), go to `fn` itself."""
    memo: dict = {}
    get = memo.get
    n = filled = paused = 0

    def run(view):
        nonlocal n, filled, paused
        n += 1
        if paused >= n or view.response_fields is not None:
            return fn(view)
        hk = view._hk
        if hk is None:
            hk = view.head_key()
        if not hk:
            return fn(view)
        r = get(hk)
        if r is None:
            r = fn(view)
            if len(memo) >= MEMO_SIZE:
                if n - filled < PAY_CALLS:
                    paused = n + PAUSE_CALLS
                filled = n
                memo.clear()
            if len(hk) <= MEMO_KEY_MAX:
                memo[hk] = r
        return r
    run.memo = memo
    return run


DERIVED_BASES = ("hdr", "path", "url", "urlp", "req.cook", "cook")
"""Fetches with ACL derivatives ``<base>_<method>`` (haproxy 7.3.6 "ACL derivatives")."""

_DEFAULT_METHOD = {STR: "str", INT: "int", IP: "ip", BOOL: "bool"}


def _lower(values: list) -> list:
    return [v.lower() for v in values]


def _upper(values: list) -> list:
    return [v.upper() for v in values]


def _conv_case(name, args, base_dir):
    if args:
        raise SampleError(f"converter '{name}' takes no argument")
    return STR, _lower if name == "lower" else _upper


def _conv_map(name, args, base_dir):
    if not 1 <= len(args) <= 2 or not args[0]:
        raise SampleError(f"converter '{name}' expects a map file: {name}(<file>[,<default>])")
    table = load_map(args[0], base_dir, "str" if name == "map" else name[4:])
    default = args[1].encode("utf-8") if len(args) == 2 else None

    def conv(values: list) -> list:
        out = []
        for v in values:
            got = table.lookup(v)
            if got is None:
                got = default
            if got is not None:
                out.append(got)
        return out
    return STR, conv


def _index_args(name, args):
    if not 2 <= len(args) <= 3:
        raise SampleError(f"converter '{name}' expects {name}(<index>,<delimiters>[,<count>])")
    if not re.fullmatch(r"-?[0-9]+", args[0].strip()) or int(args[0]) == 0:
        raise SampleError(f"converter '{name}': index '{args[0]}' must be a non-zero integer")
    if not args[1]:
        raise SampleError(f"converter '{name}': delimiters must not be empty")
    count = 1
    if len(args) == 3:
        if not re.fullmatch(r"[0-9]+", args[2].strip()):
            raise SampleError(f"converter '{name}': count '{args[2]}' must be an integer >= 0")
        count = int(args[2])
    return int(args[0]), re.compile(b"[" + re.escape(args[1].encode("latin-1")) + b"]"), count


def _conv_field(name, args, base_dir):
    idx, delims, count = _index_args(name, args)
    word = name == "word"

    def pick(v: bytes) -> bytes:
        if word:  # runs of delimiters separate like one, and make no empty word
            spans = [m.span() for m in re.finditer(b"[^" + delims.pattern[1:] + b"+", v)]
        else:
            spans, start = [], 0
            for m in delims.finditer(v):
                spans.append((start, m.start()))
                start = m.end()
            spans.append((start, len(v)))
        n = len(spans)
        if idx > 0:
            first = idx - 1
            last = n if count == 0 else min(n, first + count)
        else:
            last = n + idx + 1
            first = 0 if count == 0 else max(0, last - count)
        if first >= n or last <= 0 or first >= last:
            return b""
        return v[spans[first][0]:spans[last - 1][1]]
    return STR, lambda values: [pick(v) for v in values]


def _conv_regsub(name, args, base_dir):
    if not 2 <= len(args) <= 3 or not args[0]:
        raise SampleError("converter 'regsub' expects regsub(<regex>,<subst>[,<flags>])")
    flags = args[2] if len(args) == 3 else ""
    if set(flags) - {"i", "g"}:
        raise SampleError(f"converter 'regsub': unknown flags '{flags}' (supported: i, g)")
    try:
        rx = re.compile(args[0].encode("utf-8"), re.I if "i" in flags else 0)
    except re.error as exc:
        raise SampleError(f"converter 'regsub': invalid regex '{args[0]}': {exc}") from None
    subst = args[1].encode("utf-8")
    parts = re.split(rb"\\([0-9])", subst)  # literal, group number, literal, ...
    if any(int(g) > rx.groups for g in parts[1::2]):
        raise SampleError(f"converter 'regsub': '{args[1]}' refers to a group the regex does not have")

    def repl(m: re.Match) -> bytes:
        return b"".join(p if i % 2 == 0 else (m.group(int(p)) or b"") for i, p in enumerate(parts))
    count = 0 if "g" in flags else 1
    return STR, lambda values: [rx.sub(repl, v, count=count) for v in values]


CONVERTERS: dict[str, Callable] = {
    "lower": _conv_case, "upper": _conv_case,
    "map": _conv_map, "map_str": _conv_map, "map_beg": _conv_map, "map_end": _conv_map,
    "map_dom": _conv_map, "map_reg": _conv_map,
    "field": _conv_field, "word": _conv_field,
    "regsub": _conv_regsub,
}
"""Converter name -> builder(name, args, base_dir) returning (output type, samples ->
samples); each takes STR samples (haproxy 7.3.1 "Converters")."""


class MapTable:
    """A map file compiled for one matching method (haproxy 7.3.1 "map"): what
    lookup(sample) returns is the value of the first line, in file order, whose key
    matches, or None.

    Args:
        entries: (key, value) pairs in file order.
        method: "str" (exact, a dict), "beg" / "end" (a prefix / suffix of the sample; a
            dict per key length), "dom" (the key is a run of the sample's labels, split at
            '/', '?', '.', ':'), "reg" (the key is a regex searched in the sample).
    """

    __slots__ = ("method", "exact", "by_len", "lens", "regs")

    def __init__(self, entries: list[tuple[bytes, bytes]], method: str) -> None:
        self.method = method
        self.exact: dict[bytes, tuple[int, bytes]] = {}
        self.by_len: dict[int, dict[bytes, tuple[int, bytes]]] = {}
        self.regs: list[tuple[re.Pattern, bytes]] = []
        for i, (k, v) in enumerate(entries):
            if method == "reg":
                self.regs.append((re.compile(k), v))
            elif method in ("beg", "end"):
                self.by_len.setdefault(len(k), {}).setdefault(k, (i, v))
            else:
                self.exact.setdefault(k, (i, v))
        self.lens = sorted(self.by_len)

    def lookup(self, sample: bytes) -> bytes | None:
        m = self.method
        if m == "str":
            got = self.exact.get(sample)
            return None if got is None else got[1]
        if m == "reg":
            for rx, v in self.regs:
                if rx.search(sample):
                    return v
            return None
        best = None
        if m in ("beg", "end"):
            n = len(sample)
            for k in self.lens:
                if k > n:
                    break
                got = self.by_len[k].get(sample[:k] if m == "beg" else sample[n - k:])
                if got is not None and (best is None or got[0] < best[0]):
                    best = got
            return None if best is None else best[1]
        # dom: every run of whole labels
        bounds = [0] + [j + 1 for j, c in enumerate(sample) if c in _DOM_DELIMS]
        ends = [j for j, c in enumerate(sample) if c in _DOM_DELIMS] + [len(sample)]
        for a in bounds:
            for b in ends:
                if b > a:
                    got = self.exact.get(sample[a:b])
                    if got is not None and (best is None or got[0] < best[0]):
                        best = got
        return None if best is None else best[1]


_DOM_DELIMS = frozenset(b"/?.:")


def load_map(path: str, base_dir: str, method: str) -> MapTable:
    """Read a map file once, at load: one ``<key> <value>`` per line (the value is the rest
    of the line after the blanks that follow the key), ``#`` comment lines and blank lines
    skipped; compiled for `method` (MapTable).

    Args:
        path: as written in the converter; a relative one is read from base_dir (the
            configuration file's directory).

    Raises:
        SampleError: the file cannot be read, or (map_reg) a key is not a valid regex.
    """
    import os

    full = path if os.path.isabs(path) else os.path.join(base_dir or ".", path)
    try:
        with open(full, "rb") as f:
            data = f.read()
    except OSError as exc:
        raise SampleError(f"cannot read map file '{path}': {exc.strerror}") from None
    entries = []
    for n, line in enumerate(data.splitlines(), 1):
        line = line.strip(b" \t\r\x0b\x0c")  # (isspace(), as haproxy's pattern file reader skips)
        if not line or line.startswith(b"#"):
            continue
        parts = line.split(None, 1)
        key, value = parts[0], (parts[1].strip(b" \t") if len(parts) > 1 else b"")
        if method == "reg":
            try:
                re.compile(key)
            except re.error as exc:
                raise SampleError(f"map file '{path}' line {n}: invalid regex '{key.decode('latin-1')}': {exc}") from None
        entries.append((key, value))
    return MapTable(entries, method)


def _split_top(text: str, sep: str) -> list[str]:
    """Split on `sep` outside parentheses."""
    parts, depth, cur = [], 0, []
    for c in text:
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
        if c == sep and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(c)
    parts.append("".join(cur))
    return parts


def _call(step: str) -> tuple[str, list[str]]:
    name, paren, rest = step.partition("(")
    if not paren:
        return name, []
    if not rest.endswith(")"):
        raise SampleError(f"missing ')' in '{step}'")
    inner = rest[:-1]
    return name, ([] if inner == "" else inner.split(","))


def parse_fetch(expr: str, base_dir: str = "") -> Fetch:
    """Compile a fetch expression with its converters.

    Args:
        expr: e.g. ``"path"``, ``"hdr_beg(host)"``, ``"req.hdr(x-forwarded-for,-1)"``,
            ``"req.hdr(host),lower,map(hosts.map,default)"``.
        base_dir: directory relative map files are read from (the config file's).

    Returns:
        The Fetch (its type and default matching method included).

    Raises:
        SampleError: an unknown fetch or converter, wrong arguments (e.g.
            ``unknown fetch method 'paht'; did you mean 'path'?``).
    """
    steps = _split_top(expr, ",")
    name, args = _call(steps[0])
    derivative = False
    method = ""
    builder = FETCHES.get(name)
    if builder is None:
        base, _, suffix = name.rpartition("_")
        if base in DERIVED_BASES and suffix in DERIVATIVE_METHODS:
            builder, method, derivative = FETCHES[base], suffix, True
            name = base
        else:
            from difflib import get_close_matches

            known = [*FETCHES, *(f"{b}_{m}" for b in DERIVED_BASES for m in DERIVATIVE_METHODS)]
            close = get_close_matches(name, known, n=1)
            raise SampleError(f"unknown fetch method '{name}'"
                              + (f"; did you mean '{close[0]}'?" if close else ""))
    if name == "req.body_announced":
        raise SampleError(f"unknown fetch method '{name}'")  # internal: REQ_CONTENT only
    kind, fn = builder(name, args)
    acl_fn = None
    if name in _HOST_FETCHES and kind == STR and args and args[0].strip().lower() == "host":
        acl_fn = _with_canonical_host(fn)
    userlist = args[0] if name in ("http_auth", "http_auth_group") else ""
    if name == "http_auth_group":
        acl_fn = _auth_groups(userlist)
    for step in steps[1:]:
        cname, cargs = _call(step.strip())
        conv = CONVERTERS.get(cname)
        if conv is None:
            raise SampleError(f"unknown converter '{cname}' in '{expr}' (supported: {', '.join(CONVERTERS)})")
        if kind != STR:
            raise SampleError(f"converter '{cname}' expects a string, '{steps[0]}' gives {kind}")
        kind, conv_fn = conv(cname, cargs, base_dir)
        fn = _chain(fn, conv_fn)
        if acl_fn is not None:
            acl_fn = _chain(acl_fn, conv_fn)
        method = ""  # haproxy: a converter after a derivative makes its implied method void
    convs = tuple(s.strip() for s in steps[1:])
    key = (name, tuple(a.strip() for a in args), convs, base_dir if convs else "")
    return Fetch(expr, kind, method or _DEFAULT_METHOD[kind], derivative and len(steps) == 1, fn,
                 name in _LAST_OCCURRENCE, acl_fn, key, source_of(name, args), userlist,
                 request_reads(name))


_HOST_FETCHES = frozenset({"hdr", "req.hdr", "req.fhdr"})


def _with_canonical_host(fn: Callable) -> Callable:
    @lru_cache(maxsize=1024)
    def canon(value: bytes) -> bytes:
        return canonical_host(value).lower()

    def run(view):
        values = fn(view)
        out = None
        for v in values:
            c = canon(v)
            if c is not v and c != v:
                if out is None:
                    out = list(values)
                if c not in out:
                    out.append(c)
        return values if out is None else out
    return run


_LAST_OCCURRENCE = frozenset({"hdr", "req.hdr", "res.hdr", "shdr", "req.fhdr", "hdr_val", "req.hdr_val",
                              "hdr_ip", "req.hdr_ip", "req.cook", "cook", "req.cook_val", "cook_val"})


def parse_name_format(text: str, base_dir: str = "") -> tuple:
    """Parse a log-format name such as ``be_%[req.hdr(host),lower]`` (haproxy's dynamic
    ``use_backend`` names): literal text and ``%[<fetch>[,<converter>]...]`` samples.

    Returns:
        Parts in order: bytes for literal text, Fetch objects for samples (render_name()).

    Raises:
        SampleError: an unclosed ``%[``, a ``%`` that starts no sample (``%%`` is a literal
            one), or a bad fetch (parse_fetch).
    """
    parts: list = []
    lit: list[str] = []
    i = 0
    while i < len(text):
        c = text[i]
        if c != "%":
            lit.append(c)
            i += 1
            continue
        if text[i + 1:i + 2] == "%":
            lit.append("%")
            i += 2
            continue
        if text[i + 1:i + 2] != "[":
            raise SampleError(f"a '%' must start a sample ('%[fetch]') in '{text}'")
        end = text.find("]", i + 2)
        if end < 0:
            raise SampleError(f"unclosed '%[' in '{text}'")
        if lit:
            parts.append("".join(lit).encode())
            lit = []
        parts.append(parse_fetch(text[i + 2:end], base_dir))
        i = end + 1
    if lit:
        parts.append("".join(lit).encode())
    return tuple(parts)


def render_name(parts: tuple, view: RequestView) -> bytes:
    """The text of a parsed name format for this request (an absent sample gives b"")."""
    return b"".join(p if isinstance(p, bytes) else p.text(view) for p in parts)


def name_renderer(parts: tuple) -> Callable[[RequestView], str]:
    """view -> the text of a parsed name format (parse_name_format) as str (latin-1).
    When every sample in it reads one part of the request (Fetch.source), the text is
    remembered by those parts' values (remembered()): a dynamic ``use_backend`` name is
    computed once per Host value, not once per request. When they are all fields, by the
    head without its query too (remembered_by_head) when the view has one."""
    fetches = [p for p in parts if not isinstance(p, bytes)]

    def render(view) -> str:
        return render_name(parts, view).decode("latin-1")
    if not fetches or not all(f.source for f in fetches):
        return render
    keys = tuple(source_key(f.source) for f in fetches)
    if len(keys) == 1:
        key_of = keys[0]
    else:
        def key_of(view):
            ks = tuple(k(view) for k in keys)
            return None if None in ks else ks
    if all(f.source[0] == "field" for f in fetches):
        return remembered_by_head(remembered(render, key_of))
    return remembered(render, key_of)


def _chain(fetch: Callable, conv: Callable) -> Callable:
    return lambda v: conv(fetch(v))


def internal_fetch(name: str) -> Fetch:
    """A fetch that only predefined ACLs use (``req.body_announced`` for REQ_CONTENT)."""
    kind, fn = FETCHES[name](name, [])
    return Fetch(name, kind, _DEFAULT_METHOD[kind], False, fn, reads=request_reads(name))
