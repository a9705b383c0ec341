"""Dynamic use_backend names with converters on the real proxy (haproxy 4.2 "use_backend",
7.3.1 "map"): a map file next to the config routes each Host to its backend; a Host the map
does not know, or a name that is no backend, goes to the default_backend; field/regsub
shape the key. The origins count exactly what each received."""
from __future__ import annotations

from tests.e2e.helpers import RULES_DEFAULTS, exchange, free_port
from tests.e2e.helpers import named_origin as origin

DEFAULTS = RULES_DEFAULTS


def body(resp: bytes) -> bytes:
    return resp.partition(b"\r\n\r\n")[2]


def test_map_routes_every_host_to_its_backend(start_splicer, tmp_path):
    (tmp_path / "hosts.map").write_text("# Host -> backend\napi.example.com be_api\n"
                                        "static.example.com be_static\n" + "".join(
                                            f"h{i}.example.com be_api\n" for i in range(10000)))
    (tmp_path / "prefixes.map").write_text("/img/ be_static\n/ be_www\n")
    www, api, static = origin(b"www"), origin(b"api"), origin(b"static")
    port = free_port()
    start_splicer(DEFAULTS + f"""
frontend f
    bind 127.0.0.1:{port}
    acl from_map req.hdr(host),lower,field(1,:),map({tmp_path}/hosts.map) -m found
    use_backend %[req.hdr(host),lower,field(1,:),map({tmp_path}/hosts.map,be_www)] if from_map
    use_backend %[path,map_beg({tmp_path}/prefixes.map,be_www)] if {{ hdr(host) -i assets.example.com }}
    use_backend %[req.hdr(x-pool),regsub(^pool-,be_)] if {{ req.hdr(x-pool) -m found }}
    default_backend be_www
backend be_www
    server o 127.0.0.1:{www.port}
backend be_api
    server o 127.0.0.1:{api.port}
backend be_static
    server o 127.0.0.1:{static.port}
""", [port])
    try:
        cases = [
            (b"api.example.com", b"", b"/", b"api"),
            (b"API.Example.com:8080", b"", b"/", b"api"),
            (b"h9999.example.com", b"", b"/", b"api"),
            (b"static.example.com", b"", b"/", b"static"),
            (b"unknown.example.com", b"", b"/", b"www"),
            (b"assets.example.com", b"", b"/img/a.png", b"static"),
            (b"assets.example.com", b"", b"/css/a.css", b"www"),
            (b"x.example.com", b"X-Pool: pool-api\r\n", b"/", b"api"),
            (b"x.example.com", b"X-Pool: pool-nope\r\n", b"/", b"www"),   # no such backend: default
        ]
        for host, extra, target, want in cases:
            resp = exchange(port, b"GET %s HTTP/1.1\r\nHost: %s\r\n%sConnection: close\r\n\r\n"
                            % (target, host, extra))
            assert (resp.split(b"\r\n", 1)[0], body(resp)) == (b"HTTP/1.1 200 OK", want), host
        assert (len(www.requests), len(api.requests), len(static.requests)) == (3, 4, 2)
    finally:
        for o in (www, api, static):
            o.close()
