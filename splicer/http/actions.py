"""http-request (and http-response) actions that answer the client locally, and
``http-response set-status`` (StatusRule; its evaluation is http/response_actions.py's): haproxy's
``deny``, ``return``, ``redirect``, ``auth``, ``tarpit``, and ``allow``, which stops the
evaluation of the rules after it. The http-response side's evaluation is
http/response_actions.py's.

Rule: sans-I/O. An action is parsed once from its words (parse_action, files read then),
into a LocalRule; per request, first_local() says which rule (if any) answers, and
reply() builds the whole response as bytes. Sending it, and what becomes of a request body
still in the socket, is the runtime's (runtime/session.py); the response states whether the
connection stays open (``keep_alive``).

Theory of operation (haproxy configuration.txt 4.2 "http-request deny", "http-request
return", "http-request redirect", "http-request allow", and 4.4 "redirect"):

- The ``http-request`` rules of a proxy run in file order. The first ``deny``, ``return``
  or ``redirect`` whose condition holds ends the request with its response; an ``allow``
  whose condition holds stops the evaluation of the proxy's remaining ``http-request``
  rules (header rules included) and lets the request through. Header rules
  (rules.py) do not stop anything.
- ``deny [deny_status <code>]`` answers 403 (or <code>) with the proxy's error page for
  it (``errorfile`` wins) or the payload given, as ``return`` takes it.
- ``return [status <code>] [content-type <type>] [string <str> | file <file> |
  errorfile <file> | default-errorfiles] [hdr <name> <fmt>]*``: status 200 by default;
  ``string`` and ``file`` need a content-type; ``errorfile`` holds a whole HTTP response,
  sent as-is; without a payload the body is empty, or with ``default-errorfiles`` the
  error page of the status.
- ``redirect location <loc> | prefix <pfx> | scheme <sch> [code <code>] [drop-query]
  [append-slash]``: code 302 by default (301, 302, 303, 307, 308). ``location`` sends <loc>
  as is; ``prefix`` puts <pfx> before the request's path (and query unless drop-query; a
  prefix of exactly ``/`` adds nothing); ``scheme`` builds ``<sch>://<host><path>``.
  append-slash adds a ``/`` to a path that does not end with one (prefix and scheme).
  <loc>, <pfx> and <sch> are log-format strings (logformat.parse_format).
- ``auth [realm <realm>]``: answer 401 with the proxy's 401 error page (``errorfile 401``
  wins) whose ``WWW-Authenticate`` fields are replaced with one
  ``Basic realm="<realm>"`` challenge (RFC 7617 section 2); the realm defaults to the name
  of the proxy the rule is written in (config/keywords.py fills it in). Counted as an
  intercepted request, terminated "LR", as haproxy does.
- ``tarpit [{status | deny_status} <code>] [payload as return]``: hold the request for
  ``timeout tarpit`` (runtime/session.py does the holding), then answer 500 (or <code>)
  as ``return`` would, with ``default-errorfiles`` implied when no payload is given, and
  close the connection. Counted as a denied request, terminated "PT".
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, replace

from splicer.http import acl, errorpages
from splicer.http.headers import TOKEN
from splicer.http.normalize import NormalizeError, NormalizeRule
from splicer.http.logformat import RuleError, parse_format, render

LOCAL_ACTIONS = ("allow", "deny", "return", "redirect", "auth", "tarpit")
"""Actions handled here."""

REDIRECT_CODES = (301, 302, 303, 307, 308)
"""Status codes `redirect` accepts (haproxy's list)."""

BODILESS = (204, 304)
"""Statuses whose response ends at its head (RFC 9112 section 6.3 rule 1): a local answer
with one of them has no body and no Content-Length (RFC 9110 sections 8.6, 15.3.5, 15.4.5),
and a rule that gives one a payload is refused at load, as haproxy refuses it."""

_CTL = re.compile(r"[\x00-\x1f\x7f]")

PAYLOAD_MAX = 1 << 20
"""Largest ``file`` / ``errorfile`` payload accepted, bytes."""


@dataclass(frozen=True)
class LocalRule:
    """One ``http-request allow|deny|return|redirect`` rule.

    Attributes:
        action: "allow", "deny", "return" or "redirect".
        status: the status to answer (deny: 403 by default; return: 200; redirect: 302).
        cond: the rule's acl.Condition (None: always).
        content_type: the Content-Type of a ``string``/``file`` body (bytes), or None.
        body: a literal body (``file``), or None; body_fmt: a parsed ``string`` format.
        raw: a whole HTTP response from ``errorfile`` (sent as-is), or None.
        default_errorfiles: the body is the proxy's error page of `status`.
        headers: (name, parsed format) pairs of ``hdr``.
        redirect: "location", "prefix" or "scheme" ("" for other actions); target: its
            parsed format; drop_query, append_slash: redirect options.
        realm: the ``auth`` challenge's realm (None: the proxy's name, filled in when the
            rule is read from its section).
        file, line: where the rule was written.
        side: "request" (an ``http-request`` rule) or "response" (``http-response``).
    """

    action: str
    status: int = 0
    cond: object = None
    content_type: bytes | None = None
    body: bytes | None = None
    body_fmt: tuple | None = None
    raw: bytes | None = None
    default_errorfiles: bool = False
    headers: tuple = ()
    redirect: str = ""
    target: tuple = ()
    drop_query: bool = False
    append_slash: bool = False
    realm: str | None = None
    file: str = ""
    line: int = 0
    side: str = "request"

    @property
    def counter(self) -> str:
        """The stats counter a stream this rule answers adds one to: haproxy counts denied
        (and tarpitted) requests as ``dreq``, other local answers to a request as
        ``intercepted``, denied responses as ``dresp``, and other answers to a response in
        none ("")."""
        if self.side == "response":
            return "dresp" if self.action == "deny" else ""
        return "dreq" if self.action in ("deny", "tarpit") else "intercepted"


def _read(path: str, base_dir: str, what: str) -> bytes:
    full = path if os.path.isabs(path) else os.path.join(base_dir or ".", path)
    try:
        with open(full, "rb") as f:
            data = f.read(PAYLOAD_MAX + 1)
    except OSError as exc:
        raise RuleError(f"'{what}': cannot read '{path}': {exc.strerror}") from None
    if len(data) > PAYLOAD_MAX:
        raise RuleError(f"'{what}': '{path}' is larger than {PAYLOAD_MAX} bytes")
    return data


def _status(text: str, what: str, lo: int = 200, hi: int = 599) -> int:
    if not text.isdigit() or not lo <= int(text) <= hi:
        raise RuleError(f"'{what}': invalid status code '{text}' (expected {lo}..{hi})")
    return int(text)


def parse_action(action: str, args: list[str], cond, base_dir: str = "", file: str = "",
                 line: int = 0, side: str = "request") -> LocalRule:
    """Read the words of one local action (after ``http-request <action>`` or
    ``http-response <action>``, the condition already split off by the caller).

    Args:
        action: one of LOCAL_ACTIONS.
        args: its words, e.g. ``["location", "/login", "code", "301"]``.
        cond: the parsed condition or None.
        base_dir: directory relative ``file``/``errorfile`` paths are read from.
        side: "request" or "response": a response ``deny`` answers 502 by default (haproxy
            4.4 "deny"), a response ``redirect`` takes ``location`` only (4.4 "redirect"),
            and the log-format values of a response rule may read the response
            (``status``, ``res.hdr``).

    Raises:
        RuleError: an unknown or repeated option, a missing argument, a bad status or code,
            a body without content-type, an unreadable file, ``hdr`` with ``errorfile``.
    """
    what = f"http-{side} {action}"
    if action == "allow":
        if args:
            raise RuleError(f"'{what}' takes no argument, got '{args[0]}'")
        return LocalRule("allow", 0, cond, file=file, line=line, side=side)
    if action == "redirect":
        return _parse_redirect(args, cond, file, line, side)
    if action == "auth":
        return _parse_auth(args, cond, file, line)
    status = {"deny": 403 if side == "request" else 502, "tarpit": 500}.get(action, 200)
    kw = dict(content_type=None, body=None, body_fmt=None, raw=None, default_errorfiles=False)
    headers = []
    payload = None
    i = 0
    while i < len(args):
        w = args[i]
        val = args[i + 1] if i + 1 < len(args) else None
        if w in ("status", "deny_status"):
            if action != "tarpit" and (w == "status") != (action == "return"):
                raise RuleError(f"'{what}': unknown option '{w}'"
                                + (" (use 'deny_status')" if action == "deny" else " (use 'status')"))
            if val is None:
                raise RuleError(f"'{what}': '{w}' expects a status code")
            status = _status(val, what)
            i += 2
        elif w == "content-type":
            if val is None:
                raise RuleError(f"'{what}': 'content-type' expects a type")
            if _CTL.search(val) or not val.isascii():
                raise RuleError(f"'{what}': a content-type is printable ASCII: it cannot hold control "
                                "characters (CR, LF, NUL...)")
            kw["content_type"] = val.encode("ascii")
            i += 2
        elif w in ("string", "file", "errorfile", "lf-string"):
            if payload is not None:
                raise RuleError(f"'{what}': '{w}' conflicts with '{payload}' (one payload per rule)")
            if val is None:
                raise RuleError(f"'{what}': '{w}' expects an argument")
            payload = w
            if w == "string":
                kw["body"] = val.encode("utf-8")
            elif w == "lf-string":
                kw["body_fmt"] = parse_format(val, side)
            elif w == "file":
                kw["body"] = _read(val, base_dir, what)
            else:
                raw = _read(val, base_dir, what)
                if not raw.startswith((b"HTTP/1.0 ", b"HTTP/1.1 ")) or b"\r\n\r\n" not in raw:
                    raise RuleError(f"'{what}': '{val}' is not an HTTP response "
                                    "(status line, fields, empty line, body; CRLF line endings)")
                kw["raw"] = raw
            i += 2
        elif w == "default-errorfiles":
            if payload is not None:
                raise RuleError(f"'{what}': '{w}' conflicts with '{payload}' (one payload per rule)")
            payload = w
            kw["default_errorfiles"] = True
            i += 1
        elif w == "hdr":
            if i + 2 >= len(args):
                raise RuleError(f"'{what}': 'hdr' expects a name and a value")
            name = args[i + 1].encode("ascii", "replace")
            if not TOKEN.match(name):
                raise RuleError(f"'{what}': '{args[i + 1]}' is not a valid field name (RFC 9110 section 5.1)")
            if name.lower() in (b"content-length", b"transfer-encoding", b"connection"):
                raise RuleError(f"'{what}': field '{args[i + 1]}' cannot be set (splicer writes the framing)")
            headers.append((name, parse_format(args[i + 2], side)))
            i += 3
        else:
            raise RuleError(f"'{what}': unknown option '{w}' (supported: "
                            + {"deny": "deny_status", "tarpit": "status, deny_status"}.get(action, "status")
                            + ", content-type, string, lf-string, file, errorfile, default-errorfiles, hdr)")
    if status in BODILESS and payload in ("string", "lf-string", "file"):
        raise RuleError(f"'{what}': a {status} response has no body (RFC 9110 section "
                        f"{'15.3.5' if status == 204 else '15.4.5'}): no '{payload}' with it")
    if payload in ("string", "lf-string", "file") and kw["content_type"] is None:
        raise RuleError(f"'{what}': '{payload}' needs a 'content-type'")
    if payload == "errorfile" and (headers or kw["content_type"] is not None):
        raise RuleError(f"'{what}': 'errorfile' is sent as-is: no 'hdr' or 'content-type' with it")
    if action in ("deny", "tarpit") and payload is None:
        kw["default_errorfiles"] = True
    return LocalRule(action, status, cond, headers=tuple(headers), file=file, line=line, side=side, **kw)


_REALM_BAD = re.compile(r"[\x00-\x1f\x7f]")


def _parse_auth(args: list[str], cond, file: str, line: int) -> LocalRule:
    what = "http-request auth"
    realm = None
    if args:
        if args[0] != "realm":
            raise RuleError(f"'{what}': unknown option '{args[0]}' (supported: realm)")
        if len(args) < 2 or not args[1]:
            raise RuleError(f"'{what}': missing realm value")
        if len(args) > 2:
            raise RuleError(f"'{what}': unexpected '{args[2]}' after the realm")
        if _REALM_BAD.search(args[1]):
            raise RuleError(f"'{what}': a realm cannot hold control characters")
        realm = args[1]
    return LocalRule("auth", 401, cond, default_errorfiles=True, realm=realm, file=file, line=line)


def challenge(realm: str) -> bytes:
    """The ``WWW-Authenticate`` value of an ``auth`` rule: ``Basic realm="<realm>"``, the
    realm a quoted-string (RFC 9110 section 5.6.4: ``"`` and ``\\`` escaped; haproxy
    writes the realm unescaped)."""
    quoted = realm.replace("\\", "\\\\").replace('"', '\\"')
    return b'Basic realm="' + quoted.encode("utf-8") + b'"'


AUTH_TEXT = "You need a valid user and password to access this content."
"""The sentence of the 401 page (haproxy's)."""


def _parse_redirect(args: list[str], cond, file: str, line: int, side: str = "request") -> LocalRule:
    what = f"http-{side} redirect"
    if side == "response" and args and args[0] in ("prefix", "scheme"):
        raise RuleError(f"'{what} {args[0]}' is not allowed: a response may only be redirected "
                        "with 'location <loc>' (haproxy)")
    if len(args) < 2 or args[0] not in ("location", "prefix", "scheme"):
        raise RuleError(f"'{what}' expects 'location <loc>'" if side == "response" else
                        f"'{what}' expects 'location <loc>', 'prefix <pfx>' or 'scheme <sch>'")
    kind, target = args[0], parse_format(args[1], side)
    code, drop, slash = 302, False, False
    i = 2
    while i < len(args):
        w = args[i]
        if w == "code":
            if i + 1 >= len(args):
                raise RuleError(f"'{what}': 'code' expects a status code")
            if not args[i + 1].isdigit() or int(args[i + 1]) not in REDIRECT_CODES:
                raise RuleError(f"'{what}': invalid code '{args[i + 1]}' (supported: "
                                + ", ".join(map(str, REDIRECT_CODES)) + ")")
            code = int(args[i + 1])
            i += 2
            continue
        if w == "drop-query":
            drop = True
        elif w == "append-slash":
            slash = True
        elif w in ("set-cookie", "clear-cookie", "ignore-empty"):
            raise RuleError(f"'{what}': option '{w}' is not supported")
        else:
            raise RuleError(f"'{what}': unknown option '{w}' (supported: code, drop-query, append-slash)")
        i += 1
    return LocalRule("redirect", code, cond, redirect=kind, target=target, drop_query=drop,
                     append_slash=slash, file=file, line=line, side=side)


BAD_REQUEST = LocalRule("deny", 400, default_errorfiles=True)
"""The answer to a request refused for its target's spelling: a ``strict`` normalize-uri
rule met an invalid escape, the target stays ambiguous (normalize.ambiguity), or a rewrite
produced a target or method that may not be forwarded (rewrite.py)."""


STATUS_MIN, STATUS_MAX = 200, 999
"""The statuses set-status accepts. haproxy takes 100..999; a 1xx is refused here, since a
client reads a 1xx as an interim response and waits for another head that never comes."""

@dataclass(frozen=True)
class StatusRule:
    """One ``http-response set-status <status> [reason <str>]`` rule.

    Attributes:
        status: the new status (STATUS_MIN..STATUS_MAX).
        reason: the new reason phrase (bytes), or None for the status's standard one.
        cond: the rule's acl.Condition (None: always).
        file, line: where the rule was written.
    """

    status: int
    reason: bytes | None = None
    cond: object = None
    file: str = ""
    line: int = 0

    action = "set-status"


def parse_set_status(args: list[str], cond, file: str = "", line: int = 0) -> StatusRule:
    """Read the words after ``http-response set-status`` (the condition split off).

    Args:
        args: e.g. ``["503", "reason", "Slow Down"]``.
        cond: the parsed condition or None.

    Raises:
        RuleError: no status, a status that is not an integer in STATUS_MIN..STATUS_MAX, a
            reason missing its text, holding a CR/LF or a non-ASCII character, or another word.
    """
    what = "http-response set-status"
    if not args:
        raise RuleError(f"'{what}' expects a status code: set-status <status> [reason <str>]")
    text = args[0]
    if not (text.isascii() and text.isdigit()) or not STATUS_MIN <= int(text) <= STATUS_MAX:
        extra = " (a 1xx is an interim response: a client would wait for another)" \
            if text.isdigit() and 100 <= int(text) < 200 else ""
        raise RuleError(f"'{what}': invalid status code '{text}' (expected {STATUS_MIN}..{STATUS_MAX}){extra}")
    reason = None
    rest = args[1:]
    if rest:
        if rest[0] != "reason":
            raise RuleError(f"'{what}': unknown option '{rest[0]}' (supported: reason)")
        if len(rest) < 2:
            raise RuleError(f"'{what}': 'reason' expects a text (quote it if it holds spaces)")
        if len(rest) > 2:
            raise RuleError(f"'{what}': unexpected '{rest[2]}' after the reason (quote a reason that holds spaces)")
        if not rest[1].isascii() or any((c < " " and c != "\t") or c == "\x7f" for c in rest[1]):
            raise RuleError(f"'{what}': a reason is printable ASCII text on one line (RFC 9112 section 4)")
        reason = rest[1].encode("ascii")
    return StatusRule(int(text), reason, cond, file, line)


def merge_runs(rules: tuple) -> tuple:
    """The rules of a proxy with each run of consecutive local rules that differ only in
    their conditions (and where they were written) merged into one rule whose condition is
    the OR of theirs, compiled (acl.any_of).

    The first rule of such a run whose condition holds answers, and they all answer the
    same way, so the merged rule answers exactly when and as one of them would; a rule
    without a condition makes the merged rule unconditional. Runs never cross another kind
    of rule (a header or normalize-uri rule between two denies may change what the second
    reads). The merged rule keeps the first rule's file and line.

    Args:
        rules: a proxy's http-request rules in order, their conditions bound.

    Returns:
        The rules to evaluate in their place (the same tuple when nothing merges).
    """
    out: list = []
    conds: list = []

    def close() -> None:
        if len(conds) > 1:
            cond = None if any(c is None for c in conds) else acl.any_of(conds)
            out[-1] = replace(out[-1], cond=cond)
    for r in rules:
        prev = out[-1] if out else None
        if (type(r) is LocalRule and type(prev) is LocalRule
                and replace(r, cond=None, file="", line=0) == replace(prev, cond=None, file="", line=0)):
            conds.append(r.cond)
            continue
        close()
        out.append(r)
        conds = [r.cond] if type(r) is LocalRule else []
    close()
    return tuple(out) if len(out) < len(rules) else tuple(rules)


def _with_challenge(raw: bytes, value: bytes) -> bytes:
    """An ``errorfile`` response with its WWW-Authenticate fields replaced by one holding
    `value` (haproxy 4.2 "http-request auth": the proxy's error message, altered so)."""
    head, sep, body = raw.partition(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    kept = [lines[0]] + [ln for ln in lines[1:]
                         if ln.split(b":", 1)[0].strip().lower() != b"www-authenticate"]
    kept.append(b"www-authenticate: " + value)
    return b"\r\n".join(kept) + sep + body


def first_local(rules: tuple, view, info=None) -> tuple[LocalRule | None, int]:
    """Evaluate a proxy's ``http-request`` rules in order, on one message.

    Args:
        rules: the proxy's rules. A ``normalize-uri`` rule whose condition holds rewrites
            view's target; a rule with an ``edit(view, info)`` method (header rules,
            request-line rewrites, variables: rules.py, rewrite.py, variables.py) whose
            condition holds rewrites view's fields, target or method, or its variables.
            The later rules read what they left, and the request is forwarded with it.
        view: the request (sample.RequestView) the conditions read and the rules rewrite.
        info: the logformat.StreamInfo the rules' formats read.

    Returns:
        (the deny/return/redirect rule that answers, or None; the number of rules that
        ran: len(rules) unless an ``allow`` or an answering rule stopped the evaluation).
        A rewrite whose result may not be forwarded answers BAD_REQUEST.
    """
    for i, r in enumerate(rules):
        if type(r) is NormalizeRule:
            if r.cond is None or r.cond(view):
                try:
                    view.set_target(r.fn(view.target))
                except NormalizeError:
                    return BAD_REQUEST, i
            continue
        edit = getattr(r, "edit", None)
        if edit is not None:
            if (r.cond is None or r.cond(view)) and not edit(view, info):
                return BAD_REQUEST, i
            continue
        if not isinstance(r, LocalRule):
            continue
        if r.cond is not None and not r.cond(view):
            continue
        if r.action == "allow":
            return None, i
        return r, i
    return None, len(rules)


def _location(rule: LocalRule, info, msg, fields) -> bytes:
    text = render(rule.target, info, msg, fields)
    if rule.redirect == "location":
        return text
    target = msg.target
    path, q, query = target.partition(b"?")
    if rule.append_slash and not path.endswith(b"/"):
        path += b"/"
    tail = path + (q + query if q and not rule.drop_query else b"")
    if rule.redirect == "prefix":
        return tail if text == b"/" else text + tail
    host = next((v for n, v in fields if n.lower() == b"host"), b"")
    return text + b"://" + host + tail


def reply(rule: LocalRule, info, msg, fields, version: bytes, keep_alive: bool,
          errorpages_: dict, method: bytes = b"GET") -> tuple[bytes, bool]:
    """The whole response a rule answers with.

    Args:
        rule: a deny, return or redirect LocalRule.
        info, msg, fields: what log-format values read (logformat.StreamInfo, logformat.Message,
            the request's fields).
        version: the request's HTTP version; a 1.0 client kept alive is told so.
        keep_alive: whether the client connection stays open after this response.
        errorpages_: {status: whole response} of the proxy's ``errorfile`` lines.
        method: the request's method: the answer to a HEAD has its Content-Length but no
            body (RFC 9110 section 9.3.2).

    Returns:
        (bytes, keep_alive): an ``errorfile`` response is sent as-is and ends the
        connection, so keep_alive comes back False for it.
    """
    status = rule.status
    raw = rule.raw
    if raw is None and rule.default_errorfiles:
        raw = errorpages_.get(status)
    if raw is not None:
        if rule.action == "auth":
            raw = _with_challenge(raw, challenge(rule.realm or ""))
        return raw, False
    fields_out: list[tuple[bytes, bytes]] = []
    body = b""
    if rule.action == "auth":
        page = errorpages.error_response(401, AUTH_TEXT)
        body = page.partition(b"\r\n\r\n")[2]
        fields_out += [(b"content-type", b"text/html"), (b"cache-control", b"no-cache"),
                       (b"www-authenticate", challenge(rule.realm or ""))]
    elif rule.action == "redirect":
        fields_out.append((b"location", _location(rule, info, msg, fields)))
        fields_out.append((b"cache-control", b"no-cache"))
    elif rule.default_errorfiles:
        page = errorpages.error_response(status, "Request forbidden by administrative rules."
                                         if status == 403 else None)
        body = page.partition(b"\r\n\r\n")[2]
        fields_out += [(b"cache-control", b"no-cache"), (b"content-type", b"text/html")]
    else:
        if rule.body_fmt is not None:
            body = render(rule.body_fmt, info, msg, fields)
        elif rule.body is not None:
            body = rule.body
        if rule.content_type is not None:
            fields_out.append((b"content-type", rule.content_type))
    for name, fmt in rule.headers:
        fields_out.append((name, render(fmt, info, msg, fields)))
    lines = [b"HTTP/1.1 %d %s" % (status, errorpages.reason_of(status))]
    if status in BODILESS:
        body = b""  # (an error page's or a format's text is never sent with it)
    else:
        lines.append(b"content-length: %d" % len(body))
    lines += [n + b": " + v for n, v in fields_out]
    if not keep_alive:
        lines.append(b"connection: close")
    elif version == b"1.0":
        lines.append(b"connection: keep-alive")
    return b"\r\n".join(lines) + b"\r\n\r\n" + (b"" if method == b"HEAD" else body), keep_alive
