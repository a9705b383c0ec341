"""Micro-benchmarks of splicer's per-request Python cost (pytest-benchmark).

    python -m pytest benchmarks/test_micro.py --benchmark-only

Not part of the test suite (pyproject's testpaths is tests/). Each benchmark checks its
result once, so a behaviour change shows up as a failure, not as a silently faster number.

Measured: parsing a typical browser request head and a typical response head
(splicer.http.h1.parse_request / parse_response), rewriting them for forwarding
(forward_request_head / forward_response_head), the whole head path of one proxied request,
and the balancing decision (RoundRobin / LeastConn pick) with 2 and 16 servers.
"""
from __future__ import annotations

import pytest

from splicer.balance import LeastConn, RoundRobin
from splicer.http.h1 import (
    find_head_end,
    forward_request_head,
    forward_response_head,
    parse_request,
    parse_response,
)

# A request head as a desktop browser sends it for a page (17 fields, about 1 KiB).
BROWSER_REQUEST = (
    b"GET /products/shoes/index.html?color=blue&size=42 HTTP/1.1\r\n"
    b"Host: www.example.com\r\n"
    b"Connection: keep-alive\r\n"
    b"Cache-Control: max-age=0\r\n"
    b'sec-ch-ua: "Chromium";v="124", "Google Chrome";v="124", "Not-A.Brand";v="99"\r\n'
    b"sec-ch-ua-mobile: ?0\r\n"
    b'sec-ch-ua-platform: "Linux"\r\n'
    b"Upgrade-Insecure-Requests: 1\r\n"
    b"User-Agent: Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) "
    b"Chrome/124.0.0.0 Safari/537.36\r\n"
    b"Accept: text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,"
    b"image/apng,*/*;q=0.8,application/signed-exchange;v=b3;q=0.7\r\n"
    b"Sec-Fetch-Site: same-origin\r\n"
    b"Sec-Fetch-Mode: navigate\r\n"
    b"Sec-Fetch-User: ?1\r\n"
    b"Sec-Fetch-Dest: document\r\n"
    b"Referer: https://www.example.com/products/\r\n"
    b"Accept-Encoding: gzip, deflate, br\r\n"
    b"Accept-Language: en-US,en;q=0.9,fr;q=0.8\r\n"
    b"Cookie: session=8f14e45fceea167a5a36dedd4bea2543; theme=dark; consent=yes; "
    b"_ga=GA1.2.1234567890.1700000000\r\n"
    b"\r\n"
)

# A response head as a web server sends it for a static page (12 fields).
ORIGIN_RESPONSE = (
    b"HTTP/1.1 200 OK\r\n"
    b"Server: nginx/1.22.1\r\n"
    b"Date: Sun, 29 Nov 2026 20:00:00 GMT\r\n"
    b"Content-Type: text/html; charset=utf-8\r\n"
    b"Content-Length: 48213\r\n"
    b"Last-Modified: Fri, 27 Nov 2026 09:12:44 GMT\r\n"
    b"Connection: keep-alive\r\n"
    b'ETag: "6564a1fc-bc55"\r\n'
    b"Cache-Control: public, max-age=300\r\n"
    b"Vary: Accept-Encoding\r\n"
    b"Accept-Ranges: bytes\r\n"
    b"X-Content-Type-Options: nosniff\r\n"
    b"Strict-Transport-Security: max-age=31536000\r\n"
    b"\r\n"
)


def test_find_head_end(benchmark):
    buf = BROWSER_REQUEST + b"x" * 512  # the head followed by the start of a pipelined request
    assert benchmark(find_head_end, buf) == len(BROWSER_REQUEST)


def test_parse_request(benchmark):
    req = benchmark(parse_request, BROWSER_REQUEST)
    assert req.method == b"GET" and req.keep_alive and len(req.headers) == 17


def test_parse_response(benchmark):
    resp = benchmark(parse_response, ORIGIN_RESPONSE, b"GET")
    assert resp.status == 200 and resp.keep_alive and len(resp.headers) == 12


def test_forward_request_head(benchmark):
    req = parse_request(BROWSER_REQUEST)
    out = benchmark(forward_request_head, req, "192.0.2.10")
    assert out.startswith(b"GET /products/") and b"X-Forwarded-For: 192.0.2.10\r\n" in out
    assert b"Connection:" not in out


def test_forward_response_head(benchmark):
    resp = parse_response(ORIGIN_RESPONSE, b"GET")
    out = benchmark(forward_response_head, resp, b"1.1", True)
    assert out.startswith(b"HTTP/1.1 200 OK\r\n") and b"Content-Length: 48213\r\n" in out
    assert b"Connection:" not in out


def test_request_head_path(benchmark):
    """Everything splicer does in Python with the heads of one keep-alive GET: find and parse
    the request head, rewrite it, parse the response head, rewrite it."""
    def one_request() -> tuple[bytes, bytes]:
        n = find_head_end(BROWSER_REQUEST)
        req = parse_request(BROWSER_REQUEST[:n])
        up = forward_request_head(req, "192.0.2.10")
        resp = parse_response(ORIGIN_RESPONSE, req.method)
        down = forward_response_head(resp, req.version, req.keep_alive and resp.keep_alive)
        return up, down

    up, down = benchmark(one_request)
    assert up.startswith(b"GET ") and down.startswith(b"HTTP/1.1 200 ")


def _busy(balancer, n: int):
    """Give the servers uneven weights and active connection counts, as in a running farm."""
    for i in range(n):
        balancer.weights[i] = 1 + i % 3
        balancer.active[i] = (7 * i) % 5
    return balancer


@pytest.mark.parametrize("servers", [2, 16])
@pytest.mark.parametrize("algo", [RoundRobin, LeastConn], ids=["roundrobin", "leastconn"])
def test_balance_pick(benchmark, algo, servers):
    b = _busy(algo([1] * servers), servers)
    picked = benchmark(b.pick)
    assert picked is not None and 0 <= picked < servers


@pytest.mark.parametrize("servers", [2, 16])
@pytest.mark.parametrize("algo", [RoundRobin, LeastConn], ids=["roundrobin", "leastconn"])
def test_balance_request_cycle(benchmark, algo, servers):
    """pick + take_conn + drop_conn: the balancer's whole share of one request."""
    b = _busy(algo([1] * servers), servers)

    def cycle() -> int:
        i = b.pick()
        b.take_conn(i)
        b.drop_conn(i)
        return i

    assert 0 <= benchmark(cycle) < servers
