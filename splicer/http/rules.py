"""Header rules: haproxy's ``http-request`` / ``http-response`` set-header, add-header,
del-header, replace-header and replace-value actions, with haproxy's log-format values
reduced to literals and a few samples; and the parser of every ``http-request`` /
``http-response`` rule (parse_rule), whatever module runs it.

Rule: sans-I/O. A rule is parsed once from its configuration words (parse_rule) and applied
to a field list per message (apply, HeaderRule.edit); what a sample fetch reads comes from
a StreamInfo and the message being rewritten, never from a socket.

Theory of operation (haproxy configuration.txt 4.2 "http-request", "http-response" and 8.2.6
"Custom log format"):

- ``set-header <name> <fmt>``: evaluate <fmt>, remove every field named <name>, append
  ``<name>: <value>``. ``add-header`` only appends. ``del-header <name>`` removes every field
  named <name> (case-insensitive, RFC 9110 section 5.1).
- ``replace-header <name> <match-regex> <replace-fmt>``: each field named <name> whose
  whole value the regex is found in gets the value <replace-fmt>, with ``\\1``..``\\9``
  the match's groups (rewrite.backref_format). ``replace-value`` does the same on each
  comma-separated element of the value, the separators kept as they were.
- Rules run in order, each seeing what the previous ones left: a request's frontend rules
  then its backend's; a response's backend rules then its frontend's (haproxy's order).
  Where a proxy's http-request rules decide something (a condition, a local action, a
  rewrite, a variable, use_backend: route.Switching), they all run, header rules
  included, in file order on one message (the request's sample.RequestView) before the
  request is forwarded: a condition, a fetch or a format reads the fields, target, method
  and variables the rules before it left, and the forwarded head is what the rules left
  (hop-by-hop fields removed from it afterwards). Otherwise only header rules without
  conditions apply, when the head is forwarded (h1.forward_request_head), after
  hop-by-hop removal. Either way they run before X-Forwarded-For / Forwarded are
  appended, so a client cannot strip what they add (RFC 9110 section 7.6.1), and
  ``http-request del-header X-Forwarded-For`` drops a client-supplied chain before
  ``option forwardfor`` appends the real one.
- <fmt> is literal text with ``%[<fetch>]`` samples and ``%<alias>`` log-format variables
  (logformat.FETCHES, logformat.ALIASES); ``%%`` is a literal ``%``. In a response rule ``req.hdr`` reads the
  request's fields as they were forwarded. A sample that finds nothing gives the empty string, as in haproxy.
  Converters (``%[fetch,conv]``) and ``%{flags}`` are refused at load time with the reason,
  never silently ignored.
- A rule may end with an ACL condition (``if``/``unless``, http/acl.py): the rule runs only
  when it holds. In http-response rules ``hdr()``, ``res.hdr()`` and ``status`` read the
  response as the rules before left it.
- ``allow``, ``deny``, ``return``, ``redirect``, ``auth`` and ``tarpit`` (http/actions.py),
  ``set-status`` (http/response_actions.py), ``normalize-uri``
  (http/normalize.py), the request-line rewrites (http/rewrite.py) and the variable
  actions (http/variables.py) are parsed here too, so that a proxy's rules keep their
  order; apply() skips all but header rules and (in responses) variable rules.
- Fields that carry message framing or connection management (FRAMING_FIELDS) cannot be
  rewritten: splicer writes them itself and a rule could otherwise desynchronise the
  framing it and the peer agree on (request smuggling).
"""
from __future__ import annotations

import os
from dataclasses import dataclass

from splicer.http import acl, actions, rewrite, service, variables
from splicer.http import headers as hdr
from splicer.http.logformat import SRC, FieldFetch, Message, RuleError, StreamInfo, parse_format, render

ACTIONS = ("set-header", "add-header", "del-header", "replace-header", "replace-value")
"""Header actions of ``http-request`` and ``http-response``."""

REQUEST_ACTIONS = ("set-header", "add-header", "del-header", "allow", "deny", "return", "redirect",
                   "auth", "tarpit", "normalize-uri", "replace-header", "replace-value", *rewrite.ACTIONS, *variables.ACTIONS,
                   "use-service")
"""Every action ``http-request`` supports (allow, deny, return, redirect, auth, tarpit: http/actions.py;
use-service: http/service.py;
normalize-uri: http/normalize.py; set-path...set-method: http/rewrite.py; set-var,
set-var-fmt, unset-var: http/variables.py)."""

RESPONSE_ACTIONS = (*ACTIONS, "allow", "deny", "return", "redirect", "set-status", *variables.ACTIONS)
"""Every action ``http-response`` supports (allow, deny, return, redirect: http/actions.py;
set-status and the evaluation of a response's rules: http/response_actions.py; set-var,
set-var-fmt, unset-var: http/variables.py)."""

HAPROXY_ACTIONS = frozenset({
    "add-acl", "cache-use", "capture", "del-acl", "del-map",
    "disable-l7-retry", "do-resolve", "early-hint", "normalize-uri", "reject",
    "sc-inc-gpc0", "set-dst", "set-dst-port", "set-log-level", "set-map",
    "set-mark", "set-nice", "set-priority-class",
    "set-priority-offset", "set-src", "set-src-port", "set-tos",
    "silent-drop", "strict-mode", "track-sc0", "track-sc1",
    "track-sc2", "wait-for-body", "wait-for-handshake",
    "cache-store", "send-spoe-group", "lua",
})
"""haproxy actions splicer refuses as "not supported" rather than "unknown"."""

FRAMING_FIELDS = frozenset({
    b"content-length", b"transfer-encoding", b"connection", b"keep-alive",
    b"proxy-connection", b"te", b"trailer", b"upgrade",
})
"""Fields no rule may set, add or delete (lower case)."""



@dataclass(frozen=True)
class HeaderRule:
    """One ``http-request`` / ``http-response`` header action.

    Attributes:
        action: one of ACTIONS.
        name: the field name as written (token).
        value: the parsed format (parse_format); empty for del-header; for replace-header
            and replace-value the <replace-fmt> (rewrite.backref_format).
        file: configuration file; line: its 1-based line (for messages).
        cond: the rule's acl.Condition, or None (the rule always runs).
        regex: the compiled <match-regex> of replace-header / replace-value, else None.
    """

    action: str
    name: bytes
    value: tuple = ()
    file: str = ""
    line: int = 0
    cond: object = None
    regex: object = None

    def edit(self, view, info: StreamInfo) -> bool:
        """Run the rule on the request of `view` (a sample.RequestView): its fields become
        the rewritten list (view.set_fields), which later rules read. Returns True (a
        header rule never makes the request invalid; framing fields are refused at load)."""
        msg = Message(view.method, view.target, 0, None, view.vars)
        view.set_fields(apply_one(self, view.fields, info, msg))
        return True


def parse_rule(words: list[str], side: str, file: str = "", line: int = 0) -> HeaderRule:
    """Read the words after ``http-request`` / ``http-response``.

    Args:
        words: e.g. ``["set-header", "X-Forwarded-Proto", "http"]``.
        side: "request" or "response".

    Returns:
        A HeaderRule, an actions.LocalRule for allow/deny/return/redirect/auth/tarpit, a
        actions.StatusRule for set-status, a normalize.NormalizeRule for
        normalize-uri, a rewrite.RewriteRule for set-path and the other request-line
        rewrites, or a variables.VarRule for set-var, set-var-fmt and unset-var (written
        ``set-var(<scope>.<name>)``); a condition's ACL names are bound later
        (config/resolve.py).

    Raises:
        RuleError: unknown or unsupported action, wrong argument count, a bad regex or
            back-reference (rewrite.backref_format), a bad variable
            (variables.parse_var_rule), a bad condition (acl.parse_condition), a name that
            is not a token or names a framing field, or a bad format (parse_format).
    """
    keyword = f"http-{side}"
    supported = REQUEST_ACTIONS if side == "request" else RESPONSE_ACTIONS
    if not words:
        raise RuleError(f"'{keyword}' expects an action (supported: {', '.join(supported)})")
    word, args = words[0], list(words[1:])
    action = word.partition("(")[0] if word.startswith(variables.ACTIONS) else word
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
        return actions.parse_set_status(args, condition(), file, line)
    if action == "use-service":
        return service.parse_use_service(args, condition(), file, line)
    if action in variables.ACTIONS:
        return variables.parse_var_rule(word, args, side, condition(), file, line)
    if action in rewrite.ACTIONS:
        return rewrite.parse_rewrite(action, args, condition(), file, line)
    if action == "normalize-uri":
        from splicer.http.normalize import parse_normalize
        try:
            return parse_normalize(args, condition(), file, line)
        except RuleError:
            raise
        except ValueError as exc:
            raise RuleError(str(exc)) from None
    want = {"del-header": 1, "replace-header": 3, "replace-value": 3}.get(action, 2)
    if action == "del-header" and "-m" in args:
        raise RuleError(f"'{keyword} del-header -m' is not supported")
    if len(args) != want:
        usage = {1: "<name>", 2: "<name> <fmt>", 3: "<name> <match-regex> <replace-fmt>"}[want]
        raise RuleError(f"'{keyword} {action}' expects exactly {want} argument(s): {action} {usage}"
                        + (" (quote a value that holds spaces)" if len(args) > want else ""))
    name = args[0].encode("ascii", "replace")
    if not hdr.TOKEN.match(name):
        raise RuleError(f"'{args[0]}' is not a valid field name (RFC 9110 section 5.1)")
    if name.lower() in FRAMING_FIELDS:
        raise RuleError(f"'{args[0]}' cannot be rewritten: splicer writes the framing and "
                        "connection fields itself")
    if want == 3:
        what = f"{keyword} {action}"
        rx = rewrite.compile_regex(args[1], what)
        return HeaderRule(action, name, rewrite.backref_format(args[2], rx, side, what), file, line,
                          condition(), rx)
    value = parse_format(args[1], side) if want == 2 else ()
    return HeaderRule(action, name, value, file, line, condition())


def apply_one(rule: HeaderRule, fields: hdr.Headers, stream: StreamInfo, msg: Message) -> hdr.Headers:
    """The fields after one header rule (its condition already checked).

    Args:
        rule: the rule; fields: the current fields (not modified).
        stream, msg: what the rule's format reads (its ``req.hdr`` / ``hdr`` read `fields`).

    Returns:
        A new field list (or `fields` itself when a replace found nothing to replace).
    """
    action = rule.action
    lname = rule.name.lower()
    if action == "add-header":
        return [*fields, (rule.name, render(rule.value, stream, msg, fields))]
    if rule.regex is not None:
        return _replace(rule, fields, stream, msg, action == "replace-value")
    value = render(rule.value, stream, msg, fields) if action == "set-header" else None
    out = [(n, v) for n, v in fields if n.lower() != lname]
    if value is not None:
        out.append((rule.name, value))
    return out


def _replace(rule: HeaderRule, fields: hdr.Headers, stream: StreamInfo, msg: Message,
             each: bool) -> hdr.Headers:
    lname, rx, fmt = rule.name.lower(), rule.regex, rule.value
    out = None
    for i, (n, v) in enumerate(fields):
        if n.lower() != lname:
            continue
        if each:  # every comma-separated element, its surrounding blanks and commas kept
            parts = v.split(b",")
            changed = False
            for j, p in enumerate(parts):
                core = p.strip(b" \t")
                m = rx.search(core)
                if m is None:
                    continue
                lead = p[:len(p) - len(p.lstrip(b" \t"))]
                trail = p[len(p.rstrip(b" \t")):] if core else b""
                parts[j] = lead + rewrite.expand(fmt, m, stream, msg, fields) + trail
                changed = True
            if not changed:
                continue
            new = b",".join(parts)
        else:
            m = rx.search(v)
            if m is None:
                continue
            new = rewrite.expand(fmt, m, stream, msg, fields)
        if out is None:
            out = list(fields)
        out[i] = (n, new)
    return fields if out is None else out


_UNREAD = FRAMING_FIELDS | hdr.HOP_BY_HOP
"""Fields a format's ``req.hdr`` reads differently once hop-by-hop removal and framing went."""


def plain_edits(rules: tuple) -> tuple | None:
    """`rules` (a request's header rules, in the order they run) as the plain edits the
    engine makes on the express lane's requests (engine.h spl_xrules), or None when one of
    them is not one.

    A plain edit is ``("del", name)`` (every field named `name`, lower case, goes: a
    ``del-header``, and the first half of a ``set-header``) or ``("add", name, parts)``
    (``name: value`` is appended: an ``add-header``, the second half of a ``set-header``),
    the value its parts joined: bytes (literal), ``"src"`` (the client's address: ``src``,
    ``%ci``) or ``("hdr", name, occ)`` (``req.hdr(<name>,<occ>)``). So a rule without a
    condition whose format reads nothing else, and whose ``req.hdr`` fields no earlier rule
    touched and no hop-by-hop removal or framing changed: the engine reads them from the
    request as received. apply() makes the same edits.
    """
    out: list = []
    touched: set = set()
    for rule in rules:
        if type(rule) is not HeaderRule or rule.cond is not None or rule.regex is not None:
            return None
        lname = rule.name.lower()
        if rule.action in ("set-header", "del-header"):
            out.append(("del", lname))
        if rule.action in ("set-header", "add-header"):
            parts: list = []
            for p in rule.value:
                if isinstance(p, bytes):
                    parts.append(p)
                elif p is SRC:
                    parts.append("src")
                elif (type(p) is FieldFetch and not p.of_request and p.name not in touched
                      and p.name not in _UNREAD):
                    parts.append(("hdr", p.name, p.occ))
                else:
                    return None
            out.append(("add", rule.name, tuple(parts)))
        touched.add(lname)
    return tuple(out)


def apply(rules: tuple[HeaderRule, ...], fields: hdr.Headers, stream: StreamInfo,
          msg: Message, view=None) -> hdr.Headers:
    """Run `rules` in order over `fields`.

    Args:
        rules: parsed rules (parse_rule); other than header rules and variable rules are
            skipped.
        fields: the message's fields after hop-by-hop removal (not modified).
        stream: stream facts for samples.
        msg: the message for samples.
        view: the sample.RequestView conditions and variable rules read (needed when a
            rule has a condition, and by variable rules; a rule with a condition, or a
            variable rule, does not run without one). While a response's rules run, its
            response_fields follow the fields each rule leaves.

    Returns:
        A new field list.
    """
    out = list(fields)
    response = view is not None and view.response_fields is not None
    for rule in rules:
        t = type(rule)
        if t is variables.VarRule:
            if view is not None and (rule.cond is None or rule.cond(view)):
                rule.edit(view, stream, out)
            continue
        if t is not HeaderRule:
            continue
        if rule.cond is not None and (view is None or not rule.cond(view)):
            continue
        out = apply_one(rule, out, stream, msg)
        if response:
            view.response_fields = out
    return out
