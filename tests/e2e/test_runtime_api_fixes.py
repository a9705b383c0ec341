"""Runtime API and stats-page admin fixes, each against haproxy's behaviour: shutdown
sessions ends the streams at once, chunked admin POSTs, `b=#<iid>`, one log line per
failure, `show errors` reasons, stats socket line handling, `set/get weight`.
Real processes, real sockets on 127.0.0.1."""
from __future__ import annotations

import socket
import time

from tests.e2e.helpers import ThreadedServer, free_port, head_fields, read_response
from tests.e2e.test_runtime_api import cli, config, server_rows, wait_socket
from tests.e2e.test_stats_page import get, parse_csv, stats_config


class BigOrigin(ThreadedServer):
    """An origin answering every request with a BIG-byte body, written as fast as the
    connection takes it."""

    BIG = 64 << 20

    def _conn(self, c: socket.socket) -> None:
        try:
            buf = b""
            while b"\r\n\r\n" not in buf:
                chunk = c.recv(65536)
                if not chunk:
                    return
                buf += chunk
            c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % self.BIG)
            block = b"x" * (1 << 20)
            for _ in range(self.BIG >> 20):
                c.sendall(block)
        except OSError:
            pass
        finally:
            c.close()


def test_shutdown_sessions_ends_a_slow_download_at_once(start_splicer, tmp_path):
    origin = BigOrigin()
    try:
        port = free_port()
        cfg, d = config(tmp_path, port, [("s1", origin.port, "")])
        start_splicer(cfg, [port])
        wait_socket(f"{d}/admin.sock")
        c = socket.create_connection(("127.0.0.1", port), timeout=30)
        c.sendall(b"GET /big HTTP/1.1\r\nHost: x\r\n\r\n")
        got = 0
        while got < 200_000:  # a slow reader: every buffer on the way fills up
            got += len(c.recv(4096))
            time.sleep(0.002)
        assert cli(f"{d}/admin.sock", "shutdown sessions server be/s1\n") == "\n"
        t0 = time.monotonic()
        try:
            while True:
                chunk = c.recv(4096)  # still slow: 200 KB/s at most
                if not chunk:
                    break
                got += len(chunk)
                time.sleep(0.02)
                assert time.monotonic() - t0 < 4, f"still downloading ({got} bytes) after shutdown sessions"
        except ConnectionResetError:
            pass
        c.close()
        assert got < BigOrigin.BIG
    finally:
        origin.close()


def _post(port: int, target: str, body: bytes, chunks: list[bytes] | None = None) -> tuple[int, str]:
    """A form POST on a raw socket, with Content-Length or (given `chunks`, whose data
    joins into `body`) chunked; (status, Location)."""
    head = b"POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\n" % target.encode()
    if chunks is None:
        data = head + b"Content-Length: %d\r\n\r\n" % len(body) + body
    else:
        assert b"".join(chunks) == body
        data = head + b"Transfer-Encoding: chunked\r\n\r\n" + b"".join(
            b"%x;ext=1\r\n%s\r\n" % (len(c), c) for c in chunks) + b"0\r\nX-Trailer: t\r\n\r\n"
    with socket.create_connection(("127.0.0.1", port), timeout=20) as s:
        s.sendall(data)
        head, _ = read_response(s)
    status = int(head[9:12])
    location = [v for n, v in head_fields(head) if n.lower() == b"location"]
    return status, location[0].decode() if location else ""


def _states(sport: int) -> dict[tuple[str, str], dict]:
    rows = parse_csv(get(sport, "/st;csv")[2].decode())
    return {(r["pxname"], r["svname"]): r for r in rows}


def test_admin_form_takes_a_chunked_body_and_a_backend_id(start_splicer, farm):
    """A chunked admin POST is read as the same form (haproxy reads the whole body); `b=`
    takes the backend's proxy id `#<iid>` (the CSV's iid column) as well as its name."""
    port, sport = free_port(), free_port()
    cfg = stats_config(port, sport, [("web1", farm[0].port), ("web2", farm[1].port)],
                       stats="    stats admin if TRUE\n")
    start_splicer(cfg, [port, sport])
    body = b"s=web1&action=drain&b=farm"
    assert _post(sport, "/st", body, [body[:7], body[7:20], body[20:]]) == (303, "/st;st=DONE")
    rows = _states(sport)
    assert rows[("farm", "web1")]["status"] == "DRAIN"
    iid = rows[("farm", "BACKEND")]["iid"]
    fe_iid = rows[("www", "FRONTEND")]["iid"]
    assert iid.isdigit() and fe_iid.isdigit() and iid != fe_iid
    assert _post(sport, "/st", f"s=web1&action=ready&b=#{iid}".encode()) == (303, "/st;st=DONE")
    assert _states(sport)[("farm", "web1")]["status"] == "no check"
    for b in (f"#{fe_iid}", "#999", "#", "#x"):  # a frontend's id, no such id, no id
        assert _post(sport, "/st", f"s=web1&action=maint&b={b}".encode()) == (303, "/st;st=ERRP"), b
    assert _states(sport)[("farm", "web1")]["status"] == "no check"
    # a chunked form larger than a buffer is refused as haproxy does, nothing done
    big = b"s=web1&action=maint&b=farm&pad=" + b"p" * 20000
    assert _post(sport, "/st", big, [big[:10000], big[10000:]]) == (303, "/st;st=EXCD")
    assert _states(sport)[("farm", "web1")]["status"] == "no check"


def test_a_failed_admin_action_logs_one_line(start_splicer, farm):
    """A stats-page action the runtime API refuses on every worker (its answer spans
    several lines) is logged as one record on one line."""
    port, sport = free_port(), free_port()
    cfg = stats_config(port, sport, [("web1", farm[0].port)], nbthread=2, stats="    stats admin if TRUE\n")
    sp = start_splicer(cfg, [port, sport], workers=2)
    assert _post(sport, "/st", b"s=nosuch&action=drain&b=farm") == (303, "/st;st=ERRP")
    deadline = time.monotonic() + 15
    while "stats admin" not in sp.log():
        assert time.monotonic() < deadline, sp.log()
        time.sleep(0.05)
    lines = sp.log().splitlines()
    at = [i for i, line in enumerate(lines) if "stats admin" in line]
    assert len(at) == 1, lines
    assert "No such server." in lines[at[0]]
    assert not any(line.strip() == "No such server." for line in lines), lines


def test_show_errors_prints_the_reason_as_plain_text(start_splicer, tmp_path):
    """`show errors` gives the parser's reason in words and haproxy's "error at position";
    the refused bytes appear in the escaped dump only, never as a Python repr."""
    origin = BigOrigin()
    try:
        port = free_port()
        cfg, d = config(tmp_path, port, [("s1", origin.port, "")])
        start_splicer(cfg, [port])
        wait_socket(f"{d}/admin.sock")
        with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
            s.sendall(b"GET /bad path HTTP/1.1\r\nHost: x\r\n\r\n")
            assert read_response(s)[0].startswith(b"HTTP/1.1 400")
        with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
            s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\nBad header\r\n\r\n")
            assert read_response(s)[0].startswith(b"HTTP/1.1 400")
        out = cli(f"{d}/oper.sock", "show errors\n")
        assert "bytearray" not in out and "b'" not in out, out
        assert "answered 400: illegal request line\n  len 35, error at position 0\n" in out, out
        assert "answered 400: illegal header line\n  len 39, error at position 25\n" in out, out
        assert "  00000  GET /bad path HTTP/1.1\\r\\n\n" in out
    finally:
        origin.close()


def _raw(path: str, data: bytes) -> bytes:
    """Send `data` on a raw unix socket connection and read until the server closes."""
    with socket.socket(socket.AF_UNIX) as s:
        s.settimeout(20)
        s.connect(path)
        s.sendall(data)
        got = b""
        while chunk := s.recv(65536):
            got += chunk
        return got


def test_stats_socket_lines_as_haproxy_reads_them(start_splicer, tmp_path):
    """An overlong line (it takes two reads) ends the connection and runs nothing; a NUL
    byte refuses its whole line; a line of only ';' gets one empty answer; `set server
    addr` refuses trailing words and says when nothing changed; haproxy's legacy `set
    weight` / `get weight`."""
    origin = BigOrigin()
    try:
        port = free_port()
        cfg, d = config(tmp_path, port, [("s1", origin.port, "weight 4")])
        start_splicer(cfg, [port])
        admin = f"{d}/admin.sock"
        wait_socket(admin)

        def admin_state() -> str:
            return server_rows(cli(admin, "show servers state\n"))["s1"][6]
        assert admin_state() == "0"
        from splicer.admin.line import MAX_LINE, NUL_REFUSED
        assert _raw(admin, b" " * (MAX_LINE + 100) + b"disable server be/s1\n") == b""
        assert _raw(admin, b"show info;" + b" " * MAX_LINE + b";disable server be/s1\n") == b""
        assert admin_state() == "0"
        assert _raw(admin, b"show cli level\0;disable server be/s1\n") == (NUL_REFUSED + "\n").encode()
        assert _raw(admin, b"disable server be/s1;\0\n") == (NUL_REFUSED + "\n").encode()
        assert admin_state() == "0"
        assert cli(admin, ";\n") == "\n"
        assert cli(admin, "; ;show cli level\n") == "admin\n\n"
        usage = "set server <b>/<s> addr requires an address and optionally a port.\n\n"
        assert cli(admin, f"set server be/s1 addr 127.0.0.2 port {origin.port} now\n") == usage
        assert cli(admin, f"set server be/s1 addr 127.0.0.1 port {origin.port}\n") == "nothing changed\n\n"
        assert cli(admin, "set server be/s1 addr 127.0.0.1\n") == "nothing changed\n\n"
        assert cli(admin, "get weight be/s1\n") == "4 (initial 4)\n\n"
        assert cli(admin, "set weight be/s1 50%\n") == "\n"
        assert cli(f"{d}/user.sock", "get weight be/s1\n") == "2 (initial 4)\n\n"
        assert cli(f"{d}/oper.sock", "set weight be/s1 9\n") == "Permission denied\n\n"
        assert server_rows(cli(admin, "show servers state\n"))["s1"][7] == "2"
    finally:
        origin.close()


def test_a_backend_without_servers_is_up(start_splicer, farm):
    """A `listen` for the stats page alone has a backend with no server: haproxy shows it
    UP (stats_fill_be_stats: `tot_weight > 0 || !px->srv`), with no downtime; a backend
    whose servers are all down is DOWN."""
    port, sport = free_port(), free_port()
    start_splicer(stats_config(port, sport, [(o.name, o.port) for o in farm], server_opts="disabled"),
                  [port, sport])
    time.sleep(1.1)  # a downtime would show by now
    status, _, body = get(sport, "/st;csv")
    assert status == 200
    rows = {(r["pxname"], r["svname"]): r for r in parse_csv(body.decode())}
    assert rows[("stats", "BACKEND")]["status"] == "UP" and rows[("stats", "BACKEND")]["downtime"] in ("", "0")
    assert rows[("farm", "BACKEND")]["status"] == "DOWN"
