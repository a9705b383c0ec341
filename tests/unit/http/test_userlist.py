"""http/userlist.py: Basic credentials (RFC 7617), crypt(3) hash vectors, the verdict
cache, and the http_auth fetches and the auth / tarpit answers built on them."""
import base64
import hashlib

import pytest

from splicer.http import actions
from splicer.http.acl import parse_acl_expr
from splicer.http.sample import RequestView, parse_fetch
from splicer.http.userlist import (BCRYPT_MAX, Group, User, UserlistError, VerdictCache, auth_scheme,
                                   basic_credentials, build_userlist, credential_key, hash_scheme, verify_hash)

# Known vectors: written by the system's crypt(3) (glibc / libxcrypt), an implementation
# independent of the one splicer verifies with; the password of each is "secret".
VECTORS = [
    "$1$saltsalt$9xy1btjgzLYfb7hivXtC//",
    "$5$rounds=1000$saltsalt$eKLZU9t9OoPWrqOQsoTIKG0aYkZ5rGOoOQhiIvoSWX2",
    "$6$saltsalt$TVLlQcbpFVof5W3Yz4DTP6gRstiNuHwwTt6GLc1E5n0U0aDehy0S5knV8wiOQSpT0Y77vwPZN.Pq.H91p5hVO1",
    "$2b$04$abcdefghijklmnopqrstuu2r9OfJnfCsdneAXAGHnS4UpFFP8WIrW",
]


def b64(text: bytes) -> bytes:
    return base64.b64encode(text)


@pytest.mark.parametrize("values, expected", [
    ([b"Basic " + b64(b"tiger:secret")], (b"tiger", b"secret")),
    ([b"basic " + b64(b"tiger:se:cr:et")], (b"tiger", b"se:cr:et")),      # split at the first colon
    ([b"BASIC   " + b64(b"tiger:") + b"  "], (b"tiger", b"")),             # empty password
    ([b"Basic " + b64(b":x")], (b"", b"x")),
    ([b"Basic " + b64("jos\u00e9:p\u00e4ss".encode())], ("jos\u00e9".encode(), "p\u00e4ss".encode())),
    ([], None),
    ([b"Basic " + b64(b"a:b"), b"Basic " + b64(b"a:b")], None),          # two fields: ambiguous
    ([b"Basic " + b64(b"nocolon")], None),
    ([b"Basic " + b64(b"tiger:secret")[:-1]], None),                    # length not a multiple of 4
    ([b"Basic dGlnZXI6c2VjcmV0!"], None),                                # outside the alphabet
    ([b"Basic dGlnZXI6c2Vj\ncmV0"], None),
    ([b"Basic"], None), ([b"Basic "], None), ([b""], None),
    ([b"Bearer " + b64(b"tiger:secret")], None),
    ([b"Basictiger"], None),
])
def test_basic_credentials(values, expected):
    assert basic_credentials(values) == expected


def test_auth_scheme():
    assert auth_scheme([b"Basic abc"]) == b"basic"
    assert auth_scheme([b"  Bearer tok"]) == b"bearer"
    assert auth_scheme([]) is None and auth_scheme([b"a", b"b"]) is None and auth_scheme([b" "]) is None


@pytest.mark.parametrize("hashed", VECTORS)
def test_known_vectors_verify_and_wrong_passwords_do_not(hashed):
    hash_scheme(hashed)  # accepted at load
    assert verify_hash(hashed, b"secret") is True
    for wrong in (b"Secret", b"secret ", b"", b"secre", b"secret\0", b"\xff" * 80):
        assert verify_hash(hashed, wrong) is False


def test_bcrypt_reads_72_bytes_like_crypt():
    from passlib.hash import bcrypt
    h = bcrypt.using(rounds=4).hash(b"x" * BCRYPT_MAX)
    assert verify_hash(h, b"x" * BCRYPT_MAX + b"ignored") is True
    assert verify_hash(h, b"x" * (BCRYPT_MAX - 1)) is False
    assert verify_hash(h.replace("$2b$", "$2y$"), b"x" * BCRYPT_MAX) is True


@pytest.mark.parametrize("text", ["secret", "$y$j9T$a$b", "$7$abc", "abcdefghijklm", "$6$", "$6$salt$short",
                                  "$6$rounds=999$salt$" + "a" * 86, "$2b$32$" + "a" * 53, "$1$toolongsalt$" + "a" * 22])
def test_hash_scheme_refuses(text):
    with pytest.raises(UserlistError):
        hash_scheme(text)


def test_userlist_check_insecure_hashed_unknown_and_passwordless():
    ul, errors = build_userlist("L", [User("tiger", VECTORS[2]), User("scott", "el:gato", insecure=True),
                                      User("nopass")], [Group("G", ("tiger",))])
    assert errors == []
    assert ul.check(b"tiger", b"secret") and not ul.check(b"tiger", b"nope")
    assert ul.check(b"scott", b"el:gato") and not ul.check(b"scott", b"el:gat")
    assert not ul.check(b"Tiger", b"secret") and not ul.check(b"ghost", b"x") and not ul.check(b"nopass", b"")
    assert ul.member_of == {b"tiger": (b"G",)}


def test_credential_key_is_keyed_and_unambiguous():
    k = credential_key(b"k" * 32, "L", b"user", b"pass")
    assert len(k) == 32
    assert k != credential_key(b"j" * 32, "L", b"user", b"pass")           # another process's key
    assert k != credential_key(b"k" * 32, "L", b"use", b"rpass")           # no shifting between parts
    assert k != credential_key(b"k" * 32, "M", b"user", b"pass")
    assert k == credential_key(b"k" * 32, "L", b"user", b"pass")
    assert k != hashlib.sha256(b"Luserpass").digest()


def test_verdict_cache_is_bounded_lru_and_holds_no_plaintext():
    cache = VerdictCache(3)
    secret = b"s" * 32
    passwords = [b"hunter%d-very-secret" % i for i in range(4)]
    keys = [credential_key(secret, "L", b"tiger", p) for p in passwords]
    for k, ok in zip(keys[:3], (True, False, True)):
        cache.put(k, ok)
    assert cache.get(keys[0]) is True        # now the most recently used
    cache.put(keys[3], False)                # evicts keys[1], the least recently used
    assert len(cache) == 3 and cache.get(keys[1]) is None
    assert cache.keys() == [keys[2], keys[0], keys[3]]
    blob = b"".join(cache.keys())
    for p in passwords:
        assert p not in blob and b"tiger" not in blob
    with pytest.raises(ValueError):
        VerdictCache(0)


def view(fields, auth=None):
    return RequestView(b"GET", b"/", b"/", b"1.1", fields, auth=auth)


def test_http_auth_fetches_read_the_verdict_and_the_field():
    hdr = [(b"Authorization", b"Basic " + b64(b"tiger:se:cret"))]
    ok = view(hdr, {"L": (b"tiger", (b"admins", b"ops"))})
    assert parse_fetch("http_auth(L)")(ok) == [True]
    assert parse_fetch("http_auth(M)")(ok) == [False]
    assert parse_fetch("http_auth(L)")(view(hdr)) == [False]       # nothing verified: not authenticated
    assert parse_fetch("http_auth_group(L)")(ok) == [b"tiger"]
    assert parse_fetch("http_auth_group(L)")(view(hdr, {})) == []
    assert parse_fetch("http_auth_user")(view(hdr)) == [b"tiger"]
    assert parse_fetch("http_auth_pass")(view(hdr)) == [b"se:cret"]
    assert parse_fetch("http_auth_type")(view(hdr)) == [b"basic"]
    assert parse_fetch("http_auth_user")(view([])) == []
    assert parse_fetch("http_auth(L)").userlist == "L" and parse_fetch("http_auth_user").userlist == ""
    in_group = parse_acl_expr(["http_auth_group(L)", "ops", "devs"], "acl")
    assert in_group(ok) and not in_group(view(hdr, {"L": (b"tiger", (b"admins",))})) and not in_group(view(hdr))
    assert [p for p, _ in in_group.patterns] == ["ops", "devs"]
    assert parse_acl_expr(["http_auth(L)"], "acl")(ok) and not parse_acl_expr(["http_auth(L)"], "acl")(view(hdr))


def test_http_auth_fetch_needs_a_userlist():
    from splicer.http.sample import SampleError
    for expr in ("http_auth", "http_auth()", "http_auth(a,b)", "http_auth_group"):
        with pytest.raises(SampleError, match="expects a userlist"):
            parse_fetch(expr)


CHALLENGE = (b"HTTP/1.1 401 Unauthorized\r\ncontent-length: 112\r\ncontent-type: text/html\r\n"
             b"cache-control: no-cache\r\nwww-authenticate: Basic realm=\"%s\"\r\n%s\r\n"
             b"<html><body><h1>401 Unauthorized</h1>\nYou need a valid user and password to access "
             b"this content.\n</body></html>\n")


def test_auth_reply_is_haproxys_challenge():
    rule = actions.parse_action("auth", ["realm", 'My "app" \\ zone'], None)
    data, keep = actions.reply(rule, None, None, [], b"1.1", True, {})
    assert (data, keep) == (CHALLENGE % (b'My \\"app\\" \\\\ zone', b""), True)
    data, keep = actions.reply(actions.parse_action("auth", [], None), None, None, [], b"1.0", True, {})
    assert data == CHALLENGE % (b"", b"connection: keep-alive\r\n")
    assert rule.counter == "intercepted" and rule.status == 401


def test_auth_reply_alters_the_401_errorfile():
    page = b"HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: Bearer\r\nContent-Length: 2\r\n\r\nno"
    rule = actions.parse_action("auth", ["realm", "r"], None)
    data, keep = actions.reply(rule, None, None, [], b"1.1", True, {401: page})
    assert (data, keep) == (b"HTTP/1.1 401 Unauthorized\r\nContent-Length: 2\r\n"
                            b"www-authenticate: Basic realm=\"r\"\r\n\r\nno", False)


def test_tarpit_rule_takes_deny_and_return_options():
    r = actions.parse_action("tarpit", [], None)
    assert (r.status, r.default_errorfiles, r.counter) == (500, True, "dreq")
    assert actions.parse_action("tarpit", ["status", "503"], None).status == 503
    s = actions.parse_action("tarpit", ["deny_status", "429", "content-type", "text/plain", "string", "no"], None)
    data, keep = actions.reply(s, None, None, [], b"1.1", False, {})
    assert (data, keep) == (b"HTTP/1.1 429 Too Many Requests\r\ncontent-length: 2\r\ncontent-type: text/plain"
                            b"\r\nconnection: close\r\n\r\nno", False)
