"""Whether a failed attempt of a request is made again, and where: one pure decision.

Rule: everything that decides a retry lives in `decide()`; the runtime reports what happened
(a `RetryEvent`) and carries the verdict out (another connect, another server, a turn-around
delay), and counts what the verdict says. Nothing here does I/O.

Sources: haproxy's `retries`, `retry-on` and `option redispatch` (configuration manual,
section 4), with splicer's stricter replay rule: a request is sent a second time only when it
is idempotent (RFC 9110 section 9.2.2) and held whole, since a replayed POST can charge a
card twice. haproxy's turn-around delay of min(`timeout connect`, 1 s) applies before
connecting again to a server that just failed to connect.
"""
from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import NamedTuple


class RetryEvent(Enum):
    """What went wrong with one attempt; the values are haproxy's `retry-on` keywords."""

    CONN_FAILURE = "conn-failure"          # the connect failed or timed out: nothing was sent
    EMPTY_RESPONSE = "empty-response"      # the server closed without a byte of response
    JUNK_RESPONSE = "junk-response"        # what came back is not a valid response head
    RESPONSE_TIMEOUT = "response-timeout"  # `timeout server` struck before the response head
    STATUS = "status"                      # a final status (retried when retry-on lists it)
    IDLE_CLOSED = "idle-closed"            # a reused idle connection was closed by the server
    # before any byte of response (RFC 9112 section 9.3.1): not a retry-on keyword; always
    # retried on a new connection, without using a retry, as haproxy does


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """A backend's retry settings, resolved once at configuration load.

    Attributes:
        retries: haproxy `retries`: how many times a request may be made again (default 3).
        retry_on: haproxy `retry-on`: keyword strings and int statuses ("none" is the empty set).
        redispatch: haproxy `option redispatch`: a retry goes to another server if there is one.
    """

    retries: int = 3
    retry_on: frozenset = frozenset({"conn-failure"})
    redispatch: bool = False


class Retry(NamedTuple):
    """The verdict on one failed attempt.

    Attributes:
        again: make the request again.
        counted: it uses one of `retries` (and counts in wretr).
        elsewhere: prefer another server than the failed one (option redispatch).
        same_server: go back to the failed server only.
        turnaround: wait min(timeout connect, 1 s) before connecting to it again.
        fresh: use a new connection, never an idle one.
    """

    again: bool
    counted: bool = False
    elsewhere: bool = False
    same_server: bool = False
    turnaround: bool = False
    fresh: bool = False


GIVE_UP = Retry(False)
"""No retry: the failure is answered (503, 502, 504, or the server's own response)."""


def decide(policy: RetryPolicy, event: RetryEvent, left: int, *, status: int = 0,
           replayable: bool = False, answered: bool = False) -> Retry:
    """Decide whether a failed attempt is made again.

    Args:
        policy: the backend's RetryPolicy.
        event: what happened to the attempt.
        left: retries this request may still use (starts at policy.retries).
        status: the response's status, for RetryEvent.STATUS.
        replayable: the request may be sent twice: an idempotent method and no body left in
            the client socket (none, or all of it buffered).
        answered: some byte of a response (even a 1xx) has already gone to the client.

    Returns:
        GIVE_UP, or a Retry saying where and how the next attempt goes.
    """
    if answered:
        return GIVE_UP  # the client has seen part of this response: it cannot be replaced
    if event is RetryEvent.IDLE_CLOSED:
        # a request that cannot be sent twice is not sent again (the server may have acted
        # on it): answered 502
        return Retry(True, fresh=True) if replayable else GIVE_UP
    if left <= 0:
        return GIVE_UP
    if event is RetryEvent.CONN_FAILURE:
        if "conn-failure" not in policy.retry_on:
            return GIVE_UP
        # nothing was sent, so any request may go again, replayable or not
        if policy.redispatch:
            return Retry(True, counted=True, elsewhere=True)
        return Retry(True, counted=True, same_server=True, turnaround=True)
    if not replayable:
        return GIVE_UP
    if event is RetryEvent.STATUS:
        if status not in policy.retry_on:
            return GIVE_UP
    elif event.value not in policy.retry_on:
        return GIVE_UP
    if policy.redispatch:
        return Retry(True, counted=True, elsewhere=True)
    return Retry(True, counted=True, same_server=True)
