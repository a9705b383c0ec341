"""splicer.config.resolve: defaults inheritance, listen split, cross-section checks."""
import textwrap

import pytest

from splicer.config import (
    Backend,
    Bind,
    Config,
    ForwardFor,
    Frontend,
    Global,
    Server,
    Timeouts,
    loads,
)
from splicer.errors import ConfigErrors

SAMPLE = """\
# A site configuration as an operator would carry it over from haproxy.
global
    maxconn 20000
    nbthread 4
    tune.bufsize 32768
    tune.http.maxhdr 200
    tune.pipesize 1m
    tune.maxpipes 512
    daemon

defaults
    mode http
    maxconn 3000
    retries 2
    option forwardfor
    option splice-auto
    option redispatch
    timeout client 30s
    timeout http-request 10s
    timeout http-keep-alive 2000
    timeout connect 5s
    timeout server 1m
    timeout queue 500ms
    timeout tunnel 1h

frontend www
    bind :80,127.0.0.1:8080
    bind [::1]:8081
    maxconn 1000
    timeout client 1m
    default_backend app

backend app
    balance leastconn
    no option splice-auto
    option splice-request
    server web1 10.0.0.1:8080 weight 10 maxconn 100
    server web2 web2.internal:8080 weight 0 disabled
    server web3 [fd00::3]:8080 check

backend empty
    timeout server 0

defaults
    mode tcp
    timeout client 1d

listen db
    bind 10.0.0.5:5432
    option splice-response
    timeout connect 100us
    server pg1 10.0.1.1:5432
"""

HTTP_DEFAULTS_BACK = {"forwardfor": ForwardFor(), "redispatch": True, "retries": 2}


def test_sample_config_gives_exact_model():
    config = loads(SAMPLE, "site.cfg", env={})
    assert config == Config(
        path="site.cfg",
        global_=Global(maxconn=20000, nbthread=4, bufsize=32768, maxhdr=200,
                       pipesize=1048576, maxpipes=512),
        frontends=(
            Frontend(
                name="www", mode="http",
                binds=(Bind("", 80, "site.cfg", 27), Bind("127.0.0.1", 8080, "site.cfg", 27),
                       Bind("::1", 8081, "site.cfg", 28)),
                default_backend="app", maxconn=1000, forwardfor=ForwardFor(), splice_auto=True,
                timeouts=Timeouts(client=60.0, http_request=10.0, http_keep_alive=2.0),
                file="site.cfg", line=26),
            Frontend(
                name="db", mode="tcp", binds=(Bind("10.0.0.5", 5432, "site.cfg", 49),),
                default_backend="db", splice_response=True,
                timeouts=Timeouts(client=86400.0), file="site.cfg", line=48),
        ),
        backends={
            "app": Backend(
                name="app", mode="http", balance="leastconn",
                servers=(
                    Server("web1", "10.0.0.1", 8080, weight=10, maxconn=100,
                           file="site.cfg", line=37),
                    Server("web2", "web2.internal", 8080, weight=0, disabled=True,
                           file="site.cfg", line=38),
                    Server("web3", "fd00::3", 8080, check=True, file="site.cfg", line=39),
                ),
                splice_request=True, splice_auto=False, **HTTP_DEFAULTS_BACK,
                timeouts=Timeouts(connect=5.0, server=60.0, queue=0.5, tunnel=3600.0),
                file="site.cfg", line=33),
            "empty": Backend(
                name="empty", mode="http", servers=(), splice_auto=True, **HTTP_DEFAULTS_BACK,
                timeouts=Timeouts(connect=5.0, server=None, queue=0.5, tunnel=3600.0),
                file="site.cfg", line=41),
            "db": Backend(
                name="db", mode="tcp", balance="roundrobin",
                servers=(Server("pg1", "10.0.1.1", 5432, file="site.cfg", line=52),),
                splice_response=True, retries=3, redispatch=False,
                timeouts=Timeouts(connect=0.0001), file="site.cfg", line=48),
        },
        warnings=(
            "site.cfg:9: 'daemon' is accepted for haproxy compatibility and ignored",
        ),
    )
    assert list(config.backends) == ["app", "empty", "db"]


def cfg(text, env=None):
    return loads(textwrap.dedent(text), "site.cfg", env={} if env is None else env)


def errors_of(text):
    with pytest.raises(ConfigErrors) as info:
        cfg(text)
    return [str(e) for e in info.value.errors]


# --- inheritance ------------------------------------------------------------------------------

def test_without_defaults_haproxy_defaults_apply():
    config = cfg("""\
        frontend fe
            bind :80
            default_backend be
        backend be
        """)
    assert config.global_ == Global()
    assert config.frontends == (Frontend("fe", "tcp", (Bind("", 80, "site.cfg", 2),), "be",
                                         file="site.cfg", line=1),)
    assert config.backends == {"be": Backend("be", "tcp", file="site.cfg", line=4)}
    assert (config.backends["be"].balance, config.backends["be"].retries) == ("roundrobin", 3)


def test_later_defaults_section_starts_fresh():
    config = cfg("""\
        defaults
            mode http
            option forwardfor
            retries 7
            timeout connect 2s
        backend one
        defaults
            timeout server 9s
        backend two
        """)
    one, two = config.backends["one"], config.backends["two"]
    assert (one.mode, one.forwardfor, one.retries, one.timeouts) == (
        "http", ForwardFor(), 7, Timeouts(connect=2.0))
    assert (two.mode, two.forwardfor, two.retries, two.timeouts) == (
        "tcp", None, 3, Timeouts(server=9.0))


def test_section_settings_override_defaults_in_order():
    config = cfg("""\
        defaults
            balance leastconn
            retries 1
            option redispatch
            timeout server 10s
        backend be
            balance roundrobin
            no option redispatch
            option redispatch
            retries 5
            retries 6
            timeout server 0
        """)
    backend = config.backends["be"]
    assert (backend.balance, backend.retries, backend.redispatch, backend.timeouts.server) == (
        "roundrobin", 6, True, None)


def test_no_option_negates_inherited_options():
    config = cfg("""\
        defaults
            mode http
            option splice-auto
            option splice-request
            option splice-response
            option redispatch
        frontend fe
            bind :80
            default_backend be
            no option splice-request
        backend be
            no option splice-auto
            no option splice-response
            no option redispatch
        """)
    frontend, backend = config.frontends[0], config.backends["be"]
    assert (frontend.splice_auto, frontend.splice_request, frontend.splice_response) == (
        True, False, True)
    assert (backend.splice_auto, backend.splice_request, backend.splice_response,
            backend.redispatch) == (False, True, False, False)


def test_no_option_in_defaults_cancels_an_earlier_line_of_the_same_defaults():
    config = cfg("""\
        defaults
            option splice-auto
            no option splice-auto
        backend be
        """)
    assert config.backends["be"].splice_auto is False


def test_options_are_stored_on_both_sides_where_set():
    config = cfg("""\
        defaults
            mode http
        frontend fe
            bind :80
            default_backend be
            option forwardfor
            option splice-request
        backend be
            option splice-response
        """)
    frontend, backend = config.frontends[0], config.backends["be"]
    assert (frontend.forwardfor, frontend.splice_request, frontend.splice_response) == (
        ForwardFor(), True, False)
    assert (backend.forwardfor, backend.splice_request, backend.splice_response) == (
        None, False, True)


def test_frontend_takes_client_side_timeouts_backend_server_side():
    config = cfg("""\
        defaults
            timeout client 1s
            timeout http-request 2s
            timeout http-keep-alive 3s
            timeout connect 4s
            timeout server 5s
            timeout queue 6s
            timeout tunnel 7s
        listen lb
            bind :80
        """)
    assert config.frontends[0].timeouts == Timeouts(client=1.0, http_request=2.0,
                                                    http_keep_alive=3.0)
    assert config.backends["lb"].timeouts == Timeouts(connect=4.0, server=5.0, queue=6.0,
                                                      tunnel=7.0)


def test_default_backend_and_maxconn_come_from_defaults():
    config = cfg("""\
        defaults
            default_backend be
            maxconn 77
        frontend fe
            bind :80
        backend be
        """)
    assert (config.frontends[0].default_backend, config.frontends[0].maxconn) == ("be", 77)


def test_global_sections_merge_later_values_win():
    config = cfg("""\
        global
            maxconn 10
            nbthread 2
        global
            maxconn 20
        """)
    assert config.global_ == Global(maxconn=20, nbthread=2)
    assert (config.frontends, config.backends) == ((), {})


# --- listen -----------------------------------------------------------------------------------

def test_listen_becomes_frontend_and_backend_of_the_same_name():
    config = cfg("""\
        listen lb
            mode http
            bind :80
            maxconn 50
            balance leastconn
            option forwardfor
            server s1 127.0.0.1:8080
        """)
    assert config.frontends == (Frontend(
        "lb", "http", (Bind("", 80, "site.cfg", 3),), "lb", maxconn=50, forwardfor=ForwardFor(),
        file="site.cfg", line=1),)
    assert config.backends == {"lb": Backend(
        "lb", "http", balance="leastconn", forwardfor=ForwardFor(),
        servers=(Server("s1", "127.0.0.1", 8080, file="site.cfg", line=7),),
        file="site.cfg", line=1)}


def test_listen_ignores_a_default_backend_from_defaults():
    config = cfg("""\
        defaults
            default_backend other
        listen lb
            bind :80
        backend other
        """)
    assert config.frontends[0].default_backend == "lb"


def test_listen_may_name_another_default_backend():
    config = cfg("""\
        listen lb
            bind :80
            default_backend other
        backend other
        """)
    assert config.frontends[0].default_backend == "other"


def test_backend_without_servers_is_valid():
    config = cfg("""\
        frontend fe
            bind :80
            default_backend be
        backend be
        """)
    assert config.backends["be"].servers == ()


def test_frontend_and_backend_may_share_a_name():
    config = cfg("""\
        frontend web
            bind :80
            default_backend web
        backend web
        """)
    assert (config.frontends[0].name, list(config.backends)) == ("web", ["web"])


def test_forwardfor_in_tcp_mode_warns():
    config = cfg("""\
        defaults
            option forwardfor
        listen lb
            bind :80
        """)
    assert config.warnings == (
        "site.cfg:2: listen 'lb': 'option forwardfor' is ignored in mode tcp",)


# --- resolve errors ---------------------------------------------------------------------------

def test_default_backend_must_exist_error_at_its_line():
    assert errors_of("""\
        frontend fe
            bind :80
            default_backend ap
        backend app
        """) == ["site.cfg:3: frontend 'fe': default_backend 'ap' not found; did you mean 'app'?"]


def test_missing_default_backend_from_defaults_points_at_defaults_line():
    assert errors_of("""\
        defaults
            default_backend nowhere
        frontend a
            bind :80
        frontend b
            bind :81
        """) == [
        "site.cfg:2: frontend 'a': default_backend 'nowhere' not found",
        "site.cfg:2: frontend 'b': default_backend 'nowhere' not found",
    ]


def test_default_backend_naming_a_frontend():
    assert errors_of("""\
        frontend a
            bind :80
            default_backend b
        frontend b
            bind :81
            default_backend a
        """) == [
        "site.cfg:3: frontend 'a': default_backend 'b' is a frontend, not a backend",
        "site.cfg:6: frontend 'b': default_backend 'a' is a frontend, not a backend",
    ]


def test_frontend_needs_default_backend_and_bind():
    assert errors_of("""\
        frontend fe
            mode tcp
        listen lb
            mode tcp
        """) == [
        "site.cfg:1: frontend 'fe' has no 'bind' line",
        "site.cfg:1: frontend 'fe' has no default_backend",
        "site.cfg:3: listen 'lb' has no 'bind' line",
    ]


@pytest.mark.parametrize("first, second, line, message", [
    ("frontend x", "frontend x", 4, ("frontend 'x' has the same name as frontend 'x' declared at "
                                    "site.cfg:1")),
    ("backend x", "backend x", 2, ("backend 'x' has the same name as backend 'x' declared at "
                                  "site.cfg:1")),
    ("frontend x", "listen x", 4, ("listen 'x' has the same name as frontend 'x' declared at "
                                  "site.cfg:1")),
    ("backend x", "listen x", 2, ("listen 'x' has the same name as backend 'x' declared at "
                                 "site.cfg:1")),
    ("listen x", "backend x", 4, ("backend 'x' has the same name as listen 'x' declared at "
                                 "site.cfg:1")),
])
def test_duplicate_proxy_names_of_the_same_kind(first, second, line, message):
    def section(header):
        if header.startswith("backend"):
            return header + "\n"
        return header + "\n    bind :80\n    default_backend be\n"
    assert errors_of(section(first) + section(second) + "backend be\n") == [
        f"site.cfg:{line}: {message}"]


def test_duplicate_server_names_within_a_backend():
    assert errors_of("""\
        backend be
            server s1 10.0.0.1:80
            server s2 10.0.0.2:80
            server s1 10.0.0.3:80
        backend other
            server s1 10.0.0.4:80
        """) == ["site.cfg:4: backend 'be' has two servers named 's1' (first at site.cfg:2)"]


@pytest.mark.parametrize("fe_mode, be_mode", [("http", "tcp"), ("tcp", "http")])
def test_frontend_and_backend_modes_must_match(fe_mode, be_mode):
    assert errors_of(f"""\
        frontend fe
            mode {fe_mode}
            bind :80
            default_backend be
        backend be
            mode {be_mode}
        """) == [(f"site.cfg:4: frontend 'fe' is in mode {fe_mode} but its default_backend 'be' "
                 f"is in mode {be_mode}")]


def test_resolve_errors_are_all_reported_in_line_order():
    assert errors_of("""\
        backend be
            mode http
            server a 10.0.0.1:80
            server a 10.0.0.2:80
        frontend fe
            bind :80
            default_backend be
        frontend fe2
            default_backend nope
        """) == [
        "site.cfg:4: backend 'be' has two servers named 'a' (first at site.cfg:3)",
        "site.cfg:7: frontend 'fe' is in mode tcp but its default_backend 'be' is in mode http",
        "site.cfg:8: frontend 'fe2' has no 'bind' line",
        "site.cfg:9: frontend 'fe2': default_backend 'nope' not found",
    ]


def test_resolve_checks_wait_for_a_clean_parse():
    # The missing backend is not reported while the file still has a syntax error.
    assert errors_of("""\
        frontend fe
            bind :80
            default_backend nope
            maxconn x
        """) == ["site.cfg:4: 'maxconn' expects an integer, got 'x'"]


def test_config_is_immutable():
    config = cfg("frontend fe\n    bind :80\n    default_backend be\nbackend be\n")
    with pytest.raises(AttributeError):
        config.frontends[0].maxconn = 5  # type: ignore[misc]


def test_cpu_map_auto_spreads_workers_over_cpus():
    from splicer.config import loads
    g = loads("global\n    nbthread 3\n    cpu-map auto:1/1-3 0-2\n").global_
    assert g.cpu_map == ((1, (0,)), (2, (1,)), (3, (2,)))


def test_cpu_map_later_line_wins_per_worker_and_sets_add_up():
    from splicer.config import loads
    g = loads("global\n    cpu-map 1/1-2 0,1\n    cpu-map 1/2 3\n").global_
    assert g.cpu_map == ((1, (0, 1)), (2, (3,)))


@pytest.mark.parametrize("line, message", [
    ("cpu-map 2/1 0", "'cpu-map': only thread group 1 exists in splicer, got '2'"),
    ("cpu-map auto:1/1-4 0-1", "'cpu-map auto:': 4 workers but only 2 CPUs"),
    ("cpu-map 1/0 0", "'cpu-map': workers are numbered from 1"),
    ("cpu-map 1/1", "'cpu-map' expects a thread set and a CPU set, e.g. 'cpu-map 1/1 0'"),
])
def test_cpu_map_errors(line, message):
    from splicer.config import loads
    from splicer.errors import ConfigErrors
    with pytest.raises(ConfigErrors) as exc:
        loads(f"global\n    {line}\n", path="c.cfg")
    assert [str(e) for e in exc.value.errors] == [f"c.cfg:2: {message}"]


# --- retry-on and header rules ----------------------------------------------------------------

def test_retry_on_default_inheritance_and_replacement():
    config = cfg("""\
        defaults
            mode http
            retry-on all-retryable-errors
        backend a
        backend b
            retry-on 503 404
            retry-on empty-response
        backend c
            retry-on none
        defaults
            mode http
        backend d
        """)
    be = config.backends
    assert be["a"].retry_on == {"conn-failure", "empty-response", "junk-response",
                                "response-timeout", "0rtt-rejected", 500, 502, 503, 504}
    assert be["b"].retry_on == {"empty-response"}  # a later line replaces, as in haproxy
    assert be["c"].retry_on == frozenset()
    assert be["d"].retry_on == {"conn-failure"}


def test_header_rules_accumulate_in_order_and_a_listen_runs_them_once():
    config = cfg("""\
        defaults
            mode http
        frontend fe
            bind :80
            default_backend be
            http-request set-header X-A 1
            http-response del-header Server
            http-request add-header X-B 2
        backend be
            http-request del-header X-C
        listen lb
            bind :81
            http-request add-header X-Once 1
        """)
    fe = config.frontends[0]
    assert [(r.action, r.name, r.line) for r in fe.http_request] == [
        ("set-header", b"X-A", 6), ("add-header", b"X-B", 8)]
    assert [(r.action, r.name) for r in fe.http_response] == [("del-header", b"Server")]
    assert [(r.action, r.name) for r in config.backends["be"].http_request] == [("del-header", b"X-C")]
    assert len(config.frontends[1].http_request) == 1
    assert config.backends["lb"].http_request == ()


def test_header_rules_are_refused_in_defaults():
    assert errors_of("""\
        defaults
            http-request set-header X-A 1
        """) == ["site.cfg:2: 'http-request' is not allowed in defaults section "
                 "(allowed in: frontend, listen, backend)"]


# --- option httpchk, http-check expect, timeout check -----------------------------------------

def test_httpchk_requests_and_expect():
    config = cfg("""\
        defaults
            mode http
            timeout check 3s
        backend a
            option httpchk
        backend b
            option httpchk /ping
        backend c
            option httpchk HEAD /h "HTTP/1.1\\r\\nHost:\\ www.example\\r\\nX-Check:\\ 1"
            http-check expect status 200-299,304
        backend d
        """)
    be = config.backends
    assert be["a"].httpchk == b"OPTIONS / HTTP/1.0\r\nConnection: close\r\n\r\n"
    assert be["b"].httpchk == b"OPTIONS /ping HTTP/1.0\r\nConnection: close\r\n\r\n"
    assert be["c"].httpchk == (b"HEAD /h HTTP/1.1\r\nHost: www.example\r\nX-Check: 1\r\n"
                               b"Connection: close\r\n\r\n")
    assert be["c"].check_expect == ((200, 299), (304, 304))
    assert be["d"].httpchk is None and be["d"].check_expect == ()
    assert be["a"].timeouts.check == 3.0


def test_httpchk_http11_without_host_warns():
    config = cfg("""\
        backend a
            option httpchk GET /health HTTP/1.1
        """)
    assert any("site.cfg:2: 'option httpchk': an HTTP/1.1 check without a Host field" in w
               for w in config.warnings)


def test_httpchk_and_http_check_errors():
    assert errors_of("""\
        backend a
            option httpchk GET health
            option httpchk GET / HTTP/2
            option httpchk "GET\\ X" /
            option httpchk GET / HTTP/1.1 extra
            http-check expect status 600
            http-check expect status 300-200
            http-check expect rstatus ^2
            http-check send meth GET
        frontend f
            bind :80
            default_backend a
            option httpchk
        """) == [
        "site.cfg:2: 'option httpchk': invalid URI 'health' (an absolute path such as /health)",
        "site.cfg:3: 'option httpchk': invalid HTTP version 'HTTP/2' (HTTP/1.0 or HTTP/1.1)",
        "site.cfg:4: 'option httpchk': invalid method 'GET X'",
        "site.cfg:5: 'option httpchk' cannot handle unexpected argument 'extra'",
        "site.cfg:6: 'http-check expect status' must be between 100 and 599, got 600",
        "site.cfg:7: 'http-check expect status': empty range '300-200'",
        "site.cfg:8: 'http-check expect rstatus' is not supported (supported: http-check expect status <codes>)",
        "site.cfg:9: 'http-check send' is not supported (supported: http-check expect status <codes>)",
        "site.cfg:13: 'option httpchk' is not allowed in frontend 'f' (allowed in: defaults, listen, backend)",
    ]


# --- options that reach the model (mutation-testing gaps) --------------------------------------------

def test_frontend_and_backend_options_and_errorfiles_reach_the_model(tmp_path):
    (tmp_path / "503.http").write_bytes(b"HTTP/1.1 503 Busy\r\n\r\n")
    (tmp_path / "502.http").write_bytes(b"HTTP/1.1 502 Bad\r\n\r\n")
    config = loads(textwrap.dedent("""\
        frontend fe
            bind :80
            option http-buffer-request
            option splice-request
            errorfile 503 503.http
            default_backend be
        backend be
            option forwarded proto for
            option abortonclose
            option http-buffer-request
            no option splice-auto
            errorfile 503 503.http
            errorfile 502 502.http
            http-response del-header Server
            server s1 127.0.0.1:81
        backend plain
            server s1 127.0.0.1:82
        """), str(tmp_path / "site.cfg"), env={})
    fe = config.frontends[0]
    assert (fe.http_buffer_request, fe.splice_request, fe.splice_named) == (True, True, True)
    assert fe.errorfiles == ((503, b"HTTP/1.1 503 Busy\r\n\r\n"),)
    be = config.backends["be"]
    assert (be.forwarded, be.abortonclose, be.http_buffer_request, be.splice_auto, be.splice_named) == (
        ("proto", "for"), True, True, False, True)
    assert be.errorfiles == ((502, b"HTTP/1.1 502 Bad\r\n\r\n"), (503, b"HTTP/1.1 503 Busy\r\n\r\n"))
    assert [r.name for r in be.http_response] == [b"Server"]
    plain = config.backends["plain"]
    assert (plain.forwarded, plain.abortonclose, plain.http_buffer_request, plain.splice_named,
            plain.errorfiles) == ((), False, False, False, ())


def test_without_splice_options_nothing_is_named():
    config = loads("frontend fe\n    bind :80\n    default_backend be\nbackend be\n    server s1 127.0.0.1:81\n",
                   env={})
    assert config.frontends[0].splice_named is False
    assert config.backends["be"].splice_named is False


def test_listen_header_rules_belong_to_its_frontend_side():
    config = loads(textwrap.dedent("""\
        listen lb
            bind :80
            http-request set-header X-A 1
            http-response set-header X-B 2
            server s1 127.0.0.1:81
        """), env={})
    fe, be = config.frontends[0], config.backends["lb"]
    assert ([r.name for r in fe.http_request], [r.name for r in fe.http_response]) == ([b"X-A"], [b"X-B"])
    assert (be.http_request, be.http_response) == ((), ())


@pytest.mark.parametrize("mode, expected", [
    ("tcp", ("site.cfg:4: frontend 'fe': 'http-request' rules are ignored in mode tcp (they need mode http)",
             "site.cfg:8: backend 'be': 'http-response' rules are ignored in mode tcp (they need mode http)")),
    ("http", ()),
])
def test_header_rules_in_mode_tcp_are_warned_about(mode, expected):
    config = loads(f"frontend fe\n    mode {mode}\n    bind :80\n    http-request set-header X-A 1\n"
                   f"    default_backend be\nbackend be\n    mode {mode}\n    http-response del-header Server\n"
                   "    server s1 127.0.0.1:81\n", "site.cfg", env={})
    assert config.warnings == expected


# --- one address, one listener ----------------------------------------------------------------------

BE = "backend be\n    server s1 127.0.0.1:81\n"


def resolve_errors(text):
    with pytest.raises(ConfigErrors) as info:
        loads(text, "site.cfg", env={})
    return [str(e) for e in info.value.errors]


def test_a_bind_on_an_address_already_bound_by_a_wildcard_is_refused():
    assert resolve_errors("frontend a\n    bind :80\n    default_backend be\nfrontend b\n"
                          "    bind 127.0.0.1:80,127.0.0.1:81\n    default_backend be\n" + BE) == [
        "site.cfg:5: frontend 'b': bind 127.0.0.1:80 overlaps bind *:80 of frontend 'a' at site.cfg:2"]


def test_every_any_address_form_is_a_wildcard():
    assert resolve_errors("frontend a\n    bind 0.0.0.0:80\n    default_backend be\nfrontend b\n"
                          "    bind [::]:80\n    default_backend be\n" + BE) == [
        "site.cfg:5: frontend 'b': bind :::80 overlaps bind 0.0.0.0:80 of frontend 'a' at site.cfg:2"]
    assert resolve_errors("frontend a\n    bind *:80\n    default_backend be\nfrontend b\n"
                          "    bind 10.0.0.1:80\n    default_backend be\n" + BE) == [
        "site.cfg:5: frontend 'b': bind 10.0.0.1:80 overlaps bind *:80 of frontend 'a' at site.cfg:2"]


def test_the_same_address_in_another_case_overlaps():
    assert resolve_errors("frontend a\n    bind [fe80::A]:80\n    default_backend be\nfrontend b\n"
                          "    bind [fe80::a]:80\n    default_backend be\n" + BE) == [
        "site.cfg:5: frontend 'b': bind fe80::a:80 overlaps bind fe80::A:80 of frontend 'a' at site.cfg:2"]


def test_distinct_addresses_or_ports_do_not_overlap():
    config = loads("frontend a\n    bind 127.0.0.1:80\n    default_backend be\nfrontend b\n"
                   "    bind 127.0.0.2:80\n    bind 127.0.0.1:81\n    default_backend be\n" + BE, "site.cfg", env={})
    assert [[(b.host, b.port) for b in f.binds] for f in config.frontends] == [
        [("127.0.0.1", 80)], [("127.0.0.2", 80), ("127.0.0.1", 81)]]


def test_a_second_bind_on_the_same_address_in_one_frontend_overlaps_too():
    assert resolve_errors("frontend a\n    bind :80\n    bind :80\n    default_backend be\n" + BE) == [
        "site.cfg:3: frontend 'a': bind *:80 overlaps bind *:80 of frontend 'a' at site.cfg:2"]


def test_binds_are_not_checked_when_other_errors_were_found():
    assert resolve_errors("frontend a\n    bind :80\nfrontend b\n    bind :80\n    default_backend be\n" + BE) == [
        "site.cfg:1: frontend 'a' has no default_backend"]


def test_default_backend_checks_go_on_after_a_frontend_without_one():
    assert resolve_errors("listen l\n    bind :90\n    server s 127.0.0.1:1\nfrontend a\n    bind :80\n"
                          "frontend b\n    bind :81\n    default_backend nope\n" + BE) == [
        "site.cfg:4: frontend 'a' has no default_backend", "site.cfg:8: frontend 'b': default_backend 'nope' not found"]


@pytest.mark.parametrize("wildcard", ["0.0.0.0", "[::]"])
def test_any_address_overlaps_a_specific_one(wildcard):
    assert resolve_errors(f"frontend a\n    bind {wildcard}:80\n    default_backend be\nfrontend b\n"
                          "    bind 127.0.0.1:80\n    default_backend be\n" + BE)[0].startswith(
        "site.cfg:5: frontend 'b': bind 127.0.0.1:80 overlaps bind ")


@pytest.mark.parametrize("text, seconds", [("30s", 30.0), ("1500", 1.5), ("2m", 120.0), ("0", None)])
def test_hard_stop_after(text, seconds):
    """haproxy `hard-stop-after <time>` (ms by default; 0: no bound)."""
    assert loads(f"global\n    hard-stop-after {text}\n").global_.hard_stop_after == seconds
    assert loads("global\n    maxconn 10\n").global_.hard_stop_after is None


@pytest.mark.parametrize("text, message", [
    ("hard-stop-after", "site.cfg:2: 'hard-stop-after' expects a time value (default unit: ms)"),
    ("hard-stop-after soon", "site.cfg:2: 'hard-stop-after': "),
    ("hard-stop-after 1s 2s", "site.cfg:2: "),
])
def test_hard_stop_after_errors(text, message):
    with pytest.raises(ConfigErrors) as info:
        loads(f"global\n    {text}\n", "site.cfg")
    assert str(info.value.errors[0]).startswith(message)


def test_idle_close_on_response_is_on_unless_negated():
    base = "defaults\n    mode http\n{d}frontend www\n    bind 127.0.0.1:8080\n{f}    default_backend b\nbackend b\n"
    assert loads(base.format(d="", f="")).frontends[0].idle_close_on_response is True
    off = loads(base.format(d="", f="    no option idle-close-on-response\n")).frontends[0]
    assert off.idle_close_on_response is False
    inherited = loads(base.format(d="    no option idle-close-on-response\n", f="")).frontends[0]
    assert inherited.idle_close_on_response is False
    with pytest.raises(ConfigErrors):
        loads(base + "    option idle-close-on-response\n")  # a frontend keyword, not a backend one
