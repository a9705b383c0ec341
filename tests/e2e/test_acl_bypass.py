"""ACL bypass spellings through the real proxy: a real `splicer -c` with
``http-request deny if { path_beg /admin }`` and a Host-based deny, and raw-socket clients
sending each spelling of the public ACL-bypass reports against proxies. Each one gets 403
(the rule still matches) or 400 (refused as ambiguous) and the origin never sees it: the
origin's record holds exactly the requests that were meant to pass, with the target each
was forwarded with (haproxy 4.2 "http-request normalize-uri"; RFC 9112 section 3.2)."""
from __future__ import annotations

import pytest

from tests.e2e.helpers import RULES_DEFAULTS, KeepAliveOrigin, exchange, free_port

DEFAULTS = RULES_DEFAULTS

DENY = """
    http-request deny if { path_beg /admin }
    http-request deny if { hdr(host) -i admin.example.com }
"""

NORMALIZE = """
    http-request normalize-uri percent-decode-unreserved
    http-request normalize-uri path-strip-dot
    http-request normalize-uri path-strip-dotdot full
    http-request normalize-uri path-merge-slashes
    http-request normalize-uri fragment-strip
    http-request normalize-uri query-sort-by-name
    http-request deny if { path_beg /admin }
"""


def origin() -> KeepAliveOrigin:
    def script(c, r, head):
        return b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", False
    return KeepAliveOrigin(script)


@pytest.fixture
def proxy(start_splicer):
    """Frontends on one origin: `rules` (the two denies), `plain` (no rule at all: the
    path without per-request decisions), `norm` (normalize-uri rules, then the deny),
    `lax` (no rule, option accept-invalid-http-request)."""
    o = origin()
    ports = {name: free_port() for name in ("rules", "plain", "norm", "lax", "nocase")}
    sp = start_splicer(DEFAULTS + f"""
frontend rules
    bind 127.0.0.1:{ports['rules']}
{DENY}
    default_backend app
frontend plain
    bind 127.0.0.1:{ports['plain']}
    default_backend app
frontend norm
    bind 127.0.0.1:{ports['norm']}
{NORMALIZE}
    default_backend app
frontend nocase
    bind 127.0.0.1:{ports['nocase']}
    http-request deny if {{ hdr(host) admin.example.com }}
    http-request deny if {{ hdr_end(host) .internal }}
    default_backend app
frontend lax
    bind 127.0.0.1:{ports['lax']}
    option accept-invalid-http-request
    default_backend app
backend app
    server o 127.0.0.1:{o.port}
""", list(ports.values()))
    yield sp, ports, o
    o.close()


def status_line(resp: bytes) -> bytes:
    return resp.split(b"\r\n", 1)[0]


def forwarded(o: KeepAliveOrigin) -> list[bytes]:
    """The request lines the origin received, in order."""
    return [h.split(b"\r\n", 1)[0] for _, _, h in o.requests]


def get(target: bytes, host: bytes = b"www.example.com") -> bytes:
    return b"GET %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n" % (target, host)


FORBIDDEN, BAD = b"HTTP/1.1 403 Forbidden", b"HTTP/1.1 400 Bad Request"

PATH_SPELLINGS = [
    (b"/admin", FORBIDDEN),
    (b"/admin/x", FORBIDDEN),
    (b"//admin", FORBIDDEN),
    (b"///admin/x", FORBIDDEN),
    (b"/./admin", BAD),
    (b"/x/../admin", BAD),
    (b"/x/..", BAD),
    (b"/%2e/admin", BAD),
    (b"/x/%2e%2e/admin", BAD),
    (b"/x/%2E%2E/admin", BAD),
    (b"/x/.%2e/admin", BAD),
    (b"/%61dmin", FORBIDDEN),
    (b"/%61%64%6D%69%6E/x", FORBIDDEN),
    (b"/%2fadmin", BAD),
    (b"/%2Fadmin", BAD),
    (b"/x%2f..%2fadmin", BAD),
    (b"/%252fadmin", BAD),
    (b"/x/%252e%252e/admin", BAD),
    (b"/admin;jsessionid=1", FORBIDDEN),
    (b"/x/..;/admin", BAD),
    (b"/;/admin", BAD),
    (b"/\\admin", BAD),
    (b"/x\\..\\admin", BAD),
    (b"/%5cadmin", BAD),
    (b"/admin#x", FORBIDDEN),
    (b"/x#/../admin", BAD),
    (b"/public#frag", BAD),
]


def test_path_spellings_are_denied_or_refused(proxy):
    sp, ports, o = proxy
    for target, want in PATH_SPELLINGS:
        assert status_line(exchange(ports["rules"], get(target))) == want, target
    assert forwarded(o) == []
    assert status_line(exchange(ports["rules"], get(b"/public"))) == b"HTTP/1.1 200 OK"
    assert forwarded(o) == [b"GET /public HTTP/1.1"]
    fe = sp.stats()["frontends"]["rules"]
    denied = sum(1 for _, w in PATH_SPELLINGS if w == FORBIDDEN)
    assert (fe["req_tot"], fe["hrsp_4xx"], fe["dreq"]) == (len(PATH_SPELLINGS) + 1, len(PATH_SPELLINGS),
                                                         len(PATH_SPELLINGS))
    assert denied == 8


HOST_SPELLINGS = [
    get(b"/", b"admin.example.com"),
    get(b"/", b"ADMIN.Example.COM"),
    get(b"/", b"admin.example.com."),
    get(b"/", b"admin.example.com:80"),
    get(b"/", b"admin.example.com.:8080"),
    b"GET / HTTP/1.1\r\nHost:\tadmin.example.com\t\r\nConnection: close\r\n\r\n",
    b"GET / HTTP/1.1\r\nHost:   admin.example.com  \r\nConnection: close\r\n\r\n",
    b"GET http://admin.example.com/ HTTP/1.1\r\nHost: admin.example.com\r\nConnection: close\r\n\r\n",
    b"GET http://www.example.com//admin HTTP/1.1\r\nHost: www.example.com\r\nConnection: close\r\n\r\n",
    b"GET http://admin.example.com/ HTTP/1.0\r\n\r\n",
]

REFUSED_HEADS = [
    # absolute-form whose authority differs from Host
    b"GET http://admin.example.com/ HTTP/1.1\r\nHost: www.example.com\r\nConnection: close\r\n\r\n",
    b"GET http://www.example.com/ HTTP/1.1\r\nHost: admin.example.com.\r\nConnection: close\r\n\r\n",
    # duplicate Host, either order (RFC 9112 section 3.2)
    b"GET / HTTP/1.1\r\nHost: www.example.com\r\nHost: admin.example.com\r\nConnection: close\r\n\r\n",
    b"GET / HTTP/1.1\r\nHost: admin.example.com\r\nHost: www.example.com\r\nConnection: close\r\n\r\n",
    # tabs and spaces in the request line
    b"GET /admin\t HTTP/1.1\r\nHost: www.example.com\r\nConnection: close\r\n\r\n",
    b"GET\t/admin HTTP/1.1\r\nHost: www.example.com\r\nConnection: close\r\n\r\n",
    b"GET /x /admin HTTP/1.1\r\nHost: www.example.com\r\nConnection: close\r\n\r\n",
    b"GET  /admin HTTP/1.1\r\nHost: www.example.com\r\nConnection: close\r\n\r\n",
    # a Host list, a Host with a space inside
    b"GET / HTTP/1.1\r\nHost: www.example.com, admin.example.com\r\nConnection: close\r\n\r\n",
    b"GET / HTTP/1.1\r\nHost: admin.example.com www\r\nConnection: close\r\n\r\n",
    # HTTP/1.1 without Host
    b"GET /admin HTTP/1.1\r\nConnection: close\r\n\r\n",
]


def test_host_spellings_are_denied_or_refused(proxy):
    sp, ports, o = proxy
    for head in HOST_SPELLINGS:
        assert status_line(exchange(ports["rules"], head)) == FORBIDDEN, head
    for head in REFUSED_HEADS:
        assert status_line(exchange(ports["rules"], head)) == BAD, head
    assert forwarded(o) == []
    assert status_line(exchange(ports["rules"], get(b"/", b"www.example.com:80"))) == b"HTTP/1.1 200 OK"
    assert forwarded(o) == [b"GET / HTTP/1.1"]


def test_host_rules_without_ignore_case_still_match_every_case(proxy):
    """Host names ignore case (RFC 3986 section 3.2.2): a Host ACL written without -i is
    not bypassed by capitals (where haproxy would let them through)."""
    sp, ports, o = proxy
    for head in HOST_SPELLINGS:
        if b"//admin" not in head:  # (that one is the path rule's)
            assert status_line(exchange(ports["nocase"], head)) == FORBIDDEN, head
    for host in (b"db.INTERNAL", b"db.Internal.:8080", b"x.internal"):
        assert status_line(exchange(ports["nocase"], get(b"/", host))) == FORBIDDEN, host
    assert forwarded(o) == []
    assert status_line(exchange(ports["nocase"], get(b"/", b"WWW.example.com:80"))) == b"HTTP/1.1 200 OK"
    assert forwarded(o) == [b"GET / HTTP/1.1"]


def test_a_frontend_without_rules_refuses_ambiguous_targets(proxy):
    sp, ports, o = proxy
    for target, want in PATH_SPELLINGS:
        if want == BAD:
            assert status_line(exchange(ports["plain"], get(target))) == BAD, target
    assert forwarded(o) == []
    for target in (b"//admin", b"/%61dmin", b"/.well-known/x", b"/a..b/c."):
        assert status_line(exchange(ports["plain"], get(target))) == b"HTTP/1.1 200 OK"
    # without a normalize-uri rule the target goes as the client spelt it
    assert forwarded(o) == [b"GET //admin HTTP/1.1", b"GET /%61dmin HTTP/1.1",
                            b"GET /.well-known/x HTTP/1.1", b"GET /a..b/c. HTTP/1.1"]


def test_normalize_uri_rules_rewrite_the_forwarded_target(proxy):
    sp, ports, o = proxy
    for target in (b"/x/../admin", b"/./admin", b"/x/%2e%2e/admin", b"//x/..//admin", b"/../admin",
                   b"/%61dmin", b"/admin#x"):
        assert status_line(exchange(ports["norm"], get(target))) == FORBIDDEN, target
    for target in (b"/%2fadmin", b"/x\\admin", b"/x/%252e%252e/admin", b"/x/..;/admin"):
        assert status_line(exchange(ports["norm"], get(target))) == BAD, target
    assert forwarded(o) == []
    for target in (b"/a/./b/../c", b"//p%7Eq//r", b"/s?z=1&b=2&a=3", b"/t#frag", b"/../u"):
        assert status_line(exchange(ports["norm"], get(target))) == b"HTTP/1.1 200 OK", target
    assert forwarded(o) == [b"GET /a/c HTTP/1.1", b"GET /p~q/r HTTP/1.1", b"GET /s?a=3&b=2&z=1 HTTP/1.1",
                            b"GET /t HTTP/1.1", b"GET /u HTTP/1.1"]


def test_accept_invalid_http_request_forwards_ambiguous_targets(proxy):
    sp, ports, o = proxy
    for target in (b"/a%2fb", b"/x/../y", b"/p#f", b"/q\\r"):
        assert status_line(exchange(ports["lax"], get(target))) == b"HTTP/1.1 200 OK", target
    assert forwarded(o) == [b"GET /a%2fb HTTP/1.1", b"GET /x/../y HTTP/1.1", b"GET /p#f HTTP/1.1",
                            b"GET /q\\r HTTP/1.1"]
