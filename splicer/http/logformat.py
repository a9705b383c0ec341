"""haproxy's log-format values (configuration.txt 8.2.6 "Custom log format") as header rules
use them: literal text with ``%[<fetch>]`` samples and ``%<alias>`` variables, parsed once
(parse_format) and rendered per message (render), with the few fetches a rule may read.

Rule: sans-I/O. What a sample reads comes from a StreamInfo and the message being rewritten,
never from a socket. Shared by the header rules (http/rules.py) and the local answers
(http/actions.py: return bodies, redirect locations), which both build on this module.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable

from splicer.http import headers as hdr

_HDR_ARG = re.compile(r"([A-Za-z0-9!#$%&'*+\-.^_`|~]+)(?:,(-?[0-9]+))?\Z")
_ALIAS = re.compile(r"[A-Za-z]+")


class RuleError(ValueError):
    """A rule's words are wrong; ``str()`` is the message that follows "file:line: "."""


SCOPES = ("proc", "sess", "txn", "req", "res")
"""Variable scopes splicer knows (haproxy 2.8; the check and parent-stream scopes are not
usable in HTTP rules)."""

_NAME = re.compile(r"(proc|sess|txn|req|res)\.([A-Za-z0-9_]+)\Z")


def parse_var_name(text: str, what: str) -> tuple[str, str]:
    """Read ``<scope>.<name>``.

    Returns:
        (scope, name).

    Raises:
        RuleError: an unknown scope or a name with other characters than a-z A-Z 0-9 _.
    """
    m = _NAME.match(text.strip())
    if m is None:
        scope = text.partition(".")[0]
        if "." not in text or scope not in SCOPES:
            raise RuleError(f"{what}: '{text}' is not a variable name: expected <scope>.<name> "
                            f"with <scope> one of {', '.join(SCOPES)}")
        raise RuleError(f"{what}: variable name '{text}' may only contain a-z, A-Z, 0-9 and '_' "
                        "after its scope")
    return m.group(1), m.group(2)


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
        request_fields: while rewriting a response, the request's fields as it was
            forwarded (what ``req.hdr`` reads there); unused for a request, whose rules read
            the fields being rewritten.
        vars: the variables.Vars that ``%[var(<scope>.<name>)]`` reads (None: every
            variable is absent).
    """

    method: bytes
    target: bytes
    status: int = 0
    request_fields: hdr.Headers | None = None
    vars: object = None


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


class FieldFetch:
    """The sample ``req.hdr(<name>[,<occ>])`` (``hdr()`` in a request rule, ``res.hdr()``
    in a response rule): _last() of the fields being rewritten; in a response rule,
    ``req.hdr`` reads the request's fields as it was forwarded (`of_request`), which an
    origin cannot forge. A Sample (callable) that says what it reads, so that the engine's
    express lane can make it itself (http/rules.py plain_edits()).

    Attributes:
        name: the field name, lower case; occ: the occurrence (1 the first, -1 the last).
        of_request: a response rule's ``req.hdr``.
    """

    __slots__ = ("name", "occ", "of_request")

    def __init__(self, name: bytes, occ: int, of_request: bool = False) -> None:
        self.name = name
        self.occ = occ
        self.of_request = of_request

    def __call__(self, s: StreamInfo, msg: Message, f: hdr.Headers) -> bytes:
        if self.of_request:
            return _last(msg.request_fields or [], self.name, self.occ)
        return _last(f, self.name, self.occ)


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
SRC = _SIMPLE["src"]
"""The sample ``src`` (and ``%ci``): the client's address as text."""

FETCHES = (*_SIMPLE, "req.hdr(<name>[,<occ>])", "res.hdr(<name>[,<occ>])", "hdr(<name>[,<occ>])",
           "var(<scope>.<name>[,<default>])")
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
        # (a response rule's req.hdr: the request's fields, never the response's)
        return FieldFetch(field, occ, name == "req.hdr" and side == "response")
    if name == "var":
        return _var(expr, arg, paren)
    if paren:
        raise RuleError(f"sample fetch '{name}' takes no argument")
    sample = _SIMPLE.get(name)
    if sample is None:
        raise RuleError(f"unknown sample fetch '{name}' (supported: {', '.join(FETCHES)})")
    _check_side(name, side)
    return sample


def _var(expr: str, arg: str, paren: str) -> Sample:
    """``var(<scope>.<name>[,<default>])`` (haproxy 7.3.2): the variable's value, the
    default when it is not set, else empty."""
    if not paren or not arg.endswith(")"):
        raise RuleError("'var' expects a variable: '%[var(<scope>.<name>)]'")
    text, comma, default = arg[:-1].partition(",")
    scope, name = parse_var_name(text, f"'%[{expr}]'")
    dflt = _literal(default) if comma else b""

    def sample(s, msg, f) -> bytes:
        store = msg.vars
        got = store.get(scope, name) if store is not None else None
        return dflt if got is None else got
    return sample


def _check_side(name: str, side: str) -> None:
    if side == "request" and name in _RESPONSE_ONLY:
        raise RuleError(f"sample fetch '{name}' is only available in http-response rules")


def scan(text: str):
    """Split a log-format value into its items (configuration.txt 8.2.6), the one `%`
    scanner of splicer: header rules (parse_format) and the access log (splicer/log/format.py)
    both build on it.

    Args:
        text: the value as the lexer gave it, e.g. ``"%{+Q}r %(host)[req.hdr(host)] 100%%"``.

    Returns:
        A list of items in order: ``("text", str)`` for literal text (``%%`` already turned
        into ``%``), ``("fetch", expr, flags, name)`` for ``%[expr]`` and ``("alias", alias,
        flags, name)`` for ``%alias``; flags are the words inside ``%{...}`` (e.g.
        ``("+Q",)``), name the one inside ``%(...)`` (None when absent).

    Raises:
        RuleError: an unclosed ``%[``, ``%{`` or ``%(``, or a ``%`` that starts nothing.
    """
    items: list[tuple] = []
    literal: list[str] = []
    i = 0
    while i < len(text):
        c = text[i]
        if c != "%":
            literal.append(c)
            i += 1
            continue
        if text[i + 1:i + 2] == "%":  # log-format's escape for a literal '%'
            literal.append("%")
            i += 2
            continue
        j = i + 1
        name = None
        flags: tuple[str, ...] = ()
        if text[j:j + 1] == "(":
            end = text.find(")", j)
            if end < 0:
                raise RuleError(f"unclosed '%(' in '{text}'")
            name, j = text[j + 1:end], end + 1
        if text[j:j + 1] == "{":
            end = text.find("}", j)
            if end < 0:
                raise RuleError(f"unclosed '%{{' in '{text}'")
            flags, j = tuple(f for f in text[j + 1:end].split(",") if f), end + 1
        if literal:
            items.append(("text", "".join(literal)))
            literal = []
        if text[j:j + 1] == "[":
            end = text.find("]", j + 1)
            if end < 0:
                raise RuleError(f"unclosed '%[' in '{text}'")
            items.append(("fetch", text[j + 1:end], flags, name))
            i = end + 1
            continue
        m = _ALIAS.match(text, j)
        if m is None:
            raise RuleError(f"a '%' must start a sample ('%[fetch]') or a variable in '{text}'")
        items.append(("alias", m.group(0), flags, name))
        i = m.end()
    if literal:
        items.append(("text", "".join(literal)))
    return items


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
    for item in scan(text):
        kind = item[0]
        if kind != "text" and (item[2] or item[3] is not None):
            raise RuleError(f"log-format flags ('%{{...}}') are not supported in '{text}'")
        if kind == "text":
            parts.append(_literal(item[1]))
            continue
        if kind == "fetch":
            parts.append(_fetch(item[1], side))
            continue
        alias = item[1]
        if alias not in ALIASES:
            raise RuleError(f"unknown log-format variable '%{alias}' (supported: "
                            + ", ".join("%" + a for a in ALIASES) + ")")
        name = ALIASES[alias]
        _check_side(name, side)
        parts.append(_SIMPLE[name])
    return tuple(parts)


def _literal(text: str) -> bytes:
    try:
        data = text.encode("ascii")
    except UnicodeEncodeError:
        raise RuleError(f"field values must be ASCII: '{text}'") from None
    if any(b < 0x20 and b != 0x09 or b == 0x7F for b in data):
        raise RuleError("field values cannot hold control characters (CR, LF, NUL...)")
    return data


def render(value: tuple, stream: StreamInfo, msg: Message, fields: hdr.Headers) -> bytes:
    """A format's value for this message (literals joined with the samples' results)."""
    return b"".join(p if isinstance(p, bytes) else p(stream, msg, fields) for p in value)
