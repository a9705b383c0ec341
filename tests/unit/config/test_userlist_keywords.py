"""userlist sections, http_auth references, http-request auth / tarpit and timeout tarpit
through the loader: the model they give, and exact "file:line: message" errors."""
import textwrap

import pytest

from splicer.config import loads
from splicer.errors import ConfigErrors

SHA512 = "$6$saltsalt$TVLlQcbpFVof5W3Yz4DTP6gRstiNuHwwTt6GLc1E5n0U0aDehy0S5knV8wiOQSpT0Y77vwPZN.Pq.H91p5hVO1"

TAIL = """
frontend fe
    mode http
    bind :80
    default_backend be
backend be
    mode http
    server s1 127.0.0.1:8080
"""


def cfg(text):
    return loads(textwrap.dedent(text), "site.cfg", env={})


def errors_of(text):
    with pytest.raises(ConfigErrors) as info:
        cfg(text)
    return [str(e) for e in info.value.errors]


def test_userlist_users_and_groups_from_both_sides():
    c = cfg(f"""
        userlist L1
            group G1 users tiger,scott
            group G2
            user tiger password '{SHA512}'
            user scott insecure-password elgato groups G2
            user nopass
        """ + TAIL)
    ul = c.userlists["L1"]
    assert ul.member_of == {b"tiger": (b"G1",), b"scott": (b"G1", b"G2")}
    assert ul.groups == {"G1": frozenset({b"tiger", b"scott"}), "G2": frozenset({b"scott"})}
    assert ul.user(b"tiger").password == SHA512 and ul.user(b"tiger").hashed
    assert ul.user(b"scott").insecure and not ul.user(b"scott").hashed
    assert ul.user(b"nopass").password is None
    assert (ul.file, ul.line) == ("site.cfg", 2)


@pytest.mark.parametrize("lines, message", [
    ("user bob password x", "site.cfg:3: userlist 'L': user 'bob': unsupported password hash scheme 'x' "
     "(supported: $1$ md5-crypt, $5$ sha256-crypt, $6$ sha512-crypt, $2a$/$2b$/$2y$ bcrypt; or use "
     "'insecure-password')"),
    ("user bob password $y$j9T$abc$def", "site.cfg:3: userlist 'L': user 'bob': unsupported password hash "
     "scheme '$y$' (supported: $1$ md5-crypt, $5$ sha256-crypt, $6$ sha512-crypt, $2a$/$2b$/$2y$ bcrypt; "
     "or use 'insecure-password')"),
    ("user bob password $6$salt$tooshort", "site.cfg:3: userlist 'L': user 'bob': malformed sha512-crypt "
     "password hash"),
    ("user bob password $5$rounds=10$salt$" + "a" * 43, "site.cfg:3: userlist 'L': user 'bob': sha256-crypt "
     "rounds must be between 1000 and 999999999, got 10"),
    ("user bob password $2b$03$" + "a" * 53, "site.cfg:3: userlist 'L': user 'bob': malformed bcrypt "
     "password hash"),
    ("user bob insecure-password a password b", "site.cfg:3: userlist 'L': user 'bob': 'password' given "
     "twice (one password, one groups list)"),
    ("user bob secret x", "site.cfg:3: userlist 'L': user 'bob': unknown option 'secret' (supported: "
     "password, insecure-password, groups)"),
    ("user bob groups", "site.cfg:3: userlist 'L': user 'bob': 'groups' expects a value"),
    ("user", "site.cfg:3: userlist 'L': 'user' expects a name: user <name> [password <hash> | "
     "insecure-password <password>] [groups <group>,...]"),
    ("group", "site.cfg:3: userlist 'L': 'group' expects a name: group <name> [users <user>,...]"),
    ("group g members a", "site.cfg:3: userlist 'L': group 'g': unknown option 'members' (supported: users)"),
    ("group g users a,,b", "site.cfg:3: userlist 'L': group 'g': empty name in 'a,,b'"),
    ("user bob groups nosuch", "site.cfg:3: userlist 'L': user 'bob' is in unknown group 'nosuch'"),
    ("group g users ghost", "site.cfg:3: userlist 'L': group 'g' lists unknown user 'ghost'"),
    ("user bob\n    user bob", "site.cfg:4: userlist 'L': duplicate user 'bob' (first at line 3)"),
    ("group g\n    group g", "site.cfg:4: userlist 'L': duplicate group 'g' (first at line 3)"),
    ("balance roundrobin", "site.cfg:3: 'balance' is not allowed in userlist 'L' (allowed in: defaults, "
     "listen, backend)"),
])
def test_userlist_line_errors(lines, message):
    assert errors_of("\nuserlist L\n    " + lines + "\n" + TAIL) == [message]


def test_two_userlists_of_one_name_and_a_missing_name():
    assert errors_of("\nuserlist L\nuserlist L\n" + TAIL) == [
        "site.cfg:3: userlist 'L' has the same name as the userlist declared at site.cfg:2"]
    assert errors_of("\nuserlist\n" + TAIL) == ["site.cfg:2: 'userlist' expects a name"]


def test_http_auth_must_name_a_userlist_and_http_auth_group_its_groups():
    assert errors_of("""
        userlist admins
            group ops
        frontend fe
            mode http
            bind :80
            acl ok http_auth(admin)
            http-request auth unless { http_auth_group(admins) ops devs }
            use_backend be if { http_auth(nobody) }
            default_backend be
        backend be
            mode http
            server s1 127.0.0.1:8080
        """) == [
        "site.cfg:7: frontend 'fe': 'http_auth(admin)': userlist 'admin' not found; did you mean 'admins'?",
        "site.cfg:8: frontend 'fe': 'http_auth_group(admins)': userlist 'admins' has no group 'devs'",
        "site.cfg:9: frontend 'fe': 'http_auth(nobody)': userlist 'nobody' not found",
    ]


@pytest.mark.parametrize("rule, message", [
    ("http-request auth realm", "'http-request auth': missing realm value"),
    ("http-request auth realm a b", "'http-request auth': unexpected 'b' after the realm"),
    ("http-request auth domain x", "'http-request auth': unknown option 'domain' (supported: realm)"),
    ("http-request auth realm \"a\\tb\"", "'http-request auth': a realm cannot hold control characters"),
    ("http-request tarpit deny_status 99", "'http-request tarpit': invalid status code '99' (expected 200..599)"),
    ("http-request tarpit code 500", "'http-request tarpit': unknown option 'code' (supported: status, "
     "deny_status, content-type, string, lf-string, file, errorfile, default-errorfiles, hdr)"),
    ("http-request tarpit string x", "'http-request tarpit': 'string' needs a 'content-type'"),
    ("http_auth", "unknown keyword 'http_auth' in frontend 'fe'"),
])
def test_auth_and_tarpit_rule_errors(rule, message):
    text = TAIL.replace("    default_backend be", f"    {rule}\n    default_backend be", 1)
    assert errors_of(text) == [f"site.cfg:5: {message}"]


def test_auth_realm_defaults_to_the_proxy_name():
    c = cfg("""
        frontend fe
            mode http
            bind :80
            http-request auth
            http-request auth realm "Back office"
            default_backend be
        backend be
            mode http
            http-request auth if { path /x }
            server s1 127.0.0.1:8080
        listen lst
            mode http
            bind :81
            http-request auth
            server s1 127.0.0.1:8080
        """)
    assert [r.realm for r in c.frontends[0].http_request] == ["fe", "Back office"]
    assert c.backends["be"].http_request[0].realm == "be"
    assert c.frontends[1].http_request[0].realm == "lst"
    t = cfg(TAIL.replace("    default_backend be", "    http-request tarpit deny_status 403\n    default_backend be"))
    rule = t.frontends[0].http_request[0]
    assert (rule.action, rule.status, rule.default_errorfiles, rule.counter) == ("tarpit", 403, True, "dreq")


def test_timeout_tarpit_falls_back_to_timeout_connect():
    c = cfg("""
        defaults
            mode http
            timeout connect 3s
        frontend fe
            bind :80
            default_backend be
        frontend fe2
            bind :81
            timeout tarpit 7s
            default_backend be
        backend be
            timeout tarpit 2s
            server s1 127.0.0.1:8080
        backend be2
            timeout connect 4s
            server s1 127.0.0.1:8080
        listen lst
            bind :82
            timeout connect 5s
            server s1 127.0.0.1:8080
        """)
    fes = {f.name: f for f in c.frontends}
    assert (fes["fe"].tarpit, fes["fe2"].tarpit, fes["lst"].tarpit) == (3.0, 7.0, 5.0)
    assert (c.backends["be"].tarpit, c.backends["be2"].tarpit, c.backends["lst"].tarpit) == (2.0, 4.0, 5.0)
    bare = cfg(TAIL)
    assert (bare.frontends[0].tarpit, bare.backends["be"].tarpit) == (0.0, 0.0)
    # 0 means unset, as in haproxy: the connect timeout stands in
    zero = cfg("defaults\n    timeout connect 1s\n    timeout tarpit 0\n" + TAIL)
    assert zero.frontends[0].tarpit == 1.0
