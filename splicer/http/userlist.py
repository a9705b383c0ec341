"""Userlists and HTTP Basic credentials: haproxy's ``userlist`` sections and what
``http_auth(<userlist>)`` / ``http_auth_group(<userlist>)`` check.

Rule: sans-I/O. A userlist is read once, at load, into a frozen Userlist; the words of its
``user`` and ``group`` lines are checked here (hash schemes included), the references
between them by build_userlist(). Per request, basic_credentials() decodes an
``Authorization`` field (RFC 7617) and Userlist.check() says whether a user and password
are valid. Nothing here runs on the event loop's behalf: check() of a hashed password costs
milliseconds of CPU (see HASH_SCHEMES) and runtime/auth.py calls it off the loop, once per
credential, caching the verdict under a keyed digest (VerdictCache), never the password.

Theory of operation (haproxy configuration.txt 12.2 "Userlists", 7.3.6 "http_auth",
"http_auth_group", "http_auth_type", "http_auth_user", "http_auth_pass"):

- ``userlist <name>`` opens a section of ``group <name> [users <user>[,<user>]*]`` and
  ``user <name> [password <hash> | insecure-password <password>] [groups <group>[,<group>]*]``
  lines. A user's groups are those its own line names plus the groups whose ``users``
  list names it; every name a list gives must be declared in the same userlist.
- A ``password`` is a crypt(3) hash, verified by hashing the password the client sent
  with the hash's own salt and settings and comparing; an ``insecure-password`` is
  compared as is (hmac.compare_digest: in constant time). A user without either never
  authenticates. Supported schemes (HASH_SCHEMES): ``$1$`` (md5-crypt), ``$5$``
  (sha256-crypt), ``$6$`` (sha512-crypt), ``$2a$``/``$2b$``/``$2y$`` (bcrypt); haproxy
  takes whatever the system's crypt(3) takes, splicer refuses the others at load.
- Credentials: ``Authorization: Basic <base64 of user ':' password>`` (RFC 7617 section
  2; the scheme name is case-insensitive, RFC 9110 section 11.1). The user-id ends at the
  first colon, so a password may contain colons. Invalid base64, no colon, or a request
  with more than one Authorization field is no credential at all (never an error).
"""
from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import re
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Mapping

HASH_SCHEMES = {
    "$1$": "md5_crypt", "$5$": "sha256_crypt", "$6$": "sha512_crypt",
    "$2a$": "bcrypt", "$2b$": "bcrypt", "$2y$": "bcrypt",
}
"""crypt(3) hash prefixes splicer verifies -> the passlib (libpass) handler that does it.
Measured on this project's 2-CPU machine: sha512-crypt and sha256-crypt at the default
5000 rounds about 6 ms each (pure Python, holding the GIL), md5-crypt 1.2 ms, bcrypt cost
10 about 80 ms (C, the GIL released)."""

_H64 = r"[./0-9A-Za-z]"
_HASH_FORMS = {
    "$1$": re.compile(r"\$1\$" + _H64 + r"{0,8}\$" + _H64 + r"{22}\Z"),
    "$5$": re.compile(r"\$5\$(?:rounds=[0-9]{1,9}\$)?" + _H64 + r"{0,16}\$" + _H64 + r"{43}\Z"),
    "$6$": re.compile(r"\$6\$(?:rounds=[0-9]{1,9}\$)?" + _H64 + r"{0,16}\$" + _H64 + r"{86}\Z"),
    "$2": re.compile(r"\$2[aby]\$(0[4-9]|[12][0-9]|3[01])\$" + _H64 + r"{53}\Z"),
}

_NAME = re.compile(r"[A-Za-z0-9_.:-]+\Z")

BCRYPT_MAX = 72
"""bcrypt reads at most this many bytes of a password; crypt(3) ignores the rest, and so
does splicer."""


class UserlistError(ValueError):
    """A ``userlist`` line is wrong; ``str()`` is the message after "file:line: "."""


def hash_scheme(text: str) -> str:
    """The scheme of a ``password`` hash: one of HASH_SCHEMES' keys.

    Raises:
        UserlistError: an unknown scheme (DES, yescrypt, ...) or a hash that is not well
            formed for its scheme (wrong length, characters outside crypt's base64, a
            rounds= or cost out of range).
    """
    prefix = next((p for p in HASH_SCHEMES if text.startswith(p)), None)
    if prefix is None:
        shown = text[:text.find("$", 1) + 1] if text.startswith("$") and "$" in text[1:] else text[:4]
        raise UserlistError(f"unsupported password hash scheme '{shown}' (supported: "
                            "$1$ md5-crypt, $5$ sha256-crypt, $6$ sha512-crypt, $2a$/$2b$/$2y$ bcrypt; "
                            "or use 'insecure-password')")
    form = _HASH_FORMS["$2" if prefix.startswith("$2") else prefix]
    m = form.match(text)
    if m is None:
        raise UserlistError(f"malformed {HASH_SCHEMES[prefix].replace('_', '-')} password hash")
    if prefix in ("$5$", "$6$") and text[3:].startswith("rounds="):
        rounds = int(text[3:].split("$", 1)[0][7:])
        if not 1000 <= rounds <= 999_999_999:
            raise UserlistError(f"{HASH_SCHEMES[prefix].replace('_', '-')} rounds must be between "
                                f"1000 and 999999999, got {rounds}")
    return prefix


@dataclass(frozen=True)
class User:
    """One ``user`` line.

    Attributes:
        name: the user name (as bytes are compared: UTF-8).
        password: the crypt(3) hash of ``password``, the text of ``insecure-password``,
            or None (the user cannot authenticate).
        insecure: `password` is a clear-text ``insecure-password``.
        groups: the groups named on its own line (build_userlist adds the others).
        file, line: where it was declared.
    """

    name: str
    password: str | None = None
    insecure: bool = False
    groups: tuple[str, ...] = ()
    file: str = ""
    line: int = 0

    @property
    def hashed(self) -> bool:
        """True when checking a password costs a crypt(3) computation (see HASH_SCHEMES)."""
        return self.password is not None and not self.insecure


@dataclass(frozen=True)
class Group:
    """One ``group`` line: its name and the users its ``users`` list names."""

    name: str
    users: tuple[str, ...] = ()
    file: str = ""
    line: int = 0


def _names(text: str, what: str) -> tuple[str, ...]:
    names = tuple(text.split(","))
    for n in names:
        if not n:
            raise UserlistError(f"{what}: empty name in '{text}'")
    return names


def parse_user(words: list[str], file: str = "", line: int = 0) -> User:
    """Read the words after ``user``: ``<name> [password <hash> | insecure-password
    <password>] [groups <group>[,<group>]*]``.

    Raises:
        UserlistError: a missing name or value, an unknown or repeated option, both kinds
            of password, a bad hash (hash_scheme()).
    """
    if not words:
        raise UserlistError("'user' expects a name: user <name> [password <hash> | "
                            "insecure-password <password>] [groups <group>,...]")
    name, rest = words[0], words[1:]
    what = f"user '{name}'"
    password, insecure, groups = None, False, ()
    seen: set[str] = set()
    i = 0
    while i < len(rest):
        opt = rest[i]
        if opt not in ("password", "insecure-password", "groups"):
            raise UserlistError(f"{what}: unknown option '{opt}' (supported: password, "
                                "insecure-password, groups)")
        if i + 1 >= len(rest):
            raise UserlistError(f"{what}: '{opt}' expects a value")
        if opt in seen or (opt != "groups" and seen & {"password", "insecure-password"}):
            raise UserlistError(f"{what}: '{opt}' given twice (one password, one groups list)")
        seen.add(opt)
        value = rest[i + 1]
        if opt == "groups":
            groups = _names(value, what)
        else:
            insecure = opt == "insecure-password"
            if not insecure:
                try:
                    hash_scheme(value)
                except UserlistError as exc:
                    raise UserlistError(f"{what}: {exc}") from None
            password = value
        i += 2
    return User(name, password, insecure, groups, file, line)


def parse_group(words: list[str], file: str = "", line: int = 0) -> Group:
    """Read the words after ``group``: ``<name> [users <user>[,<user>]*]``.

    Raises:
        UserlistError: a missing name, an invalid name, an unknown option, ``users``
            without a value.
    """
    if not words:
        raise UserlistError("'group' expects a name: group <name> [users <user>,...]")
    name, rest = words[0], words[1:]
    if not _NAME.match(name):
        raise UserlistError(f"invalid group name '{name}' (letters, digits, '-', '_', '.', ':')")
    users: tuple[str, ...] = ()
    if rest:
        if rest[0] != "users":
            raise UserlistError(f"group '{name}': unknown option '{rest[0]}' (supported: users)")
        if len(rest) != 2:
            raise UserlistError(f"group '{name}': 'users' expects one comma-separated list"
                                if len(rest) < 2 else f"group '{name}': unexpected '{rest[2]}'")
        users = _names(rest[1], f"group '{name}'")
    return Group(name, users, file, line)


@dataclass(frozen=True)
class Userlist:
    """A ``userlist`` section, its references checked (build_userlist()).

    Attributes:
        name: the section's name.
        users: {user name (UTF-8 bytes): User}.
        groups: {group name: frozenset of the user names (bytes) in it}.
        member_of: {user name (bytes): the tuple of its groups as bytes, sorted}: what the
            ``http_auth_group`` ACL matches its patterns against.
    """

    name: str
    users: Mapping[bytes, User]
    groups: Mapping[str, frozenset]
    member_of: Mapping[bytes, tuple] = field(default_factory=dict)
    file: str = ""
    line: int = 0

    def user(self, name: bytes) -> User | None:
        """The user named `name` (exact, case-sensitive, as haproxy's strcmp), or None."""
        return self.users.get(name)

    def check(self, name: bytes, password: bytes) -> bool:
        """Whether `password` is valid for user `name` (haproxy auth.c check_user()).

        CPU cost: nothing for an unknown user or an insecure-password; one crypt(3)
        computation for a hashed password (HASH_SCHEMES gives the figures): call it off
        the event loop then (runtime/auth.py). Never raises for a bad password (a NUL
        byte, an overlong one): it is just not valid.
        """
        u = self.users.get(name)
        if u is None or u.password is None:
            return False
        if u.insecure:
            return hmac.compare_digest(u.password.encode("utf-8"), password)
        return verify_hash(u.password, password)


def verify_hash(hashed: str, password: bytes) -> bool:
    """crypt(3) semantics: hash `password` with the settings and salt of `hashed` and
    compare. `hashed` passed hash_scheme() at load. bcrypt ignores bytes past BCRYPT_MAX.

    Returns False, never raises, for a password the scheme cannot take (a NUL byte).
    """
    from passlib import hash as handlers  # imported here: only the runtime's thread needs it

    prefix = next(p for p in HASH_SCHEMES if hashed.startswith(p))
    handler = getattr(handlers, HASH_SCHEMES[prefix])
    if prefix.startswith("$2"):
        password = password[:BCRYPT_MAX]
    try:
        return bool(handler.verify(password, hashed))
    except (ValueError, TypeError):
        return False


def build_userlist(name: str, users: list[User], groups: list[Group], file: str = "",
                   line: int = 0) -> tuple[Userlist, list[tuple[int, str]]]:
    """Put a section's ``user`` and ``group`` lines together and check their references
    (haproxy cfgparse userlist post-check).

    Returns:
        (the Userlist, [(line, message)] of its errors: a duplicate user or group, a user
        naming an unknown group, a group listing an unknown user).
    """
    errors: list[tuple[int, str]] = []
    where = f"userlist '{name}'"
    by_group: dict[str, Group] = {}
    for g in groups:
        if g.name in by_group:
            errors.append((g.line, f"{where}: duplicate group '{g.name}' (first at line {by_group[g.name].line})"))
        else:
            by_group[g.name] = g
    by_user: dict[str, User] = {}
    for u in users:
        if u.name in by_user:
            errors.append((u.line, f"{where}: duplicate user '{u.name}' (first at line {by_user[u.name].line})"))
        else:
            by_user[u.name] = u
    members: dict[str, set[bytes]] = {g: set() for g in by_group}
    for u in by_user.values():
        for g in u.groups:
            if g not in by_group:
                errors.append((u.line, f"{where}: user '{u.name}' is in unknown group '{g}'"))
            else:
                members[g].add(u.name.encode("utf-8"))
    for g in by_group.values():
        for n in g.users:
            if n not in by_user:
                errors.append((g.line, f"{where}: group '{g.name}' lists unknown user '{n}'"))
            else:
                members[g.name].add(n.encode("utf-8"))
    member_of: dict[bytes, tuple] = {}
    for g, names in members.items():
        for n in names:
            member_of.setdefault(n, []).append(g.encode("utf-8"))  # type: ignore[arg-type]
    ul = Userlist(name, {u.name.encode("utf-8"): u for u in by_user.values()},
                  {g: frozenset(n) for g, n in members.items()},
                  {n: tuple(sorted(gs)) for n, gs in member_of.items()}, file, line)
    return ul, errors


# -- credentials ---------------------------------------------------------------------------

def auth_scheme(values: list[bytes]) -> bytes | None:
    """The scheme of the request's ``Authorization`` field, lower-cased (haproxy
    http_auth_type: b"basic", b"bearer", ...); None without exactly one such field."""
    if len(values) != 1:
        return None
    scheme = values[0].strip(b" \t").split(b" ", 1)[0]
    return scheme.lower() or None


def basic_credentials(values: list[bytes]) -> tuple[bytes, bytes] | None:
    """Decode HTTP Basic credentials (RFC 7617 section 2).

    Args:
        values: the values of the request's ``Authorization`` fields, in order.

    Returns:
        (user-id, password) as bytes (split at the first colon), or None: no field, more
        than one (ambiguous: which one would the origin read?), another scheme, invalid
        base64 (RFC 4648 alphabet and padding), or no colon in the decoded text.
    """
    if len(values) != 1:
        return None
    v = values[0].strip(b" \t")
    scheme, sp, token = v.partition(b" ")
    if not sp or scheme.lower() != b"basic":
        return None
    token = token.strip(b" \t")
    if not token or len(token) % 4:
        return None
    try:
        decoded = base64.b64decode(token, validate=True)
    except (binascii.Error, ValueError):
        return None
    user, colon, password = decoded.partition(b":")
    if not colon:
        return None
    return user, password


def credential_key(secret: bytes, userlist: str, user: bytes, password: bytes) -> bytes:
    """The key a verdict is cached under: HMAC-SHA256 with a per-process random `secret`
    of (userlist, user, password), length-prefixed so no two triples share a key. Holds
    neither the password nor an unkeyed hash of it (a memory dump reveals nothing that can
    be tested offline without `secret`)."""
    h = hmac.new(secret, digestmod=hashlib.sha256)
    for part in (userlist.encode("utf-8"), user, password):
        h.update(len(part).to_bytes(4, "big"))
        h.update(part)
    return h.digest()


class VerdictCache:
    """A bounded LRU of credential verdicts: credential_key() -> bool (valid or not).

    Args:
        size: most entries kept (the least recently used goes first).

    Only keys made by credential_key() go in, so the cache never holds a password.
    """

    __slots__ = ("size", "_d")

    def __init__(self, size: int = 4096) -> None:
        if size < 1:
            raise ValueError("size must be >= 1")
        self.size = size
        self._d: OrderedDict[bytes, bool] = OrderedDict()

    def get(self, key: bytes) -> bool | None:
        """The verdict for `key` (and mark it recently used), or None when unknown."""
        d = self._d
        v = d.get(key)
        if v is not None:
            d.move_to_end(key)
        return v

    def put(self, key: bytes, valid: bool) -> None:
        """Remember a verdict, evicting the least recently used one beyond `size`."""
        d = self._d
        d[key] = valid
        d.move_to_end(key)
        if len(d) > self.size:
            d.popitem(last=False)

    def __len__(self) -> int:
        return len(self._d)

    def keys(self) -> list[bytes]:
        """The keys held, least recently used first (for tests and stats)."""
        return list(self._d)
