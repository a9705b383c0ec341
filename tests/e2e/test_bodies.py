"""Bodies through splicer, byte-exact: GETs of every size, a 256 MiB upload, a stalled reader,
and an origin that dies mid-body."""
from __future__ import annotations

import hashlib
import http.client
import json
import os
import socket
import time

import pytest

from tests.e2e.helpers import free_port, http_config


@pytest.fixture
def proxy(start_splicer, farm):
    port = free_port()
    sp = start_splicer(http_config(port, [(o.name, o.port) for o in farm]), [port])
    return sp


def fetch_sha(port: int, path: str) -> tuple[int, int, str, dict]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    conn.request("GET", path)
    resp = conn.getresponse()
    h = hashlib.sha256()
    n = 0
    while block := resp.read(1 << 20):
        h.update(block)
        n += len(block)
    headers = dict(resp.getheaders())
    conn.close()
    return resp.status, n, h.hexdigest(), headers


@pytest.mark.parametrize("name", ["0", "1k", "1m", "1g"])
def test_get_body_byte_exact(proxy, www, name):
    status, n, digest, headers = fetch_sha(proxy.port, f"/files/{name}")
    assert status == 200
    assert n == os.path.getsize(os.path.join(www[0], name))
    assert int(headers["Content-Length"]) == n
    assert digest == www[1][name]


def test_1g_body_is_spliced_not_copied(proxy, www):
    before = proxy.stats()["frontends"]["www"]
    status, n, digest, _ = fetch_sha(proxy.port, "/files/1g")
    assert (status, n, digest) == (200, 1 << 30, www[1]["1g"])
    after = proxy.stats()
    fe = after["frontends"]["www"]
    assert fe["spliced"] - before["spliced"] == 1 << 30
    assert fe["copied"] - before["copied"] == 0
    assert after["engine"]["spliced_bytes"] >= 1 << 30  # moved by the engine thread
    assert after["engine"]["pipes_used"] == after["pipes"]["used"] == 0  # pipes went back to the pools


def test_small_body_is_copied_with_splice_auto(proxy, www):
    before = proxy.stats()["frontends"]["www"]
    assert fetch_sha(proxy.port, "/files/1k")[2] == www[1]["1k"]
    fe = proxy.stats()["frontends"]["www"]
    assert fe["copied"] - before["copied"] == 1024
    assert fe["spliced"] - before["spliced"] == 0


def test_post_256m_arrives_byte_exact(proxy, www):
    path = os.path.join(www[0], "256m")
    conn = http.client.HTTPConnection("127.0.0.1", proxy.port, timeout=120)
    with open(path, "rb") as f:
        conn.request("POST", "/upload", body=f, headers={"Content-Length": str(256 << 20)})
        resp = conn.getresponse()
        got = json.loads(resp.read())
    assert resp.status == 200
    assert got["size"] == 256 << 20
    assert got["sha256"] == www[1]["256m"]
    stats = proxy.stats()["frontends"]["www"]
    assert stats["spliced"] >= 256 << 20


def test_chunked_upload_arrives_byte_exact(proxy):
    body = os.urandom(300_000)

    def chunks():
        for i in range(0, len(body), 70_000):
            yield body[i:i + 70_000]

    conn = http.client.HTTPConnection("127.0.0.1", proxy.port, timeout=30)
    conn.request("POST", "/upload", body=chunks(), encode_chunked=True)
    resp = conn.getresponse()
    got = json.loads(resp.read())
    assert resp.status == 200
    assert got["size"] == len(body)
    assert got["sha256"] == hashlib.sha256(body).hexdigest()


@pytest.mark.parametrize("route", ["chunked", "close"])
def test_chunked_and_close_delimited_responses(proxy, www, route):
    status, n, digest, headers = fetch_sha(proxy.port, f"/{route}/1m")
    assert (status, n, digest) == (200, 1 << 20, www[1]["1m"])
    if route == "chunked":
        assert headers.get("Transfer-Encoding") == "chunked"
    else:
        assert headers.get("Connection") == "close"


def test_stalled_reader_resumes_byte_exact(proxy, www):
    """A client that stops reading for 2 s mid-body, then resumes, gets every byte."""
    s = socket.create_connection(("127.0.0.1", proxy.port))
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
    s.sendall(b"GET /files/1g HTTP/1.1\r\nHost: t\r\n\r\n")
    f = s.makefile("rb")
    while f.readline() not in (b"\r\n", b""):
        pass
    h = hashlib.sha256()
    n = 0
    stalled = False
    while n < 1 << 30:
        block = f.read(min(1 << 20, (1 << 30) - n))
        assert block, f"connection closed after {n} bytes"
        h.update(block)
        n += len(block)
        if not stalled and n >= 300 << 20:
            time.sleep(2.0)
            stalled = True
    s.close()
    assert h.hexdigest() == www[1]["1g"]


def test_origin_dying_mid_body_closes_client_short(proxy, www):
    """The client must see the connection end before Content-Length, never a complete body."""
    conn = http.client.HTTPConnection("127.0.0.1", proxy.port, timeout=30)
    conn.request("GET", "/die/1m?after=300000")
    resp = conn.getresponse()
    assert resp.status == 200
    assert int(resp.getheader("Content-Length")) == 1 << 20
    with pytest.raises(http.client.IncompleteRead) as exc:
        resp.read()
    assert len(exc.value.partial) <= 300000
    stats = proxy.stats()["backends"]["farm"]
    assert stats["eresp"] >= 1


def test_origin_dying_mid_spliced_body_closes_client_short(proxy, www):
    conn = http.client.HTTPConnection("127.0.0.1", proxy.port, timeout=30)
    conn.request("GET", "/die/256m?after=100000000")
    resp = conn.getresponse()
    assert int(resp.getheader("Content-Length")) == 256 << 20
    with pytest.raises(http.client.IncompleteRead) as exc:
        resp.read()
    assert len(exc.value.partial) == 100000000  # every byte the origin sent, and not one more

