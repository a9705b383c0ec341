"""A frontend's route: every setting its streams read, resolved once when the config loads.

Rule: what a session or a stream of a frontend needs to know (its backend, the splice policy
of each direction, forwardfor, header rules, error pages, limits and timeouts) is merged here
from the frontend, its backend and the global section, once, into a frozen Route; nothing is
merged per request, and nothing here does I/O. haproxy's precedences are kept: header rules
run frontend-then-backend on requests and backend-then-frontend on responses, a backend's
`errorfile` wins over the frontend's, and a splice direction is on when either proxy sets it
(haproxy#2510).

A frontend with `use_backend` rules, local actions (deny, return, redirect, allow),
request-line rewrites, variables or rule conditions also gets a Switching: its
per-request decisions (which rule answers, which backend) are a pure function of the
request's view (choose()), on which every http-request rule, header rules included, runs
in file order (haproxy's semantics: each rule sees what the ones before it did); each
backend it may pick has its Route resolved at load too, one per (frontend, backend) pair.
A frontend without one pays nothing per request for this: its header rules run when the
head is forwarded (h1.forward_request_head).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Callable, Mapping

from splicer.config.model import Backend, Frontend, Global
from splicer.http.actions import BAD_REQUEST, LocalRule, first_local, merge_runs
from splicer.http.headers import in_networks
from splicer.http.logformat import StreamInfo
from splicer.http.normalize import NormalizeRule, ambiguity
from splicer.http.rewrite import RewriteRule
from splicer.http.rules import HeaderRule
from splicer.http.sample import name_renderer
from splicer.http.variables import VarRule
from splicer.runtime.decisions import DecisionMemo, decision_reads
from splicer.runtime.transfer import SplicePolicy

DEFAULT_SPLICE = SplicePolicy.AUTO
"""The splice policy of both directions when neither the frontend nor the backend names any
`option splice-*` (a haproxy config carried over usually names none): splice what pays,
copy the rest (SplicePolicy.AUTO's thresholds, measured by benchmarks/crossover.py and
chunk_crossover.py). haproxy copies by default; on this design splicing big bodies costs
less CPU than copying them (docs/benchmarks.md)."""


def splice_policy(request: bool, *flags) -> SplicePolicy:
    """Combine the `option splice-*` flags of a frontend and its backend for one direction.

    haproxy enables a direction when either proxy sets it (haproxy#2510).

    Args:
        request: True for client -> server (splice-request), False for server -> client.
        flags: the (splice_request, splice_response, splice_auto) triples of each proxy.
    """
    if any(f[0] if request else f[1] for f in flags):
        return SplicePolicy.ALWAYS
    if any(f[2] for f in flags):
        return SplicePolicy.AUTO
    return SplicePolicy.NEVER


@dataclass(frozen=True, slots=True)
class Route:
    """What the streams of one frontend read, resolved at load (see route_of()).

    Attributes:
        frontend, backend: the proxies' names.
        bufsize: largest head accepted, bytes (tune.bufsize).
        maxhdr: most header fields in a head (tune.http.maxhdr).
        forwardfor: add X-Forwarded-For (option forwardfor on either proxy); as haproxy
            2.6 does it (http_process_request): xff_header, the field's name (the
            backend's option's when it has one, else the frontend's); xff_except, the
            networks of either option's `except`, whose clients get none; xff_if_none, only
            when a request has no field of that name (every option of the two says
            `if-none`). xff_for() says what a client's requests get.
        forwarded: the backend's `option forwarded` parameters (None: off).
        http_buffer_request: option http-buffer-request on either proxy.
        abortonclose: the backend's option abortonclose.
        errorpages: {status: raw response bytes} from `errorfile` (read-only).
        request_rules: header rules in the order they run.
        response_rules: every http-response rule in the order they run (the backend's,
            then the frontend's); response_sets: the same as the sets that run one after
            the other, (backend's, frontend's): an ``allow`` stops only its own
            (http/response_actions.py evaluate()).
        splice_request, splice_response: the SplicePolicy of each direction.
        t_client, t_server: `timeout client` / `timeout server`, seconds (None: none).
        t_request: `timeout http-request` (default: timeout client).
        t_keepalive: `timeout http-keep-alive` (default: timeout http-request).
        t_tunnel: idle limit of a tunnel (101): `timeout tunnel`, else the larger of
            client and server.
    """

    frontend: str
    backend: str
    bufsize: int
    maxhdr: int
    forwardfor: bool
    forwarded: object
    http_buffer_request: bool
    abortonclose: bool
    errorpages: Mapping[int, bytes]
    request_rules: tuple
    response_rules: tuple
    splice_request: SplicePolicy
    splice_response: SplicePolicy
    t_client: float | None
    t_server: float | None
    t_request: float | None
    t_keepalive: float | None
    t_tunnel: float | None
    response_sets: tuple = ()
    xff_header: bytes = b"X-Forwarded-For"
    xff_except: tuple = ()
    xff_if_none: bool = False

    def xff_for(self, client_ip: str | None) -> str | None:
        """The address the X-Forwarded-For field of the requests of a client at `client_ip`
        carries: `client_ip`, or None for none (no `option forwardfor`, an unknown
        address, or one in an `except` network)."""
        if not self.forwardfor or client_ip is None:
            return None
        if self.xff_except and in_networks(client_ip, self.xff_except):
            return None
        return client_ip

    @property
    def xff_plain(self) -> bool:
        """The field is X-Forwarded-For, added whatever the request has (the head may be
        forwarded by ranges, and the express lane's engine may add it)."""
        return self.xff_header == b"X-Forwarded-For" and not self.xff_if_none

    @property
    def rules(self) -> bool:
        """True when some header rule applies (a stream then gathers its rule samples)."""
        return bool(self.request_rules or self.response_rules)


def route_of(g: Global, fe: Frontend, be: Backend) -> Route:
    """Resolve the Route of frontend `fe` whose streams go to backend `be`.

    Args:
        g: the global section; fe, be: the resolved models (config/model.py).
    """
    flags = ((fe.splice_request, fe.splice_response, fe.splice_auto),
             (be.splice_request, be.splice_response, be.splice_auto))
    if fe.splice_named or be.splice_named:
        up, down = splice_policy(True, *flags), splice_policy(False, *flags)
    else:
        up = down = DEFAULT_SPLICE
    t_fe, t_be = fe.timeouts, be.timeouts
    t_request = t_fe.http_request if t_fe.http_request is not None else t_fe.client
    t_keepalive = t_fe.http_keep_alive if t_fe.http_keep_alive is not None else t_request
    tunnel = t_be.tunnel
    if tunnel is None:
        known = [t for t in (t_fe.client, t_be.server) if t is not None]
        tunnel = max(known) if known else None
    xffs = [f for f in (fe.forwardfor, be.forwardfor) if f]  # (model.ForwardFor of each proxy that has one)
    return Route(
        frontend=fe.name, backend=be.name, bufsize=g.bufsize, maxhdr=g.maxhdr,
        forwardfor=bool(fe.forwardfor or be.forwardfor), forwarded=be.forwarded,
        xff_header=(be.forwardfor or fe.forwardfor).header if xffs else b"X-Forwarded-For",
        xff_except=tuple(f.except_net for f in xffs if f.except_net is not None),
        xff_if_none=bool(xffs) and all(f.if_none for f in xffs),
        http_buffer_request=bool(fe.http_buffer_request or be.http_buffer_request),
        abortonclose=bool(be.abortonclose),
        errorpages=MappingProxyType(dict(fe.errorfiles) | dict(be.errorfiles)),
        # header rules only: deny/return/redirect/allow are the Switching's (choose())
        request_rules=tuple(r for r in (*fe.http_request, *be.http_request) if isinstance(r, HeaderRule)),
        response_rules=tuple(be.http_response) + tuple(fe.http_response),
        response_sets=tuple(rs for rs in (tuple(be.http_response), tuple(fe.http_response)) if rs),
        splice_request=up, splice_response=down,
        t_client=t_fe.client, t_server=t_be.server, t_request=t_request, t_keepalive=t_keepalive,
        t_tunnel=tunnel)


@dataclass(frozen=True, slots=True)
class Decision:
    """What a frontend's rules decided for one request (choose()).

    Attributes:
        rule: the deny/return/redirect rule that answers it locally, or None.
        backend: the backend's name (None: no backend was chosen, or a frontend rule
            answered before one was).
        cut_fe, cut_be: how many of the frontend's and the backend's http-request rules
            ran (fewer than all when an ``allow`` or an answer stopped them).
    """

    rule: LocalRule | None
    backend: str | None
    cut_fe: int
    cut_be: int


@dataclass(frozen=True, slots=True)
class Switching:
    """A frontend's rules that decide per request, resolved at load (see switching_of()).

    Attributes:
        fe_rules: the frontend's http-request rules, in order.
        use_backend: (condition or None, backend name, or for a dynamic name a view -> name
            function: sample.name_renderer) pairs, in order.
        default: the default_backend's name (None: none).
        be_rules: {backend name: its http-request rules} for every backend it may pick
            (every backend of the frontend's mode when a use_backend name is dynamic).
        strict: refuse with 400 a request to forward whose target, after the rules, is
            still ambiguous (http/normalize.py ambiguity); False with
            ``option accept-invalid-http-request``.
        frontend: the frontend's name (what ``%f`` and, before a backend is chosen,
            ``%b`` give in the rules' formats).
        fe_edits: some rule of fe_rules edits the message (its formats then read a
            logformat.StreamInfo, built per request only then).
        memo: the decisions remembered by the request parts they read
            (runtime/decisions.py), or None when they may not be (some rule edits the
            request or reads more than its head and addresses): the session asks it
            before calling choose(), and keeps choose()'s answer in it.
        decide: view -> Decision, what the session calls: compile_choose()'s function
            when there is one (the same answers as choose(), in one frame), else choose.
    """

    fe_rules: tuple
    use_backend: tuple
    default: str | None
    be_rules: Mapping[str, tuple]
    strict: bool = True
    frontend: str = ""
    fe_edits: bool = True
    memo: DecisionMemo | None = field(default=None, compare=False)
    _forwards: dict = field(default_factory=dict, compare=False, repr=False)
    decide: object = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        # what the session calls per request: choose(), compiled when it can be
        object.__setattr__(self, "decide", compile_choose(self) or self.choose)

    def choose(self, view) -> Decision:
        """Run the frontend's http-request rules, its use_backend rules (the first whose
        condition holds wins, else default_backend), then the backend's http-request
        rules, in order on the request's view (http/sample.py RequestView): header rules,
        rewrites, ``normalize-uri`` and variable rules change view's fields, target, method
        and variables as they come (actions.first_local), and what they leave is what the
        later rules read and the request is forwarded with. A target still ambiguous at
        the end is answered with 400 (actions.BAD_REQUEST) unless not strict, as is a
        request whose method the rules turned into or out of HEAD. haproxy 4.2
        "use_backend": the rules are evaluated in order after the frontend's http-request
        rules; a dynamic name that names no backend of the frontend's mode stops the
        evaluation and sends the request to the default_backend (haproxy 4.2). In the
        frontend's rules ``be_name`` (``%b``) is the frontend's name, no backend being
        chosen yet (haproxy 7.3.3 "be_name")."""
        info = (StreamInfo(view.src, view.src_port, view.dst, view.dst_port, self.frontend, self.frontend)
                if self.fe_edits else None)
        # the client's method: its response's body framing follows it (compared with the
        # method the rules leave, in any case: an origin may read a method so)
        method = view.method
        rule, cut_fe = first_local(self.fe_rules, view, info)
        if rule is not None:
            return Decision(rule, None, cut_fe, 0)
        name = self.default
        for cond, target in self.use_backend:
            if cond is None or cond(view):
                if type(target) is not str:  # a dynamic name: a backend of this mode, else the default
                    found = target(view)
                    if found in self.be_rules:
                        name = found
                else:
                    name = target
                break
        if name is None:
            return Decision(None, None, cut_fe, 0)
        return self.after_frontend(view, name, cut_fe, method)

    def after_frontend(self, view, name: str, cut_fe: int, method: bytes) -> Decision:
        """The rest of choose() once the frontend's rules ran (`cut_fe` of them) and
        backend `name` was picked: its http-request rules, then the checks of what the
        rules leave. `method` is the client's."""
        be_rules = self.be_rules[name]
        rule, cut_be = (first_local(be_rules, view, StreamInfo(view.src, view.src_port, view.dst, view.dst_port,
                                                               self.frontend, name))
                        if be_rules else (None, 0))
        if rule is None and ((self.strict and ambiguity(view.target) is not None)
                             or (view.method is not method
                                 and (view.method.upper() == b"HEAD") is not (method.upper() == b"HEAD"))):
            # what the rules let through stays ambiguous, or a set-method made a HEAD of
            # another method or another method of a HEAD (the origin's answer would then
            # carry a body the client does not expect, or lack one it does): never
            # forwarded, and counted on the frontend only (it reaches no backend)
            return Decision(BAD_REQUEST, None, cut_fe, cut_be)
        if rule is None:  # the common outcome, one Decision per backend and cut, kept
            key = (name, cut_fe, cut_be)
            d = self._forwards.get(key)
            if d is None:
                d = self._forwards[key] = Decision(None, name, cut_fe, cut_be)
            return d
        return Decision(rule, name, cut_fe, cut_be)


def compile_choose(sw: Switching) -> Callable | None:
    """Switching.choose() written out as one function for `sw`, or None when it cannot be.

    It can be when every frontend http-request rule is a LocalRule (allow, deny, return,
    redirect...: none edits the request, so no rule needs a StreamInfo and the method
    stays the client's until a backend's rules run). The function makes the same calls
    of the rules' and use_backend's conditions, in the same order, and gives the same
    Decision as choose() (tests/unit/runtime/test_choose.py compares the two): on CPython
    a frontend rule costs choose() a call of first_local() and three type tests before its
    condition runs, and each use_backend rule a tuple unpacking; here each is one ``if``.
    A picked backend with http-request rules of its own goes on in after_frontend().
    """
    if not all(type(r) is LocalRule for r in sw.fe_rules):
        return None
    ns: dict = {"Decision": Decision, "BAD_REQUEST": BAD_REQUEST, "ambiguity": ambiguity,
                "after_frontend": sw.after_frontend, "BE_RULES": sw.be_rules, "FORWARDS": sw._forwards,
                "DEFAULT": sw.default}
    n = len(sw.fe_rules)
    lines = ["def choose(view):", '    """Switching.choose, compiled (route.compile_choose)."""',
             "    method = view.method", f"    cut = {n}"]
    if n:
        lines.append("    while True:")
        for i, r in enumerate(sw.fe_rules):
            ns[f"c{i}"], ns[f"a{i}"] = r.cond, Decision(r, None, i, 0)
            then = [f"cut = {i}", "break"] if r.action == "allow" else [f"return a{i}"]
            if r.cond is None:
                lines += [f"        {t}" for t in then]
                break
            call = getattr(type(r.cond), "__call__", None)
            if getattr(call, "parts", None) is not None:  # a compiled disjunction: called as a function
                ns[f"f{i}"] = call
                lines.append(f"        if f{i}(c{i}, view):")
                lines += [f"            {t}" for t in then]
                continue
            lines.append(f"        if c{i}(view):")
            lines += [f"            {t}" for t in then]
        else:
            lines.append("        break")
    lines.append("    name = DEFAULT")
    for i, (cond, target) in enumerate(sw.use_backend):
        ns[f"u{i}"], ns[f"t{i}"] = cond, target
        if cond is None:
            lines.append("    if True:" if i == 0 else "    else:")
        else:
            lines.append(f"    {'if' if i == 0 else 'elif'} u{i}(view):")
        if type(target) is not str and getattr(target, "memo", None) is not None:
            # a name remembered by the head (sample.remembered_by_head): its memo probed
            # here, by the key a disjunction may have read already; on a miss, the name's
            # own call (which keeps the memo)
            ns[f"n{i}"] = target.memo.get
            lines += ["        hk = view._hk",
                      f"        found = n{i}(hk) if hk else None",
                      "        if found is None:",
                      f"            found = t{i}(view)",
                      "        if found in BE_RULES:", "            name = found"]
        elif type(target) is not str:  # a dynamic name: a backend of this mode, else the default
            lines += [f"        found = t{i}(view)", "        if found in BE_RULES:", "            name = found"]
        else:
            lines.append(f"        name = t{i}")
        if cond is None:
            break
    lines += ["    if name is None:",
              "        return Decision(None, None, cut, 0)",
              "    if BE_RULES[name]:",
              "        return after_frontend(view, name, cut, method)"]
    if sw.strict:
        lines += ["    if ambiguity(view.target) is not None:",
                  "        return Decision(BAD_REQUEST, None, cut, 0)"]
    lines += ["    key = (name, cut, 0)",
              "    d = FORWARDS.get(key)",
              "    if d is None:",
              "        d = FORWARDS[key] = Decision(None, name, cut, 0)",
              "    return d"]
    source = "\n".join(lines) + "\n"
    exec(compile(source, f"<choose {sw.frontend}>", "exec"), ns)  # noqa: S102 (our own text, no request data)
    fn = ns["choose"]
    fn.source = source
    return fn


def _decides(rules: tuple) -> bool:
    return any(isinstance(r, (LocalRule, NormalizeRule, RewriteRule, VarRule))
               or getattr(r, "cond", None) is not None for r in rules)


def switching_of(fe: Frontend, backends: Mapping[str, Backend]) -> Switching | None:
    """The Switching of frontend `fe`, or None when every request of it goes the same way
    (no use_backend rule, and neither it nor its default_backend has a local action, a
    request-line rewrite, a variable rule or a rule condition): such a frontend keeps the
    path without per-request decisions.

    Args:
        fe: the frontend's model; backends: every backend model by name.
    """
    names = backend_names(fe, backends)
    be_rules = {n: merge_runs(tuple(backends[n].http_request)) for n in names}
    rules = [fe.http_request, fe.http_response, *be_rules.values(),
             *(backends[n].http_response for n in names)]
    if not fe.use_backend and not any(_decides(tuple(r)) for r in rules):
        return None
    fe_rules = merge_runs(tuple(fe.http_request))
    reads = decision_reads(fe, backends, names)
    return Switching(fe_rules,
                     tuple((r.cond, r.backend if r.dynamic is None else name_renderer(r.dynamic))
                           for r in fe.use_backend),
                     fe.default_backend, MappingProxyType(be_rules), not fe.accept_invalid_http_request,
                     fe.name, any(getattr(r, "edit", None) is not None for r in fe_rules),
                     None if reads is None else DecisionMemo(reads))


def backend_names(fe: Frontend, backends: Mapping[str, Backend]) -> list[str]:
    """Every backend the requests of `fe` may go to: its use_backend targets and its
    default_backend, or every backend of its mode when a use_backend name is dynamic."""
    if any(r.dynamic is not None for r in fe.use_backend):
        return [n for n, b in backends.items() if b.mode == fe.mode]
    names = [r.backend for r in fe.use_backend] + ([fe.default_backend] if fe.default_backend else [])
    return list(dict.fromkeys(names))
