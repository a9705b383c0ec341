"""report/html.py: what the page shows, escaped."""
from __future__ import annotations

from splicer.report.html import PageInfo, esc, human_seconds, render_page
from tests.unit.report.test_csv import STATS


def test_escapes_every_outside_text():
    hostile = {**STATS, "backends": {"farm": {**STATS["backends"]["farm"], "servers": {
        "web1": {"status": "DOWN", "checked": True, "check_status": "L7STS", "check_code": 503,
                 "last_chk": "<img src=x onerror=alert(1)>", "check_desc": '"><script>'}}}}}
    page = render_page(hostile, PageInfo("/st?\"><b>", node="<i>n</i>", desc="<u>d</u>"))
    for raw in ("<img", "<script>", "<b>", "<i>n", "<u>d"):
        assert raw not in page
    assert "&lt;img src=x onerror=alert(1)&gt;" in page and "&quot;&gt;&lt;script&gt;" in page
    assert 'href="/st?&quot;&gt;&lt;b&gt;;csv"' in page


def test_admin_form_only_with_the_admin_level():
    assert 'name="s"' not in render_page(STATS, PageInfo("/st"))
    page = render_page(STATS, PageInfo("/st", admin=True))
    assert '<form method="post" action="/st">' in page
    assert '<input type="checkbox" name="s" value="web,1">' in page
    assert '<input type="hidden" name="b" value="farm">' in page


def test_refresh_status_and_version():
    page = render_page(STATS, PageInfo("/st", refresh=5, status="DONE", version="0.1.0"))
    assert '<meta http-equiv="refresh" content="5">' in page
    assert "Action processed successfully." in page and "splicer version 0.1.0" in page
    assert "refresh" not in render_page(STATS, PageInfo("/st")).split("<body>")[0].replace("Refresh", "")


def test_helpers():
    assert [human_seconds(s) for s in (0, 59, 61, 3700, 90000)] == ["0s", "59s", "1m1s", "1h1m", "1d1h"]
    assert esc(None) == "" and esc("a'b") == "a&#x27;b"
