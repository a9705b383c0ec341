"""The `stats` keywords and `http-request use-service` (config/keywords.py, resolve.py)."""
from __future__ import annotations

import pytest

from splicer.config import loads
from splicer.errors import ConfigErrors
from splicer.http.service import DEFAULT_REALM, ServiceRule

BASE = """
defaults
    mode http
{defaults}
frontend www
    bind :8080
    default_backend farm
{frontend}
backend farm
    server a 127.0.0.1:9000
{backend}
"""


def cfg(frontend="", backend="", defaults=""):
    return loads(BASE.format(frontend=frontend, backend=backend, defaults=defaults), "site.cfg")


def errors(**parts) -> list[str]:
    with pytest.raises(ConfigErrors) as info:
        cfg(**parts)
    return [str(e) for e in info.value.errors]


def stats_of(rules):
    found = [r for r in rules if isinstance(r, ServiceRule) and r.service == "stats"]
    return found[0].stats if found else None


def test_stats_enable_takes_haproxys_defaults():
    st = stats_of(cfg(frontend="    stats enable").frontends[0].http_request)
    assert (st.uri, st.realm, st.refresh, st.auth, st.admin) == (b"/haproxy?stats", DEFAULT_REALM, 0.0, (), ())
    assert (st.show_legends, st.show_version, st.show_node, st.proxy) == (False, False, None, "www")
    assert stats_of(cfg().frontends[0].http_request) is None


def test_every_stats_keyword_and_defaults_inheritance():
    c = cfg(defaults="    stats auth admin:pw\n    stats refresh 5s\n    stats show-version",
            frontend="    stats uri /st\n    stats auth ops:x:y\n    stats realm My\\ Realm\n"
                     "    stats show-legends\n    stats show-node\n    stats show-desc Paris\n"
                     "    acl local src 127.0.0.1\n    stats admin if local",
            backend="    stats hide-version")
    st = stats_of(c.frontends[0].http_request)
    assert (st.uri, st.refresh, st.realm) == (b"/st", 5.0, "My Realm")
    assert st.auth == ((b"admin", b"pw"), (b"ops", b"x:y"))
    assert (st.show_legends, st.show_version, st.show_node, st.show_desc) == (True, True, "www", "Paris")
    assert len(st.admin) == 1 and st.admin[0].cond.terms  # bound to the section's ACL
    be = stats_of(c.backends["farm"].http_request)  # enabled in the defaults: the backend too
    assert be.show_version is False and be.auth == ((b"admin", b"pw"),)


def test_stats_rule_comes_after_the_sections_rules():
    rules = cfg(frontend="    http-request deny if { path /st }\n    stats uri /st").frontends[0].http_request
    assert [type(r).__name__ for r in rules] == ["LocalRule", "ServiceRule"]


def test_stats_ignored_in_tcp_mode():
    c = loads("""
frontend t
    mode tcp
    bind :8080
    default_backend b
    stats enable
backend b
    mode tcp
    server a 127.0.0.1:9000
""", "site.cfg")
    assert c.frontends[0].http_request == ()


def test_use_service_prometheus_exporter():
    rules = cfg(frontend="    http-request use-service prometheus-exporter if { path /metrics }").frontends[0].http_request
    assert isinstance(rules[0], ServiceRule) and rules[0].service == "prometheus-exporter"
    assert rules[0].cond is not None and rules[0].counter == "intercepted"


@pytest.mark.parametrize("frontend, message", [
    ("    stats scope .", "site.cfg:8: 'stats scope' is not supported"),
    ("    stats enbale", "site.cfg:8: unknown keyword 'stats enbale' in frontend 'www'; did you mean 'enable'?"),
    ("    stats", "site.cfg:8: 'stats' expects a keyword (enable, uri, refresh, auth, realm, admin, show-legends, "
                "hide-version, show-version, show-node, show-desc)"),
    ("    stats uri stats", "site.cfg:8: 'stats uri': invalid prefix 'stats' (an absolute path such as "
                          "/haproxy?stats)"),
    ("    stats auth nopassword", "site.cfg:8: 'stats auth': 'nopassword' is not <user>:<password>"),
    ("    stats admin", "site.cfg:8: 'stats admin' expects a condition: stats admin { if | unless } <cond>"),
    ("    stats admin if nosuchacl", "site.cfg:8: frontend 'www': unknown ACL 'nosuchacl' in a 'stats admin' "
                                   "condition"),
    ("    stats enable yes", "site.cfg:8: 'stats enable' cannot handle unexpected argument 'yes'"),
    ("    http-request use-service lua.hello", "site.cfg:8: 'http-request use-service': unknown service "
                                               "'lua.hello' (supported: prometheus-exporter)"),
])
def test_stats_errors(frontend, message):
    assert errors(frontend=frontend) == [message]


def test_stats_admin_not_in_defaults():
    assert errors(defaults="    stats admin if TRUE") == [
        "site.cfg:4: 'stats admin' is not allowed in defaults section (allowed in: frontend, listen, backend)"]
