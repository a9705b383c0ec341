"""Hash balancing through the real `splicer` command and real origins: `balance source`,
`uri`, `url_param` and `hdr()` send a key to the server haproxy's map-based table gives it
(sdbm, slot hash % 4 over four servers of weight 1), the same across new connections, both
worker processes and a restart; keyless requests go round robin; with `hash-type
consistent`, a server going down moves only its own keys."""
from __future__ import annotations

import http.client
import os
import signal
import time

import pytest

from splicer.balance.chash import ConsistentHash
from splicer.balance.hashing import gen_hash, sdbm
from tests.e2e.conftest import Origin
from tests.e2e.helpers import free_port, http_config

NAMES = ["h0", "h1", "h2", "h3"]


@pytest.fixture(scope="module")
def four(www):
    """Four origins h0..h3, declared in this order in every config."""
    origins = [Origin(name, www[0]) for name in NAMES]
    yield origins
    for o in origins:
        o.stop()


def config(port, origins, balance, nbthread=1, extra_backend="", server_opts=""):
    return http_config(port, [(o.name, o.port) for o in origins], balance=balance, nbthread=nbthread,
                       extra_backend=extra_backend, server_opts=server_opts)


def served_by(port, path, headers=None, source=None):
    """One request on a new connection; the origin that answered it."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10,
                                      source_address=(source, 0) if source else None)
    conn.request("GET", path, headers=headers or {})
    resp = conn.getresponse()
    resp.read()
    conn.close()
    assert resp.status == 200
    return resp.getheader("X-Served-By")


def answered_by(port, path):
    """The origin that answered `path` on a new connection, whatever its status (a path no
    file has gets the origin's 404, which names it too)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    conn.request("GET", path)
    resp = conn.getresponse()
    resp.read()
    conn.close()
    assert resp.status in (200, 404)
    return resp.getheader("X-Served-By")


def served_alone(port, paths, stopped):
    """served_by() for each path while worker `stopped` is stopped (SIGSTOP), so that the
    other worker accepts every connection."""
    os.kill(stopped, signal.SIGSTOP)
    try:
        return {p: served_by(port, p) for p in paths}
    finally:
        os.kill(stopped, signal.SIGCONT)


def per_worker_requests(sp):
    """frontend req_tot of each worker, from the master CLI's `show counters workers`."""
    per = sp.worker_stats()
    assert len(per) == 2
    return sorted(w["frontends"]["www"]["req_tot"] for w in per)


def test_uri_hash_gives_haproxys_server_across_workers_and_a_restart(start_splicer, four):
    paths = [f"/headers?page={k}" for k in range(60)]
    # `whole`: the query string is part of the key; haproxy: map[sdbm(uri) % 4]
    expected = {p: NAMES[sdbm(p.encode()) % 4] for p in paths}
    assert len(set(expected.values())) == 4
    port = free_port()
    sp = start_splicer(config(port, four, "uri whole", nbthread=2), [port], workers=2)
    # the workers share the listening socket, and which one accepts a connection is the
    # kernel's choice: each worker in turn serves every key while the other is stopped
    w1, w2 = sp.worker_pids()
    first = served_alone(port, paths, stopped=w2)
    again = served_alone(port, list(reversed(paths)), stopped=w1)
    assert first == again == expected
    counts = per_worker_requests(sp)
    print(f"requests per worker: {counts}")
    assert sum(counts) == 120 and min(counts) > 0  # both workers served keys
    sp.stop()
    port2 = free_port()
    start_splicer(config(port2, four, "uri whole", nbthread=2), [port2], workers=2)
    assert {p: served_by(port2, p) for p in paths} == expected


def test_uri_depth_keeps_a_directory_on_one_server(start_splicer, four):
    port = free_port()
    start_splicer(config(port, four, "uri depth 1"), [port])
    # every /files/<name> hashes "/files": one server for them all
    want = NAMES[sdbm(b"/files") % 4]
    assert [served_by(port, f"/files/{n}") for n in ("0", "1k", "0", "1k")] == [want] * 4


def test_source_hash_follows_the_client_address_across_a_restart(start_splicer, four):
    port = free_port()
    sp = start_splicer(config(port, four, "source", nbthread=2), [port], workers=2)
    # the key of 127.0.0.X is 0x7f00000X: slot X % 4
    got = {x: served_by(port, "/files/0", source=f"127.0.0.{x}") for x in range(1, 13)}
    assert got == {x: NAMES[x % 4] for x in range(1, 13)}
    assert {x: served_by(port, "/files/0", source=f"127.0.0.{x}") for x in range(1, 13)} == got
    sp.stop()
    port2 = free_port()
    start_splicer(config(port2, four, "source", nbthread=2), [port2], workers=2)
    assert {x: served_by(port2, "/files/0", source=f"127.0.0.{x}") for x in range(1, 13)} == got


def test_url_param_routes_by_value_and_keyless_requests_go_round_robin(start_splicer, four):
    port = free_port()
    start_splicer(config(port, four, "url_param user"), [port])
    users = ["alice", "bob", "carol", "dave", "erin", "frank", "grace", "heidi"]
    got = {u: served_by(port, f"/headers?x=1&user={u}") for u in users}
    assert got == {u: NAMES[sdbm(u.encode()) % 4] for u in users}
    # no `user` parameter: the map's slots in turn
    assert [served_by(port, "/headers?x=1") for _ in range(8)] == NAMES * 2


def test_hdr_routes_by_header_value_with_djb2(start_splicer, four):
    port = free_port()
    start_splicer(config(port, four, "hdr(X-Tenant)", extra_backend="    hash-type map-based djb2"), [port])
    tenants = [f"tenant-{k}" for k in range(12)]
    got = {t: served_by(port, "/files/0", headers={"X-Tenant": t}) for t in tenants}
    assert got == {t: NAMES[gen_hash(t.encode(), "djb2") % 4] for t in tenants}
    assert [served_by(port, "/files/0") for _ in range(4)] == NAMES  # no field: round robin


@pytest.mark.parametrize("function", ["sdbm", "djb2", "wt6", "crc32"])
@pytest.mark.parametrize("avalanche", [False, True])
def test_each_hash_function_written_out_routes_by_its_hash(start_splicer, four, function, avalanche):
    """`hash-type map-based <function> [avalanche]`: the key goes to map[gen_hash(key) % 4]
    (haproxy src/backend.c; balance/hashing.py's functions are checked against haproxy's
    own values in tests/unit/balance/test_hashing.py)."""
    port = free_port()
    line = f"    hash-type map-based {function}" + (" avalanche" if avalanche else "")
    start_splicer(config(port, four, "uri", extra_backend=line), [port])
    paths = [f"/files/{k}" for k in range(16)]
    got = {p: answered_by(port, p) for p in paths}
    assert got == {p: NAMES[gen_hash(p.encode(), function, avalanche) % 4] for p in paths}


def test_uri_len_keeps_paths_with_one_prefix_on_one_server(start_splicer, four):
    """`balance uri len 6`: only the path's first 6 characters are hashed ("/files")."""
    port = free_port()
    start_splicer(config(port, four, "uri len 6"), [port])
    want = NAMES[sdbm(b"/files") % 4]
    assert [answered_by(port, f"/files/{n}") for n in ("0", "1k", "x", "0")] == [want] * 4
    others = {answered_by(port, f"/{k}files") for k in range(12)}
    assert len(others) > 1  # other prefixes spread


def test_consistent_hash_gives_the_ring_server_and_moves_only_a_dead_servers_keys(start_splicer, www):
    origins = [Origin(f"c{k}", www[0]) for k in range(4)]
    names = [o.name for o in origins]
    try:
        port = free_port()
        sp = start_splicer(config(port, origins, "uri whole", server_opts="check inter 100ms fall 1 rise 1",
                                  extra_backend="    hash-type consistent"), [port])
        paths = [f"/headers?obj={k}" for k in range(60)]
        ring = ConsistentHash([1] * 4)  # the same ring: sdbm + avalanche, points at haproxy's places
        keys = {p: gen_hash(p.encode(), "sdbm", True) for p in paths}
        expected = {p: names[ring.pick(key=keys[p])] for p in paths}
        before = {p: served_by(port, p) for p in paths}
        assert before == expected
        origins[2].stop()
        deadline = time.monotonic() + 10
        while "server c2 is DOWN" not in sp.log():
            assert time.monotonic() < deadline, "the health check did not mark c2 down"
            time.sleep(0.02)
        after = {p: served_by(port, p) for p in paths}
        moved = [p for p in paths if after[p] != before[p]]
        print(f"consistent, 1 of 4 servers down: {len(moved)}/{len(paths)} keys moved")
        assert moved == [p for p in paths if before[p] == "c2"]
        ring.set_up(2, False)
        assert after == {p: names[ring.pick(key=keys[p])] for p in paths}
    finally:
        for o in origins:
            o.stop()


def test_check_accepts_the_balancing_keywords_and_lists_their_errors(tmp_path):
    import subprocess

    from tests.e2e.helpers import splicer_command

    good = tmp_path / "farm.cfg"
    good.write_text("defaults\n    mode http\n    default-server maxconn 10 slowstart 5s\n"
                    "frontend f\n    bind 127.0.0.1:1\n    default_backend b\n"
                    "backend b\n    balance uri len 20 depth 2\n    hash-type consistent crc32\n"
                    "    hash-balance-factor 125\n    option allbackups\n"
                    "    server s 127.0.0.1:1 weight 256\n    server t 127.0.0.1:2 backup maxqueue 5\n")
    r = subprocess.run(splicer_command() + ["-c", str(good), "--check"], capture_output=True, text=True,
                       timeout=20)
    assert r.returncode == 0, r.stderr
    bad = tmp_path / "bad.cfg"
    bad.write_text("defaults\n    mode http\n"
                   "frontend f\n    bind 127.0.0.1:1\n    default_backend b\n"
                   "backend b\n    balance random(0)\n    hash-balance-factor 50\n"
                   "    server s 127.0.0.1:1 weight 257\n")
    r = subprocess.run(splicer_command() + ["-c", str(bad), "--check"], capture_output=True, text=True,
                       timeout=20)
    assert r.returncode == 1
    assert [ln for ln in r.stderr.splitlines() if ln.startswith("splicer: ")] == [
        f"splicer: {bad}:7: 'balance random': the number of draws must be at least 1, got 0",
        f"splicer: {bad}:8: 'hash-balance-factor' must be 0 or greater than 100, got 50",
        f"splicer: {bad}:9: server 's': 'weight' must be between 0 and 256, got 257",
        f"splicer: configuration file {bad} has 3 error(s)"]
