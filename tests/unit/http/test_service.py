"""http/service.py: the stats URI, Basic credentials, page options, admin form decisions."""
from __future__ import annotations

import base64
from types import SimpleNamespace

import pytest

from splicer.http.service import (
    PageOptions, StatsSettings, StatsUri, admin_commands, authorized, page_options, parse_use_service)
from splicer.http.logformat import RuleError


def test_stats_uri_is_a_prefix_of_the_target():
    cond = StatsUri(b"/haproxy?stats")
    assert cond(SimpleNamespace(target=b"/haproxy?stats"))
    assert cond(SimpleNamespace(target=b"/haproxy?stats;csv;norefresh"))
    assert not cond(SimpleNamespace(target=b"/haproxy"))
    assert not cond(SimpleNamespace(target=b"/other/haproxy?stats"))


def _basic(text: bytes) -> list:
    return [(b"Host", b"x"), (b"Authorization", b"Basic " + base64.b64encode(text))]


@pytest.mark.parametrize("fields, ok", [
    (_basic(b"admin:s3cret"), True),
    (_basic(b"ops:a:b"), True),          # the password may hold a colon
    (_basic(b"admin:wrong"), False),
    (_basic(b"ops:s3cret"), False),      # another account's password
    (_basic(b"admin"), False),           # no colon
    ([(b"authorization", b"Basic !!!notbase64")], False),
    ([(b"Authorization", b"Bearer abc")], False),
    ([(b"Host", b"x")], False),
])
def test_authorized(fields, ok):
    st = StatsSettings(auth=((b"admin", b"s3cret"), (b"ops", b"a:b")))
    assert authorized(st, fields) is ok
    assert authorized(StatsSettings(), fields) is True  # no stats auth: anyone


@pytest.mark.parametrize("target, opts", [
    (b"/st", PageOptions()),
    (b"/st;csv", PageOptions(csv=True)),
    (b"/st;norefresh;up", PageOptions(norefresh=True, up=True)),
    (b"/st;st=DONE", PageOptions(status="DONE")),
    (b"/st;st=<b>x</b>", PageOptions()),   # only a word is shown, never markup
])
def test_page_options(target, opts):
    assert page_options(target, b"/st") == opts


@pytest.mark.parametrize("body, result", [
    (b"s=web1&s=web2&action=drain&b=farm",
     (["set server farm/web1 state drain", "set server farm/web2 state drain"], "")),
    (b"s=web1&action=maint&b=farm", (["set server farm/web1 state maint"], "")),
    (b"s=web1&action=ready&b=farm", (["set server farm/web1 state ready"], "")),
    (b"action=ready&b=farm", ([], "NONE")),
    (b"s=web1&action=shutdown&b=farm", ([], "ERRP")),
    (b"s=web1&action=drain", ([], "ERRP")),
    (b"s=web1%3Bshow+stat&action=drain&b=farm", ([], "ERRP")),  # no second command smuggled in
    (b"s=a&action=drain&b=farm%2Fx", ([], "ERRP")),
    (b"\xff\xfe", ([], "ERRP")),
])
def test_admin_commands(body, result):
    assert admin_commands(body) == result


def test_use_service_errors():
    with pytest.raises(RuleError, match="expects one service name"):
        parse_use_service([], None)
    assert parse_use_service(["prometheus-exporter"], None).service == "prometheus-exporter"


@pytest.mark.parametrize("body, result", [
    (b"s=a&action=drain&b=%237", (["set server be/a state drain"], "")),
    (b"s=a&action=drain&b=#7", (["set server be/a state drain"], "")),
    (b"s=a&action=drain&b=%233", ([], "ERRP")),    # no backend with that id
    (b"s=a&action=drain&b=%23", ([], "ERRP")),
    (b"s=a&action=drain&b=%23x7", ([], "ERRP")),
    (b"s=a&action=drain&b=%23%D9%A7", ([], "ERRP")),  # a non-ASCII digit
])
def test_admin_commands_take_a_backend_id(body, result):
    assert admin_commands(body, {7: "be"}) == result
