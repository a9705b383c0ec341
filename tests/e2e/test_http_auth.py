"""userlist, http_auth / http_auth_group and http-request auth on the real proxy (haproxy
12.2, 7.3.6, 4.2 "http-request auth"): the 401 challenge byte for byte, valid, invalid and
malformed Basic credentials, group checks routing to a backend, a keep-alive client whose
credentials are verified once, and the LR / intercepted accounting."""
from __future__ import annotations

import base64
import socket

from tests.e2e.helpers import RULES_DEFAULTS, exchange, free_port, named_origin, read_response

# crypt(3) hashes made by the system's libcrypt (an implementation independent of the one
# splicer verifies with): the password of each is "secret"
SHA512 = "$6$saltsalt$TVLlQcbpFVof5W3Yz4DTP6gRstiNuHwwTt6GLc1E5n0U0aDehy0S5knV8wiOQSpT0Y77vwPZN.Pq.H91p5hVO1"
BCRYPT = "$2b$04$abcdefghijklmnopqrstuu2r9OfJnfCsdneAXAGHnS4UpFFP8WIrW"

USERLIST = f"""
userlist L1
    group admins users tiger
    group staff
    user tiger password {SHA512} groups staff
    user scott insecure-password 'el:gato'
    user xdb password {BCRYPT} groups staff
"""

CHALLENGE_BODY = (b"<html><body><h1>401 Unauthorized</h1>\n"
                  b"You need a valid user and password to access this content.\n</body></html>\n")


def basic(user: bytes, password: bytes) -> bytes:
    return b"Authorization: Basic " + base64.b64encode(user + b":" + password) + b"\r\n"


def get(port: int, extra: bytes = b"", target: bytes = b"/") -> bytes:
    return exchange(port, b"GET %s HTTP/1.1\r\nHost: www.example\r\nConnection: close\r\n%s\r\n"
                    % (target, extra))


def start(start_splicer, frontend: str):
    app, admin = named_origin(b"app"), named_origin(b"admin")
    port = free_port()
    sp = start_splicer(RULES_DEFAULTS + USERLIST + f"""
frontend www
    bind 127.0.0.1:{port}
{frontend}
    default_backend app
backend app
    server o 127.0.0.1:{app.port}
backend admin
    server o 127.0.0.1:{admin.port}
""", [port])
    return sp, port, app, admin


def test_auth_challenge_exact_bytes_and_default_realm(start_splicer):
    sp, port, app, admin = start(start_splicer, """
    acl ok http_auth(L1)
    http-request auth if { path /default } !ok
    http-request auth realm "Secret \\"zone\\"" unless ok
""")
    try:
        assert get(port, target=b"/default") == (
            b"HTTP/1.1 401 Unauthorized\r\ncontent-length: 112\r\ncontent-type: text/html\r\n"
            b"cache-control: no-cache\r\nwww-authenticate: Basic realm=\"www\"\r\n"
            b"connection: close\r\n\r\n" + CHALLENGE_BODY)
        assert get(port).split(b"\r\n")[4] == b'www-authenticate: Basic realm="Secret \\"zone\\""'
        assert not app.requests
        st = sp.stats()["frontends"]["www"]
        assert (st["req_tot"], st["intercepted"], st["dreq"], st["hrsp_4xx"]) == (2, 2, 0, 2)
        assert st["terms"] == {"LR": 2}
    finally:
        app.close()
        admin.close()


def test_valid_invalid_and_malformed_credentials(start_splicer):
    sp, port, app, admin = start(start_splicer, """
    http-request auth realm app unless { http_auth(L1) }
""")
    try:
        for cred in (basic(b"tiger", b"secret"), basic(b"scott", b"el:gato"), basic(b"xdb", b"secret"),
                     b"Authorization: bAsIc " + base64.b64encode(b"scott:el:gato") + b"\r\n"):
            assert get(port, cred).endswith(b"\r\n\r\napp"), cred
        refused = [
            basic(b"tiger", b"wrong"), basic(b"scott", b"el"), basic(b"nobody", b"secret"),
            basic(b"tiger", b"secret\0"), basic(b"Tiger", b"secret"),
            b"Authorization: Basic !!!notbase64\r\n",
            b"Authorization: Basic " + base64.b64encode(b"no-colon-here") + b"\r\n",
            b"Authorization: Basic dGlnZXI6c2VjcmV0\r\n"[:-3] + b"\r\n",   # truncated base64
            b"Authorization: Bearer dGlnZXI6c2VjcmV0\r\n",
            b"Authorization: Basic\r\n",
            basic(b"tiger", b"secret") + basic(b"tiger", b"secret"),        # two fields: ambiguous
            b"",
        ]
        for cred in refused:
            got = get(port, cred)
            assert got.startswith(b"HTTP/1.1 401 Unauthorized\r\n"), (cred, got)
            assert b'www-authenticate: Basic realm="app"\r\n' in got
        assert len(app.requests) == 4
        st = sp.stats()["frontends"]["www"]
        assert (st["hrsp_2xx"], st["hrsp_4xx"], st["hrsp_5xx"], st["intercepted"]) == (4, len(refused), 0,
                                                                                       len(refused))
    finally:
        app.close()
        admin.close()


def test_group_selects_the_backend(start_splicer):
    sp, port, app, admin = start(start_splicer, """
    acl is_admin http_auth_group(L1) admins
    use_backend admin if is_admin
    use_backend admin if { http_auth_group(L1) staff } { path_beg /staff }
    http-request auth realm app unless { http_auth(L1) }
""")
    try:
        assert get(port, basic(b"tiger", b"secret")).endswith(b"\r\n\r\nadmin")          # group line
        assert get(port, basic(b"xdb", b"secret")).endswith(b"\r\n\r\napp")              # staff only
        assert get(port, basic(b"xdb", b"secret"), b"/staff/x").endswith(b"\r\n\r\nadmin")
        assert get(port, basic(b"scott", b"el:gato"), b"/staff/x").endswith(b"\r\n\r\napp")  # no group
        assert get(port, basic(b"tiger", b"nope")).startswith(b"HTTP/1.1 401 ")
        assert get(port).startswith(b"HTTP/1.1 401 ")
        st = sp.stats()
        assert (st["backends"]["admin"]["req_tot"], st["backends"]["app"]["req_tot"]) == (2, 2)
    finally:
        app.close()
        admin.close()


def test_keep_alive_client_is_verified_once_and_pipelined_requests_keep_order(start_splicer):
    sp, port, app, admin = start(start_splicer, """
    use_backend admin if { http_auth_group(L1) admins }
    http-request auth unless { http_auth(L1) }
""")
    try:
        good, bad = basic(b"tiger", b"secret"), basic(b"tiger", b"bad")
        with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
            for _ in range(5):
                s.sendall(b"GET / HTTP/1.1\r\nHost: www.example\r\n" + good + b"\r\n")
                head, body = read_response(s)
                assert head.startswith(b"HTTP/1.1 200 ") and body == b"admin"
            # pipelined: a good, a bad and a good one again, answered in order on one connection
            s.sendall(b"".join(b"GET /%d HTTP/1.1\r\nHost: www.example\r\n%s\r\n" % (i, c)
                               for i, c in enumerate((good, bad, good))))
            answers = [read_response(s) for _ in range(3)]
            assert [h.split(b"\r\n")[0] for h, _ in answers] == [
                b"HTTP/1.1 200 OK", b"HTTP/1.1 401 Unauthorized", b"HTTP/1.1 200 OK"]
            assert answers[1][1] == CHALLENGE_BODY
        st = sp.stats()
        assert st["backends"]["admin"]["req_tot"] == 7
        assert st["frontends"]["www"]["intercepted"] == 1
        # one sha512-crypt computation for the good password, one for the bad one: every
        # other request was decided from the verdict cache
        assert st["auth"] == {"verified": 2, "cached": 2}
    finally:
        app.close()
        admin.close()


def test_auth_rule_in_a_backend_uses_its_name_and_the_401_errorfile(start_splicer, tmp_path):
    page = (b"HTTP/1.1 401 Unauthorized\r\nContent-Length: 5\r\nWWW-Authenticate: Bearer\r\n"
            b"Connection: close\r\n\r\nlogin")
    (tmp_path / "401.http").write_bytes(page)
    app = named_origin(b"app")
    port = free_port()
    start_splicer(RULES_DEFAULTS + USERLIST + f"""
frontend www
    bind 127.0.0.1:{port}
    default_backend app
backend app
    errorfile 401 {tmp_path / '401.http'}
    http-request auth unless {{ http_auth(L1) }}
    server o 127.0.0.1:{app.port}
""", [port])
    try:
        assert get(port) == (b"HTTP/1.1 401 Unauthorized\r\nContent-Length: 5\r\nConnection: close\r\n"
                             b"www-authenticate: Basic realm=\"app\"\r\n\r\nlogin")
        assert get(port, basic(b"scott", b"el:gato")).endswith(b"\r\n\r\napp")
    finally:
        app.close()


def test_bad_userlist_lines_are_reported_with_file_and_line(tmp_path):
    import subprocess

    from tests.e2e.helpers import splicer_command
    cfg = tmp_path / "site.cfg"
    cfg.write_text(
        "userlist L1\n"                                   # 1
        "    group admins users tiger,ghost\n"            # 2
        "    user tiger password $y$j9T$abc$def\n"        # 3
        "    user tiger insecure-password x groups ops\n"  # 4
        "defaults\n"                                      # 5
        "    mode http\n"                                 # 6
        "frontend www\n"                                  # 7
        "    bind 127.0.0.1:8080\n"                       # 8
        "    http-request auth realm\n"                   # 9
        "    http-request deny unless { http_auth(L2) }\n"  # 10
        "    default_backend web\n"                       # 11
        "backend web\n"                                   # 12
        "    timeout tarpit abc\n"                        # 13
        "    server s1 127.0.0.1:8081\n")                 # 14
    r = subprocess.run(splicer_command() + ["-c", str(cfg), "--check"], capture_output=True, text=True,
                       timeout=20)
    assert r.returncode == 1
    lines = [ln.removeprefix("splicer: ") for ln in r.stderr.splitlines()]
    for want in (
        f"{cfg}:3: userlist 'L1': user 'tiger': unsupported password hash scheme '$y$' (supported: "
        "$1$ md5-crypt, $5$ sha256-crypt, $6$ sha512-crypt, $2a$/$2b$/$2y$ bcrypt; or use 'insecure-password')",
        f"{cfg}:9: 'http-request auth': missing realm value",
        f"{cfg}:13: 'timeout tarpit': invalid time 'abc': expected digits followed by an optional unit "
        "(us, ms, s, m, h, d)",
    ):
        assert want in lines, (want, r.stderr)
    # the userlist's own line broke, so its references are checked once the file is fixed
    cfg.write_text(cfg.read_text().replace("password $y$j9T$abc$def", "insecure-password a")
                   .replace("    http-request auth realm\n", "    http-request auth realm r\n")
                   .replace("tarpit abc", "tarpit 1s"))
    r = subprocess.run(splicer_command() + ["-c", str(cfg), "--check"], capture_output=True, text=True,
                       timeout=20)
    lines = [ln.removeprefix("splicer: ") for ln in r.stderr.splitlines()]
    assert r.returncode == 1
    assert lines == [
        f"{cfg}:2: userlist 'L1': group 'admins' lists unknown user 'ghost'",
        f"{cfg}:4: userlist 'L1': duplicate user 'tiger' (first at line 3)",
        f"{cfg}:10: frontend 'www': 'http_auth(L2)': userlist 'L2' not found",
        f"configuration file {cfg} has 3 error(s)",
    ], r.stderr
