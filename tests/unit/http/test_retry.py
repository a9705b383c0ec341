"""The retry decision (http/retry.py): one table, every event against every condition."""
from __future__ import annotations

import pytest

from splicer.http.retry import GIVE_UP, Retry, RetryEvent, RetryPolicy, decide

E = RetryEvent
DEFAULT = RetryPolicy()  # retries 3, retry-on conn-failure, no redispatch
ALL = RetryPolicy(3, frozenset({"conn-failure", "empty-response", "junk-response",
                                "response-timeout", 500, 502, 503, 504}))
ALL_REDISPATCH = RetryPolicy(3, ALL.retry_on, True)
NONE = RetryPolicy(3, frozenset())

SAME_AFTER_TURNAROUND = Retry(True, counted=True, same_server=True, turnaround=True)
OTHER = Retry(True, counted=True, elsewhere=True)
SAME = Retry(True, counted=True, same_server=True)
NEW_CONNECTION = Retry(True, fresh=True)


@pytest.mark.parametrize("policy, event, left, status, replayable, answered, verdict", [
    # connect failures: nothing was sent, so any method may go again
    (DEFAULT, E.CONN_FAILURE, 3, 0, False, False, SAME_AFTER_TURNAROUND),
    (DEFAULT, E.CONN_FAILURE, 1, 0, True, False, SAME_AFTER_TURNAROUND),
    (DEFAULT, E.CONN_FAILURE, 0, 0, True, False, GIVE_UP),              # retries used up
    (NONE, E.CONN_FAILURE, 3, 0, True, False, GIVE_UP),                 # retry-on none
    (ALL_REDISPATCH, E.CONN_FAILURE, 3, 0, False, False, OTHER),        # option redispatch
    (RetryPolicy(0, DEFAULT.retry_on), E.CONN_FAILURE, 0, 0, True, False, GIVE_UP),  # retries 0
    # events after the request was sent: only listed ones, only a replayable request
    (DEFAULT, E.EMPTY_RESPONSE, 3, 0, True, False, GIVE_UP),            # not listed by default
    (ALL, E.EMPTY_RESPONSE, 3, 0, True, False, SAME),
    (ALL, E.EMPTY_RESPONSE, 3, 0, False, False, GIVE_UP),               # a POST: never twice
    (ALL, E.JUNK_RESPONSE, 1, 0, True, False, SAME),
    (ALL, E.JUNK_RESPONSE, 0, 0, True, False, GIVE_UP),
    (ALL, E.RESPONSE_TIMEOUT, 2, 0, True, False, SAME),
    (ALL_REDISPATCH, E.RESPONSE_TIMEOUT, 2, 0, True, False, OTHER),
    (ALL, E.RESPONSE_TIMEOUT, 2, 0, True, True, GIVE_UP),               # a 1xx reached the client
    (DEFAULT, E.RESPONSE_TIMEOUT, 2, 0, True, False, GIVE_UP),
    # statuses: listed ones only
    (ALL, E.STATUS, 3, 503, True, False, SAME),
    (ALL_REDISPATCH, E.STATUS, 3, 503, True, False, OTHER),
    (ALL, E.STATUS, 3, 404, True, False, GIVE_UP),                      # not listed
    (ALL, E.STATUS, 3, 200, True, False, GIVE_UP),
    (ALL, E.STATUS, 3, 503, False, False, GIVE_UP),                     # not replayable
    (ALL, E.STATUS, 3, 503, True, True, GIVE_UP),                       # after a 1xx
    (ALL, E.STATUS, 0, 503, True, False, GIVE_UP),                      # the last response is relayed
    (RetryPolicy(3, frozenset({"empty-response"})), E.STATUS, 3, 503, True, False, GIVE_UP),
    # an idle connection the server closed: a new connection, whatever the budget says
    (DEFAULT, E.IDLE_CLOSED, 3, 0, True, False, NEW_CONNECTION),
    (NONE, E.IDLE_CLOSED, 0, 0, True, False, NEW_CONNECTION),
    (DEFAULT, E.IDLE_CLOSED, 3, 0, False, False, GIVE_UP),
    (DEFAULT, E.IDLE_CLOSED, 3, 0, True, True, GIVE_UP),
])
def test_decide(policy, event, left, status, replayable, answered, verdict):
    assert decide(policy, event, left, status=status, replayable=replayable,
                  answered=answered) == verdict


def test_event_values_are_haproxy_retry_on_keywords():
    from splicer.config.keywords import RETRY_ON_EVENTS
    for e in RetryEvent:
        if e not in (E.STATUS, E.IDLE_CLOSED):
            assert e.value in RETRY_ON_EVENTS


def test_give_up_says_no_to_everything():
    assert GIVE_UP == Retry(False, False, False, False, False, False)
    assert not any(GIVE_UP)


def test_policy_is_frozen():
    with pytest.raises(AttributeError):
        DEFAULT.retries = 4


def test_defaults_are_the_cautious_ones():
    """Left out, a request is not replayable and nothing was answered yet."""
    assert decide(DEFAULT, E.CONN_FAILURE, 3) == SAME_AFTER_TURNAROUND   # answered=False
    assert decide(ALL, E.EMPTY_RESPONSE, 3) == GIVE_UP                   # replayable=False
    assert decide(ALL, E.EMPTY_RESPONSE, 3, replayable=True) == SAME
