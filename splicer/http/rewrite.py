"""Request-line rewrites: haproxy's ``http-request set-path``, ``set-pathq``, ``set-query``,
``set-uri``, ``replace-path``, ``replace-pathq``, ``replace-uri`` and ``set-method``, and
the back-reference expansion they share with ``replace-header`` / ``replace-value``
(http/rules.py).

Rule: sans-I/O. A rule is parsed once from its words (parse_rewrite); per request it
rewrites the sample.RequestView the proxy's rules run on (RewriteRule.edit), so the later
rules, ``use_backend`` and the forwarded request line read the result. Nothing here does I/O.

Theory of operation (haproxy configuration.txt 4.2, each action's entry):

- The target is splicer's origin-form one (an absolute-form target was turned into its
  path and query, and its authority into Host, when the head was read: http/h1.py), so
  ``replace-uri`` matches and ``set-uri`` sets ``/path?query``.
- ``set-path <fmt>``: the path (up to the first ``?``) becomes <fmt>, the query stays; an
  asterisk-form target (``*``) is replaced whole. ``set-pathq <fmt>``: path and query both
  (the only way to drop the ``?``). ``set-query <fmt>``: what follows the first ``?``; with
  no ``?``, one is added unless the value is empty; a ``?`` is never removed.
  ``set-uri <fmt>``: the whole target.
- ``replace-path <match-regex> <replace-fmt>``: when the regex is found in the path, the
  whole path is replaced by <replace-fmt> with ``\\1``..``\\9`` standing for the match's
  groups (``\\0`` the whole match; a group that did not take part gives nothing);
  without a match nothing changes. ``replace-pathq`` does the same on path and query,
  ``replace-uri`` on the whole target. Matching is case-sensitive (Python ``re``, whose
  syntax is PCRE's for what rewrite rules commonly use). Back-references are expanded in
  the format's literal text only: a sample's value (``%[hdr(x)]``) is never read as one,
  so a client cannot inject ``\\1``.
- ``set-method <fmt>``: the method becomes <fmt>.
- A result that cannot be forwarded safely is never forwarded: a target that is not
  origin-form (``/`` followed by visible ASCII: no space, CR, LF, NUL or other control,
  no byte above 0x7e; ``*`` only for OPTIONS), or that normalize.ambiguity() finds
  ambiguous, and a method that is not an RFC 9110 token (section 9.1) or is CONNECT, make
  the request answered with 400 (edit() returns False). So is a request whose method the
  rules turned into or out of HEAD (route.Switching.choose checks it once the rules ran):
  the client's response is framed by its own method. haproxy forwards whatever the
  rewrite produced; splicer refuses it, since such bytes would split or confuse the
  request line the origin reads.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from splicer.http.headers import TOKEN
from splicer.http.logformat import Message, RuleError, StreamInfo, parse_format, render
from splicer.http.normalize import ambiguity

SET_ACTIONS = ("set-path", "set-pathq", "set-query", "set-uri", "set-method")
"""Rewrites that take one <fmt>."""

REPLACE_ACTIONS = ("replace-path", "replace-pathq", "replace-uri")
"""Rewrites that take <match-regex> <replace-fmt>."""

ACTIONS = (*SET_ACTIONS, *REPLACE_ACTIONS)
"""Every request-line rewrite of ``http-request``."""

_TARGET = re.compile(rb"/[\x21-\x7e]*\Z")
_BACKREF = re.compile(rb"\\([0-9])")


def compile_regex(text: str, what: str) -> re.Pattern:
    """Compile a rule's <match-regex> (bytes, case-sensitive).

    Raises:
        RuleError: the regex does not compile.
    """
    try:
        return re.compile(text.encode("utf-8"))
    except re.error as exc:
        raise RuleError(f"'{what}': invalid regex '{text}': {exc}") from None


def backref_format(text: str, rx: re.Pattern, side: str, what: str) -> tuple:
    """Parse a <replace-fmt>: a log-format string (logformat.parse_format) whose literal
    parts are split into text and group numbers.

    Returns:
        The format's parts, each literal bytes replaced by a tuple (literal, group number,
        literal, ...) when it holds a back-reference.

    Raises:
        RuleError: a bad format, or a back-reference to a group the regex does not have.
    """
    out = []
    for part in parse_format(text, side):
        if isinstance(part, bytes) and _BACKREF.search(part):
            pieces = tuple(_BACKREF.split(part))
            for n in pieces[1::2]:
                if int(n) > rx.groups:
                    raise RuleError(f"'{what}': '\\{int(n)}' refers to a group the regex "
                                    f"'{rx.pattern.decode('utf-8', 'replace')}' does not have")
            out.append(tuple(p if i % 2 == 0 else int(p) for i, p in enumerate(pieces)))
        else:
            out.append(part)
    return tuple(out)


def expand(fmt: tuple, m: re.Match, info: StreamInfo | None, msg: Message, fields) -> bytes:
    """The replacement of a match: `fmt` (backref_format) rendered, its back-references
    taken from `m` (a group that did not take part gives b"")."""
    out = []
    for part in fmt:
        if type(part) is tuple:
            out += [p if i % 2 == 0 else (m.group(p) or b"") for i, p in enumerate(part)]
        elif isinstance(part, bytes):
            out.append(part)
        else:
            out.append(part(info, msg, fields))
    return b"".join(out)


def _split(target: bytes) -> tuple[bytes, bytes]:
    q = target.find(b"?")
    return (target, b"") if q < 0 else (target[:q], target[q:])


def valid_target(target: bytes, method: bytes) -> bool:
    """True when `target` may be forwarded as the request line's target: origin-form of
    visible ASCII that normalize.ambiguity() finds unambiguous, or ``*`` for OPTIONS."""
    if target == b"*":
        return method == b"OPTIONS"
    return _TARGET.match(target) is not None and ambiguity(target) is None


def valid_method(method: bytes) -> bool:
    """True when `method` is an RFC 9110 token (section 9.1) other than CONNECT (which
    splicer, no forward proxy, refuses from clients too)."""
    return TOKEN.match(method) is not None and method.upper() != b"CONNECT"


@dataclass(frozen=True)
class RewriteRule:
    """One request-line rewrite.

    Attributes:
        action: one of ACTIONS.
        fmt: the parsed <fmt> (set-*) or <replace-fmt> (replace-*, backref_format).
        regex: the compiled <match-regex> (replace-*), else None.
        cond: the rule's acl.Condition (None: always).
        file, line: where the rule was written.
    """

    action: str
    fmt: tuple
    regex: re.Pattern | None = None
    cond: object = None
    file: str = ""
    line: int = 0

    def edit(self, view, info: StreamInfo | None) -> bool:
        """Rewrite the request of `view` (a sample.RequestView): its target
        (view.set_target) or method (view.set_method).

        Returns:
            False when the result may not be forwarded (valid_target, valid_method):
            the request is then answered with 400; True otherwise (no match included).
        """
        msg = Message(view.method, view.target, 0, None, view.vars)
        fields = view.fields
        action, target = self.action, view.target
        if action == "set-method":
            method = render(self.fmt, info, msg, fields)
            if not valid_method(method):
                return False
            view.set_method(method)
            return True
        if self.regex is not None:
            if action == "replace-path":
                subject, rest = _split(target) if target != b"*" else (target, b"")
            else:
                subject, rest = target, b""
            m = self.regex.search(subject)
            if m is None:
                return True
            new = expand(self.fmt, m, info, msg, fields) + rest
        else:
            value = render(self.fmt, info, msg, fields)
            if action == "set-path":
                new = value if target == b"*" else value + _split(target)[1]
            elif action == "set-query":
                path, query = _split(target)
                new = path + b"?" + value if query or value else target
            else:  # set-pathq, set-uri
                new = value
        if new != target:
            if not valid_target(new, view.method):
                return False
            view.set_target(new)
        return True


def parse_rewrite(action: str, args: list[str], cond, file: str = "", line: int = 0) -> RewriteRule:
    """Read the words of one rewrite (after ``http-request <action>``, the condition
    already split off).

    Args:
        action: one of ACTIONS; args: its words, e.g. ``["^/api/(.*)", "/\\1"]``.

    Raises:
        RuleError: a wrong argument count, a bad regex, format or back-reference.
    """
    what = f"http-request {action}"
    if action in REPLACE_ACTIONS:
        if len(args) != 2:
            raise RuleError(f"'{what}' expects exactly 2 argument(s): {action} <match-regex> <replace-fmt>"
                            + (" (quote a value that holds spaces)" if len(args) > 2 else ""))
        rx = compile_regex(args[0], what)
        return RewriteRule(action, backref_format(args[1], rx, "request", what), rx, cond, file, line)
    if len(args) != 1:
        raise RuleError(f"'{what}' expects exactly 1 argument(s): {action} <fmt>"
                        + (" (quote a value that holds spaces)" if len(args) > 1 else ""))
    return RewriteRule(action, parse_format(args[0], "request"), None, cond, file, line)
