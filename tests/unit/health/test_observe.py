"""The observer (haproxy `observe`, `error-limit`, `on-error`) and the on-error modes' effect on
the check health (src/check.c __health_adjust(), set_server_check_status())."""
import pytest

from splicer.health.observe import DEFAULT_ERROR_LIMIT, Event, Observer, status_event
from splicer.health.state import CheckStatus, HealthState

E = Event


@pytest.mark.parametrize("status, event", [
    (100, E.HTTP_OK), (200, E.HTTP_OK), (302, E.HTTP_OK), (404, E.HTTP_OK), (499, E.HTTP_OK),
    (500, E.HTTP_STS), (501, E.HTTP_OK), (502, E.HTTP_STS), (503, E.HTTP_STS), (504, E.HTTP_STS),
    (505, E.HTTP_OK), (506, E.HTTP_STS), (599, E.HTTP_STS), (99, E.HTTP_STS),
])
def test_status_event_counts_5xx_but_501_and_505(status, event):
    assert status_event(status) is event


def test_error_limit_errors_in_a_row_trigger_on_error_then_the_count_starts_again():
    o = Observer("layer7", limit=3, on_error="mark-down")
    assert [o.event(E.HTTP_STS) for _ in range(7)] == [None, None, "mark-down", None, None, "mark-down", None]
    assert (o.errors, o.triggered) == (1, 2)


def test_default_error_limit_is_ten_and_default_mode_fail_check():
    o = Observer("layer4")
    got = [o.event(E.L4_ERR) for _ in range(DEFAULT_ERROR_LIMIT)]
    assert DEFAULT_ERROR_LIMIT == 10 and got == [None] * 9 + ["fail-check"]


def test_a_success_resets_the_count():
    o = Observer("layer7", limit=2)
    assert [o.event(e) for e in (E.HTTP_STS, E.HTTP_OK, E.HTTP_STS, E.HTTP_HDRRSP)] == [
        None, None, None, "fail-check"]


def test_a_passed_check_resets_the_count():
    o = Observer("layer4", limit=2)
    o.event(E.L4_ERR)
    o.reset()
    assert o.event(E.L4_ERR) is None and o.event(E.L4_ERR) == "fail-check"


def test_layer4_counts_connections_only():
    o = Observer("layer4", limit=2)
    # responses are not layer-4 events: they neither count nor reset
    assert [o.event(e) for e in (E.L4_ERR, E.HTTP_STS, E.HTTP_OK, E.HTTP_READ_TIMEOUT)] == [None] * 4
    assert o.errors == 1
    assert o.event(E.L4_OK) is None and o.errors == 0


def test_layer7_counts_failed_connections_but_an_opened_one_is_no_success():
    o = Observer("layer7", limit=3)
    assert [o.event(e) for e in (E.L4_ERR, E.L4_OK, E.HTTP_READ_TIMEOUT, E.L4_OK, E.HTTP_BROKEN_PIPE)] == [
        None, None, None, None, "fail-check"]


@pytest.mark.parametrize("event", [E.HTTP_STS, E.HTTP_HDRRSP, E.HTTP_RSP, E.HTTP_READ_ERROR,
                                   E.HTTP_READ_TIMEOUT, E.HTTP_BROKEN_PIPE, E.L4_ERR])
def test_layer7_errors(event):
    o = Observer("layer7", limit=1)
    assert o.event(event) == "fail-check"


@pytest.mark.parametrize("args", [("layer3",), ("layer7", 0), ("layer4", 10, "explode")])
def test_bad_arguments(args):
    with pytest.raises(ValueError):
        Observer(*args)


# -- the on-error modes on the health counter -------------------------------------------------

def test_fail_check_is_one_failed_check():
    h = HealthState(rise=2, fall=3)  # health 4 of 4
    assert [h.on_error("fail-check") for _ in range(3)] == [None, None, False]
    assert (h.up, h.health, h.fast) == (False, 0, True)


def test_sudden_death_leaves_one_failed_check_to_down():
    h = HealthState(rise=2, fall=3)
    assert h.on_error("sudden-death") is None
    assert (h.up, h.health) == (True, 2)
    assert h.result(CheckStatus.L4CON) is False


def test_sudden_death_on_a_server_already_one_failure_from_down_marks_it_down():
    h = HealthState(rise=2, fall=3)
    h.on_error("sudden-death")
    assert h.on_error("sudden-death") is False


def test_sudden_death_then_a_passed_check_restores_full_health():
    h = HealthState(rise=2, fall=3)
    h.on_error("sudden-death")
    assert h.result(CheckStatus.L4OK) is None and h.health == 4


def test_mark_down_is_down_at_once():
    h = HealthState(rise=2, fall=5)
    assert h.on_error("mark-down") is False
    assert (h.up, h.health) == (False, 0)
    # and it comes back after `rise` passed checks, as any DOWN server
    assert [h.result(CheckStatus.L4OK) for _ in range(2)] == [None, True]


def test_mark_down_on_a_down_server_that_was_rising_starts_its_rise_again():
    h = HealthState(rise=3, fall=1)
    h.result(CheckStatus.L4CON)
    h.result(CheckStatus.L4OK)
    assert (h.up, h.health) == (False, 1)
    assert h.on_error("mark-down") is None and (h.up, h.health) == (False, 0)


def test_fastinter_mode_changes_no_health():
    h = HealthState(rise=2, fall=3)
    assert h.on_error("fastinter") is None and (h.up, h.health, h.fast) == (True, 4, True)


def test_interval_follows_haproxy_srv_getinter():
    h = HealthState(rise=2, fall=2)
    assert h.interval(2.0, 0.5, 10.0) == 2.0            # UP, full health
    h.result(CheckStatus.L4CON)
    assert h.interval(2.0, 0.5, 10.0) == 0.5            # going down
    assert h.interval(2.0, 0.0, 10.0) == 2.0            # no fastinter: inter
    h.result(CheckStatus.L4CON)
    assert h.interval(2.0, 0.5, 10.0) == 10.0           # DOWN
    assert h.interval(2.0, 0.5, 0.0) == 2.0             # no downinter: inter
    h.result(CheckStatus.L4OK)
    assert h.interval(2.0, 0.5, 10.0) == 0.5            # coming up
    h.result(CheckStatus.L4OK)
    h.on_error("fastinter")
    assert h.interval(2.0, 0.5, 10.0) == 0.5            # forced by an on-error event
    h.fast = False
    assert h.interval(2.0, 0.5, 10.0) == 2.0
