"""splicer.config.keywords parse functions, called directly: what each records, and the exact
message of each refusal (the text that follows "file:line: ").

The factories (_int_keyword, _ignored, _timeout, _flag, _header_rule, _kw) are called here
rather than only through KEYWORDS: the registry holds the parse functions they made when the
module was imported, so a test through the registry alone checks one product of a factory,
not the factory.
"""
import pytest

from splicer.config import keywords as kw
from splicer.config.keywords import ArgError, Context
from splicer.http.logformat import Message, StreamInfo, render
from splicer.http.rules import HeaderRule


def ctx(kind="backend", negated=False, file="site.cfg"):
    return Context(kind, "be", file, 7, negated)


def settings_of(parse, args, **kwargs):
    c = ctx(**kwargs)
    parse(c, list(args))
    return c.settings


def warnings_of(parse, args, **kwargs):
    c = ctx(**kwargs)
    parse(c, list(args))
    return c.settings, c.warnings


def error_of(parse, args, **kwargs):
    with pytest.raises(ArgError) as exc:
        parse(ctx(**kwargs), list(args))
    return str(exc.value)


# --- _int_keyword -------------------------------------------------------------------------------

def test_int_keyword_records_the_value_under_its_key():
    parse = kw._int_keyword("retries", "retries", 2, 5)
    assert settings_of(parse, ["2"]) == [("retries", 2)]
    assert settings_of(parse, ["5"]) == [("retries", 5)]


@pytest.mark.parametrize("args, message", [
    ([], "'tune.x' expects an integer argument"),
    (["1"], "'tune.x' must be between 2 and 5, got 1"),
    (["6"], "'tune.x' must be between 2 and 5, got 6"),
    (["3", "4"], "'tune.x' cannot handle unexpected argument '4'"),
    (["x"], "'tune.x' expects an integer, got 'x'"),
])
def test_int_keyword_errors(args, message):
    assert error_of(kw._int_keyword("key", "tune.x", 2, 5), args) == message


def test_int_keyword_upper_bound_defaults_to_max_int():
    parse = kw._int_keyword("maxconn", "maxconn", 0)
    assert settings_of(parse, ["2147483647"]) == [("maxconn", 2147483647)]
    assert error_of(parse, ["2147483648"]) == "'maxconn' must be between 0 and 2147483647, got 2147483648"


# --- _ignored -----------------------------------------------------------------------------------

def test_ignored_keyword_warns_and_records_nothing():
    parse = kw._ignored("user", 1, 1, "a user name")
    assert warnings_of(parse, ["nobody"]) == ([], ["'user' is accepted for haproxy compatibility and ignored"])


def test_ignored_keyword_checks_its_argument_count():
    parse = kw._ignored("user", 1, 1, "a user name")
    assert error_of(parse, []) == "'user' expects a user name"
    assert error_of(parse, ["a", "b"]) == "'user' cannot handle unexpected argument 'b'"
    assert error_of(parse, ["a", "b"], negated=True) == "'user' cannot handle unexpected argument 'b'"


def test_negated_ignored_keyword_needs_no_argument_and_says_no():
    parse = kw._ignored("log", 1, None, "a target")
    assert warnings_of(parse, [], negated=True) == (
        [], ["'no log' is accepted for haproxy compatibility and ignored"])


def test_ignored_keyword_without_maximum_takes_any_number_of_arguments():
    parse = kw._ignored("stats", 1, None, "a sub-keyword")
    assert warnings_of(parse, ["socket", "/run/s", "mode", "600"]) == (
        [], ["'stats' is accepted for haproxy compatibility and ignored"])


def test_ignored_keyword_defaults_take_any_arguments_and_none():
    parse = kw._ignored("daemon")
    assert warnings_of(parse, []) == ([], ["'daemon' is accepted for haproxy compatibility and ignored"])
    assert warnings_of(parse, ["x"]) == ([], ["'daemon' is accepted for haproxy compatibility and ignored"])


def test_registered_daemon_takes_no_argument():
    assert error_of(kw.lookup("daemon", "global").parse, ["x"], kind="global") == (
        "'daemon' cannot handle unexpected argument 'x'")


# --- _timeout -----------------------------------------------------------------------------------

def test_timeout_records_seconds_under_its_key_with_dashes_as_underscores():
    parse = kw._timeout("http-keep-alive")
    assert settings_of(parse, ["1500"]) == [("timeout.http_keep_alive", 1.5)]
    assert settings_of(parse, ["2s"]) == [("timeout.http_keep_alive", 2.0)]


def test_timeout_zero_means_no_timeout():
    assert settings_of(kw._timeout("server"), ["0"]) == [("timeout.server", None)]


@pytest.mark.parametrize("args, message", [
    ([], "'timeout http-request' expects a time value (default unit: ms)"),
    (["1s", "2s"], "'timeout http-request' cannot handle unexpected argument '2s'"),
    (["x"], "'timeout http-request': invalid time 'x': expected digits followed by an optional unit "
            "(us, ms, s, m, h, d)"),
])
def test_timeout_errors(args, message):
    assert error_of(kw._timeout("http-request"), args) == message


# --- _flag ----------------------------------------------------------------------------------------

def test_flag_records_true_or_false_when_negated():
    parse = kw._flag("redispatch", "redispatch")
    assert settings_of(parse, []) == [("redispatch", True)]
    assert settings_of(parse, [], negated=True) == [("redispatch", False)]


def test_flag_without_key_records_nothing():
    assert settings_of(kw._flag("http-keep-alive", None), []) == []


def test_flag_takes_no_argument():
    assert error_of(kw._flag("redispatch", "redispatch"), ["x"]) == (
        "'option redispatch' cannot handle unexpected argument 'x'")


# --- _header_rule -------------------------------------------------------------------------------

def test_header_rule_records_the_rule_with_its_file_and_line():
    (key, rule), = settings_of(kw._header_rule("response"), ["set-header", "X-Status", "%ST"], file="a.cfg")
    assert key == "http_response"
    assert (rule.action, rule.name, rule.file, rule.line) == ("set-header", b"X-Status", "a.cfg", 7)
    stream = StreamInfo("192.0.2.1", 1, "192.0.2.2", 2, "fe", "be")
    assert render(rule.value, stream, Message(b"GET", b"/", 204), []) == b"204"


def test_header_rule_side_decides_what_samples_exist():
    (key, rule), = settings_of(kw._header_rule("request"), ["del-header", "X-A"])
    assert (key, rule) == ("http_request", HeaderRule("del-header", b"X-A", (), "site.cfg", 7))
    assert error_of(kw._header_rule("request"), ["set-header", "X-A", "%ST"]) == (
        "sample fetch 'status' is only available in http-response rules")


def test_header_rule_errors_are_the_rule_errors():
    assert error_of(kw._header_rule("response"), ["set-header", "X-A"]) == (
        "'http-response set-header' expects exactly 2 argument(s): set-header <name> <fmt>")


# --- _kw ------------------------------------------------------------------------------------------

def test_kw_builds_a_keyword_documented_under_its_name_or_title():
    parse = kw._flag("x", "x")
    assert kw._kw("tune.x", kw.GLOBAL, parse) == kw.Keyword(
        "tune.x", kw.GLOBAL, parse, "docs/configuration.md#tunex", False)
    assert kw._kw("log", kw.EVERYWHERE, parse, "Ignored keywords", negatable=True) == kw.Keyword(
        "log", kw.EVERYWHERE, parse, "docs/configuration.md#ignored-keywords", True)


# --- tune.pipesize --------------------------------------------------------------------------------

def test_pipesize_bounds_are_inclusive():
    assert settings_of(kw._parse_pipesize, ["1"], kind="global") == [("pipesize", 1)]
    assert settings_of(kw._parse_pipesize, ["2147483647"], kind="global") == [("pipesize", 2147483647)]
    assert error_of(kw._parse_pipesize, ["2147483648"], kind="global") == (
        "'tune.pipesize' must be between 1 and 2147483647 bytes, got 2147483648")


def test_pipesize_argument_count():
    assert error_of(kw._parse_pipesize, [], kind="global") == "'tune.pipesize' expects a size argument"
    assert error_of(kw._parse_pipesize, ["1m", "2m"], kind="global") == (
        "'tune.pipesize' cannot handle unexpected argument '2m'")


# --- cpu-map --------------------------------------------------------------------------------------

def test_cpu_map_ranges_up_to_cpu_4095():
    assert settings_of(kw._parse_cpu_map, ["1-2", "4094-4095"], kind="global") == [
        ("cpu_map", ((1, (4094, 4095)), (2, (4094, 4095))))]
    assert error_of(kw._parse_cpu_map, ["1", "0-4096"], kind="global") == (
        "'the CPU set' must be between 0 and 4095, got 4096")
    assert error_of(kw._parse_cpu_map, ["1", "4096"], kind="global") == (
        "'the CPU set' must be between 0 and 4095, got 4096")
    assert error_of(kw._parse_cpu_map, ["4096", "0"], kind="global") == (
        "'the thread set' must be between 0 and 4095, got 4096")


def test_cpu_map_cpu_range_may_start_and_end_at_zero():
    assert settings_of(kw._parse_cpu_map, ["1", "0-0"], kind="global") == [("cpu_map", ((1, (0,)),))]


def test_cpu_map_reversed_range():
    assert error_of(kw._parse_cpu_map, ["1", "3-1"], kind="global") == "'cpu-map': invalid range '3-1' in the CPU set"
    assert error_of(kw._parse_cpu_map, ["2-1", "0"], kind="global") == (
        "'cpu-map': invalid range '2-1' in the thread set")


def test_cpu_map_group_all_and_thread_all():
    assert settings_of(kw._parse_cpu_map, ["all/2", "3"], kind="global") == [("cpu_map", ((2, (3,)),))]
    assert error_of(kw._parse_cpu_map, ["1/all", "0"], kind="global") == (
        "'cpu-map': name the workers ('1/1-4'), 'all' is not supported")
    assert error_of(kw._parse_cpu_map, ["all", "0"], kind="global") == (
        "'cpu-map': name the workers ('1/1-4'), 'all' is not supported")


def test_cpu_map_without_group_names_workers_directly():
    assert settings_of(kw._parse_cpu_map, ["2", "5"], kind="global") == [("cpu_map", ((2, (5,)),))]
    assert settings_of(kw._parse_cpu_map, ["auto:1-2", "6", "5"], kind="global") == [
        ("cpu_map", ((1, (5,)), (2, (6,))))]


def test_cpu_map_group_is_split_at_the_first_slash():
    assert error_of(kw._parse_cpu_map, ["1/2/3", "0"], kind="global") == (
        "'the thread set' expects an integer, got '2/3'")


# --- option forwarded -----------------------------------------------------------------------------

def test_option_forwarded_defaults_to_for():
    assert settings_of(kw._parse_forwarded, []) == [("forwarded", ("for",))]


def test_option_forwarded_keeps_the_parameters_once_in_order_given():
    assert settings_of(kw._parse_forwarded, ["host", "proto", "host", "by"]) == [
        ("forwarded", ("host", "proto", "by"))]


@pytest.mark.parametrize("arg, message", [
    ("fro", "'option forwarded': unsupported argument 'fro' (supported: proto, host, by, for); "
            "did you mean 'for'?"),
    ("by_port", "'option forwarded': unsupported argument 'by_port' (supported: proto, host, by, for)"),
])
def test_option_forwarded_refuses_other_arguments(arg, message):
    assert error_of(kw._parse_forwarded, ["proto", arg]) == message


# --- retry-on -------------------------------------------------------------------------------------

def test_retry_on_all_retryable_errors_adds_to_what_came_before():
    assert settings_of(kw._parse_retry_on, ["404", "all-retryable-errors"]) == [
        ("retry_on", frozenset({404}) | kw.RETRY_ON_ALL)]


def test_retry_on_status_codes_are_ints():
    assert settings_of(kw._parse_retry_on, ["503", "conn-failure"]) == [("retry_on", frozenset({503, "conn-failure"}))]


def test_retry_on_none_alone_disables_every_retry():
    assert settings_of(kw._parse_retry_on, ["none"]) == [("retry_on", frozenset())]


@pytest.mark.parametrize("args, message", [
    ([], "'retry-on' expects 'none' or at least one of: conn-failure, empty-response, junk-response, "
         "response-timeout, 0rtt-rejected, all-retryable-errors, <status>"),
    (["none", "503"], "'retry-on': 'none' can only be used alone"),
    (["200"], "'retry-on': status 200 cannot be retried (supported: 401, 403, 404, 408, 425, 429, 500, "
              "501, 502, 503, 504)"),
    (["bogus"], "'retry-on': unknown keyword 'bogus'"),
    (["conn-failur"], "'retry-on': unknown keyword 'conn-failur'; did you mean 'conn-failure'?"),
    (["all-retryable-error"], "'retry-on': unknown keyword 'all-retryable-error'; "
                              "did you mean 'all-retryable-errors'?"),
    (["non"], "'retry-on': unknown keyword 'non'; did you mean 'none'?"),
])
def test_retry_on_errors(args, message):
    assert error_of(kw._parse_retry_on, args) == message


# --- http-check expect status ---------------------------------------------------------------------

def test_http_check_ranges_and_bounds():
    assert settings_of(kw._parse_http_check, ["expect", "status", "100-599,204"]) == [
        ("check_expect", ((100, 599), (204, 204)))]
    assert error_of(kw._parse_http_check, ["expect", "status", "200-600"]) == (
        "'http-check expect status' must be between 100 and 599, got 600")
    assert error_of(kw._parse_http_check, ["expect", "status", "200-99"]) == (
        "'http-check expect status' must be between 100 and 599, got 99")
    assert error_of(kw._parse_http_check, ["expect", "status", "200-1x"]) == (
        "'http-check expect status' expects an integer, got '1x'")


@pytest.mark.parametrize("args, message", [
    ([], "'http-check' expects 'expect status <codes>'"),
    (["send"], "'http-check send' is not supported (supported: http-check expect status <codes>)"),
    (["expect"], "'http-check expect ' is not supported (supported: http-check expect status <codes>)"),
    (["expect", "string"], "'http-check expect string' is not supported "
                           "(supported: http-check expect status <codes>)"),
    (["expect", "string", "ok"], "'http-check expect string' is not supported "
                                 "(supported: http-check expect status <codes>)"),
    (["expect", "status"], "'http-check expect status' expects a status code or range, e.g. 200 or 200-399"),
    (["expect", "status", "200", "x"], "'http-check expect status' cannot handle unexpected argument 'x'"),
])
def test_http_check_errors(args, message):
    assert error_of(kw._parse_http_check, args) == message


def test_http_check_with_two_words_only_is_read():
    assert settings_of(kw._parse_http_check, ["expect", "status", "204"]) == [("check_expect", ((204, 204),))]


# --- option httpchk ---------------------------------------------------------------------------------

def test_httpchk_uri_refusals():
    for uri in ("health", "/a b", "/a\tb", "/é"):
        assert error_of(kw._parse_httpchk, ["GET", uri]) == (
            f"'option httpchk': invalid URI '{uri}' (an absolute path such as /health)")


def test_httpchk_uri_with_plain_x_characters_is_fine():
    assert settings_of(kw._parse_httpchk, ["GET", "/XX"]) == [
        ("httpchk", b"GET /XX HTTP/1.0\r\nConnection: close\r\n\r\n")]


def test_httpchk_bad_header_field():
    assert error_of(kw._parse_httpchk, ["GET", "/", "HTTP/1.1\r\nHost www"]) == (
        "'option httpchk': invalid header field 'Host www'")


def test_httpchk_http11_with_host_in_any_case_does_not_warn():
    c = ctx()
    kw._parse_httpchk(c, ["GET", "/", "HTTP/1.1\r\nHOST: a"])
    assert (c.settings, c.warnings) == ([("httpchk", b"GET / HTTP/1.1\r\nHOST: a\r\nConnection: close\r\n\r\n")], [])


def test_httpchk_http10_without_host_does_not_warn_and_http11_does():
    c = ctx()
    kw._parse_httpchk(c, ["GET", "/", "HTTP/1.0"])
    assert c.warnings == []
    c = ctx()
    kw._parse_httpchk(c, ["GET", "/", "HTTP/1.1\r\nX-A: 1"])
    assert c.warnings == [
        "'option httpchk': an HTTP/1.1 check without a Host field: most servers answer 400 (RFC 9112 "
        "section 3.2); add one as haproxy allows: \"HTTP/1.1\\r\\nHost:\\ www.example.com\""]


# --- errorfile --------------------------------------------------------------------------------------

RESPONSE = b"HTTP/1.1 503 Busy\r\nContent-Length: 4\r\n\r\nbusy"


def test_errorfile_reads_a_path_relative_to_the_configuration_file(tmp_path):
    (tmp_path / "503.http").write_bytes(RESPONSE)
    assert settings_of(kw._parse_errorfile, ["503", "503.http"], file=str(tmp_path / "site.cfg")) == [
        ("errorfile.503", RESPONSE)]


def test_errorfile_reads_an_absolute_path(tmp_path):
    path = tmp_path / "e.http"
    path.write_bytes(RESPONSE)
    assert settings_of(kw._parse_errorfile, ["200", str(path)], file="elsewhere/site.cfg") == [
        ("errorfile.200", RESPONSE)]


def test_errorfile_relative_to_a_configuration_file_without_directory(tmp_path, monkeypatch):
    (tmp_path / "e.http").write_bytes(RESPONSE)
    monkeypatch.chdir(tmp_path)
    assert settings_of(kw._parse_errorfile, ["504", "e.http"], file="site.cfg") == [("errorfile.504", RESPONSE)]


def test_errorfile_of_exactly_the_largest_size_is_accepted(tmp_path):
    data = b"HTTP/1.0 200 OK\r\n\r\n" + b"x" * (kw.ERRORFILE_MAX - 19)
    assert len(data) == kw.ERRORFILE_MAX == 16384
    (tmp_path / "e.http").write_bytes(data)
    assert settings_of(kw._parse_errorfile, ["200", "e.http"], file=str(tmp_path / "c")) == [
        ("errorfile.200", data)]
    (tmp_path / "e.http").write_bytes(data + b"x")
    assert error_of(kw._parse_errorfile, ["200", "e.http"], file=str(tmp_path / "c")) == (
        "'errorfile 200': 'e.http' is larger than 16384 bytes")


@pytest.mark.parametrize("data", [
    b"HTTP/2 503 Busy\r\n\r\n", b"HTTP/1.1 503 Busy\n\nbusy", b"<html>busy</html>", b"HTTP/1.1503\r\n\r\n",
])
def test_errorfile_must_hold_an_http_response(tmp_path, data):
    (tmp_path / "e.http").write_bytes(data)
    assert error_of(kw._parse_errorfile, ["503", "e.http"], file=str(tmp_path / "c")) == (
        "'errorfile 503': 'e.http' is not an HTTP response (status line, fields, empty line, body; "
        "CRLF line endings)")


def test_errorfile_that_cannot_be_read(tmp_path):
    assert error_of(kw._parse_errorfile, ["503", "nope.http"], file=str(tmp_path / "c")) == (
        "'errorfile 503': cannot read 'nope.http': No such file or directory")


@pytest.mark.parametrize("args, message", [
    ([], "'errorfile' expects a status code and a file name"),
    (["503"], "'errorfile' expects a status code and a file name"),
    (["503", "a", "b"], "'errorfile' cannot handle unexpected argument 'b'"),
    (["99", "a"], "'errorfile' must be between 100 and 599, got 99"),
    (["600", "a"], "'errorfile' must be between 100 and 599, got 600"),
    (["5x", "a"], "'errorfile' expects an integer, got '5x'"),
    (["418", "a"], "'errorfile': status code 418 cannot be replaced (codes: 200, 400, 401, 403, 404, 405, 407, "
                   "408, 410, 413, 425, 429, 500, 501, 502, 503, 504)"),
])
def test_errorfile_argument_errors(args, message, tmp_path):
    assert error_of(kw._parse_errorfile, args, file=str(tmp_path / "c")) == message


@pytest.mark.parametrize("code", kw.ERRORFILE_CODES)
def test_errorfile_accepts_every_listed_code(code, tmp_path):
    (tmp_path / "e.http").write_bytes(RESPONSE)
    assert settings_of(kw._parse_errorfile, [str(code), "e.http"], file=str(tmp_path / "c")) == [
        (f"errorfile.{code}", RESPONSE)]


# --- small helpers ----------------------------------------------------------------------------------

def test_bad_name_char_of_a_valid_name_is_empty():
    assert kw.bad_name_char("web-1.a:b_c") == ""
    assert kw.bad_name_char("we b/") == " "


def test_similarity_is_difflib_ratio_of_both_words():
    assert kw.similarity("blance", "balance") == pytest.approx(12 / 13)
    assert kw.similarity("abc", "xyz") == 0.0
    assert kw.similarity("ab", "abcd") == pytest.approx(2 / 3)


def test_sub_candidates_are_those_of_the_section_or_all():
    assert kw._sub_candidates(kw.TIMEOUTS, "frontend") == ["client", "http-request", "http-keep-alive", "tarpit"]
    assert kw._sub_candidates(kw.TIMEOUTS, "global") == list(kw.TIMEOUTS)


# --- through loads: suggestions follow the section, forwardfor arguments, balance forms -------------

def load_errors(text):
    from splicer.config import loads
    from splicer.errors import ConfigErrors
    with pytest.raises(ConfigErrors) as info:
        loads(text, "site.cfg", env={})
    return [str(e) for e in info.value.errors]


def test_suggestions_for_a_mistyped_timeout_or_option_come_from_the_section_only():
    # 'server' and 'redispatch' are close, but not frontend keywords
    assert load_errors("frontend fe\n    timeout servr 1s\n") == ["site.cfg:2: unknown timeout 'servr' in frontend 'fe'"]
    assert load_errors("frontend fe\n    option redispath\n") == ["site.cfg:2: unknown option 'redispath' in frontend 'fe'"]


def test_balance_hdr_with_nested_parentheses_is_not_a_field_name():
    assert load_errors("backend be\n    balance hdr(x(y))\n") == [
        "site.cfg:2: 'balance hdr(<name>)' expects a header field name, e.g. 'hdr(host)'"]


def test_forwardfor_arguments_are_read_pairwise():
    """`option forwardfor` arguments work as haproxy documents them (they were accepted and
    ignored before: an accepted keyword behaves as haproxy says)."""
    import ipaddress
    from splicer.config.model import ForwardFor
    c = ctx(kind="frontend")
    kw._parse_forwardfor(c, ["if-none", "header", "X-Client", "except", "10.0.0.0/8"])
    assert c.settings == [("forwardfor", ForwardFor(ipaddress.ip_network("10.0.0.0/8"), b"X-Client", True))]
    assert c.warnings == []
    c = ctx(kind="backend")
    kw._parse_forwardfor(c, ["except", "127.0.0.1/255.0.0.0"])
    assert c.settings == [("forwardfor", ForwardFor(ipaddress.ip_network("127.0.0.0/8")))]
    c = ctx(kind="backend")
    kw._parse_forwardfor(c, [])
    assert c.settings == [("forwardfor", ForwardFor(None, b"X-Forwarded-For", False))]
    assert error_of(kw._parse_forwardfor, ["header"], kind="frontend") == "'option forwardfor header' expects a value"
    assert error_of(kw._parse_forwardfor, ["except", "10.0.0.300/8"], kind="frontend") == (
        "'option forwardfor except' expects a network (address[/mask]), not '10.0.0.300/8'")
    assert error_of(kw._parse_forwardfor, ["header", "X:Y"], kind="frontend") == (
        "'option forwardfor header' expects a field name, not 'X:Y'")
    for framing in ("Content-Length", "transfer-encoding", "Connection", "TE", "Upgrade"):
        assert error_of(kw._parse_forwardfor, ["header", framing], kind="frontend") == (
            f"'option forwardfor header {framing}': splicer writes that field itself "
            "(message framing or connection management)")
    assert error_of(kw._parse_forwardfor, ["if-nothing"], kind="frontend").startswith(
        "'option forwardfor': unknown argument 'if-nothing'")


def test_parse_int_bounds_default_to_zero_and_are_inclusive():
    assert kw.parse_int("0", "x") == 0
    assert kw.parse_int("2147483647", "x") == 2147483647
    assert kw.parse_int("5", "x", 0, 5) == 5


# --- addresses and server options -------------------------------------------------------------------

def test_bracketed_address_ends_at_the_first_bracket():
    assert error_of(lambda c, a: kw.split_host_port(a[0], "bind"), ["[::1]]:80"]) == (
        "bind: address '[::1]]:80' has no port (expected [ADDR]:PORT)")


def test_unbracketed_ipv6_address_splits_at_the_last_colon():
    assert kw.split_host_port("::1:80", "bind") == ("::1", "80")


def test_port_bounds_and_a_non_digit_port():
    assert kw.parse_port("65535", "bind") == 65535
    assert kw.parse_port("1", "bind") == 1
    assert error_of(lambda c, a: kw.parse_port(a[0], "bind"), ["X80"]) == "bind: invalid port 'X80'"


def test_bind_address_defaults_and_localhost():
    assert kw.parse_bind_address(":80") == kw.Bind(host="", port=80, file="", line=0)
    assert kw.parse_bind_address("localhost:80").host == "localhost"


def test_server_options_at_their_lowest_values_and_a_flag_between_options():
    (key, server), = settings_of(kw._parse_server, ["s", "127.0.0.1:80", "maxconn", "0", "fall", "1",
                                                    "disabled", "weight", "3"])
    assert (server.maxconn, server.fall, server.disabled, server.weight) == (0, 1, True, 3)
    assert error_of(kw._parse_server, ["s", "127.0.0.1:80", "fall", "0"]) == (
        "server 's': 'fall' must be between 1 and 2147483647, got 0")
