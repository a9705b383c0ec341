"""Config keywords of balancing and servers: balance forms, hash-type, hash-balance-factor,
option allbackups, default-server, backup, slowstart, maxqueue, weight; exact errors."""
import textwrap

import pytest

from splicer.config import loads
from splicer.config.model import Balance, HashType
from splicer.errors import ConfigErrors

FRONT = """
frontend fe
    mode http
    bind :80
    default_backend be
"""


def backend(body: str, mode: str = "http", defaults: str = ""):
    text = (f"defaults\n    mode {mode}\n" + textwrap.indent(textwrap.dedent(defaults), "    ")
            + FRONT.replace("mode http", f"mode {mode}") + "backend be\n"
            + textwrap.indent(textwrap.dedent(body), "    "))
    return loads(text, "site.cfg", env={})


def errors_of(body: str, defaults: str = ""):
    with pytest.raises(ConfigErrors) as info:
        backend(body, defaults=defaults)
    return [str(e) for e in info.value.errors]


S = "supported: roundrobin, static-rr, leastconn, first, source, uri, url_param, hdr(<name>), random"
L = 9  # the line of the first statement of `body`


@pytest.mark.parametrize("line, balance, args", [
    ("balance roundrobin", "roundrobin", Balance("roundrobin")),
    ("balance static-rr", "static-rr", Balance("static-rr")),
    ("balance leastconn", "leastconn", Balance("leastconn")),
    ("balance first", "first", Balance("first")),
    ("balance source", "source", Balance("source")),
    ("balance uri", "uri", Balance("uri")),
    ("balance uri len 12 depth 3 whole path-only", "uri",
     Balance("uri", uri_len=12, uri_depth=3, uri_whole=True, uri_path_only=True)),
    ("balance url_param userid", "url_param", Balance("url_param", param="userid")),
    ("balance hdr(Host)", "hdr", Balance("hdr", param="Host")),
    ("balance hdr(host) use_domain_only", "hdr", Balance("hdr", param="host", use_domain_only=True)),
    ("balance random", "random", Balance("random", draws=2)),
    ("balance random()", "random", Balance("random", draws=2)),
    ("balance random(3)", "random", Balance("random", draws=3)),
])
def test_balance_forms(line, balance, args):
    be = backend(line + "\nserver s1 127.0.0.1:1\n").backends["be"]
    assert (be.balance, be.balance_args) == (balance, args)


@pytest.mark.parametrize("line, message", [
    ("balance", f"'balance' expects an algorithm ({S})"),
    ("balance roundrobn", "unknown balance algorithm 'roundrobn'; did you mean 'roundrobin'?"),
    ("balance source x", "'balance source' cannot handle unexpected argument 'x'"),
    ("balance uri len 0", "'balance uri len' must be between 1 and 2147483647, got 0"),
    ("balance uri depth", "'balance uri': 'depth' expects a positive integer"),
    ("balance uri hole", "'balance uri' only accepts 'len', 'depth', 'path-only' and 'whole' "
                         "(got 'hole'); did you mean 'whole'?"),
    ("balance url_param", "'balance url_param' expects a URL parameter name"),
    ("balance url_param id check_post",
     "'balance url_param': 'check_post' (a parameter in the request body) is not supported"),
    ("balance url_param id 64", "'balance url_param' only accepts the 'check_post' modifier (got '64')"),
    ("balance hdr()", "'balance hdr(<name>)' expects a header field name, e.g. 'hdr(host)'"),
    ("balance hdr(host", "'balance hdr(<name>)' expects a header field name, e.g. 'hdr(host)'"),
    ("balance hdr(a/b)", "'balance hdr()': invalid header field name 'a/b'"),
    ("balance hdr(host) domain", "'balance hdr(host)' only accepts the 'use_domain_only' modifier (got 'domain')"),
    ("balance random(0)", "'balance random': the number of draws must be at least 1, got 0"),
    ("balance random(3000000000)", "'balance random': the number of draws must be at most 2147483647, got 3000000000"),
    ("balance random(x)", "'balance random': the number of draws must be an integer, got 'x'"),
    ("balance random(2", "'balance random(2': missing closing parenthesis"),
    ("balance hash req.cookie(id)", f"balance algorithm 'hash' is not supported ({S})"),
    ("hash-type", "'hash-type' expects 'map-based' or 'consistent'"),
    ("hash-type consistant", "'hash-type' only supports 'consistent' and 'map-based' (got 'consistant'); "
                             "did you mean 'consistent'?"),
    ("hash-type consistent md5", "'hash-type' only supports the hash functions 'sdbm', 'djb2', 'wt6' and "
                                 "'crc32' (got 'md5')"),
    ("hash-type consistent none", "'hash-type': function 'none' (the key used as a number) is not supported"),
    ("hash-type map-based sdbm avalanch", "'hash-type' only supports 'avalanche' as a modifier (got 'avalanch')"),
    ("hash-type map-based sdbm avalanche x", "'hash-type' cannot handle unexpected argument 'x'"),
    ("hash-balance-factor", "'hash-balance-factor' expects an integer argument"),
    ("hash-balance-factor 100", "'hash-balance-factor' must be 0 or greater than 100, got 100"),
    ("hash-balance-factor x", "'hash-balance-factor' expects an integer, got 'x'"),
    ("option allbackups now", "'option allbackups' cannot handle unexpected argument 'now'"),
    ("default-server", "'default-server' expects at least one server option"),
    ("default-server weight 257", "default-server: 'weight' must be between 0 and 256, got 257"),
    ("default-server wieght 2", "default-server: unknown option 'wieght'; did you mean 'weight'?"),
    ("server s2 127.0.0.1:2 slowstart 3x",
     "server 's2': 'slowstart': invalid time '3x': unknown unit 'x' (expected us, ms, s, m, h or d)"),
    ("server s2 127.0.0.1:2 maxqueue -1", "server 's2': 'maxqueue' expects an integer, got '-1'"),
    ("server s2 127.0.0.1:2 maxqueue", "server 's2': 'maxqueue' expects a value"),
    ("server s2 127.0.0.1:2 weight 300", "server 's2': 'weight' must be between 0 and 256, got 300"),
    ("server s2 127.0.0.1:2 bakup", "server 's2': unknown option 'bakup'; did you mean 'backup'?"),
])
def test_errors(line, message):
    assert errors_of(line + "\nserver s1 127.0.0.1:1\n") == [f"site.cfg:{L}: {message}"]


def test_every_error_of_the_section_is_reported():
    assert errors_of("balance uri len x\nhash-type foo\nserver s1 127.0.0.1:1 weight 999\n") == [
        f"site.cfg:{L}: 'balance uri len' expects an integer, got 'x'",
        f"site.cfg:{L + 1}: 'hash-type' only supports 'consistent' and 'map-based' (got 'foo')",
        f"site.cfg:{L + 2}: server 's1': 'weight' must be between 0 and 256, got 999"]


def test_frontend_refuses_the_backend_keywords():
    with pytest.raises(ConfigErrors) as info:
        loads("frontend fe\n    bind :80\n    hash-type consistent\n    default_backend be\n"
              "backend be\n    server s 127.0.0.1:1\n", "site.cfg", env={})
    assert [str(e) for e in info.value.errors] == [
        "site.cfg:3: 'hash-type' is not allowed in frontend 'fe' (allowed in: defaults, listen, backend)"]


@pytest.mark.parametrize("line, expected", [
    ("", HashType("map-based", "sdbm", False)),                    # haproxy's default
    ("hash-type map-based", HashType("map-based", "sdbm", False)),
    ("hash-type consistent", HashType("consistent", "sdbm", True)),  # consistent alone adds avalanche
    ("hash-type consistent djb2", HashType("consistent", "djb2", False)),
    ("hash-type map-based crc32 avalanche", HashType("map-based", "crc32", True)),
    ("hash-type consistent wt6", HashType("consistent", "wt6", False)),
])
def test_hash_type(line, expected):
    assert backend(line + "\nserver s1 127.0.0.1:1\n").backends["be"].hash_type == expected


def test_hash_settings_and_allbackups_are_inherited_from_defaults():
    be = backend("server s1 127.0.0.1:1\n", defaults="""\
        balance uri whole
        hash-type consistent
        hash-balance-factor 125
        option allbackups
        """).backends["be"]
    assert (be.balance, be.balance_args.uri_whole, be.hash_type.method, be.hash_balance_factor,
            be.allbackups) == ("uri", True, "consistent", 125, True)
    be = backend("no option allbackups\nserver s1 127.0.0.1:1\n", defaults="option allbackups\n").backends["be"]
    assert be.allbackups is False


def test_server_options_backup_slowstart_maxqueue():
    (s,) = backend("server s1 127.0.0.1:1 backup slowstart 30s maxqueue 50 weight 256\n").backends["be"].servers
    assert (s.backup, s.slowstart, s.maxqueue, s.weight) == (True, 30.0, 50, 256)
    (s,) = backend("server s1 127.0.0.1:1 slowstart 1500\n").backends["be"].servers
    assert s.slowstart == 1.5  # milliseconds by default, as every haproxy time


def test_default_server_applies_to_the_servers_after_it():
    servers = backend("""\
        server a 127.0.0.1:1
        default-server weight 7 maxconn 20
        server b 127.0.0.1:2
        server c 127.0.0.1:3 weight 2
        default-server backup
        server d 127.0.0.1:4
        server e 127.0.0.1:5 no-backup
        """, defaults="default-server slowstart 10s inter 5s\n").backends["be"].servers
    got = [(s.name, s.weight, s.maxconn, s.backup, s.slowstart, s.inter) for s in servers]
    assert got == [("a", 1, 0, False, 10.0, 5.0), ("b", 7, 20, False, 10.0, 5.0),
                   ("c", 2, 20, False, 10.0, 5.0), ("d", 7, 20, True, 10.0, 5.0),
                   ("e", 7, 20, False, 10.0, 5.0)]


def test_default_server_of_one_backend_does_not_reach_another():
    cfg = loads("defaults\n    mode http\n" + FRONT + "backend be\n    default-server weight 9\n"
                "    server a 127.0.0.1:1\nbackend other\n    server b 127.0.0.1:2\n", "site.cfg", env={})
    assert [s.weight for s in cfg.backends["be"].servers] == [9]
    assert [s.weight for s in cfg.backends["other"].servers] == [1]


def test_enabled_and_no_check_undo_default_server_flags():
    (s,) = backend("default-server disabled check\nserver a 127.0.0.1:1 enabled no-check\n").backends["be"].servers
    assert (s.disabled, s.check) == (False, False)


def test_layer7_hash_in_tcp_mode_falls_back_to_roundrobin_with_a_warning():
    cfg = backend("balance url_param id\nserver s1 127.0.0.1:1\n", mode="tcp")
    assert cfg.backends["be"].balance == "roundrobin"
    assert cfg.warnings == (f"site.cfg:{L}: backend 'be': 'balance url_param' needs mode http; "
                            "falling back to roundrobin",)
    assert backend("balance source\nserver s1 127.0.0.1:1\n", mode="tcp").backends["be"].balance == "source"


def test_a_haproxy_web_farm_config_is_accepted_unchanged():
    cfg = loads(textwrap.dedent("""\
        global
            maxconn 2000
        defaults
            mode http
            timeout connect 5s
            timeout client 30s
            timeout server 30s
            timeout queue 10s
            default-server inter 2s rise 2 fall 3 slowstart 30s maxconn 200 maxqueue 50
        frontend www
            bind :8080
            default_backend static
        backend static
            balance uri depth 2
            hash-type consistent
            hash-balance-factor 150
            server s1 10.0.0.1:80 check weight 10
            server s2 10.0.0.2:80 check weight 10
            server spare 10.0.0.9:80 check backup
        backend api
            balance hdr(Host) use_domain_only
            hash-type map-based djb2 avalanche
            option allbackups
            server a1 10.0.1.1:80 check
            server a2 10.0.1.2:80 check
            server b1 10.0.1.8:80 check backup
            server b2 10.0.1.9:80 check backup
        backend users
            balance url_param uid
            server u1 10.0.2.1:80 check
        backend batch
            balance first
            server f1 10.0.3.1:80 maxconn 10
            server f2 10.0.3.2:80 maxconn 10
        backend rnd
            balance random(3)
            server r1 10.0.4.1:80
        backend clients
            balance source
            server c1 10.0.5.1:80
        backend legacy
            balance static-rr
            server l1 10.0.6.1:80 weight 0
        """), "farm.cfg", env={})
    assert cfg.warnings == ()
    be = cfg.backends
    assert [b.balance for b in be.values()] == ["uri", "hdr", "url_param", "first", "random", "source",
                                               "static-rr"]
    s1 = be["static"].servers[0]
    assert (s1.weight, s1.maxconn, s1.maxqueue, s1.slowstart, s1.check, s1.inter) == (10, 200, 50, 30.0, True, 2.0)
    assert [s.backup for s in be["api"].servers] == [False, False, True, True]
