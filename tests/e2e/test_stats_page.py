"""The stats page (`stats uri`), its `;csv` export and the Prometheus exporter (`http-request
use-service prometheus-exporter`): served by the workers themselves, with the counters of
every worker summed (issue 10)."""
from __future__ import annotations

import base64
import csv
import http.client
import io
import os
import pathlib
import re
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor

from prometheus_client.parser import text_string_to_metric_families

from tests.e2e.helpers import ScriptedOrigin, free_port, http_config, wait_port
from tests.unit.report.test_csv import MANAGEMENT_9_1

ROOT = pathlib.Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts"


def get(port: int, target: str, headers: dict | None = None, method: str = "GET", body: bytes | None = None):
    """One request on a new connection: (status, headers dict lower-cased, body)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=15)
    try:
        conn.request(method, target, body=body, headers=headers or {})
        r = conn.getresponse()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
    finally:
        conn.close()


def stats_config(port: int, sport: int, servers, *, nbthread: int = 1, stats: str = "", server_opts: str = "",
                 extra_backend: str = "", extra_frontend: str = "") -> str:
    return http_config(port, servers, nbthread=nbthread, server_opts=server_opts,
                       extra_backend=extra_backend, extra_frontend=extra_frontend) + f"""
listen stats
    bind 127.0.0.1:{sport}
    stats uri /st
{stats}
"""


def parse_csv(text: str) -> list[dict]:
    lines = text.splitlines()
    assert lines[0].startswith("# ")
    names = lines[0][2:].split(",")
    return [dict(zip(names, row)) for row in csv.reader(io.StringIO("\n".join(lines[1:]) + "\n"))]


def wait_for(what, predicate, timeout: float = 15.0):
    """Poll predicate() until it returns something true (its value is returned)."""
    deadline = time.monotonic() + timeout
    while True:
        got = predicate()
        if got:
            return got
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def wait_down(sp, server: str) -> None:
    wait_for(f"{server} DOWN on every worker",
             lambda: sp.log().count(f"server {server} is DOWN") >= sp.workers)


def spread_over_workers(sp, port: int, target: str, at_least: int) -> int:
    """Send requests (8 clients at a time, each on a new connection) until at least
    `at_least` were sent and each worker has served some: the workers share one listening
    socket, so which one accepts is the kernel's choice. Returns how many were sent."""
    sent = 0
    deadline = time.monotonic() + 60
    with ThreadPoolExecutor(8) as pool:
        while True:
            for status, _, _ in pool.map(lambda _: get(port, target), range(8)):
                assert status == 200
            sent += 8
            if sent >= at_least and all(w["frontends"]["www"]["req_tot"] > 0 for w in sp.worker_stats()):
                return sent
            assert time.monotonic() < deadline, "one worker accepted every connection"


def test_csv_has_haproxys_columns_and_sums_every_worker(start_splicer, farm):
    """`;csv`: haproxy's header (management.txt 9.1, in order), one row per frontend,
    server and backend with haproxy's type numbers, and counters summed over both workers
    whichever of them answers; server states as the checks found them."""
    port, sport, dead = free_port(), free_port(), free_port()
    cfg = stats_config(port, sport, [("web1", farm[0].port), ("web2", farm[1].port), ("gone", dead)],
                       nbthread=2, server_opts="check inter 100ms rise 2 fall 2")
    sp = start_splicer(cfg, [port, sport], workers=2)
    wait_down(sp, "gone")
    sent = spread_over_workers(sp, port, "/files/1k", 40)
    assert sum(w["frontends"]["www"]["req_tot"] for w in sp.worker_stats()) == sent
    for _ in range(4):  # whichever worker answers, the sums are the same
        status, headers, body = get(sport, "/st;csv")
        assert status == 200 and headers["content-type"] == "text/plain"
        text = body.decode()
        names = text.splitlines()[0][2:].split(",")
        assert names[:len(MANAGEMENT_9_1)] == MANAGEMENT_9_1
        assert names[len(MANAGEMENT_9_1):] == ["-", "spliced", "copied", ""]
        rows = {(r["pxname"], r["svname"]): r for r in parse_csv(text)}
        assert list(rows)[:5] == [("www", "FRONTEND"), ("farm", "web1"), ("farm", "web2"), ("farm", "gone"),
                                  ("farm", "BACKEND")]
        fe, be = rows[("www", "FRONTEND")], rows[("farm", "BACKEND")]
        w1, w2, gone = rows[("farm", "web1")], rows[("farm", "web2")], rows[("farm", "gone")]
        assert (fe["type"], be["type"], w1["type"]) == ("0", "1", "2")
        assert (fe["req_tot"], fe["hrsp_2xx"], fe["status"]) == (str(sent), str(sent), "OPEN")
        assert int(fe["stot"]) >= sent  # and the start-up probe's connection
        assert (be["req_tot"], be["hrsp_2xx"], be["status"], be["act"]) == (str(sent), str(sent), "UP", "2")
        assert int(w1["req_tot"]) + int(w2["req_tot"]) == sent
        assert int(w1["req_tot"]) >= sent // 4 and int(w2["req_tot"]) >= sent // 4  # round robin
        assert int(fe["bout"]) > sent * 1024 and int(fe["copied"]) + int(fe["spliced"]) == sent * 1024
        assert (w1["status"], w1["check_status"], w1["weight"]) == ("UP", "L4OK", "1")
        assert (gone["status"], gone["check_status"], gone["last_chk"]) == ("DOWN", "L4CON", "Connection refused")
        assert (gone["chkdown"], gone["req_tot"], gone["check_desc"]) == ("1", "0", "Layer4 connection problem")
        assert int(gone["chkfail"]) >= 2 and gone["check_rise"] == "2" and gone["check_fall"] == "2"
    # each page is counted as intercepted once it is sent: the earlier ones show
    rows = {(r["pxname"], r["svname"]): r for r in parse_csv(get(sport, "/st;csv")[2].decode())}
    assert int(rows[("stats", "FRONTEND")]["intercepted"]) >= 3


def test_csv_header_extends_the_installed_haproxys(tmp_path):
    """Differential: the static columns the installed haproxy prints on its own `;csv` page
    (everything before its `-` column) are the first columns of splicer's, in order."""
    port = free_port()
    cfg = tmp_path / "haproxy.cfg"
    cfg.write_text(f"""
defaults
    mode http
    timeout client 5s
    timeout server 5s
    timeout connect 5s
listen web
    bind 127.0.0.1:{port}
    stats uri /st
""")
    proc = subprocess.Popen(["haproxy", "-db", "-f", str(cfg)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_port(port, proc)
        _, _, body = get(port, "/st;csv")
    finally:
        proc.kill()
        proc.wait(5)
    theirs = body.decode().splitlines()[0][2:].split(",")
    static = theirs[:theirs.index("-")]
    assert len(static) >= 100
    assert MANAGEMENT_9_1[:len(static)] == static


def test_page_in_headless_chromium(start_splicer, farm, tmp_path):
    """The HTML page as a browser renders it: Debian's chromium, headless, takes a
    screenshot (kept as test-artifacts/stats-page.png) and dumps the DOM it built, which
    holds every proxy, server, status and the summed counters."""
    port, sport, dead = free_port(), free_port(), free_port()
    cfg = stats_config(port, sport, [("web1", farm[0].port), ("web2", farm[1].port), ("gone", dead)],
                       nbthread=2, server_opts="check inter 100ms rise 2 fall 2",
                       stats="    stats refresh 30s\n    stats show-legends\n    stats admin if TRUE\n")
    sp = start_splicer(cfg, [port, sport], workers=2)
    wait_down(sp, "gone")
    for _ in range(12):
        assert get(port, "/files/1m")[0] == 200
    url = f"http://127.0.0.1:{sport}/st"
    status, headers, page = get(sport, "/st")
    assert status == 200 and headers["content-type"] == "text/html; charset=utf-8"
    assert headers["refresh"] == "30"
    ARTIFACTS.mkdir(exist_ok=True)
    shot = ARTIFACTS / "stats-page.png"
    if shot.exists():
        shot.unlink()
    browser = ["chromium", "--headless", "--no-sandbox", "--disable-gpu", f"--user-data-dir={tmp_path / 'profile'}"]
    env = {**os.environ, "HOME": str(tmp_path)}
    subprocess.run([*browser, f"--screenshot={shot}", "--window-size=1280,2000", url], env=env,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=120, check=True)
    assert shot.stat().st_size > 10000 and shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    print(f"stats page screenshot: {shot}")
    dom = subprocess.run([*browser, "--dump-dom", url], env=env, capture_output=True, timeout=120,
                         check=True).stdout.decode()
    (ARTIFACTS / "stats-page.html").write_text(dom)
    assert "<title>Statistics Report for splicer</title>" in dom
    for name in ("px-www", "px-farm", "px-stats"):
        assert f'id="{name}"' in dom
    rows = {name: cls for cls, name in re.findall(
        r'<tr class="([a-z_ ]+)">(?:<td>(?:<input[^>]*>)?</td>)?<td class="name"[^>]*>([^<]+)</td>', dom)}
    assert rows["web1"] == "active_up" and rows["web2"] == "active_up" and rows["gone"] == "active_down"
    assert "L4CON in" in dom and "Connection refused" in dom and "UP</td>" in dom
    assert '<input type="checkbox" name="s" value="web1">' in dom  # stats admin
    assert "2 worker(s)" in dom
    # the summed counters: 12 responses of 1 MiB through the frontend, whichever worker
    fe_row = re.search(r'<tr class="frontend"><td class="name">Frontend</td>(.*?)</tr>', dom.split('id="px-www"')[1])
    cells = re.findall(r"<td>([^<]*)</td>", fe_row.group(1))
    assert int(cells[9]) >= 12  # Sessions: Total (and the start-up probe's connection)
    assert int(cells[11]) > 12 << 20  # Bytes: Out
    assert int(cells[12]) + int(cells[13]) == 12 << 20  # Body bytes: Spliced + Copied


def test_page_escapes_a_hostile_check_reason(start_splicer, farm):
    """What a server says in its check response's reason phrase is shown as text, never as
    markup: `<script>` arrives escaped in the page (and in the CSV as written)."""
    hostile = b"<script>alert('x')</script>&\"quoted\""

    def answer(c):
        c.sendall(b"HTTP/1.1 503 " + hostile + b"\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
    bad = ScriptedOrigin(answer)
    try:
        port, sport = free_port(), free_port()
        cfg = stats_config(port, sport, [("web1", farm[0].port), ("evil", bad.port)],
                           server_opts="check inter 100ms rise 2 fall 2",
                           extra_backend="    option httpchk GET /health\n")
        sp = start_splicer(cfg, [port, sport])
        wait_down(sp, "evil")
        _, _, page = get(sport, "/st")
        text = page.decode()
        assert "<script>" not in text and "alert('x')" not in text
        assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;&amp;&quot;quoted&quot;" in text
        assert "L7STS/503" in text
        _, _, body = get(sport, "/st;csv")
        rows = {r["svname"]: r for r in parse_csv(body.decode())}
        assert rows["evil"]["last_chk"] == hostile.decode()
        assert (rows["evil"]["check_status"], rows["evil"]["check_code"]) == ("L7STS", "503")
    finally:
        bad.close()


def test_stats_auth_asks_with_the_realm(start_splicer, farm):
    """`stats auth` + `stats realm`: without (or with wrong) Basic credentials the page is
    401 with the realm in WWW-Authenticate; with an account's, it is served."""
    port, sport = free_port(), free_port()
    cfg = stats_config(port, sport, [("web1", farm[0].port)],
                       stats="    stats auth admin:s3cret\n    stats auth ops:other\n"
                             "    stats realm Farm\\ statistics\n")
    start_splicer(cfg, [port, sport])
    status, headers, body = get(sport, "/st")
    assert status == 401 and headers["www-authenticate"] == 'Basic realm="Farm statistics"'
    assert b"You need a valid user and password" in body

    def basic(user: str, pw: str) -> dict:
        return {"Authorization": "Basic " + base64.b64encode(f"{user}:{pw}".encode()).decode()}
    assert get(sport, "/st", basic("admin", "wrong"))[0] == 401
    assert get(sport, "/st;csv", basic("nobody", "s3cret"))[0] == 401
    status, _, body = get(sport, "/st;csv", basic("ops", "other"))
    assert status == 200 and body.startswith(b"# pxname,svname,")
    status, _, body = get(sport, "/st", basic("admin", "s3cret"))
    assert status == 200 and b'id="px-farm"' in body
    # the rest of the frontend's traffic is not behind the login
    assert get(port, "/files/0")[0] == 200


def test_admin_form_needs_the_admin_level_and_valid_fields(start_splicer, farm):
    """The admin form's POST without `stats admin` is refused (303 to ;st=DENY), as are a
    bad action (ERRP) and a form with no server checked (NONE); nothing changes."""
    port, sport, aport = free_port(), free_port(), free_port()
    cfg = stats_config(port, sport, [("web1", farm[0].port), ("web2", farm[1].port)]) + f"""
listen adminstats
    bind 127.0.0.1:{aport}
    stats uri /
    stats admin if LOCALHOST
"""
    start_splicer(cfg, [port, sport, aport])
    form = {"Content-Type": "application/x-www-form-urlencoded"}
    status, headers, _ = get(sport, "/st", form, "POST", b"s=web1&action=maint&b=farm")
    assert (status, headers["location"]) == (303, "/st;st=DENY")
    status, headers, _ = get(aport, "/", form, "POST", b"s=web1&action=explode&b=farm")
    assert (status, headers["location"]) == (303, "/;st=ERRP")
    status, headers, _ = get(aport, "/", form, "POST", b"action=maint&b=farm")
    assert (status, headers["location"]) == (303, "/;st=NONE")
    _, _, page = get(aport, "/;st=NONE")
    assert b"Nothing has changed." in page
    rows = {r["svname"]: r for r in parse_csv(get(sport, "/st;csv")[2].decode())}
    assert (rows["web1"]["status"], rows["web2"]["status"]) == ("no check", "no check")


def test_prometheus_exporter_sums_every_worker(start_splicer, farm):
    """`http-request use-service prometheus-exporter if { path /metrics }`: the text format
    parses with prometheus-client's parser; haproxy's metric names and labels, counters
    summed over both workers, one status sample per state, and splicer's splice metrics.
    Other paths still go to the servers."""
    port, sport, dead = free_port(), free_port(), free_port()
    cfg = stats_config(port, sport, [("web1", farm[0].port), ("gone", dead)], nbthread=2,
                       server_opts="check inter 100ms rise 2 fall 2",
                       extra_frontend="    http-request use-service prometheus-exporter if { path /metrics }\n")
    sp = start_splicer(cfg, [port, sport], workers=2)
    wait_down(sp, "gone")
    sent = spread_over_workers(sp, port, "/files/1k", 30)
    assert get(port, "/metrics")[0] == 200
    status, headers, body = get(port, "/metrics")
    assert status == 200 and headers["content-type"] == "text/plain; version=0.0.4; charset=utf-8"
    fams = {f.name: f for f in text_string_to_metric_families(body.decode())}

    def value(name: str, **labels) -> float:
        fam = fams[name]
        found = [s.value for s in fam.samples if all(s.labels.get(k) == v for k, v in labels.items())
                 and not s.name.endswith("_created")]
        assert len(found) == 1, (name, labels, fam.samples)
        return found[0]
    assert fams["haproxy_frontend_http_requests"].type == "counter"
    assert value("haproxy_frontend_http_requests", proxy="www") == sent + 2  # and the two scrapes
    assert value("haproxy_frontend_sessions", proxy="www") >= sent
    assert value("haproxy_backend_http_responses", proxy="farm", code="2xx") == sent
    assert value("haproxy_server_http_responses", proxy="farm", server="web1", code="2xx") == sent
    assert value("haproxy_server_status", proxy="farm", server="web1", state="UP") == 1
    assert value("haproxy_server_status", proxy="farm", server="gone", state="DOWN") == 1
    assert value("haproxy_server_status", proxy="farm", server="gone", state="UP") == 0
    assert value("haproxy_server_check_status", proxy="farm", server="gone", state="L4CON") == 1
    assert value("haproxy_server_check_up_down", proxy="farm", server="gone") == 1
    assert value("haproxy_backend_status", proxy="farm", state="UP") == 1
    assert value("haproxy_backend_active_servers", proxy="farm") == 1
    moved = (value("splicer_frontend_spliced_bytes", proxy="www")
             + value("splicer_frontend_copied_bytes", proxy="www"))
    assert moved == sent * 1024
    assert value("splicer_workers") == 2
    assert value("haproxy_frontend_intercepted_requests", proxy="www") >= 1
    assert get(port, "/files/0")[0] == 200


def test_stats_in_a_backend_section(start_splicer, farm):
    """A `backend` section's stats answer the requests routed to it; a frontend's own
    requests elsewhere go on to its servers."""
    port = free_port()
    cfg = http_config(port, [("web1", farm[0].port)],
                      extra_frontend="    use_backend statsbe if { path_beg /admin }\n") + """
backend statsbe
    stats uri /admin?stats
    stats show-node lb-eu-1
    stats show-desc Paris\\ office
"""
    start_splicer(cfg, [port])
    status, _, page = get(port, "/admin?stats")
    assert status == 200 and b"on lb-eu-1" in page and b"Paris office" in page
    status, _, body = get(port, "/admin?stats;csv")
    rows = {(r["pxname"], r["svname"]): r for r in parse_csv(body.decode())}
    assert rows[("statsbe", "BACKEND")]["intercepted"] == "1"  # the page itself, before the CSV
    assert get(port, "/files/0")[0] == 200


def test_admin_form_drains_and_puts_back_a_server_on_every_worker(start_splicer, farm):
    """`stats admin if TRUE`: the page's form sets the checked server to DRAIN, MAINT and
    READY on every worker (runtime API `set server B/S state X` through the master); the
    answer is a 303 to `;st=DONE`, and the balanced traffic avoids a drained server."""
    port, sport = free_port(), free_port()
    cfg = stats_config(port, sport, [("web1", farm[0].port), ("web2", farm[1].port)], nbthread=2,
                       stats="    stats admin if TRUE\n")
    sp = start_splicer(cfg, [port, sport], workers=2)
    form = {"Content-Type": "application/x-www-form-urlencoded"}

    def states() -> list[str]:
        return [w["backends"]["farm"]["servers"]["web1"]["status"] for w in sp.worker_stats()]
    status, headers, _ = get(sport, "/st", form, "POST", b"s=web1&action=drain&b=farm")
    assert (status, headers["location"]) == (303, "/st;st=DONE")
    assert states() == ["DRAIN", "DRAIN"]
    _, _, page = get(sport, "/st;st=DONE")
    assert b"Action processed successfully." in page
    rows = {r["svname"]: r for r in parse_csv(get(sport, "/st;csv")[2].decode())}
    assert (rows["web1"]["status"], rows["web1"]["weight"], rows["web2"]["status"]) == ("DRAIN", "0", "no check")
    served = [get(port, "/files/0")[1].get("x-served-by") for _ in range(20)]
    assert served == ["web2"] * 20
    status, headers, _ = get(sport, "/st", form, "POST", b"s=web1&s=web2&action=maint&b=farm")
    assert (status, headers["location"]) == (303, "/st;st=DONE")
    assert states() == ["MAINT", "MAINT"]
    assert get(port, "/files/0")[0] == 503
    status, headers, _ = get(sport, "/st", form, "POST", b"s=web1&s=web2&action=ready&b=farm")
    assert (status, headers["location"]) == (303, "/st;st=DONE")
    assert states() == ["no check", "no check"]
    assert sorted(set(get(port, "/files/0")[1].get("x-served-by") for _ in range(10))) == ["web1", "web2"]
    status, headers, _ = get(sport, "/st", form, "POST", b"s=nosuch&action=drain&b=farm")
    assert (status, headers["location"]) == (303, "/st;st=ERRP")
