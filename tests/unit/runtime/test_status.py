"""runtime/status.py server_status(): haproxy's status words (stats_fill_sv_computestate())."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from splicer.health.state import CheckStatus, HealthState
from splicer.runtime.status import server_status


def srv(check=True, admin=(), fails=0, passes=0, rise=2, fall=3, checking=True):
    st = HealthState(rise, fall)
    for _ in range(fails):
        st.result(CheckStatus.L4CON)
    for _ in range(passes):
        st.result(CheckStatus.L4OK)
    return SimpleNamespace(admin=set(admin), model=SimpleNamespace(check=check), checking=check and checking,
                           health=SimpleNamespace(state=st) if check else None)


@pytest.mark.parametrize("server, up, status", [
    (srv(), True, "UP"),
    (srv(fails=1), True, "UP 2/3"),          # health 3 of rise 2: 3 - 2 + 1 = 2 of fall 3
    (srv(fails=3), True, "DOWN"),
    (srv(fails=3, passes=1), False, "DOWN 1/2"),
    (srv(check=False), True, "no check"),
    (srv(check=False), False, "DOWN"),
    (srv(admin={"MAINT"}), False, "MAINT"),
    (srv(admin={"MAINT", "DRAIN"}), False, "MAINT"),
    (srv(admin={"DRAIN"}), True, "DRAIN"),
    (srv(admin={"DRAIN"}, fails=1), True, "DRAIN 2/3"),
    (srv(fails=1, checking=False), True, "no check"),  # `disable health`: its checks off
    (srv(admin={"DRAIN"}, checking=False), True, "DRAIN"),
])
def test_server_status(server, up, status):
    assert server_status(server, up) == status
