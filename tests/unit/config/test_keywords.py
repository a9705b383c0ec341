"""splicer.config.keywords: the registry itself, and that docs/configuration.md covers it."""
import pathlib
import re

import pytest

from splicer.config import keywords
from splicer.config.keywords import (
    OPTIONS,
    TIMEOUTS,
    all_keywords,
    allowed_sections,
    describe_section,
    did_you_mean,
    doc_ref,
    keywords_for,
    lookup,
    suggest,
)

DOCS = pathlib.Path(__file__).resolve().parents[3] / "docs" / "configuration.md"


def test_lookup_depends_on_the_section():
    assert lookup("maxconn", "global").sections == frozenset({"global"})
    assert lookup("maxconn", "frontend").sections == frozenset({"defaults", "frontend", "listen"})
    assert lookup("maxconn", "backend") is None
    assert lookup("blance", "backend") is None


def test_allowed_sections_is_the_union_over_registrations():
    assert allowed_sections("maxconn") == {"global", "defaults", "frontend", "listen"}
    assert allowed_sections("bind") == {"frontend", "listen"}
    assert allowed_sections("server") == {"listen", "backend", "ring"}  # a ring forwards to its servers
    assert allowed_sections("nope") == frozenset()


def test_sections_follow_haproxy_matrix():
    expected = {
        "mode": {"defaults", "frontend", "listen", "backend"},
        "default_backend": {"defaults", "frontend", "listen"},
        "balance": {"defaults", "listen", "backend"},
        "retries": {"defaults", "listen", "backend"},
    }
    for name, sections in expected.items():
        assert allowed_sections(name) == sections, name
    assert {n for n, kw in TIMEOUTS.items() if "frontend" in kw.sections} == {
        "client", "http-request", "http-keep-alive", "tarpit"}
    assert {n for n, kw in TIMEOUTS.items() if "backend" in kw.sections} == {
        "server", "connect", "queue", "tunnel", "check", "tarpit"}
    assert OPTIONS["redispatch"].sections == {"defaults", "listen", "backend"}
    assert {n for n, kw in OPTIONS.items() if kw.negatable} == {
        "splice-auto", "splice-request", "splice-response", "redispatch", "http-keep-alive",
        "http-buffer-request", "abortonclose", "allbackups", "persist",
        "accept-invalid-http-request", "idle-close-on-response", "dontlognull", "log-health-checks",
        "http-ignore-probes"}
    assert OPTIONS["dontlognull"].sections == {"defaults", "frontend", "listen"}
    assert OPTIONS["log-health-checks"].sections == {"defaults", "listen", "backend"}
    assert allowed_sections("capture") == {"frontend", "listen"}
    assert allowed_sections("log-format") == {"defaults", "frontend", "listen"}


def test_keywords_for_a_section():
    assert keywords_for("backend") == [
        "acl", "balance", "cookie", "default-server", "errorfile", "force-persist", "hash-balance-factor",
        "hash-type", "http-check", "http-request", "http-response", "http-reuse", "ignore-persist",
        "load-server-state-from-file", "log", "mode", "no", "option", "retries", "retry-on", "server",
        "server-state-file-name", "stats", "timeout", "use-server"]
    assert keywords_for("global") == [
        "chroot", "cpu-map", "daemon", "group", "hard-stop-after", "log", "maxconn", "maxpipes", "nbthread",
        "pidfile", "server-state-base", "server-state-file", "stats", "tune.bufsize", "tune.http.maxhdr", "tune.maxpipes", "tune.pipesize", "user"]


@pytest.mark.parametrize("word, candidates, expected", [
    ("blance", ["balance", "bind"], "balance"),
    ("forwardfr", list(OPTIONS), "forwardfor"),
    ("clinet", list(TIMEOUTS), "client"),
    ("xyz", ["balance"], None),
])
def test_suggest(word, candidates, expected):
    assert suggest(word, candidates) == expected


def test_did_you_mean_text():
    assert did_you_mean("blance", ["balance"]) == "; did you mean 'balance'?"
    assert did_you_mean("xyz", ["balance"]) == ""


def test_describe_section():
    assert [describe_section(k, n) for k, n in [
        ("global", ""), ("defaults", ""), ("defaults", "base"), ("backend", "web"),
        ("listen", "lb")]] == [
        "global section", "defaults section", "defaults 'base'", "backend 'web'", "listen 'lb'"]


def test_doc_ref_uses_github_anchors():
    assert doc_ref("timeout http-keep-alive") == "docs/configuration.md#timeout-http-keep-alive"
    assert doc_ref("tune.http.maxhdr") == "docs/configuration.md#tunehttpmaxhdr"
    assert doc_ref("maxconn (global)") == "docs/configuration.md#maxconn-global"


def _doc_anchors():
    headings = re.findall(r"^#{2,4} (.+?)\s*$", DOCS.read_text(), re.MULTILINE)
    return {doc_ref(h).split("#", 1)[1] for h in headings}


def test_every_keyword_is_documented():
    anchors = _doc_anchors()
    missing = [kw.name for kw in all_keywords() if kw.doc.split("#", 1)[1] not in anchors]
    assert missing == []


def test_every_keyword_names_a_parse_function_and_known_sections():
    for kw in all_keywords():
        assert callable(kw.parse)
        assert kw.sections and kw.sections <= set(keywords.SECTION_KINDS), kw.name
