"""Rise/fall sequences -> transitions (haproxy `rise`, `fall`)."""
import pytest

from splicer.health.state import CheckStatus, HealthState, judge_response

OK, CON, TOUT = CheckStatus.L4OK, CheckStatus.L4CON, CheckStatus.L4TOUT


def run(state, results):
    return [state.result(r) for r in results]


def test_starts_up_and_falls_after_fall_failures_in_a_row():
    s = HealthState(rise=2, fall=3)
    assert run(s, [CON, TOUT, CON]) == [None, None, False]
    assert s.up is False


def test_a_pass_between_failures_resets_the_count():
    s = HealthState(rise=2, fall=3)
    assert run(s, [CON, CON, OK, CON, CON]) == [None, None, None, None, None]
    assert s.up is True
    assert s.result(CON) is False


def test_rises_after_rise_passes_in_a_row_and_a_failure_resets_it():
    s = HealthState(rise=2, fall=1)
    assert s.result(CON) is False
    assert run(s, [OK, CON, OK, OK]) == [None, None, None, True]
    assert s.up is True


def test_rise_and_fall_of_one_flip_at_once():
    s = HealthState(rise=1, fall=1)
    assert run(s, [OK, TOUT, TOUT, OK, OK]) == [None, False, None, True, None]


@pytest.mark.parametrize("data, expect, verdict", [
    (b"HTTP/1.1 200 OK\r\n", (), (CheckStatus.L7OK, 200)),
    (b"HTTP/1.0 302 Found\r\nLocation: /\r\n", (), (CheckStatus.L7OK, 302)),
    (b"HTTP/1.1 404 Not Found\r\n", (), (CheckStatus.L7STS, 404)),
    (b"HTTP/1.1 503\r\n", (), (CheckStatus.L7STS, 503)),
    (b"HTTP/1.1 204 No Content\r\n", ((200, 200),), (CheckStatus.L7STS, 204)),
    (b"HTTP/1.1 204 No Content\r\n", ((200, 200), (204, 204)), (CheckStatus.L7OK, 204)),
    (b"HTTP/1.1 500 X\r\n", ((500, 599),), (CheckStatus.L7OK, 500)),
    (b"", (), (CheckStatus.L7RSP, 0)),
    (b"HTTP/1.1 200", (), (CheckStatus.L7RSP, 0)),          # closed before the line ended
    (b"SSH-2.0-OpenSSH\r\n", (), (CheckStatus.L7RSP, 0)),
    (b"HTTP/2 200\r\n", (), (CheckStatus.L7RSP, 0)),
    (b"HTTP/1.1 2000 OK\r\n", (), (CheckStatus.L7RSP, 0)),
    (b"HTTP/1.1 099 X\r\n", (), (CheckStatus.L7RSP, 0)),
])
def test_judge_response(data, expect, verdict):
    assert judge_response(data, expect) == verdict


def test_layer7_outcomes_feed_rise_and_fall():
    s = HealthState(rise=2, fall=2)
    assert [s.result(x) for x in (CheckStatus.L7STS, CheckStatus.L7TOUT, CheckStatus.L7OK,
                                  CheckStatus.L7OK)] == [None, False, None, True]
