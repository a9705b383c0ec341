"""Variables: haproxy's ``set-var(<scope>.<name>)``, ``set-var-fmt(<scope>.<name>)`` and
``unset-var(<scope>.<name>)`` actions of ``http-request`` / ``http-response``, and the
store the ``var(<scope>.<name>)`` fetch reads (http/sample.py, http/logformat.py).

Rule: sans-I/O. A rule is parsed once (parse_var_rule); per message it reads the request's
sample.RequestView and writes into the Vars the view carries. Who owns each scope's dict
(the worker, the session, the stream) is the runtime's business: a Vars only holds
references to them.

Theory of operation (haproxy configuration.txt 2.8 "Variables", 4.2 "http-request
set-var", 7.3.2 "var"):

- A variable is named ``<scope>.<name>``; <name> holds only ``a-z A-Z 0-9 _``.
- Scopes: ``proc`` lives as long as the worker process and is shared by all its sessions
  (splicer runs one process per CPU: each worker has its own ``proc`` variables, as
  haproxy's processes had with nbproc); ``sess`` lives as long as the client connection,
  across its keep-alive requests; ``txn`` as long as one request/response exchange;
  ``req`` only while the request is processed and ``res`` only while the response is
  (they never overlap: in http-response rules a ``req`` variable is absent).
  ``set-var(res.x)`` in http-request and ``set-var(req.x)`` in http-response would set a
  variable nothing can ever read, so they are refused at load time.
- ``set-var <expr>``: a sample expression with converters (sample.parse_fetch); when it
  finds no sample the variable is left as it was (haproxy: the fetch failed).
  ``set-var-fmt <fmt>`` always sets the variable, to the rendered log-format string.
  Variables hold the sample's text form (an integer as its decimal digits), so every
  matching method of an ACL applies to ``var()`` as to a string fetch. A value holding
  CR, LF or NUL (which only a converter such as ``regsub`` can make) is not stored: a
  header rule could otherwise write it into a head.
- haproxy's ``set-var(<name>,<cond>...)`` conditions (ifexists, ifnotempty...) are
  refused as not supported.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass

from splicer.http.logformat import Message, RuleError, StreamInfo, parse_format, parse_var_name, render

ACTIONS = ("set-var", "set-var-fmt", "unset-var")
"""The variable actions of ``http-request`` and ``http-response``."""

_UNSAFE = re.compile(rb"[\r\n\x00]")
"""What a variable never holds: a converter (``regsub``) could produce it from the
configuration's text, and a header rule would then write it into a head."""

class Vars:
    """The variables one message's rules see: references to the dicts of each scope.

    Args:
        sess: the session's dict (shared by every stream of the client connection).
        proc: the worker's dict (shared by every session of the worker).

    ``txn`` and ``req`` start empty with each stream; response() ends the request phase:
    ``req`` variables are gone and ``res`` ones start. Values are bytes.
    """

    # the dicts of one message's scopes are made by the first set(): most requests of a
    # configuration that uses variables set few, and many set none (class defaults until then)
    txn: dict | None = None
    req: dict | None = None
    res: dict | None = None
    _response = False

    def __init__(self, sess: dict | None = None, proc: dict | None = None) -> None:
        self.proc = {} if proc is None else proc
        self.sess = {} if sess is None else sess

    def response(self) -> None:
        """Enter the response phase (haproxy: "req" variables live until the first server
        connection attempt, "res" ones from then on). Idempotent."""
        self._response = True
        self.req = None

    def get(self, scope: str, name: str) -> bytes | None:
        """The value of ``<scope>.<name>``, or None when it is not set (or its scope is not
        alive in this phase)."""
        d = getattr(self, scope)
        return None if d is None else d.get(name)

    def set(self, scope: str, name: str, value: bytes) -> None:
        """Set ``<scope>.<name>`` (ignored when its scope is not alive in this phase:
        ``req`` in the response phase, ``res`` before it)."""
        d = getattr(self, scope)
        if d is None:
            if (scope == "req" and self._response) or (scope == "res" and not self._response):
                return
            d = {}
            setattr(self, scope, d)
        d[name] = value

    def unset(self, scope: str, name: str) -> None:
        """Remove ``<scope>.<name>`` if it is set."""
        d = getattr(self, scope)
        if d is not None:
            d.pop(name, None)


@dataclass(frozen=True)
class VarRule:
    """One ``set-var`` / ``set-var-fmt`` / ``unset-var`` rule.

    Attributes:
        action: one of ACTIONS.
        scope, name: the variable.
        expr: the sample.Fetch of set-var (None otherwise).
        fmt: the parsed log-format of set-var-fmt (logformat.parse_format; () otherwise).
        cond: the rule's acl.Condition (None: always).
        file, line: where the rule was written.
    """

    action: str
    scope: str
    name: str
    expr: object = None
    fmt: tuple = ()
    cond: object = None
    file: str = ""
    line: int = 0

    def edit(self, view, info: StreamInfo | None, fields=None) -> bool:
        """Run the rule on the message `view` (a sample.RequestView whose ``vars`` is a
        Vars; without one nothing happens). `fields` are the fields a format's
        ``req.hdr`` / ``res.hdr`` read (default: view.fields). Returns True (a variable
        never makes the message invalid)."""
        store = view.vars
        if store is None:
            return True
        if self.action == "unset-var":
            store.unset(self.scope, self.name)
        elif self.action == "set-var":
            samples = self.expr(view)
            if samples:
                value = self.expr.text(view)
                if _UNSAFE.search(value) is None:
                    store.set(self.scope, self.name, value)
        else:
            msg = Message(view.method, view.target, view.status,
                          view.fields if view.response_fields is not None else None, store)
            f = fields if fields is not None else (view.response_fields if view.response_fields is not None
                                                   else view.fields)
            store.set(self.scope, self.name, render(self.fmt, info, msg, f))
        return True


def parse_var_rule(action: str, args: list[str], side: str, cond, file: str = "",
                   line: int = 0) -> VarRule:
    """Read ``set-var(<var>) <expr>``, ``set-var-fmt(<var>) <fmt>`` or ``unset-var(<var>)``
    (the condition already split off).

    Args:
        action: the action word as written, e.g. ``"set-var(txn.be)"``.
        args: the words after it.
        side: "request" or "response".
        cond: the parsed condition or None.

    Raises:
        RuleError: no ``(<var>)``, a bad variable name, set-var conditions, a scope that
            is not alive on this side, a wrong argument count, a bad expression or format.
    """
    from splicer.http import sample

    base, paren, rest = action.partition("(")
    what = f"http-{side} {base}"
    if not paren or not rest.endswith(")") or not rest[:-1].strip():
        raise RuleError(f"'{what}' expects a variable: {base}(<scope>.<name>)")
    inner = rest[:-1]
    if "," in inner:
        raise RuleError(f"'{what}': set-var conditions ('{inner.partition(',')[2]}') are not supported")
    scope, name = parse_var_name(inner, f"'{what}'")
    if base != "unset-var" and (scope, side) in (("res", "request"), ("req", "response")):
        raise RuleError(f"'{what}({inner})': a '{scope}' variable does not live during "
                        f"{side} processing (haproxy 2.8: 'req' and 'res' never overlap)")
    want = 0 if base == "unset-var" else 1
    if len(args) != want:
        usage = {"set-var": " <expr>", "set-var-fmt": " <fmt>", "unset-var": ""}[base]
        raise RuleError(f"'{what}' expects exactly {want} argument(s): {base}(<scope>.<name>){usage}"
                        + (" (quote a value that holds spaces)" if len(args) > want else ""))
    if base == "set-var":
        try:
            expr = sample.parse_fetch(args[0], os.path.dirname(file))
        except sample.SampleError as exc:
            raise RuleError(f"'{what}': {exc}") from None
        return VarRule(base, scope, name, expr, (), cond, file, line)
    if base == "set-var-fmt":
        return VarRule(base, scope, name, None, parse_format(args[0], side), cond, file, line)
    return VarRule(base, scope, name, None, (), cond, file, line)
