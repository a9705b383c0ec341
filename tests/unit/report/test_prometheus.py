"""report/prometheus.py: the exposition parses, with haproxy's names and labels."""
from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families

from splicer.report.prometheus import render_metrics
from tests.unit.report.test_csv import STATS


def samples() -> dict:
    out = {}
    for fam in text_string_to_metric_families(render_metrics({**STATS, "worker": [1, 2]}).decode()):
        for s in fam.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def test_names_labels_values():
    s = samples()
    assert s[("haproxy_frontend_sessions_total", (("proxy", "www"),))] == 5
    assert s[("haproxy_frontend_http_requests_rate_max", (("proxy", "www"),))] == 4
    assert s[("haproxy_server_check_failures_total", (("proxy", "farm"), ("server", "web,1")))] == 4
    assert s[("haproxy_server_downtime_seconds_total", (("proxy", "farm"), ("server", "web,1")))] == 30
    assert s[("haproxy_server_status", (("proxy", "farm"), ("server", "web,1"), ("state", "UP")))] == 1
    assert s[("haproxy_server_status", (("proxy", "farm"), ("server", "web,1"), ("state", "DOWN")))] == 0
    assert s[("haproxy_server_check_status", (("proxy", "farm"), ("server", "web,1"), ("state", "L7STS")))] == 1
    assert s[("haproxy_server_check_code", (("proxy", "farm"), ("server", "web,1")))] == 503
    assert s[("haproxy_server_check_duration_seconds", (("proxy", "farm"), ("server", "web,1")))] == 0.004
    assert s[("haproxy_server_http_responses_total", (("code", "2xx"), ("proxy", "farm"), ("server", "web,1")))] == 9
    assert s[("splicer_server_spliced_bytes_total", (("proxy", "farm"), ("server", "web,1")))] == 1500
    assert s[("splicer_frontend_copied_bytes_total", (("proxy", "www"),))] == 600
    assert s[("haproxy_backend_status", (("proxy", "farm"), ("state", "UP")))] == 1
    assert s[("splicer_workers", ())] == 2
    assert ("haproxy_server_limit_sessions", (("proxy", "farm"), ("server", "web,1"))) not in s  # no maxconn


def test_each_scrape_is_its_own_registry():
    a = render_metrics(STATS)
    b = render_metrics({**STATS, "frontends": {}})
    assert b"haproxy_frontend_sessions_total{" in a and b"haproxy_frontend_sessions_total{" not in b
    assert render_metrics(STATS) == a
