"""splicer.http.persist: the request's cookie, the server choice, the response's Set-Cookie."""
import base64

import pytest

from splicer.http.persist import (Choice, CookiePolicy, b64tos30, choose, cookie_dates, date_value,
                                  request_cookie, response_fields, s30tob64, set_cookie_value)

INSERT = CookiePolicy("SRV", "insert")
INDIRECT = CookiePolicy("SRV", "insert", indirect=True)
PREFIX = CookiePolicy("JSESSIONID", "prefix")
REWRITE = CookiePolicy("SRV", "rewrite")

LEN0 = (b"Content-Length", b"0")


def resp(policy, fields, value=b"s1", *, direct=False, present=False, method=b"GET", ignore=False):
    return response_fields(policy, fields, value, direct=direct, present=present, method=method, ignore=ignore)


# -- the request ------------------------------------------------------------------------

def test_insert_cookie_designates_the_server_and_is_forwarded_unchanged():
    fields = [(b"Host", b"x"), (b"Cookie", b"a=1; SRV=s2; b=2")]
    r = request_cookie(INSERT, fields)
    assert (r.value, r.present, r.edited) == (b"s2", True, False)
    assert r.fields == fields


def test_indirect_removes_the_pair_and_keeps_the_others_bytes():
    r = request_cookie(INDIRECT, [(b"Host", b"x"), (b"Cookie", b"a=1; SRV=s2; b=2"), (b"X", b"y")])
    assert (r.value, r.edited) == (b"s2", True)
    assert r.fields == [(b"Host", b"x"), (b"Cookie", b"a=1; b=2"), (b"X", b"y")]


def test_indirect_drops_a_cookie_field_left_empty():
    r = request_cookie(INDIRECT, [(b"Cookie", b"SRV=s1"), (b"cookie", b"SRV=s1 ;z=3")])
    assert r.fields == [(b"cookie", b"z=3")]
    assert r.value == b"s1"


def test_prefix_strips_the_server_part():
    r = request_cookie(PREFIX, [(b"Cookie", b"a=1; JSESSIONID=s1~abc123")])
    assert (r.value, r.edited) == (b"s1", True)
    assert r.fields == [(b"Cookie", b"a=1; JSESSIONID=abc123")]


def test_prefix_without_separator_designates_nothing():
    r = request_cookie(PREFIX, [(b"Cookie", b"JSESSIONID=abc123")])
    assert (r.value, r.present, r.edited) == (b"", True, False)


def test_cookie_names_are_case_sensitive_and_other_cookies_ignored():
    r = request_cookie(INSERT, [(b"Cookie", b"srv=s1; SRVX=s2; SRV")])
    assert (r.value, r.present) == (b"", False)


def test_first_designating_pair_wins():
    assert request_cookie(INSERT, [(b"Cookie", b"SRV=s1"), (b"Cookie", b"SRV=s2")]).value == b"s1"


# -- the choice -------------------------------------------------------------------------

UP = {0: True, 1: False}.__getitem__


@pytest.mark.parametrize("kwargs, expected", [
    (dict(cookie_server=None), Choice(None, False)),
    (dict(cookie_server=0), Choice(0, True)),
    # a DOWN server: balanced over, unless option persist or force-persist (haproxy)
    (dict(cookie_server=1), Choice(None, False)),
    (dict(cookie_server=1, persist=True), Choice(1, True)),
    (dict(cookie_server=1, force=True), Choice(1, True)),
    (dict(cookie_server=0, ignore=True), Choice(None, False, True)),
    # use-server first; a DOWN one is skipped unless persist/force
    (dict(cookie_server=0, use_server=0), Choice(0, True)),
    (dict(cookie_server=None, use_server=1), Choice(None, False)),
    (dict(cookie_server=0, use_server=1), Choice(0, True)),
    (dict(cookie_server=None, use_server=1, force=True), Choice(1, True)),
])
def test_choose(kwargs, expected):
    assert choose(alive=UP, **kwargs) == expected


# -- the response -----------------------------------------------------------------------

def test_insert_adds_set_cookie_when_not_direct():
    assert resp(INSERT, [LEN0]) == [LEN0, (b"Set-Cookie", b"SRV=s1; path=/")]


def test_insert_adds_nothing_to_a_direct_request():
    assert resp(INSERT, [LEN0], direct=True, present=True) is None


def test_insert_all_attributes_in_haproxy_order():
    p = CookiePolicy("SRV", "insert", indirect=True, nocache=True, httponly=True, secure=True,
                     domains=(".a.com", ".b.com"))
    assert resp(p, [LEN0]) == [LEN0, (b"Set-Cookie", b"SRV=s1; path=/; domain=.a.com; domain=.b.com; HttpOnly; Secure"),
                              (b"Cache-control", b"private")]


def test_nocache_keeps_an_existing_private_cache_control():
    p = CookiePolicy("SRV", "insert", nocache=True)
    fields = [(b"Cache-Control", b"no-store, max-age=0")]
    assert resp(p, fields) == fields + [(b"Set-Cookie", b"SRV=s1; path=/")]


def test_insert_removes_the_servers_own_cookie_unless_preserve():
    fields = [(b"Set-Cookie", b"SRV=app; path=/"), (b"Set-Cookie", b"other=1")]
    assert resp(INSERT, fields) == [(b"Set-Cookie", b"other=1"), (b"Set-Cookie", b"SRV=s1; path=/")]
    # with preserve, the server's own cookie stays and none is inserted
    assert resp(CookiePolicy("SRV", "insert", preserve=True), fields) is None


def test_postonly_inserts_only_after_a_post():
    p = CookiePolicy("SRV", "insert", postonly=True)
    assert resp(p, [LEN0], method=b"GET") is None
    assert resp(p, [LEN0], method=b"POST") == [LEN0, (b"Set-Cookie", b"SRV=s1; path=/")]


def test_ignore_persist_inserts_nothing():
    assert resp(INSERT, [LEN0], ignore=True) is None


def test_server_without_cookie_value_deletes_a_client_cookie():
    assert resp(INSERT, [LEN0], b"") is None
    assert resp(INSERT, [LEN0], b"", present=True) == [
        LEN0, (b"Set-Cookie", b"SRV=; Expires=Thu, 01-Jan-1970 00:00:01 GMT; path=/")]


def test_rewrite_replaces_the_servers_value():
    assert resp(REWRITE, [(b"Set-Cookie", b"SRV=abc; Path=/; HttpOnly")], direct=True) == [
        (b"Set-Cookie", b"SRV=s1; Path=/; HttpOnly")]
    assert resp(REWRITE, [LEN0]) is None  # the server set no cookie: nothing to rewrite


def test_prefix_prepends_the_server_value():
    assert resp(PREFIX, [(b"Set-Cookie", b"JSESSIONID=abc123; Path=/app")], b"s2") == [
        (b"Set-Cookie", b"JSESSIONID=s2~abc123; Path=/app")]


def test_rewrite_with_nocache_marks_the_response_private():
    p = CookiePolicy("SRV", "rewrite", nocache=True)
    assert resp(p, [(b"Set-Cookie", b"SRV=abc")]) == [(b"Set-Cookie", b"SRV=s1"), (b"Cache-control", b"private")]


def test_set_cookie_value():
    assert set_cookie_value(CookiePolicy("S", "insert", secure=True), b"v") == b"S=v; path=/; Secure"


# -- dates: maxidle / maxlife (haproxy src/http_ana.c, src/base64.c) ----------------------------

NOW = 1_700_000_000
IDLE = CookiePolicy("SRV", "insert", indirect=True, maxidle=1800)
LIFE = CookiePolicy("SRV", "insert", maxlife=28800)
BOTH = CookiePolicy("SRV", "insert", maxidle=1800, maxlife=28800)


def stamp(unix: int) -> bytes:
    """A cookie date as haproxy writes it, computed with the stdlib: the 30-bit value of
    `unix` in 4-second units, top bits first, as the first 5 base64 characters."""
    return base64.b64encode(((unix >> 2) << 18).to_bytes(6, "big"))[:5]


@pytest.mark.parametrize("value", [0, 1, 63, 64, 425_000_000, (1 << 30) - 1])
def test_s30tob64_is_base64_of_30_bits_and_b64tos30_reads_it_back(value):
    assert s30tob64(value) == base64.b64encode((value << 18).to_bytes(6, "big"))[:5]
    assert b64tos30(s30tob64(value)) == value


def test_b64tos30_refuses_what_is_not_base64():
    assert [b64tos30(x) for x in (b"AAA-A", b"AAAA", b"AA=AA")] == [-1, -1, -1]


def test_dates_are_4_second_units_rounded_up():
    assert [date_value(t) << 2 for t in (NOW, NOW + 1, NOW + 4)] == [NOW, NOW + 4, NOW + 4]


@pytest.mark.parametrize("value, parsed", [
    (b"s1", (b"s1", 0, 0)),
    (b"s1|" + stamp(NOW), (b"s1", NOW, 0)),
    (b"s1|" + stamp(NOW) + b"|" + stamp(NOW - 400), (b"s1", NOW, NOW - 400)),
    (b"s1|AAA", (b"s1", 0, 0)),                      # too short to be a date
    (b"s1|AAAAA", (b"s1", 0, 0)),                    # 0 is no date
    (b"s1|??!!x|" + stamp(NOW), (b"s1", 0, NOW)),    # an unreadable last date
    (b"s1|", (b"s1", 0, 0)),
])
def test_cookie_dates(value, parsed):
    assert cookie_dates(value) == parsed


def test_a_cookie_idle_past_maxidle_is_ignored():
    fields = [(b"Cookie", b"a=1; SRV=s1|" + stamp(NOW - 1804))]
    r = request_cookie(IDLE, fields, NOW)
    assert (r.value, r.present, r.expired, r.last_date) == (b"", True, True, 0)
    assert r.fields == [(b"Cookie", b"a=1")]  # indirect: removed all the same
    r = request_cookie(IDLE, [(b"Cookie", b"SRV=s1|" + stamp(NOW - 1796))], NOW)
    assert (r.value, r.expired, r.last_date) == (b"s1", False, NOW - 1796)


def test_a_cookie_older_than_maxlife_is_ignored_even_when_used_lately():
    fields = [(b"Cookie", b"SRV=s1|" + stamp(NOW) + b"|" + stamp(NOW - 28804))]
    r = request_cookie(BOTH, fields, NOW)
    assert (r.value, r.expired, r.first_date) == (b"", True, 0)
    fields = [(b"Cookie", b"SRV=s1|" + stamp(NOW) + b"|" + stamp(NOW - 28796))]
    assert request_cookie(BOTH, fields, NOW).value == b"s1"


def test_a_cookie_dated_more_than_a_day_ahead_is_ignored():
    ahead = [(b"Cookie", b"SRV=s1|" + stamp(NOW + 86404))]
    assert request_cookie(IDLE, ahead, NOW).value == b""
    assert request_cookie(IDLE, [(b"Cookie", b"SRV=s1|" + stamp(NOW + 86396))], NOW).value == b"s1"


def test_a_cookie_without_dates_is_accepted():
    assert request_cookie(BOTH, [(b"Cookie", b"SRV=s1")], NOW).value == b"s1"


def test_without_maxidle_and_maxlife_dates_are_read_but_never_expire():
    r = request_cookie(INSERT, [(b"Cookie", b"SRV=s1|" + stamp(NOW - 10**6))], NOW)
    assert (r.value, r.expired) == (b"s1", False)


def dated(policy, *, direct, last=0, first=0, value=b"s1"):
    return response_fields(policy, [LEN0], value, direct=direct, present=direct, method=b"GET",
                           now=NOW, last_date=last, first_date=first)


def test_an_inserted_cookie_carries_the_dates():
    assert dated(IDLE, direct=False) == [LEN0, (b"Set-Cookie", b"SRV=s1|" + stamp(NOW + 3) + b"; path=/")]
    assert dated(BOTH, direct=False) == [
        LEN0, (b"Set-Cookie", b"SRV=s1|" + stamp(NOW + 3) + b"|" + stamp(NOW + 3) + b"; path=/")]


def test_a_balanced_request_keeps_its_cookies_first_date():
    # (the cookie's server was down: the new server's cookie keeps the first visit's date)
    assert dated(LIFE, direct=False, last=NOW - 100, first=NOW - 1000) == [
        LEN0, (b"Set-Cookie", b"SRV=s1|" + stamp(NOW + 3) + b"|" + stamp(NOW - 1000) + b"; path=/")]


def test_a_direct_request_gets_its_cookie_again_only_once_its_last_date_passed():
    assert dated(IDLE, direct=True, last=NOW) is None
    assert dated(IDLE, direct=True, last=NOW + 4) is None
    assert dated(IDLE, direct=True, last=NOW - 4) == [
        LEN0, (b"Set-Cookie", b"SRV=s1|" + stamp(NOW + 3) + b"; path=/")]
    assert dated(IDLE, direct=True) == [LEN0, (b"Set-Cookie", b"SRV=s1|" + stamp(NOW + 3) + b"; path=/")]


def test_maxlife_keeps_the_first_date_when_refreshing_and_adds_a_missing_one():
    assert dated(BOTH, direct=True, last=NOW - 8, first=NOW - 1000) == [
        LEN0, (b"Set-Cookie", b"SRV=s1|" + stamp(NOW + 3) + b"|" + stamp(NOW - 1000) + b"; path=/")]
    assert dated(LIFE, direct=True, last=NOW + 4) == [
        LEN0, (b"Set-Cookie", b"SRV=s1|" + stamp(NOW + 3) + b"|" + stamp(NOW + 3) + b"; path=/")]


def test_dates_a_policy_no_longer_wants_are_dropped():
    # a first date without maxlife, a last date without maxidle or maxlife: rewritten bare
    assert dated(IDLE, direct=True, last=NOW + 4, first=NOW - 1000) == [
        LEN0, (b"Set-Cookie", b"SRV=s1|" + stamp(NOW + 3) + b"; path=/")]
    assert dated(INSERT, direct=True, last=NOW - 8) == [LEN0, (b"Set-Cookie", b"SRV=s1; path=/")]
    assert dated(INSERT, direct=True) is None
