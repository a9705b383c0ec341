"""Rise/fall sequences -> transitions (haproxy `rise`, `fall`)."""
from splicer.health.state import CheckStatus, HealthState

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
