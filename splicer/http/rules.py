"""Header rules: haproxy's ``http-request`` / ``http-response`` set-header, add-header and
del-header actions, with haproxy's log-format values reduced to literals and a few samples.

Rule: sans-I/O. A rule is parsed once from its configuration words (parse_rule) and applied
to a field list per message (apply); what a sample fetch reads comes from a StreamInfo and
the message being rewritten, never from a socket.

Theory of operation (haproxy configuration.txt 4.2 "http-request", "http-response" and 8.2.6
"Custom log format"):

- ``set-header <name> <fmt>``: evaluate <fmt>, remove every field named <name>, append
  ``<name>: <value>``. ``add-header`` only appends. ``del-header <name>`` removes every field
  named <name> (case-insensitive, RFC 9110 section 5.1).
- Rules run in order, each seeing the fields the previous one left: a request's frontend rules
  then its backend's; a response's backend rules then its frontend's (haproxy's order). They
  run after hop-by-hop removal and before X-Forwarded-For / Forwarded are appended, so a
  client cannot strip what they add (RFC 9110 section 7.6.1), and
  ``http-request del-header X-Forwarded-For`` drops a client-supplied chain before
  ``option forwardfor`` appends the real one.
- <fmt> is literal text with ``%[<fetch>]`` samples and ``%<alias>`` log-format variables
  (FETCHES, ALIASES); ``%%`` is a literal ``%``. In a response rule ``req.hdr`` reads the
  request's fields as the client sent them. A sample that finds nothing gives the empty string, as in haproxy.
  Converters (``%[fetch,conv]``) and ``%{flags}`` are refused at load time with the reason,
  never silently ignored.
- A rule may end with an ACL condition (``if``/``unless``, http/acl.py): the rule runs only
  when it holds. Conditions read the request as the client sent it (a RequestView built
  once per request), not the fields an earlier rule rewrote; in http-response rules
  ``hdr()``, ``res.hdr()`` and ``status`` read the response.
- ``allow``, ``deny``, ``return`` and ``redirect`` (http/actions.py) are parsed here too,
  so that a proxy's rules keep their order; apply() skips them.
- Fields that carry message framing or connection management (FRAMING_FIELDS) cannot be
  rewritten: splicer writes them itself and a rule could otherwise desynchronise the
  framing it and the peer agree on (request smuggling).
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Callable

from splicer.http import headers as hdr

ACTIONS = ("set-header", "add-header", "del-header")
"""Header actions of ``http-request`` and ``http-response``."""

REQUEST_ACTIONS = (*ACTIONS, "allow", "deny", "return", "redirect", "normalize-uri")
"""Every action ``http-request`` supports (allow, deny, return, redirect: http/actions.py;
normalize-uri: http/normalize.py)."""

HAPROXY_ACTIONS = frozenset({
    "add-acl", "auth", "cache-use", "capture", "del-acl", "del-map", "deny",
    "disable-l7-retry", "do-resolve", "early-hint", "normalize-uri", "redirect", "reject",
    "replace-header", "replace-path", "replace-pathq", "replace-uri", "replace-value",
    "sc-inc-gpc0", "set-dst", "set-dst-port", "set-log-level", "set-map",
    "set-mark", "set-method", "set-nice", "set-path", "set-pathq", "set-priority-class",
    "allow", "deny", "return", "redirect",
    "set-priority-offset", "set-query", "set-src", "set-src-port", "set-status", "set-tos",
    "set-uri", "set-var", "silent-drop", "strict-mode", "tarpit", "track-sc0", "track-sc1",
    "track-sc2", "unset-var", "use-service", "wait-for-body", "wait-for-handshake",
    "cache-store", "send-spoe-group", "lua",
})
"""haproxy actions splicer refuses as "not supported" rather than "unknown"."""

FRAMING_FIELDS = frozenset({
    b"content-length", b"transfer-encoding", b"connection", b"keep-alive",
    b"proxy-connection", b"te", b"trailer", b"upgrade",
})
"""Fields no rule may set, add or delete (lower case)."""

_TOKEN = re.compile(rb"[!#$%&'*+\-.^_`|~0-9A-Za-z]+\Z")  # RFC 9110 section 5.6.2
_HDR_ARG = re.compile(r"([A-Za-z0-9!#$%&'*+\-.^_`|~]+)(?:,(-?[0-9]+))?\Z")
_ALIAS = re.compile(r"[A-Za-z]+")


class RuleError(ValueError):
    """A rule's words are wrong; ``str()`` is the message that follows "file:line: "."""


@dataclass(frozen=True, slots=True)
class StreamInfo:
    """What samples read about the stream besides its messages.

    Attributes:
        src: client address as text; src_port its port (0 when unknown).
        dst: the address the client connected to; dst_port its port.
        fe_name: the frontend's name; be_name the backend's.
    """

    src: str
    src_port: int
    dst: str
    dst_port: int
    fe_name: str
    be_name: str


@dataclass(frozen=True, slots=True)
class Message:
    """The message a rule rewrites, as samples see it.

    Attributes:
        method: the request method (b"GET").
        target: the request target in origin-form (b"/a?b=1").
        status: the response status, 0 while rewriting a request.
        request_fields: while rewriting a response, the request's fields as the client sent
            them (what ``req.hdr`` reads there); unused for a request, whose rules read the
            fields being rewritten.
    """

    method: bytes
    target: bytes
    status: int = 0
    request_fields: hdr.Headers | None = None


# A sample: (stream, message, current fields) -> value bytes.
Sample = Callable[[StreamInfo, Message, hdr.Headers], bytes]


def _last(fields: hdr.Headers, name: bytes, occ: int) -> bytes:
    """haproxy ``hdr(<name>,<occ>)``: occurrence occ (1 = first, -1 = last, the default) of
    the comma-separated values of every field named <name>."""
    values: list[bytes] = []
    for n, v in fields:
        if n.lower() == name:
            values += [part.strip() for part in v.split(b",")]
    if not values or occ == 0 or abs(occ) > len(values):
        return b""
    return values[occ - 1] if occ > 0 else values[occ]


def _path(m: Message) -> bytes:
    return m.target.split(b"?", 1)[0]


def _query(m: Message) -> bytes:
    return m.target.split(b"?", 1)[1] if b"?" in m.target else b""


_SIMPLE: dict[str, Sample] = {
    "src": lambda s, m, f: s.src.encode("ascii"),
    "src_port": lambda s, m, f: b"%d" % s.src_port,
    "dst": lambda s, m, f: s.dst.encode("ascii"),
    "dst_port": lambda s, m, f: b"%d" % s.dst_port,
    "fe_name": lambda s, m, f: s.fe_name.encode(),
    "be_name": lambda s, m, f: s.be_name.encode(),
    "method": lambda s, m, f: m.method,
    "path": lambda s, m, f: _path(m),
    "query": lambda s, m, f: _query(m),
    "url": lambda s, m, f: m.target,
    "status": lambda s, m, f: b"%d" % m.status if m.status else b"",
}
FETCHES = (*_SIMPLE, "req.hdr(<name>[,<occ>])", "res.hdr(<name>[,<occ>])", "hdr(<name>[,<occ>])")
"""Sample fetches a format may use (``status`` and ``res.hdr`` in http-response rules only)."""

ALIASES = {"ci": "src", "cp": "src_port", "fi": "dst", "fp": "dst_port", "f": "fe_name",
           "b": "be_name", "HM": "method", "HP": "path", "HQ": "query", "HU": "url",
           "ST": "status"}
"""Log-format variables a format may use, and the fetch each stands for."""

_RESPONSE_ONLY = frozenset({"status", "res.hdr"})


def _fetch(expr: str, side: str) -> Sample:
    """The sample for the fetch expression inside ``%[...]``."""
    depth = 0
    for c in expr:
        depth += (c == "(") - (c == ")")
        if c == "," and depth == 0:
            raise RuleError(f"converters are not supported in '%[{expr}]' (only a bare sample fetch)")
    name, paren, arg = expr.partition("(")
    if name in ("req.hdr", "res.hdr", "hdr"):
        if not paren or not arg.endswith(")"):
            raise RuleError(f"'{name}' expects a field name: '%[{name}(<name>)]'")
        m = _HDR_ARG.match(arg[:-1])
        if m is None:
            raise RuleError(f"'%[{expr}]': expected a field name and an optional occurrence")
        if name == "hdr":
            name = "req.hdr" if side == "request" else "res.hdr"
        _check_side(name, side)
        field, occ = m.group(1).lower().encode("ascii"), int(m.group(2) or -1)
        if name == "req.hdr" and side == "response":
            # the request's fields, never the response's: an origin must not forge them
            return lambda s, msg, f: _last(msg.request_fields or [], field, occ)
        return lambda s, msg, f: _last(f, field, occ)
    if paren:
        raise RuleError(f"sample fetch '{name}' takes no argument")
    sample = _SIMPLE.get(name)
    if sample is None:
        raise RuleError(f"unknown sample fetch '{name}' (supported: {', '.join(FETCHES)})")
    _check_side(name, side)
    return sample


def _check_side(name: str, side: str) -> None:
    if side == "request" and name in _RESPONSE_ONLY:
        raise RuleError(f"sample fetch '{name}' is only available in http-response rules")


def parse_format(text: str, side: str) -> tuple[bytes | Sample, ...]:
    """Parse a log-format value into literal and sample parts.

    Args:
        text: the value as the lexer gave it, e.g. ``"%[req.hdr(host)]"`` or ``"1.1 edge"``.
        side: "request" or "response" (which samples exist).

    Returns:
        Parts in order: bytes for literal text, callables for samples.

    Raises:
        RuleError: unknown fetch or alias, converter, ``%{`` flags, an unclosed ``%[``, a
            ``%`` that starts nothing (``%%`` is a literal one), or a literal that is not visible ASCII/space/tab (no CR, LF, NUL).
    """
    parts: list[bytes | Sample] = []
    literal: list[str] = []
    i = 0
    while i < len(text):
        c = text[i]
        if c != "%":
            literal.append(c)
            i += 1
            continue
        nxt = text[i + 1:i + 2]
        if nxt == "%":  # log-format's escape for a literal '%'
            literal.append("%")
            i += 2
            continue
        if nxt == "[":
            end = text.find("]", i + 2)
            if end < 0:
                raise RuleError(f"unclosed '%[' in '{text}'")
            sample = _fetch(text[i + 2:end], side)
            i = end + 1
        elif nxt == "{":
            raise RuleError(f"log-format flags ('%{{...}}') are not supported in '{text}'")
        else:
            m = _ALIAS.match(text, i + 1)
            if m is None:
                raise RuleError(f"a '%' must start a sample ('%[fetch]') or a variable in '{text}'")
            alias = m.group(0)
            if alias not in ALIASES:
                raise RuleError(f"unknown log-format variable '%{alias}' (supported: "
                                + ", ".join("%" + a for a in ALIASES) + ")")
            name = ALIASES[alias]
            _check_side(name, side)
            sample = _SIMPLE[name]
            i = m.end()
        if literal:
            parts.append(_literal("".join(literal)))
            literal = []
        parts.append(sample)
    if literal:
        parts.append(_literal("".join(literal)))
    return tuple(parts)


def _literal(text: str) -> bytes:
    try:
        data = text.encode("ascii")
    except UnicodeEncodeError:
        raise RuleError(f"field values must be ASCII: '{text}'") from None
    if any(b < 0x20 and b != 0x09 or b == 0x7F for b in data):
        raise RuleError("field values cannot hold control characters (CR, LF, NUL...)")
    return data


@dataclass(frozen=True)
class HeaderRule:
    """One ``http-request`` / ``http-response`` header action.

    Attributes:
        action: "set-header", "add-header" or "del-header".
        name: the field name as written (token).
        value: the parsed format (parse_format); empty for del-header.
        file: configuration file; line: its 1-based line (for messages).
        cond: the rule's acl.Condition, or None (the rule always runs).
    """

    action: str
    name: bytes
    value: tuple = ()
    file: str = ""
    line: int = 0
    cond: object = None


def parse_rule(words: list[str], side: str, file: str = "", line: int = 0) -> HeaderRule:
    """Read the words after ``http-request`` / ``http-response``.

    Args:
        words: e.g. ``["set-header", "X-Forwarded-Proto", "http"]``.
        side: "request" or "response".

    Returns:
        A HeaderRule, an actions.LocalRule for allow/deny/return/redirect, or a
        normalize.NormalizeRule for normalize-uri; a condition's
        ACL names are bound later (config/resolve.py).

    Raises:
        RuleError: unknown or unsupported action, wrong argument count, a bad condition
            (acl.parse_condition), a name that is not a token or names a framing field, or a
            bad format (parse_format).
    """
    from splicer.http import acl, actions  # they build on this module

    keyword = f"http-{side}"
    supported = REQUEST_ACTIONS if side == "request" else ACTIONS
    if not words:
        raise RuleError(f"'{keyword}' expects an action (supported: {', '.join(supported)})")
    action, args = words[0], list(words[1:])
    if action not in supported:
        if action in HAPROXY_ACTIONS:
            raise RuleError(f"'{keyword} {action}' is not supported (supported: {', '.join(supported)})")
        raise RuleError(f"unknown '{keyword}' action '{action}' (supported: {', '.join(supported)})")
    args, cond_words = acl.split_condition(args)
    base_dir = os.path.dirname(file)

    def condition():
        if cond_words is None:
            return None
        try:
            return acl.parse_condition(cond_words, base_dir, file, line)
        except acl.AclError as exc:
            raise RuleError(f"'{keyword} {action}': {exc}") from None
    if action in actions.LOCAL_ACTIONS:
        return actions.parse_action(action, args, condition(), base_dir, file, line)
    if action == "normalize-uri":
        from splicer.http.normalize import parse_normalize
        try:
            return parse_normalize(args, condition(), file, line)
        except RuleError:
            raise
        except ValueError as exc:
            raise RuleError(str(exc)) from None
    want = 1 if action == "del-header" else 2
    if action == "del-header" and "-m" in args:
        raise RuleError(f"'{keyword} del-header -m' is not supported")
    if len(args) != want:
        usage = "<name>" if want == 1 else "<name> <fmt>"
        raise RuleError(f"'{keyword} {action}' expects exactly {want} argument(s): {action} {usage}"
                        + (" (quote a value that holds spaces)" if len(args) > want else ""))
    name = args[0].encode("ascii", "replace")
    if not _TOKEN.match(name):
        raise RuleError(f"'{args[0]}' is not a valid field name (RFC 9110 section 5.1)")
    if name.lower() in FRAMING_FIELDS:
        raise RuleError(f"'{args[0]}' cannot be rewritten: splicer writes the framing and "
                        "connection fields itself")
    value = parse_format(args[1], side) if want == 2 else ()
    return HeaderRule(action, name, value, file, line, condition())


def render(value: tuple, stream: StreamInfo, msg: Message, fields: hdr.Headers) -> bytes:
    """A format's value for this message (literals joined with the samples' results)."""
    return b"".join(p if isinstance(p, bytes) else p(stream, msg, fields) for p in value)


def apply(rules: tuple[HeaderRule, ...], fields: hdr.Headers, stream: StreamInfo,
          msg: Message, view=None) -> hdr.Headers:
    """Run `rules` in order over `fields`.

    Args:
        rules: parsed rules (parse_rule); other than header rules are skipped.
        fields: the message's fields after hop-by-hop removal (not modified).
        stream: stream facts for samples.
        msg: the message for samples.
        view: the sample.RequestView conditions read (needed when a rule has one; a rule
            with a condition and no view does not run).

    Returns:
        A new field list.
    """
    out = list(fields)
    for rule in rules:
        if type(rule) is not HeaderRule:
            continue
        if rule.cond is not None and (view is None or not rule.cond(view)):
            continue
        lname = rule.name.lower()
        if rule.action == "add-header":
            out.append((rule.name, render(rule.value, stream, msg, out)))
            continue
        value = render(rule.value, stream, msg, out) if rule.action == "set-header" else None
        out = [(n, v) for n, v in out if n.lower() != lname]
        if value is not None:
            out.append((rule.name, value))
    return out
