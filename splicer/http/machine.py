"""The stream machine: one request/response exchange, from a routed request to its end.

Rule: everything that decides what a stream does next lives here: which server connection
it asks for, what it sends, what a response head means (a 1xx to relay, a 101 to tunnel, a
status to retry, a rule's answer, the final response and its framing), whether a failed
attempt is made again (http/retry.py), how the stream ended (its Termination) and whether
both connections go on. It takes events and returns jobs; nothing here does I/O, reads the
clock or touches the engine. The driver (runtime/stream.py) is the only place that carries
the jobs out (as engine jobs, or on the loop when the engine cannot take one) and feeds
back what came of them.

Theory of operation. h11's Connection is the model: one object, its states and the events
each state takes written once, as a table (TRANSITIONS), and tested by feeding events, with
no socket. haproxy's stream is the proxy-sized version: the same fixed sequence of steps
for every request, whatever happened before. The states:

  REQUEST    `option http-buffer-request`: the body is being buffered (Buffer job).
  QUEUE      waiting for a server connection (Acquire job).
  SEND       the request went (or goes) out; waiting for its response head. The body of a
             request that did not come whole with its head moves meanwhile (its end is a
             BODY event, which any later state takes too).
  INTERIM    a 1xx head is being relayed to the client; then back to SEND.
  DATA       the final response head and its body are going to the client (Respond job).
  BODY_WAIT  the response is through while the request body still moves: an early 2xx
             waits for it; any other answer gives it BODY_GRACE seconds, then ends it.
  TUNNEL     a 101 was relayed: both directions are relayed until both sides closed.
  ANSWER     splicer answers instead of the server (an error page, an http-response rule),
             or before any server (answer_locally()'s http-request rule, service or 503 for want of
             a backend; refuse()'s answer to a bad, late or cut-short request head).
  HOLD       a tarpitted request is held (Hold job) before its answer.
  DRAIN      a local answer went out; the request's small body is read and dropped, so
             that the connection can go on (Discard job).
  DONE       over: one Finish job said whether the client connection goes on.

Three doors lead in: start() for a routed request (QUEUE or REQUEST), answer_locally() for a request
answered before any server (ANSWER or HOLD), refuse() for a request head refused before it
was routed (ANSWER). Whichever door a stream took, it ends with the same Finish, and
runtime/accounting.py counts and logs it by `local` (None, "answer" or "refused").

A fast path is a short walk through it: QUEUE (an idle connection at once) -> SEND (one
engine job sends the head, copies a small body and reads the response head back) -> DATA
(one engine job sends the head and body, then reads the client's next head) -> DONE.
Shorter still, when nothing but the machine's own forwarding would touch the response
(relay_terms(): no http-response rule, no observe, no persistence, no upgrade), the Send
job carries RelayTerms and the engine relays a plain response by itself (native/src/h1.c
spl_h1_relay writes the head _final() would write, byte for byte): the machine then takes
one RELAYED event, SEND -> DONE, for the head and the body together.
"""
from __future__ import annotations

from typing import NamedTuple

from splicer.health.observe import Event as Observed, status_event
from splicer.http import actions
from splicer.http.framing import BodyKind
from splicer.http.h1 import (F_CONN_CLOSE, HeadError, forward_response_head, forwarded_response, head_complete,
                             parse_response, response_fields)
from splicer.http.logformat import Message
from splicer.http.outcome import End, Result
from splicer.http.response_actions import Verdict, evaluate, reframe
from splicer.http.retry import GIVE_UP, Retry, RetryEvent, decide
from splicer.http.service import ServiceRule
from splicer.http.termination import NORMAL, Cause, Phase, Termination

IDEMPOTENT = frozenset({b"GET", b"HEAD", b"OPTIONS", b"TRACE", b"PUT", b"DELETE"})
"""Methods whose request may be sent again (RFC 9110 section 9.2.2)."""

BODY_GRACE = 0.25
"""Seconds a relayed response waits for its request body's transfer to report its end."""

NO_BODY = Result(End.DONE)
"""A stream's transfer before (or without) a body; shared, never changed."""

SERVER_END = {End.SRC_EOF: Cause.SERVER_ABORT, End.SRC_ERROR: Cause.SERVER_ABORT,
              End.SRC_TIMEOUT: Cause.SERVER_TIMEOUT, End.BAD_FRAMING: Cause.PROXY,
              End.DST_ERROR: Cause.CLIENT_ABORT, End.DST_TIMEOUT: Cause.CLIENT_TIMEOUT}
"""Who ended a response body (moved server -> client), by the transfer's end."""

CLIENT_END = {End.SRC_EOF: Cause.CLIENT_ABORT, End.SRC_ERROR: Cause.CLIENT_ABORT,
              End.SRC_TIMEOUT: Cause.CLIENT_TIMEOUT, End.BAD_FRAMING: Cause.CLIENT_ABORT,
              End.DST_ERROR: Cause.SERVER_ABORT, End.DST_TIMEOUT: Cause.SERVER_TIMEOUT}
"""Who ended a request body (moved client -> server). A client whose chunked framing broke
has aborted its own message, as haproxy counts it."""


class State:
    """Where a stream is (see the module's theory of operation). Plain int constants, not an
    Enum: the machine reads them at every step, and an Enum member's lookup costs about
    0.1 us in CPython 3.11, a plain class attribute's a third of that."""

    REQUEST, QUEUE, SEND, INTERIM, DATA, BODY_WAIT, TUNNEL, ANSWER, HOLD, DRAIN, DONE = range(11)


class Ev:
    """What the driver reports to feed(); each also has a method of StreamMachine, named in
    the comment. (Plain int constants, as State.)"""

    BUFFERED = 0       # buffered(): the buffered request body (or why none came)
    LEASED = 1         # leased(): a server connection was lent (Acquire)
    NO_SERVER = 2      # no_server(): none: queue timeout, no server up, connects failed
    SEND_FAILED = 3    # send_failed(): the request head could not be sent
    HEAD = 4           # head(): a response head (or why none came)
    BODY = 5           # body_ended(): the request body's transfer ended
    INTERIM_SENT = 6   # interim_sent()
    SENT = 7           # sent(): the final response head and body went out (or not)
    TUNNEL_END = 8     # tunnel_ended()
    REPLIED = 9        # replied(): splicer's own answer went out
    TIMER = 10         # timer(): a Wait job's delay is over
    KILLED = 11        # killed(): a hard stop, or a bug caught by the driver
    RELAYED = 12       # relayed(): the engine sent a plain response on by itself (Send.relay)
    HELD = 13          # held(): a tarpit's hold is over (Hold)
    DISCARDED = 14     # discarded(): a local answer's request body was read and dropped (Discard)
    SERVED = 15        # served(): a service answered the request (Serve)


STATE_NAMES = {v: k for k, v in vars(State).items() if k.isupper()}
"""State value -> its name (for messages)."""
EV_NAMES = {v: k for k, v in vars(Ev).items() if k.isupper()}
"""Ev value -> its name (for messages)."""

# the members of other modules' enums that every request reads, bound once (see State)
K_NONE, K_LENGTH, K_CHUNKED, K_CLOSE = BodyKind.NONE, BodyKind.LENGTH, BodyKind.CHUNKED, BodyKind.CLOSE
PH_REQUEST, PH_QUEUE, PH_CONNECT, PH_HEADERS, PH_DATA = (Phase.REQUEST, Phase.QUEUE, Phase.CONNECT,
                                                          Phase.HEADERS, Phase.DATA)
END_DONE = End.DONE


def _relay_terms(retry_on: frozenset, splice, head: bool, close: bool, announce: bool) -> RelayTerms | None:
    """The RelayTerms of a backend's `retry-on` set and response splice policy (SplicePolicy)
    for a request (`head`: HEAD; `close`, `announce`: as RelayTerms'): statuses up to the
    first one retry-on names (None: it names one below 200)."""
    statuses = [s for s in retry_on if type(s) is int]
    top = min(statuses) - 1 if statuses else 599
    return RelayTerms(top, head, splice.threshold(), close, announce) if top >= 200 else None


NO_BACKEND = actions.LocalRule("return", 503, default_errorfiles=True)
"""How a request that no use_backend rule matched, on a frontend without a default_backend,
is answered: the proxy's 503 page (its `errorfile 503`, else the built-in one). It is not a
rule's answer: no rule counter, termination "SC"."""

_TERMS: dict = {}
"""_relay_terms() by its arguments: a config has a handful of combinations."""
_UNKNOWN = object()


def _terms_of(key: tuple) -> RelayTerms | None:
    """_relay_terms(*key), memoized in _TERMS."""
    terms = _TERMS.get(key, _UNKNOWN)
    if terms is _UNKNOWN:
        terms = _TERMS[key] = _relay_terms(*key)
    return terms


def keep_alive_terms(retry_on: frozenset, splice) -> RelayTerms | None:
    """The RelayTerms of a response to a keep-alive HTTP/1.1 client's request other than HEAD
    under a backend's `retry-on` set and response splice policy, as relay_terms() gives
    them (None: the engine relays none); the express lane arms a connection's first head
    with them (runtime/express.py; the engine sets HEAD's and a closing client's itself)."""
    return _terms_of((retry_on, splice, False, False, False))


# -- jobs: what the driver carries out -------------------------------------------------------

class Buffer(NamedTuple):
    """Read `want` bytes of request body within `timeout http-request` (first answering a
    100-continue when `cont`); report them with buffered()."""
    want: int
    cont: bool


class Acquire(NamedTuple):
    """Get a server connection from the backend (Backend.acquire's arguments); report it
    with leased() or no_server()."""
    avoid: frozenset
    only: int | None
    allow_reuse: bool
    left: int


class Send(NamedTuple):
    """Send the request `head` on the lent connection, then read the response head. `whole`:
    bytes of body that came with the request head, copied behind it by the same job;
    `stream`: the body moves separately (its end reported with body()). `relay`: None, or
    the RelayTerms under which the engine may send a plain response head and its body on to
    the client by itself (report with relayed(); any other head with head())."""
    head: bytes
    whole: int
    stream: bool
    relay: RelayTerms | None = None


class RelayTerms(NamedTuple):
    """When the engine may relay a response without the machine (native/src/h1.c
    spl_h1_relay: a plain HTTP/1.1 head, framed by a Content-Length or bodiless, forwarded as
    _final() would forward it). `status_max`: the highest status (a status `retry-on` names is
    left to the machine); `no_body`: the request was HEAD; `splice_min`: a body of at least
    this many bytes is spliced, a smaller one copied (route.splice_response's threshold);
    `close`: the client connection ends after the response, which says `Connection: close`;
    `announce`: an HTTP/1.0 client keeps it, and the response says `Connection: keep-alive`."""
    status_max: int
    no_body: bool
    splice_min: int
    close: bool = False
    announce: bool = False


class ReadHead(NamedTuple):
    """Read the next response head (after a 1xx)."""


class Interim(NamedTuple):
    """Relay the 1xx head `data` to the client; report with interim_sent()."""
    data: bytes


class Respond(NamedTuple):
    """Send the final response head `head`, then its body server -> client (`count` bytes,
    None: until the server's end; chunked: verbatim chunks, dechunked for an HTTP/1.0
    client when `dechunk`), spliced when `splice`; `then_head`: the client connection goes on,
    so the same job may read its next request head. Report with sent()."""
    head: bytes
    count: int | None
    chunked: bool
    splice: bool
    dechunk: bool
    then_head: bool


class Tunnel(NamedTuple):
    """Send the 101 head `head`, then relay both directions until both ended."""
    head: bytes


class Reply(NamedTuple):
    """Send splicer's own answer: `data` as it is, or (data None) the error page of `status`
    followed by a close in stages. Report with replied()."""
    data: bytes | None
    status: int


class Hold(NamedTuple):
    """Hold the request `seconds` (haproxy `timeout tarpit`), reading and dropping what the
    client sends meanwhile; report held(): whether the time ran out with the client still
    there."""
    seconds: float


class Discard(NamedTuple):
    """Read and drop the next `n` bytes the client sends (the body of a request answered
    here), each read within timeout client; report discarded() with the bytes that came."""
    n: int


class Serve(NamedTuple):
    """Let the worker's service of `rule` (http/service.py ServiceRule: the stats page, the
    prometheus exporter; runtime/services.py) read the request's body and answer; report
    served()."""
    rule: object


class Release(NamedTuple):
    """Give the lent connection back: to the idle pool when `reusable`, else closed."""
    reusable: bool


class Observe(NamedTuple):
    """Report what the response showed to the server's health (`observe layer7`)."""
    event: Observed


class Abort(NamedTuple):
    """End the client connection now: a FIN, or a reset when `reset`."""
    reset: bool


class ShutServer(NamedTuple):
    """Shut the server connection down both ways (a failed request body: the response head
    wait ends too)."""


class EndBody(NamedTuple):
    """Stop the request body's transfer if it still runs; the jobs after it wait until it
    has stopped (it may be using both sockets)."""


class Wait(NamedTuple):
    """Report timer() after `seconds`."""
    seconds: float


class Warn(NamedTuple):
    """Log `text` as a warning."""
    text: str


class Finish(NamedTuple):
    """The stream is over: give the lent connection back, if one still is (to the idle
    pool when `reusable`), count and log the stream, then the session goes on when `keep`."""
    keep: bool
    reusable: bool = False


# -- the table ------------------------------------------------------------------------------

S = State
TRANSITIONS: dict[tuple[int, int], tuple[str, frozenset]] = {
    (S.REQUEST, Ev.BUFFERED): ("_on_buffered", frozenset({S.QUEUE, S.ANSWER, S.DONE})),
    (S.QUEUE, Ev.LEASED): ("_on_leased", frozenset({S.SEND, S.DONE})),
    (S.QUEUE, Ev.NO_SERVER): ("_on_no_server", frozenset({S.ANSWER})),
    (S.QUEUE, Ev.BODY): ("_on_body", frozenset({S.QUEUE})),
    (S.SEND, Ev.SEND_FAILED): ("_on_send_failed", frozenset({S.QUEUE, S.ANSWER, S.DONE})),
    (S.SEND, Ev.HEAD): ("_on_head", frozenset({S.SEND, S.INTERIM, S.DATA, S.TUNNEL, S.ANSWER, S.QUEUE,
                                               S.DONE})),
    (S.SEND, Ev.RELAYED): ("_on_relayed", frozenset({S.DONE})),  # (DATA and its end in one event)
    (S.SEND, Ev.BODY): ("_on_body", frozenset({S.SEND})),
    (S.INTERIM, Ev.INTERIM_SENT): ("_on_interim_sent", frozenset({S.SEND, S.DONE})),
    (S.INTERIM, Ev.BODY): ("_on_body", frozenset({S.INTERIM})),
    (S.DATA, Ev.SENT): ("_on_sent", frozenset({S.BODY_WAIT, S.DONE})),
    (S.DATA, Ev.BODY): ("_on_body", frozenset({S.DATA})),
    (S.BODY_WAIT, Ev.BODY): ("_on_body_waited", frozenset({S.DONE})),
    (S.BODY_WAIT, Ev.TIMER): ("_on_grace_over", frozenset({S.DONE})),
    (S.TUNNEL, Ev.TUNNEL_END): ("_on_tunnel_end", frozenset({S.DONE})),
    (S.ANSWER, Ev.REPLIED): ("_on_replied", frozenset({S.DRAIN, S.DONE})),
    (S.ANSWER, Ev.BODY): ("_on_body", frozenset({S.ANSWER})),
    (S.ANSWER, Ev.SERVED): ("_on_served", frozenset({S.DONE})),
    (S.HOLD, Ev.HELD): ("_on_held", frozenset({S.ANSWER, S.DONE})),
    (S.DRAIN, Ev.DISCARDED): ("_on_discarded", frozenset({S.DONE})),
    # over (killed while a job was still out): what that job reports later changes nothing,
    # and a connection lent after the end goes back at once
    (S.DONE, Ev.BODY): ("_ignore", frozenset({S.DONE})),
    (S.DONE, Ev.TIMER): ("_ignore", frozenset({S.DONE})),
    (S.DONE, Ev.KILLED): ("_ignore", frozenset({S.DONE})),
    (S.DONE, Ev.HEAD): ("_ignore", frozenset({S.DONE})),
    (S.DONE, Ev.RELAYED): ("_ignore", frozenset({S.DONE})),
    (S.DONE, Ev.SEND_FAILED): ("_ignore", frozenset({S.DONE})),
    (S.DONE, Ev.SENT): ("_ignore", frozenset({S.DONE})),
    (S.DONE, Ev.INTERIM_SENT): ("_ignore", frozenset({S.DONE})),
    (S.DONE, Ev.TUNNEL_END): ("_ignore", frozenset({S.DONE})),
    (S.DONE, Ev.REPLIED): ("_ignore", frozenset({S.DONE})),
    (S.DONE, Ev.BUFFERED): ("_ignore", frozenset({S.DONE})),
    (S.DONE, Ev.NO_SERVER): ("_ignore", frozenset({S.DONE})),
    (S.DONE, Ev.LEASED): ("_on_late_lease", frozenset({S.DONE})),
    (S.DONE, Ev.HELD): ("_ignore", frozenset({S.DONE})),
    (S.DONE, Ev.DISCARDED): ("_ignore", frozenset({S.DONE})),
    (S.DONE, Ev.SERVED): ("_ignore", frozenset({S.DONE})),
}
"""(state, event) -> (handler, the states it may lead to). An event not listed for a state
is a bug of the driver (StreamMachineError). KILLED is taken in every state."""
for _s in STATE_NAMES:
    if _s != State.DONE:
        TRANSITIONS[(_s, Ev.KILLED)] = ("_on_killed", frozenset({S.DONE}))
del _s


class StreamMachineError(Exception):
    """An event the machine's state does not take (a bug of its driver)."""


class StreamMachine:
    """One request/response exchange as a pure state machine.

    Args:
        req: the parsed request head (http/h1.py RequestHead), its framing as forwarded.
        route: the chosen backend's runtime Route (read: policy-free settings only:
            bufsize, splice_request/splice_response (SplicePolicy), response_rules,
            response_sets, errorpages, http_buffer_request, abortonclose).
        policy: the backend's http/retry.py RetryPolicy.
        be_counters, be_name: the backend's counters (wretr, wredis, reused) and name.
        first: the request is its session's first (http-reuse).

    Attributes (read by the access log and the counters when the stream is over):
        state: the State.
        phase: the termination Phase the stream is in.
        term: how it ended (NORMAL until something else happens).
        status: the final status sent to the client (0: none).
        retries, redispatched, server, tried: haproxy's %rc, "+", %s.
        head_in, head_out: bytes of heads (and buffered body) read from / sent to the client.
        up, down: the request and response bodies' transfer Results.
        interim: 1xx statuses relayed to the client.
        lease: the server connection lent to the attempt under way (None between).
    """

    stopping = False
    """The worker soft-stops: its responses close (the driver reads it from its proxy)."""

    __slots__ = ("state", "phase", "term", "req", "raw", "route", "policy", "bec", "be_name", "first",
                 "server", "head_in", "left", "tried", "redispatched", "retries", "status", "head_out",
                 "up", "down", "interim", "answer", "handed", "t_resp", "whole", "body", "avoid",
                 "only", "failed", "answered", "resp", "keep", "reusable", "server_status", "good",
                 "info", "view", "early", "reply_status", "resp_raw", "interim_status", "observing",
                 "out_head", "replayable", "allow_reuse", "lease", "persisting", "relaying", "local", "drain",
                 "reply")

    def __init__(self, req, raw: bytes, route, policy, be_counters, be_name: str, first: bool) -> None:
        self.state = State.QUEUE
        self.phase = PH_QUEUE
        self.term = NORMAL
        self.req, self.raw = req, raw
        self.route = route
        self.policy = policy
        self.bec = be_counters
        self.be_name = be_name
        self.first = first
        self.server = None
        self.head_in = len(raw)
        self.left = policy.retries
        self.tried = None                   # the server of the last failed connect, when none was reached
        self.redispatched = False           # the last retry went to another server (the log's "+")
        self.retries = 0
        self.status = 0
        self.head_out = 0
        self.up = NO_BODY
        self.down = NO_BODY
        self.interim = ()                   # 1xx statuses relayed to the client (a list once there is one)
        self.answer = None                  # the http-response rule that answered instead of the server
        self.handed = None                  # (status, head bytes) of a response head handed to a Respond job
        self.t_resp = 0.0
        self.whole = 0                      # body bytes that came whole with the head (sent with it)
        self.body = 0                       # the request body's transfer: 0 none, 1 moving, 2 ended or stopped
        self.avoid = frozenset()            # server indexes a retry avoids
        self.only = None                    # the one server index a retry goes back to
        self.failed = None                  # the server whose failed attempt made this one a retry
        self.answered = False               # a byte of a response (a 1xx) went to the client
        self.resp = None                    # the final response being relayed (DATA)
        self.keep = False                   # the client connection goes on (DATA, ANSWER)
        self.reusable = False               # the server connection may be reused (DATA)
        self.server_status = 0
        self.good = False                   # the response went through whole (DATA, BODY_WAIT)
        self.info = None                    # logformat.StreamInfo for rule formats (None: no rule reads it)
        self.view = None                    # the request's sample.RequestView (None: none was built)
        self.early = None                   # the body bytes `option http-buffer-request` read (REQUEST)
        self.reply_status = 0               # the status of a rule's answer under way (ANSWER)
        self.resp_raw = b""                 # the final response head as the server sent it
        self.interim_status = 0             # the 1xx status being relayed (INTERIM)
        self.observing = False              # the servers' health observes responses (`observe layer7`)
        self.out_head = b""                 # the forwarded request head (prepared())
        self.replayable = False
        self.allow_reuse = False
        self.lease = None                   # the connection lent to the attempt under way
        self.persisting = False             # the backend persists (cookie, use-server): persist_fields()
        self.relaying = None                # the RelayTerms of the Send under way (None: no relay)
        self.local = None                   # "answer" (answer_locally()) or "refused" (refuse()); None: start()
        self.drain = 0                      # request body bytes a local answer reads and drops (DRAIN)
        self.reply = b""                    # a tarpitted request's answer, sent after the hold (HOLD)

    # -- feeding ------------------------------------------------------------------------

    def feed(self, ev: Ev, *args) -> list:
        """Take event `ev` (its arguments as the method of the same name) and return the jobs
        to carry out, in order.

        Raises:
            StreamMachineError: `ev` is not an event of the current state.
        """
        try:
            handler, targets = _TABLE[(self.state, ev)]
        except KeyError:
            raise StreamMachineError(f"stream in state {STATE_NAMES[self.state]} got {EV_NAMES[ev]}") from None
        jobs = handler(self, *args)
        if self.state not in targets:
            raise StreamMachineError(f"{handler.__name__} led from {EV_NAMES[ev]} to {STATE_NAMES[self.state]}")
        return jobs

    # the events, by name (feed() is the one way in; these read better at the call site)
    def buffered(self, early, failure=None): return self.feed(Ev.BUFFERED, early, failure)
    def leased(self, lease, client_gone=False): return self.feed(Ev.LEASED, lease, client_gone)
    def no_server(self, termination: str, retries: int, server): return self.feed(Ev.NO_SERVER, termination, retries, server)
    def send_failed(self): return self.feed(Ev.SEND_FAILED)
    def head(self, raw, index=None, failure=None, now=0.0): return self.feed(Ev.HEAD, raw, index, failure, now)
    def body_ended(self, r: Result): return self.feed(Ev.BODY, r)
    def interim_sent(self, n: int, status: int): return self.feed(Ev.INTERIM_SENT, n, status)
    def sent(self, ok: bool, r: Result | None): return self.feed(Ev.SENT, ok, r)
    def relayed(self, raw, index, now: float, n: int, ok: bool, r: Result | None, killed: bool = False): return self.feed(Ev.RELAYED, raw, index, now, n, ok, r, killed)
    def tunnel_ended(self, sent: int, up, down): return self.feed(Ev.TUNNEL_END, sent, up, down)
    def replied(self, n: int): return self.feed(Ev.REPLIED, n)
    def timer(self): return self.feed(Ev.TIMER)
    def killed(self, cause: Cause = Cause.KILLED): return self.feed(Ev.KILLED, cause)
    def held(self, still_there: bool): return self.feed(Ev.HELD, still_there)
    def discarded(self, got: int): return self.feed(Ev.DISCARDED, got)
    def served(self, status: int, sent: int, received: int, keep: bool): return self.feed(Ev.SERVED, status, sent, received, keep)

    # -- outcome -------------------------------------------------------------------------

    def end(self, cause: Cause, phase: Phase | None = None) -> None:
        """Record how the stream ended (the first end recorded wins)."""
        if self.term is NORMAL:
            self.term = Termination(cause, self.phase if phase is None else phase)

    # -- the start -----------------------------------------------------------------------

    def start(self, whole: int = 0) -> list:
        """The first jobs of a routed request. `whole`: bytes the client socket held behind
        the head when it was read (Completion.more): a Content-Length body of at most that
        many bytes (and at most tune.bufsize, with no 100-continue) is sent with its head.

        Returns:
            [Buffer] (`option http-buffer-request` with a body) or the jobs of prepared().
        """
        req, route = self.req, self.route
        fr = req.framing
        if fr.kind is K_LENGTH and route.http_buffer_request:
            self.state = State.REQUEST
            self.phase = PH_REQUEST
            return [Buffer(min(fr.length, route.bufsize), req.expect_continue and req.version == b"1.1")]
        if (fr.kind is K_LENGTH and 0 < fr.length <= whole and fr.length <= route.bufsize
                and not req.expect_continue):
            self.whole = fr.length
        return self.prepared()

    def answer_locally(self, rule, info, pages, tarpit: float = 0.0) -> list:
        """The first jobs of a request answered here, before any server: by the http-request
        rule `rule` (deny, return, redirect, auth, tarpit: an actions.LocalRule; or a
        service's ServiceRule), or, with `rule` None, by a 503 for want of a backend
        (haproxy: no use_backend matched and no default_backend; termination "SC").

        A deny ends "PR" (counted in dreq), another answer "LR". A tarpit first holds the
        request `tarpit` seconds (its proxy's `timeout tarpit`), then answers; a client that
        leaves first gets nothing ("CT"). The client connection goes on, as haproxy 2.6 keeps
        it after any of these answers (the 503 and a tarpit's 500 included), when the
        request allows it and its body, if any, is announced by a Content-Length of at most
        tune.bufsize bytes without a 100-continue: that body is read and dropped after the
        answer (DRAIN), so it is never read as the next request. A larger or chunked one,
        or a 100-continue, makes the answer say `Connection: close`, as do an `errorfile`
        page (sent as it is) and a tarpitted request with any body (the hold drops what
        comes, so where the body ended is not known). `info` and `pages`: what the answer's formats read
        (logformat.StreamInfo) and the error pages it uses (`errorfile`).

        Returns:
            [Reply], [Hold] or [Serve]; the stream's `local` is "answer".
        """
        self.local = "answer"
        self.phase = PH_REQUEST
        if isinstance(rule, ServiceRule):  # the stats page, the prometheus exporter
            self.answer = rule
            self.end(Cause.LOCAL)
            self.state = State.ANSWER
            return [Serve(rule)]
        req = self.req
        fr = req.framing
        drain = fr.length if fr.kind is K_LENGTH else 0
        keep = req.keep_alive and req.upgrade is None and not self.stopping
        if fr.kind is K_CHUNKED or (drain and req.expect_continue) or drain > self.route.bufsize:
            keep, drain = False, 0  # a body not read here: the session closes in stages
        tarpitted = False
        if rule is None:
            self.end(Cause.SERVER_ABORT, PH_CONNECT)
            rule = NO_BACKEND
        else:
            self.answer = rule
            tarpitted = rule.action == "tarpit"
            if tarpitted:
                self.end(Cause.PROXY, Phase.TARPIT)
                if drain:  # the hold reads and drops what comes, the body with it: its end is
                    keep, drain = False, 0  # not known, so the connection cannot go on
            else:
                self.end(Cause.PROXY if rule.action == "deny" else Cause.LOCAL)
        store = self.view.vars if self.view is not None else None
        method = self.raw.lstrip(b"\r\n").partition(b" ")[0]  # the client's, whatever set-method did
        data, self.keep = actions.reply(rule, info, Message(req.method, req.target, 0, None, store), req.headers,
                                        req.version, keep, pages, method)
        self.drain = drain
        if tarpitted:
            self.phase = Phase.TARPIT
            self.state = State.HOLD
            self.reply = data
            return [Hold(tarpit)]
        return self._local_reply(data)

    def refuse(self, cause: Cause, status: int, received: int) -> list:
        """The first jobs of a request head refused before it was routed (haproxy's h1 mux:
        a bad head 400, a late one 408, one too large 414 or 431, one cut short 400):
        termination `cause` in the request phase, the error page of `status` (0: none) and
        a close in stages. `received`: the bytes the client sent.

        Returns:
            [Reply] or [Finish]; the stream's `local` is "refused".
        """
        self.local = "refused"
        self.phase = PH_REQUEST
        self.head_in = received
        self.end(cause)
        if not status:
            return self._finish(False)
        return self._error_page(status)

    def _local_reply(self, data: bytes) -> list:
        """Send a local answer `data` (its status counts whether or not it goes out)."""
        self.status = int(data[9:12])
        self.state = State.ANSWER
        return [Reply(data, self.status)]

    def _on_held(self, still_there: bool) -> list:
        if not still_there:  # the client left during the hold: nothing is answered
            self.term = Termination(Cause.CLIENT_ABORT, Phase.TARPIT)
            return self._finish(False)
        data, self.reply = self.reply, b""
        return self._local_reply(data)

    def _on_discarded(self, got: int) -> list:
        self.head_in += got
        return self._finish(self.keep and got == self.drain)

    def _on_served(self, status: int, sent: int, received: int, keep: bool) -> list:
        self.status = status
        self.head_out += sent
        self.head_in = received
        return self._finish(keep and sent > 0)

    def _on_buffered(self, early: bytes | None, failure: str | None) -> list:
        if failure == "timeout":  # the body did not come within timeout http-request
            self.end(Cause.CLIENT_TIMEOUT)
            return self._error_page(408)
        if failure is not None:  # the client closed or failed before sending its body
            self.end(Cause.CLIENT_ABORT)
            return self._finish(False)
        self.phase = PH_QUEUE
        self.state = State.QUEUE
        self.head_in += len(early)
        self.early = early
        req = self.req
        if req.expect_continue and req.version == b"1.1":
            # splicer answered the 100-continue itself: the expectation is met and is not
            # forwarded, so the client never gets a second 100 (haproxy does the same)
            req.headers = [(n, v) for n, v in req.headers if n.lower() != b"expect"]
        return self.prepared()

    def prepared(self) -> list:
        """Hook: build the forwarded request head into out_head (with the buffered body
        `early`, its framing then what is left of the body), decide_reuse(), and return
        attempt(). The driver overrides it (it knows the session's addresses and the
        backend's persistence); this one forwards the head as it came."""
        self.out_head = self.raw + (self.early or b"")
        self.decide_reuse()
        return self.attempt()

    def decide_reuse(self) -> None:
        """What the prepared request allows: an idle connection (any request but an upgrade,
        as haproxy's http-reuse: the strategy decides, not the method; a request that cannot be
        sent again and is dropped on a reused connection gets a 502, never a replay), and a
        replay (an idempotent request held whole: RFC 9110 section 9.2.2)."""
        req = self.req
        fr = req.framing
        self.allow_reuse = req.upgrade is None
        self.replayable = (req.method in IDEMPOTENT and req.upgrade is None
                           and (fr.kind is K_NONE or (fr.kind is K_LENGTH and fr.length == 0)))

    def attempt(self) -> list:
        """Ask for a server connection for the next attempt."""
        self.state = State.QUEUE
        self.phase = PH_QUEUE
        return [Acquire(self.avoid, self.only, self.allow_reuse, self.left)]

    # -- QUEUE ---------------------------------------------------------------------------

    def _on_leased(self, lease, client_gone: bool) -> list:
        self.lease = lease
        self.retries += lease.failures
        self.server = lease.server
        self.left -= lease.failures
        self.redispatched = lease.redispatched
        bec = self.bec
        if lease.reused:
            bec.reused += 1
            lease.server.counters.reused += 1
        lease.server.counters.req_tot += 1
        failed, self.failed = self.failed, None
        if failed is not None and lease.server is not failed:
            bec.wredis += 1
            failed.counters.wredis += 1
            self.redispatched = True
        self.phase = PH_CONNECT
        if client_gone:  # option abortonclose: nothing was sent, the connection is clean
            self.end(Cause.CLIENT_ABORT)
            return self._finish(False, True)
        self.phase = PH_HEADERS
        self.state = State.SEND
        fr = self.req.framing
        stream = fr.kind is not K_NONE and not self.whole and not (fr.kind is K_LENGTH
                                                                          and fr.length == 0)
        if stream:
            self.body = 1
            return [Send(self.out_head, self.whole, True)]
        return [Send(self.out_head, self.whole, False, self.relay_terms())]

    def relay_terms(self) -> RelayTerms | None:
        """The terms under which the engine may relay the response by itself, or None when
        the machine must see the head first: the servers' health observes responses,
        persistence may set a cookie, an http-response rule may act, an upgrade. A client
        that closes after the response (its own `Connection: close`, HTTP/1.0 without
        keep-alive, a soft stop) gets `Connection: close` from the engine, an HTTP/1.0
        keep-alive one `Connection: keep-alive`. What the engine relays is what _final()
        would send (tests/unit/engine/test_h1_tokenizer.py holds the two to the same bytes)."""
        req, route = self.req, self.route
        if self.observing or self.persisting or route.response_rules or req.upgrade is not None:
            return None
        keep = req.keep_alive and not self.stopping
        terms = self.relaying = _terms_of((self.policy.retry_on, route.splice_response, req.method == b"HEAD",
                                           not keep, keep and req.version == b"1.0"))
        return terms

    def _on_no_server(self, termination: str, retries: int, server) -> list:
        self.retries += retries
        self.tried = server
        self.end(*Termination.parse(termination))
        return self._error_page(503)

    # -- SEND ----------------------------------------------------------------------------

    def _on_send_failed(self) -> list:
        if self.lease.reused:
            return self._fail(RetryEvent.IDLE_CLOSED, Cause.SERVER_ABORT, 502)
        return self._fail(None, Cause.SERVER_ABORT, 502)

    def _on_body(self, r: Result) -> list:
        """The request body's transfer ended (in any state until DONE)."""
        self.body = 2
        self.up = r
        if r.end is END_DONE:
            return []
        self.end(CLIENT_END[r.end], PH_DATA)
        # the server connection is shut down, so that whatever waits on it ends too
        return [ShutServer()] if self.lease is not None else []

    def _on_head(self, raw, index, failure, now: float) -> list:
        lease, req = self.lease, self.req
        if failure == "timeout":  # nothing was sent to the client yet, even after a partial head
            return self._observe(Observed.HTTP_READ_TIMEOUT) + self._fail(
                RetryEvent.RESPONSE_TIMEOUT, Cause.SERVER_TIMEOUT, 504)
        if failure == "too-large":
            return self._observe(Observed.HTTP_HDRRSP) + self._fail(
                RetryEvent.JUNK_RESPONSE, Cause.PROXY, 502)
        if raw is None or not head_complete(raw):
            jobs = []
            body_failed = self.body == 2 and self.up.end is not END_DONE
            # observe layer7: a close or read error on a reused connection is the keep-alive
            # race, not the server's fault (haproxy skips SF_SRV_REUSED); nor is one that
            # followed a failed request body, or splicer's own shutdown
            if raw:
                jobs = self._observe(Observed.HTTP_HDRRSP)
            elif not (lease.reused or body_failed or lease.killed):
                jobs = self._observe(Observed.HTTP_BROKEN_PIPE if raw is not None else Observed.HTTP_READ_ERROR)
            if not raw and lease.reused and self.body == 0:
                return jobs + self._fail(RetryEvent.IDLE_CLOSED, Cause.SERVER_ABORT, 502)
            if body_failed:
                # the request body failed first (and shut the server side down); its
                # termination is recorded already
                end = self.up.end
                status = 408 if end is End.SRC_TIMEOUT else 400 if end is End.BAD_FRAMING else 0
                return jobs + self._fail(None, None, status)
            return jobs + self._fail(RetryEvent.JUNK_RESPONSE if raw else RetryEvent.EMPTY_RESPONSE,
                                     Cause.SERVER_ABORT, 502)
        try:
            resp = parse_response(raw, req.method, req.upgrade is not None, index)
        except HeadError as exc:
            return self._observe(Observed.HTTP_HDRRSP) + self._fail(
                RetryEvent.JUNK_RESPONSE, Cause.PROXY, exc.status)
        jobs = [Observe(status_event(resp.status))] if self.observing else []
        if resp.status < 200 and resp.status != 101:
            if req.version == b"1.0":
                return jobs + [ReadHead()]  # no 1xx to an HTTP/1.0 client (RFC 9110 section 15.2)
            self.answered = True
            self.state = State.INTERIM
            self.interim_status = resp.status
            return jobs + [Interim(forward_response_head(resp, req.version, True))]
        self.resp_raw = raw
        self.t_resp = now
        policy = self.policy
        if resp.status in policy.retry_on:
            verdict = decide(policy, RetryEvent.STATUS, self.left, status=resp.status, replayable=self.replayable,
                             answered=self.answered)
            if verdict.again:
                return jobs + self._retry(verdict, RetryEvent.STATUS, resp.status)  # dropped with its connection
        if resp.status == 101:
            return jobs + self._switch_protocols(resp)
        return jobs + self._final(resp)

    def _on_interim_sent(self, n: int, status: int) -> list:
        if not n:
            return self._fail(None, Cause.CLIENT_ABORT)
        self.head_out += n
        self.interim = [*self.interim, status]
        self.state = State.SEND
        return [ReadHead()]

    def _fail(self, event: RetryEvent | None, cause: Cause | None, status: int = 0, response: int = 0) -> list:
        """The attempt failed before any response byte reached the client (`event`: which
        retry-on event it was, None: none): retry it as http/retry.py decides, or answer
        `status` (0: just close) and end with `cause` in the phase the stream is in (None:
        the termination recorded already, a failed request body's)."""
        verdict = self._verdict(event, response)
        if verdict.again:
            return self._retry(verdict, event, response)
        jobs = self._stop_body() + [Release(False)]
        self.lease = None
        if cause is not None:
            self.end(cause)
        if status:
            return jobs + self._error_page(status)
        return jobs + self._finish(False)

    def _retry(self, verdict: Retry, event: RetryEvent, response: int) -> list:
        """Make the request again as `verdict` says: the connection is dropped (never
        reused: the server answered or failed on it), retries counted, the next server chosen."""
        jobs = self._stop_body() + [Release(False)]
        self.lease = None
        server = self.server
        if event is not RetryEvent.IDLE_CLOSED:
            jobs.append(Warn(f"backend {self.be_name} server {server.model.name}: "
                             + (f"status {response}" if event is RetryEvent.STATUS else event.value)
                             + ", retrying"))
        self.allow_reuse = self.allow_reuse and not verdict.fresh
        if verdict.counted:
            self.left -= 1
            self.retries += 1
            self.bec.wretr += 1
            server.counters.wretr += 1
            self.failed = server
        self.only = server.index if verdict.same_server else None
        if verdict.elsewhere:
            self.avoid = self.avoid | {server.index}
        return jobs + self.attempt()

    def _verdict(self, event: RetryEvent | None, response: int) -> Retry:
        if event is None:
            return GIVE_UP
        return decide(self.policy, event, self.left, status=response, replayable=self.replayable,
                      answered=self.answered)

    # -- the final response ----------------------------------------------------------------

    def persist_fields(self, resp):
        """Hook: the response's fields with the persistence cookie set or changed
        (http/persist.py), or None when it changes nothing (the driver knows the backend)."""
        return None

    def _switch_protocols(self, resp) -> list:
        """101 to an Upgrade request: relay the 101, then tunnel both ways until both sides
        closed (haproxy's tunnel mode). Only now, once the server agreed, does the connection
        stop being HTTP."""
        req = self.req  # (never with a body: http/h1.py sets no upgrade on a request that has one)
        head = forward_response_head(resp, req.version, True, self.route.response_rules, self.info, req, self.view)
        self.phase = PH_DATA
        self.state = State.TUNNEL
        return [Tunnel(head)]

    def _on_tunnel_end(self, sent: int, up, down) -> list:
        if not sent:
            self.end(Cause.CLIENT_ABORT)
            return self._finish(False, False)
        self.head_out += sent
        self.status = 101
        self.up, self.down = up, down
        t = tunnel_termination(up, down)
        if not t.normal:
            self.end(t.cause)  # (in the data phase, as the tunnel's termination)
        return self._finish(False, False)

    def response_verdict(self, resp) -> tuple:
        """Run the route's http-response rules on the final response `resp`
        (http/response_actions.py evaluate(), then reframe()).

        Returns:
            (verdict, the response to forward: `resp` itself when a rule answers, else a copy
            with the verdict's status, reason, fields and framing; drop: the server's body must
            not be forwarded and its connection not reused).
        """
        req = self.req
        fields = response_fields(resp, req.version)
        v = evaluate(self.route.response_sets, resp.status, resp.reason, fields, self.info, req.method,
                     req.target, req.headers, self.view)
        if v.rule is not None:
            return v, resp, True
        framing, fields, drop = reframe(req.method, resp.framing, resp.status, v.status, v.fields)
        out = resp.copy()
        out.status, out.reason, out.headers, out.framing = v.status, v.reason, fields, framing
        return Verdict(None, v.status, v.reason, fields), out, drop

    def _final(self, resp) -> list:
        req, route = self.req, self.route
        self.server_status = resp.status
        edited = False
        if self.persisting:
            fields = self.persist_fields(resp)
            if fields is not None:  # the persistence cookie set or changed (http/persist.py)
                resp = resp.copy()
                resp.headers = fields
                edited = True
        ruled = None
        drop = False
        srv_fr = resp.framing
        if route.response_rules:
            # the http-response rules decide before any byte of the response moves
            ruled, resp, drop = self.response_verdict(resp)
            if ruled.rule is not None:
                return self._answer_response(ruled, resp)
        self.phase = PH_DATA
        fr = resp.framing
        dechunk = fr.kind is K_CHUNKED and req.version == b"1.0"
        # a body dropped unread (a status set to 204/304) leaves the server connection unusable
        self.reusable = resp.keep_alive and srv_fr.kind is not K_CLOSE and not drop
        keep = req.keep_alive and fr.kind is not K_CLOSE and not dechunk and not self.stopping
        if self.body == 1 and not 200 <= resp.status < 300:
            # an error (or redirect) before the request body was all sent: the client
            # connection ends after this response, and the response says so (RFC 9112
            # section 9.6); the session then closes in stages, never with a reset under it
            keep = False
        self.keep = keep
        if ruled is not None:
            head = forward_response_head(resp, req.version, keep, fields=ruled.fields)
        elif not edited:
            head = forwarded_response(self.resp_raw, resp, req, keep)
        else:
            head = forward_response_head(resp, req.version, keep)
        self.resp = resp
        self.handed = (resp.status, len(head))
        self.state = State.DATA
        policy = route.splice_response
        if fr.kind is K_LENGTH:
            count, chunked, splice = fr.length, False, policy.wants(fr.length)
        elif fr.kind is K_CHUNKED:
            count, chunked, splice = None, True, policy.wants(None)
        elif fr.kind is K_CLOSE:
            count, chunked, splice = None, False, policy.wants(None)
        else:
            count, chunked, splice = 0, False, False
        return [Respond(head, count, chunked, splice, dechunk, keep and self.body != 1)]

    def _on_sent(self, ok: bool, r: Result | None) -> list:
        if not ok:
            self.end(Cause.CLIENT_ABORT)
            return self._finish(False, False)
        self.status, n = self.handed
        self.head_out += n
        self.down = r
        jobs = []
        good = r.end is END_DONE
        if not good:
            if r.end is End.BAD_FRAMING:
                jobs += self._observe(Observed.HTTP_RSP)
            self.end(SERVER_END[r.end])
            # abort: the client must see the body end short of what was announced. With a
            # length or chunked framing a FIN shows it and keeps the bytes already sent; a
            # close-delimited (or de-chunked) body has no framing to fall short of, so a
            # failed server side is passed on as a reset.
            fr = self.resp.framing
            dechunk = fr.kind is K_CHUNKED and self.req.version == b"1.0"
            jobs.append(Abort((fr.kind is K_CLOSE or dechunk) and r.end is not End.DST_ERROR))
        self.good = good
        if self.body == 1:
            self.state = State.BODY_WAIT
            if good and 200 <= self.server_status < 300:
                # An early 2xx (RFC 9112 section 9.3 lets a server answer before it has the
                # whole request): the rest of the body is still forwarded, within its own
                # idle timeouts, and both connections may be kept once it is through.
                return jobs
            # An engine job may have moved the whole body and not be reaped yet (the server
            # can answer between the last splice and the completion): give the completion a
            # moment before concluding that the server answered early.
            return jobs + [Wait(BODY_GRACE)]
        if self.body == 2 and self.up.end is not END_DONE:
            good = False
        return jobs + self._finish(good and self.keep, good and self.reusable)

    def _on_relayed(self, raw: bytes, index, now: float, n: int, ok: bool, r: Result | None, killed: bool) -> list:
        """The engine relayed the final response under Send.relay's terms: the head `raw` as
        the server sent it (`index`: the tokenizer's) went out as `n` bytes (what _final()
        would have sent), then its body (`ok` False: the client took none of it; `r` the
        body's Result). Recorded as _final() and _on_sent() record it; the stream is over.
        `killed`: a hard stop ended the relay where `r` says (as KILLED in DATA)."""
        self.resp_raw = raw
        self.t_resp = now
        self.phase = PH_DATA
        # as the relay's terms said when it began: a response that went without `Connection:
        # close` lets the client send its next request at once (a soft stop begun since
        # answers that one with close)
        self.keep = not self.relaying.close
        if index is not None and ok and not killed and r.end is END_DONE:
            # all went: the status from the index, no parse (the head is not read again); a
            # relayed head's Connection, if any, is one field of just keep-alive or close
            status = self.server_status = index[5]
            self.reusable = not index[3] & F_CONN_CLOSE
            self.handed = (status, n)
            return self._on_sent(True, r)
        resp = parse_response(raw, self.req.method, False, index)
        self.server_status = resp.status
        self.reusable = resp.keep_alive
        self.resp = resp
        self.handed = (resp.status, n)
        if killed:
            if r is not None:
                self.down = r
            return self._on_killed(Cause.KILLED)
        return self._on_sent(ok, r)

    def _on_body_waited(self, r: Result) -> list:
        jobs = self._on_body(r)
        good = self.good and r.end is END_DONE
        return jobs + self._finish(good and self.keep, good and self.reusable)

    def _on_grace_over(self) -> list:
        # the server answered before taking the whole body: neither side can go on
        return self._finish(False, False)

    # -- splicer's own answers ---------------------------------------------------------------

    def _answer_response(self, v: Verdict, resp) -> list:
        """Answer with the http-response rule v.rule (deny, return, redirect) instead of the
        server's response `resp`, none of which reaches the client (haproxy 4.4 "deny",
        "return", "redirect"); termination "PH" for a deny (counted in dresp), "LH"
        otherwise. The server connection is reused only when `resp` has no body and allows
        it; the client connection stays open when the request was whole and allows it."""
        req = self.req
        rule = v.rule
        if self.term is NORMAL:  # (a request body that failed first keeps its own termination)
            self.answer = rule
            self.end(Cause.PROXY if rule.action == "deny" else Cause.LOCAL, PH_HEADERS)
        whole = self.body == 0 or (self.body == 2 and self.up.end is END_DONE)
        fr = resp.framing
        reusable = (whole and resp.keep_alive
                    and (fr.kind is K_NONE or (fr.kind is K_LENGTH and fr.length == 0)))
        keep = req.keep_alive and whole and not self.stopping
        store = self.view.vars if self.view is not None else None
        data, keep = actions.reply(rule, self.info, Message(req.method, req.target, v.status, req.headers, store),
                                   v.fields, req.version, keep, self.route.errorpages, req.method)
        self.keep = keep
        self.lease = None
        self.state = State.ANSWER
        self.reply_status = int(data[9:12])
        # a request body still under way goes no further
        jobs = self._stop_body() + [Release(reusable)]
        return jobs + [Reply(data, self.reply_status)]

    def _error_page(self, status: int) -> list:
        """Answer the error page `status`; the session then closes (in stages)."""
        self.status = status
        self.keep = False
        self.state = State.ANSWER
        jobs = self._stop_body()
        return jobs + [Reply(None, status)]

    def _on_replied(self, n: int) -> list:
        if not n:  # the client was gone
            return self._finish(False)
        self.head_out += n
        if self.reply_status:  # a rule's answer (an error page's status was set before it went)
            self.status = self.reply_status
        if self.drain and self.keep:  # a local answer: its request's small body is dropped first
            self.state = State.DRAIN
            return [Discard(self.drain)]
        return self._finish(self.keep)

    # -- the end -------------------------------------------------------------------------------

    def _on_killed(self, cause: Cause) -> list:
        self.end(cause)
        self.lease = None
        self.state = State.DONE
        # whatever was under way must not look complete to the client
        return self._stop_body() + [Abort(True), Finish(False, False)]

    def _ignore(self, *args) -> list:
        return []

    def _on_late_lease(self, lease, client_gone: bool) -> list:
        return [Release(False)]

    def _finish(self, keep: bool, reusable: bool = False) -> list:
        """The stream is over: stop a request body still moving, give the connection back
        (when one is lent; `reusable`), and let the session go on when `keep`."""
        self.lease = None
        self.state = State.DONE
        if self.body == 1:
            return self._stop_body() + [Finish(keep, reusable)]
        return [Finish(keep, reusable)]

    def _stop_body(self) -> list:
        """[EndBody] when the request body still moves (it moves no further), else []."""
        if self.body != 1:
            return []
        self.body = 2
        return [EndBody()]

    def _observe(self, event: Observed) -> list:
        """[Observe(event)] when the servers' health observes responses, else []."""
        return [Observe(event)] if self.observing else []


_TABLE = {key: (getattr(StreamMachine, name), targets) for key, (name, targets) in TRANSITIONS.items()}
"""TRANSITIONS with the handlers looked up once."""


def tunnel_termination(up: Result, down: Result) -> Termination:
    """The termination state of a tunnel (tcp mode, or after a 101) from the results of its
    two directions: a timeout or an error of either side ends it in the data phase ("cD",
    "sD", "CD", "SD"); both sides closing is a normal end."""
    for r, who in ((up, CLIENT_END), (down, SERVER_END)):
        if r.end in _TUNNEL_FAILURES:
            return Termination(who[r.end], PH_DATA)
    return NORMAL


_TUNNEL_FAILURES = frozenset({End.SRC_TIMEOUT, End.SRC_ERROR, End.DST_TIMEOUT, End.DST_ERROR})


def whole_body(n: int) -> Result:
    """The Result of a request body of `n` bytes copied whole behind its head."""
    return Result(END_DONE, n, 0, n)
