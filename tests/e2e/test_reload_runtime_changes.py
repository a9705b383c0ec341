"""A reload keeps a runtime API change only for a server whose definition did not change.

Rule (docs/configuration.md, "Runtime changes across a reload"): on reload the master keeps a
remembered change (`set server`, `enable`/`disable`) only for a server that still exists and
whose address, port, weight, disabled/backup and check are the same in the old and the new
configuration; the others are dropped, named on one log line, and the new generation serves
the edited configuration. Real processes, real sockets on 127.0.0.1.
"""
from __future__ import annotations

import time


from tests.e2e.helpers import free_port
from tests.e2e.test_runtime_api import cli, config, server_rows, wait_socket



PORT = 18  # srv_port's column in `show servers state`


def reloaded(sp, generation: int) -> None:
    assert sp.cli("reload", timeout=60) == "Success=1\n\n"
    deadline = time.monotonic() + 30
    while f"generation {generation}," not in sp.log() or sp.log().count(" serving on CPUs ") < generation:
        assert time.monotonic() < deadline, sp.log()
        time.sleep(0.02)


def test_a_reload_applies_the_edited_servers_and_keeps_the_others_changes(start_splicer, tmp_path, origins):
    port = free_port()
    p1, p2 = origins[0].port, origins[1].port
    cfg, d = config(tmp_path, port, [("web1", p1, "weight 1"), ("web2", p2, ""), ("web3", p1, "")])
    sp = start_splicer(cfg, [port])
    admin = f"{d}/admin.sock"
    wait_socket(admin)
    assert cli(admin, f"set server be/web1 weight 9;set server be/web2 addr 127.0.0.2 port {p1};"
                      "set server be/web3 state maint\n").count("\n") >= 3
    rows = server_rows(cli(admin, "show servers state\n"))
    assert rows["web1"][7] == "9" and rows["web2"][4] == "127.0.0.2" and rows["web2"][PORT] == str(p1)
    # the operator edits web1's weight and web2's port in the file, web3 stays as it was
    moved = free_port()
    sp.cfg_path.write_text(cfg.replace(f"server web1 127.0.0.1:{p1} weight 1", f"server web1 127.0.0.1:{p1} weight 3")
                           .replace(f"server web2 127.0.0.1:{p2}", f"server web2 127.0.0.1:{moved}"))
    reloaded(sp, 2)
    rows = server_rows(cli(admin, "show servers state\n"))
    assert rows["web1"][7:9] == ["3", "3"]  # the edited weight, not the runtime 9
    assert rows["web2"][4] == "127.0.0.1" and rows["web2"][PORT] == str(moved)  # the edited port
    assert rows["web3"][6] == "1"  # unchanged definition: still in maintenance (SRV_ADMF_FMAINT)
    dropped = [ln for ln in sp.log().splitlines() if "runtime changes dropped" in ln]
    assert len(dropped) == 1 and "be/web1" in dropped[0] and "be/web2" in dropped[0] and "web3" not in dropped[0]


def test_a_server_removed_then_added_back_starts_as_configured(start_splicer, tmp_path, origins):
    port = free_port()
    p1, p2 = origins[0].port, origins[1].port
    cfg, d = config(tmp_path, port, [("web1", p1, ""), ("web2", p2, "")])
    sp = start_splicer(cfg, [port])
    admin = f"{d}/admin.sock"
    wait_socket(admin)
    cli(admin, "set server be/web2 state drain;set server be/web2 weight 7\n")
    assert server_rows(cli(admin, "show servers state\n"))["web2"][6:8] == ["8", "7"]
    sp.cfg_path.write_text(cfg.replace(f"    server web2 127.0.0.1:{p2} \n", ""))
    reloaded(sp, 2)
    assert "web2" not in server_rows(cli(admin, "show servers state\n"))
    assert any("runtime changes dropped" in ln and "be/web2" in ln for ln in sp.log().splitlines())
    sp.cfg_path.write_text(cfg)  # web2 is back, defined exactly as before its removal
    reloaded(sp, 3)
    assert server_rows(cli(admin, "show servers state\n"))["web2"][6:9] == ["0", "1", "1"]
