"""Termination states (http/termination.py): haproxy's two letters, and the counters each implies."""
from __future__ import annotations

import pytest

from splicer.http.termination import NORMAL, Cause, Phase, Termination, counted

T = Termination.parse


def test_two_letters_as_haproxy_logs_them():
    assert str(Termination(Cause.SERVER_ABORT, Phase.DATA)) == "SD"
    assert str(Termination(Cause.CLIENT_TIMEOUT, Phase.REQUEST)) == "cR"
    assert str(Termination(Cause.SERVER_TIMEOUT, Phase.QUEUE)) == "sQ"
    assert str(NORMAL) == "--"
    assert NORMAL.normal and not T("SD").normal


@pytest.mark.parametrize("code", ["--", "CR", "cR", "PR", "sQ", "SC", "sC", "SH", "sH", "PH",
                                  "SD", "sD", "CD", "cD", "CL", "LR", "IH", "KD", "DD", "RC", "CC"])
def test_parse_round_trips(code):
    assert str(T(code)) == code


@pytest.mark.parametrize("code", ["", "S", "SDX", "XD", "SX", "sd"])
def test_parse_refuses_what_is_not_a_state(code):
    with pytest.raises(ValueError):
        T(code)


@pytest.mark.parametrize("code, counters", [
    ("--", ()),
    ("LR", ()),                    # answered locally
    ("CR", ("ereq",)),             # an incomplete request (haproxy h1_handle_incomplete_req)
    ("cR", ("ereq",)),             # 408
    ("PR", ("ereq",)),             # 400 / 414 / 431
    ("CQ", ("ereq",)),             # abortonclose while queued
    ("CC", ("ereq",)),
    ("sQ", ()),                    # queue timeout: a 503, not an error of either peer
    ("SC", ()),                    # econ is counted per attempt, not here
    ("sC", ()),
    ("SH", ("eresp",)),            # 502
    ("sH", ("eresp",)),            # 504
    ("PH", ("eresp",)),            # a response refused: 502
    ("CH", ("ereq",)),             # the request body never arrived whole
    ("cH", ("ereq",)),
    ("IH", ()),
    ("SD", ("eresp", "srv_abrt")),
    ("sD", ("eresp", "srv_abrt")),
    ("SL", ("eresp", "srv_abrt")),
    ("CD", ("cli_abrt",)),
    ("cD", ("cli_abrt",)),
    ("CL", ("cli_abrt",)),
    ("PD", ("eresp",)),            # a chunked body whose framing broke
    ("KD", ()),
])
def test_counters_of_each_state(code, counters):
    assert counted(T(code)) == counters


def test_every_counter_named_exists():
    from splicer.stats import Counters
    fields = set(Counters().as_dict())
    for c in Cause:
        for p in Phase:
            assert set(counted(Termination(c, p))) <= fields
