"""Request-line rewrites, replace-header / replace-value and variables through the loader:
the model they give, and the exact "file:line: msg" of every refusal."""
import pytest

from splicer.config import loads
from splicer.errors import ConfigErrors
from splicer.http.rewrite import RewriteRule
from splicer.http.rules import HeaderRule
from splicer.http.variables import VarRule

HEAD = """\
defaults
    mode http
frontend www
    bind 127.0.0.1:8080
"""
BACKENDS = """\
backend app
    server s1 127.0.0.1:81
"""


def load(frontend: str):
    return loads(HEAD + frontend + BACKENDS, "site.cfg")


def errors(frontend: str) -> list[str]:
    with pytest.raises(ConfigErrors) as exc:
        load(frontend)
    return [str(e) for e in exc.value.errors]


def test_rules_of_each_kind_keep_their_order():
    cfg = load("""\
    acl is_api var(txn.kind) -m str api
    http-request set-var(txn.kind) path,field(2,/)
    http-request replace-path ^/api(/.*) \\1 if is_api
    http-request set-method GET if { method HEAD }
    http-request replace-value Accept ^text/(.*)$ application/\\1
    http-request unset-var(txn.kind)
    http-response set-var-fmt(res.st) %ST
    http-response replace-header Server .* hidden
    default_backend app
""")
    fe = cfg.frontends[0]
    kinds = [(type(r).__name__, r.action, r.line) for r in fe.http_request + fe.http_response]
    assert kinds == [("VarRule", "set-var", 6), ("RewriteRule", "replace-path", 7), ("RewriteRule", "set-method", 8),
                     ("HeaderRule", "replace-value", 9), ("VarRule", "unset-var", 10), ("VarRule", "set-var-fmt", 11),
                     ("HeaderRule", "replace-header", 12)]
    assert isinstance(fe.http_request[1], RewriteRule) and fe.http_request[1].cond is not None
    assert isinstance(fe.http_request[0], VarRule) and isinstance(fe.http_response[1], HeaderRule)


def test_bad_lines_are_all_reported_with_file_and_line():
    assert errors("""\
    http-request set-path
    http-request replace-uri ( /x
    http-request replace-path /(a) /\\2
    http-request set-var(txn) str(a)
    http-request set-var(res.a) str(a)
    http-response set-var(req.a) str(a)
    http-request set-var(txn.a) nosuchfetch
    http-response set-path /x
    http-request replace-header Transfer-Encoding a b
    acl v var(bad) -m found
    default_backend app
""") == [
        "site.cfg:5: 'http-request set-path' expects exactly 1 argument(s): set-path <fmt>",
        "site.cfg:6: 'http-request replace-uri': invalid regex '(': missing ), unterminated subpattern at position 0",
        "site.cfg:7: 'http-request replace-path': '\\2' refers to a group the regex '/(a)' does not have",
        "site.cfg:8: 'http-request set-var': 'txn' is not a variable name: expected <scope>.<name> with <scope> "
        "one of proc, sess, txn, req, res",
        "site.cfg:9: 'http-request set-var(res.a)': a 'res' variable does not live during request processing "
        "(haproxy 2.8: 'req' and 'res' never overlap)",
        "site.cfg:10: 'http-response set-var(req.a)': a 'req' variable does not live during response processing "
        "(haproxy 2.8: 'req' and 'res' never overlap)",
        "site.cfg:11: 'http-request set-var': unknown fetch method 'nosuchfetch'",
        "site.cfg:12: unknown 'http-response' action 'set-path' (supported: set-header, add-header, del-header, "
        "replace-header, replace-value, allow, deny, return, redirect, set-status, set-var, set-var-fmt, unset-var)",
        "site.cfg:13: 'Transfer-Encoding' cannot be rewritten: splicer writes the framing and connection fields "
        "itself",
        "site.cfg:14: acl 'v': fetch 'var': 'bad' is not a variable name: expected <scope>.<name> with <scope> "
        "one of proc, sess, txn, req, res",
    ]
