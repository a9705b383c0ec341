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
  (logformat.FETCHES, logformat.ALIASES); ``%%`` is a literal ``%``. In a response rule ``req.hdr`` reads the
  request's fields as the client sent them. A sample that finds nothing gives the empty string, as in haproxy.
  Converters (``%[fetch,conv]``) and ``%{flags}`` are refused at load time with the reason,
  never silently ignored.
- A rule may end with an ACL condition (``if``/``unless``, http/acl.py): the rule runs only
  when it holds. Conditions read the request as the client sent it (a RequestView built
  once per request), not the fields an earlier rule rewrote; in http-response rules
  ``hdr()``, ``res.hdr()`` and ``status`` read the response.
- ``allow``, ``deny``, ``return``, ``redirect``, ``auth`` and ``tarpit``
  (http/actions.py) are parsed here too,
  so that a proxy's rules keep their order; apply() skips them.
- Fields that carry message framing or connection management (FRAMING_FIELDS) cannot be
  rewritten: splicer writes them itself and a rule could otherwise desynchronise the
  framing it and the peer agree on (request smuggling).
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass

from splicer.http import acl, actions
from splicer.http import headers as hdr
from splicer.http.logformat import Message, RuleError, StreamInfo, parse_format, render

ACTIONS = ("set-header", "add-header", "del-header")
"""Header actions of ``http-request`` and ``http-response``."""

REQUEST_ACTIONS = (*ACTIONS, "allow", "deny", "return", "redirect", "auth", "tarpit", "normalize-uri")
"""Every action ``http-request`` supports (allow, deny, return, redirect, auth, tarpit:
http/actions.py; normalize-uri: http/normalize.py)."""

RESPONSE_ACTIONS = (*ACTIONS, "allow", "deny", "return", "redirect", "set-status")
"""Every action ``http-response`` supports (allow, deny, return, redirect: http/actions.py;
set-status and the evaluation of a response's rules: http/response_actions.py)."""

HAPROXY_ACTIONS = frozenset({
    "add-acl", "cache-use", "capture", "del-acl", "del-map",
    "disable-l7-retry", "do-resolve", "early-hint", "normalize-uri", "reject",
    "replace-header", "replace-path", "replace-pathq", "replace-uri", "replace-value",
    "sc-inc-gpc0", "set-dst", "set-dst-port", "set-log-level", "set-map",
    "set-mark", "set-method", "set-nice", "set-path", "set-pathq", "set-priority-class",
    "set-priority-offset", "set-query", "set-src", "set-src-port", "set-tos",
    "set-uri", "set-var", "silent-drop", "strict-mode", "track-sc0", "track-sc1",
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
        A HeaderRule, an actions.LocalRule for allow/deny/return/redirect/auth/tarpit, a
        response_actions.StatusRule for set-status, or a
        normalize.NormalizeRule for normalize-uri; a condition's
        ACL names are bound later (config/resolve.py).

    Raises:
        RuleError: unknown or unsupported action, wrong argument count, a bad condition
            (acl.parse_condition), a name that is not a token or names a framing field, or a
            bad format (parse_format).
    """
    keyword = f"http-{side}"
    supported = REQUEST_ACTIONS if side == "request" else RESPONSE_ACTIONS
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
        return actions.parse_action(action, args, condition(), base_dir, file, line, side)
    if action == "set-status":
        from splicer.http.response_actions import parse_set_status
        return parse_set_status(args, condition(), file, line)
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
