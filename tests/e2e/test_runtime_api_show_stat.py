"""`show stat [{<iid>|<proxy>} <type> <sid>] [typed] [up|no-maint]` through socat, as an
operator runs it: only the rows haproxy 2.6 dumps for these arguments (management.txt "show
stat"; src/stats.c), summed over two workers. Real processes, real sockets on 127.0.0.1."""
from __future__ import annotations

from tests.e2e.helpers import free_port
from tests.e2e.test_runtime_api import cli, get, wait_socket
from tests.e2e.test_runtime_api import config as runtime_api_config


def config(tmp_path, port: int, p1: int, p2: int) -> str:
    """test_runtime_api's config (fe, proxy 1 -> be, proxy 2: s1, s2; its stats sockets in
    tmp_path) plus a third proxy, other (s3); two workers."""
    text, _ = runtime_api_config(tmp_path, port, [("s1", p1, ""), ("s2", p2, "")], nbthread=2)
    return text + f"backend other\n    server s3 127.0.0.1:{p1}\n"


def rows(text: str) -> list[dict[str, str]]:
    """The CSV rows as {column: value}, after checking the answer's end and its header."""
    assert text.endswith("\n\n"), text
    lines = text[:-2].split("\n")
    assert lines[0].startswith("# pxname,svname,qcur,qmax,"), lines[0]
    header = lines[0][2:].split(",")
    return [dict(zip(header, r.split(","))) for r in lines[1:]]


def names(text: str) -> list[tuple[str, str]]:
    return [(r["pxname"], r["svname"]) for r in rows(text)]


def test_show_stat_filters_by_proxy_type_and_server(start_splicer, tmp_path, origins):
    d, port = str(tmp_path), free_port()
    start_splicer(config(tmp_path, port, origins[0].port, origins[1].port), [port], workers=2)
    wait_socket(f"{d}/user.sock")
    for _ in range(6):
        assert get(port)[0].startswith(b"HTTP/1.1 200")
    sock = f"{d}/user.sock"
    assert names(cli(sock, "show stat\n")) == [
        ("fe", "FRONTEND"), ("be", "s1"), ("be", "s2"), ("be", "BACKEND"), ("other", "s3"), ("other", "BACKEND")]
    # type 4: the servers only, of every proxy
    servers = rows(cli(sock, "show stat -1 4 -1\n"))
    assert [(r["pxname"], r["svname"], r["type"]) for r in servers] == [
        ("be", "s1", "2"), ("be", "s2", "2"), ("other", "s3", "2")]
    # a backend by name, type 2: its BACKEND row alone, summed over both workers
    backend = rows(cli(sock, "show stat be 2 -1\n"))
    assert [(r["pxname"], r["svname"], r["iid"], r["req_tot"]) for r in backend] == [("be", "BACKEND", "2", "6")]
    # type 1: the frontends only
    assert names(cli(sock, "show stat -1 1 -1\n")) == [("fe", "FRONTEND")]
    # proxy 2, server 2: that one server (and, as haproxy, its proxy's BACKEND row: <sid>
    # selects among servers; type 4 drops the BACKEND row)
    assert names(cli(sock, "show stat 2 -1 2\n")) == [("be", "s2"), ("be", "BACKEND")]
    one = rows(cli(sock, "show stat 2 4 2\n"))
    assert [(r["pxname"], r["svname"], r["iid"], r["sid"]) for r in one] == [("be", "s2", "2", "2")]
    # the typed form shows the same rows
    typed = cli(sock, "show stat -1 4 -1 typed\n")
    assert typed.endswith("\n\n")
    lines = typed[:-2].split("\n")
    assert {x.split(".")[0] for x in lines} == {"S"}
    assert {".".join(x.split(".")[1:3]) for x in lines} == {"2.1", "2.2", "3.1"}


def test_show_stat_up_no_maint_and_haproxys_answers_to_bad_arguments(start_splicer, tmp_path, origins):
    d, port = str(tmp_path), free_port()
    start_splicer(config(tmp_path, port, origins[0].port, origins[1].port), [port], workers=2)
    wait_socket(f"{d}/admin.sock")
    sock = f"{d}/admin.sock"
    assert cli(sock, "set server be/s2 state maint\n") == "\n"
    out = cli(sock, "show stat be -1 -1 no-maint\n")
    assert names(out) == [("be", "s1"), ("be", "BACKEND")]
    assert rows(out)[-1]["status"] == "UP (1/2)"  # servers not stopped, of all (haproxy)
    assert names(cli(sock, "show stat -1 4 -1 up\n")) == [("be", "s1"), ("other", "s3")]
    # a name that is no proxy's and reads as 0: haproxy's error, no header
    assert cli(sock, "show stat nope 2 -1\n") == "No such proxy.\n\n"
    assert cli(sock, "show stat domain dns\n") == "Invalid statistics domain.\n\n"
    # an id no proxy has: the header alone; fewer than three words filter nothing
    assert rows(cli(sock, "show stat 99 -1 -1\n")) == []
    assert len(rows(cli(sock, "show stat x\n"))) == 6
