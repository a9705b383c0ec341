"""http-response rules as haproxy runs them: header rules, ``set-status``, ``allow``,
``deny``, ``return`` and ``redirect``, in file order, backend's set then frontend's.

Rule: sans-I/O. A response's rules are evaluated once, on the response head splicer is
about to forward (evaluate()); what comes out is a Verdict: the rule that answers instead
of the server (deny/return/redirect), or the status, reason and fields to forward. How a
verdict changes the response's framing (reframe()) is decided here too. Sending an answer,
dropping the server's body and closing its connection is the runtime's
(runtime/stream.py).

Theory of operation (haproxy configuration.txt 4.2 "http-response", 4.4 "allow", "deny",
"redirect", "return", "set-status"; haproxy's http_process_res_common):

- A response goes through its backend's ``http-response`` rules, then its frontend's (one
  set for a listen section). In a set the rules run in file order, each seeing what the
  ones before it did: a header rule changes the fields later conditions and formats read
  (``res.hdr``, ``hdr``), ``set-status`` the ``status`` they read.
- ``allow`` whose condition holds stops the evaluation of its set: the frontend's rules
  still run after a backend's ``allow``.
- The first ``deny``, ``return`` or ``redirect`` whose condition holds answers: none of the
  server's response (head or body) reaches the client. ``deny`` answers 502 by default.
- ``set-status <status> [reason <str>]`` replaces the status (200..999 here) and the reason
  (given, else the status's standard one: RFC 9110 section 15; for a status it does not
  name, its class's as haproxy says it, "Success", "Client Error"..., or "Other").
- Framing stays true (RFC 9110 sections 6.4.1, 15.3.5, 15.4.5; RFC 9112 section 6.3): a
  status set to 204 or 304 has no body; the server's body is then never forwarded
  (reframe() says to drop it) and the framing fields that announced it go. A response to
  HEAD keeps its Content-Length (but as a 204). A response without a body (the server's 204/304) given
  a status that has one gets ``Content-Length: 0``, so the client never waits for a close.
"""
from __future__ import annotations

from dataclasses import dataclass

from splicer.http import errorpages
from splicer.http import headers as hdr
from splicer.http.actions import (BODILESS, STATUS_MAX, STATUS_MIN, LocalRule,  # noqa: F401 (re-exported)
                                  StatusRule, parse_set_status)
from splicer.http.framing import BodyKind, Framing
from splicer.http.logformat import Message, StreamInfo

BODYLESS = frozenset(BODILESS)
"""Final statuses whose responses never have a body (RFC 9112 section 6.3 rule 1)."""

# the reason phrases live with the error pages, which every local answer shares
REASONS, CLASS_REASONS, reason_of = errorpages.REASONS, errorpages.CLASS_REASONS, errorpages.reason_of


@dataclass(frozen=True, slots=True)
class Verdict:
    """What a response's ``http-response`` rules decided (evaluate()).

    Attributes:
        rule: the deny/return/redirect LocalRule that answers instead of the server, or None
            (the response is forwarded).
        status, reason: the status and reason phrase to forward (set-status's, else the
            server's).
        fields: the fields to forward, after the header rules.
    """

    rule: LocalRule | None
    status: int
    reason: bytes
    fields: hdr.Headers


def evaluate(sets: tuple[tuple, ...], status: int, reason: bytes, fields: hdr.Headers,
             stream: StreamInfo | None, method: bytes, target: bytes, request_fields: hdr.Headers | None,
             view=None) -> Verdict:
    """Run a response's ``http-response`` rule sets, in order.

    Args:
        sets: the rule sets in the order they run: (backend's rules, frontend's rules), or
            one set for a listen section; each a tuple of rules.HeaderRule,
            variables.VarRule, actions.LocalRule (side "response") and StatusRule.
        status, reason: the server's status and reason phrase.
        fields: the response's fields, hop-by-hop ones removed and framing written
            (not modified).
        stream: what log-format samples read (None: no rule needs it; header rules with a
            value then do not run, as rules.apply).
        method, target: the request's method and target; request_fields: the request's
            fields as the client sent them (what ``req.hdr`` reads).
        view: the request's sample.RequestView that conditions read; its status and
            response_fields are set to the response's as each condition is evaluated
            (None: a rule with a condition does not run).

    Returns:
        A Verdict.
    """
    from splicer.http.rules import HeaderRule, apply
    from splicer.http.variables import VarRule

    store = view.vars if view is not None else None
    if store is not None:
        store.response()  # "req" variables end where "res" ones start (haproxy 2.8)
    for rules in sets:
        for r in rules:
            t = type(r)
            if t is HeaderRule or t is VarRule:  # (rules.apply runs both, a condition included)
                if stream is None:
                    continue
                if view is not None:
                    view.status, view.response_fields = status, fields
                fields = apply((r,), fields, stream, Message(method, target, status, request_fields, store), view)
                continue
            if r.cond is not None:
                if view is None:
                    continue
                view.status, view.response_fields = status, fields
                if not r.cond(view):
                    continue
            if t is StatusRule:
                status = r.status
                reason = r.reason if r.reason is not None else reason_of(status)
            elif r.action == "allow":
                break
            else:
                return Verdict(r, status, reason, fields)
    if view is not None:
        view.status, view.response_fields = status, fields
    return Verdict(None, status, reason, fields)


def reframe(method: bytes, framing: Framing, server_status: int, status: int,
            fields: hdr.Headers) -> tuple[Framing, hdr.Headers, bool]:
    """The framing and fields to forward a response with once its status may have changed.

    Args:
        method: the request's method.
        framing: the server response's framing (framing.response_framing).
        server_status: the server's status; status: the one to forward (set-status).
        fields: the fields to forward (after the rules; framing fields as written for
            `framing`).

    Returns:
        (framing, fields, drop): drop is True when the server's response has a body the
        client must not get (its status became 204 or 304, and the server announced a body
        that is not empty): nothing of it is forwarded, and the server connection, with
        that body unread, cannot be reused. RFC 9110 sections 8.6 and 15.3.5: a 204 carries neither Content-Length
        nor Transfer-Encoding; a 304 keeps a Content-Length (it describes the selected
        representation) but no Transfer-Encoding; RFC 9112 section 6.3 rule 1.
    """
    if status == server_status:
        return framing, fields, False
    if method == b"HEAD":  # no body either way; its Content-Length describes the resource
        if status == 204:
            fields = [(n, v) for n, v in fields if n.lower() not in (b"content-length", b"transfer-encoding")]
        return framing, fields, False
    kind = framing.kind
    if status in BODYLESS:
        drop = kind is BodyKind.CHUNKED or kind is BodyKind.CLOSE or (kind is BodyKind.LENGTH and framing.length > 0)
        gone = (b"content-length", b"transfer-encoding") if status == 204 else (b"transfer-encoding",)
        if status == 304 and kind is not BodyKind.LENGTH and server_status not in BODYLESS:
            gone = (b"content-length", b"transfer-encoding")  # no length the server stated
        fields = [(n, v) for n, v in fields if n.lower() not in gone]
        return Framing(BodyKind.NONE, 0), fields, drop
    if kind is BodyKind.NONE:
        # the server's 204/304 has no body; the new status would read as one delimited
        # by the close: say it is empty
        fields = [(n, v) for n, v in fields if n.lower() not in (b"content-length", b"transfer-encoding")]
        fields.append((b"Content-Length", b"0"))
        return Framing(BodyKind.LENGTH, 0), fields, False
    return framing, fields, False
