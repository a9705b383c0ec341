"""Request-target normalization: the path and Host as the origin will read them.

Rule: every decision about how a request-target is rewritten, compared or refused for its
spelling lives here, as pure functions of bytes; nothing here does I/O or reads config.
A rule (an ACL condition) must not be spelled around: if two spellings of a target reach
the same resource on the origin, the rule sees one form, and a spelling whose meaning
depends on the origin is refused with 400.

Theory of operation (haproxy configuration.txt 4.2 "http-request normalize-uri"; RFC 3986
sections 2.3, 5.2.4 and 6.2.2; RFC 9112 section 3.2):

- A target is ``path [ "?" query ] [ "#" fragment ]`` (split_target). The
  ``normalize-uri`` normalizers (NORMALIZERS) each rewrite one part, in the order the
  ``http-request`` rules list them, and the request is forwarded with the result:
  ``path-merge-slashes``, ``path-strip-dot``, ``path-strip-dotdot [full]`` the path;
  ``percent-decode-unreserved [strict]``, ``percent-to-uppercase [strict]`` the path and
  the query; ``fragment-strip``, ``fragment-encode`` the fragment; ``query-sort-by-name``
  the query. A ``strict`` normalizer that meets an invalid ``%`` escape raises
  NormalizeError (the request gets 400, as in haproxy).
- What an ACL's path fetches compare (rule_path) is the path after the equivalences RFC
  3986 section 6.2.2 defines (hex digits of escapes in upper case, escaped unreserved
  characters decoded) with runs of ``/`` merged: the origin reads ``/%61dmin`` and
  ``//admin`` as ``/admin``, so a rule on ``/admin`` sees ``/admin``. The forwarded target
  keeps the client's spelling unless a ``normalize-uri`` rule rewrote it.
- What stays ambiguous after the rules ran is refused (ambiguity()), unless
  ``option accept-invalid-http-request``: a fragment (a request-target has none, RFC 9112
  section 3.2), an escaped ``/`` (``%2F``: one origin splits segments on it, another does
  not), a dot segment (``.`` or ``..``, literal or escaped, also with ``;`` parameters as
  Tomcat reads ``..;``), ``;`` parameters on an empty segment (``/;x/admin``, which Tomcat
  reads as ``/admin``), a backslash (literal or ``%5C``: Windows/IIS and some frameworks
  read it as ``/``) and a double-escaped dot, slash or backslash (``%252e``, ``%252f``,
  ``%255c``: an origin that decodes twice reads them as the character).
- Host (canonical_host): an origin reads ``Example.COM.:80`` as the host ``example.com``.
  haproxy's ``hdr(host)`` gives the field as sent, and splicer keeps that; a Host ACL
  additionally matches the host without its port and trailing dots (sample.py), and
  case follows the ACL's ``-i`` as in haproxy.
"""
from __future__ import annotations

import re
from functools import lru_cache
from dataclasses import dataclass

UNRESERVED = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
"""RFC 3986 section 2.3 unreserved characters (byte values)."""

_HEX = frozenset(b"0123456789abcdefABCDEF")
_ESCAPE = re.compile(rb"%([0-9A-Fa-f]{2})")
_SLASHES = re.compile(rb"//+")


class NormalizeError(ValueError):
    """A ``strict`` normalizer met an invalid percent escape; the request gets 400."""

    status = 400


def split_target(target: bytes) -> tuple[bytes, bytes | None, bytes | None]:
    """Split a request-target into (path, query, fragment) (RFC 3986 section 3).

    Args:
        target: e.g. b"/a/b?x=1#top".

    Returns:
        (b"/a/b", b"x=1", b"top"); query and fragment are None when absent (b"" after a
        bare ``?`` or ``#``).
    """
    frag = None
    h = target.find(b"#")
    if h >= 0:
        target, frag = target[:h], target[h + 1:]
    q = target.find(b"?")
    if q < 0:
        return target, None, frag
    return target[:q], target[q + 1:], frag


def join_target(path: bytes, query: bytes | None, frag: bytes | None) -> bytes:
    """The inverse of split_target."""
    out = path
    if query is not None:
        out += b"?" + query
    if frag is not None:
        out += b"#" + frag
    return out


# -- the normalizers of ``http-request normalize-uri`` --------------------------------------

def merge_slashes(path: bytes) -> bytes:
    """``path-merge-slashes``: every run of ``/`` becomes one (b"//a///b/" -> b"/a/b/")."""
    return _SLASHES.sub(b"/", path) if b"//" in path else path


def strip_dot(path: bytes) -> bytes:
    """``path-strip-dot``: remove ``.`` segments (b"/a/./b" -> b"/a/b", b"/." -> b"/",
    b"/./b/" -> b"/b/"); an escaped dot (``%2E``) is not one, and b"/.well-known" stays."""
    if not path.startswith(b"/") or b"/." not in path:
        return path
    segs = path[1:].split(b"/")
    out = [s for s in segs if s != b"."]
    if segs[-1] == b".":
        out.append(b"")
    return b"/" + b"/".join(out)


def strip_dotdot(path: bytes, full: bool = False) -> bytes:
    """``path-strip-dotdot [full]``: a ``..`` segment removes itself and the segment
    before it (RFC 3986 section 5.2.4); an empty segment counts as one.

    Examples (haproxy's): b"/foo/../" -> b"/", b"/foo/../bar/" -> b"/bar/",
    b"/foo//../" -> b"/foo/", b"/foo/%2E%2E/" unchanged. A ``..`` with nothing before it is
    kept (b"/../bar/" unchanged, b"/bar/../../" -> b"/../"), or with `full` removed
    (b"/../bar/" -> b"/bar/", b"/bar/../../" -> b"/").
    """
    if not path.startswith(b"/") or b".." not in path:
        return path
    segs = path[1:].split(b"/")
    out: list[bytes] = []
    for s in segs:
        if s != b"..":
            out.append(s)
        elif out and out[-1] != b"..":
            out.pop()
        elif not full:
            out.append(s)
    if segs[-1] == b".." and (not out or out[-1] != b".."):
        out.append(b"")
    return b"/" + b"/".join(out)


def _escapes_valid(data: bytes) -> bool:
    i = data.find(b"%")
    while i >= 0:
        if len(data) < i + 3 or data[i + 1] not in _HEX or data[i + 2] not in _HEX:
            return False
        i = data.find(b"%", i + 3)
    return True


def decode_unreserved(data: bytes, strict: bool = False) -> bytes:
    """``percent-decode-unreserved [strict]``: decode escapes of unreserved characters
    (b"/%61%2Fb%7e" -> b"/a%2Fb~"); other escapes stay as they are (RFC 3986 section
    6.2.2.2).

    Raises:
        NormalizeError: `strict` and a ``%`` not followed by two hex digits.
    """
    if b"%" not in data:
        return data
    if strict and not _escapes_valid(data):
        raise NormalizeError("invalid percent-encoding")

    def sub(m: re.Match) -> bytes:
        c = int(m.group(1), 16)
        return bytes((c,)) if c in UNRESERVED else m.group(0)
    return _ESCAPE.sub(sub, data)


def uppercase_escapes(data: bytes, strict: bool = False) -> bytes:
    """``percent-to-uppercase [strict]``: hex digits of escapes in upper case (b"%2f" ->
    b"%2F"; RFC 3986 section 6.2.2.1).

    Raises:
        NormalizeError: `strict` and a ``%`` not followed by two hex digits.
    """
    if b"%" not in data:
        return data
    if strict and not _escapes_valid(data):
        raise NormalizeError("invalid percent-encoding")
    return _ESCAPE.sub(lambda m: m.group(0).upper(), data)


def sort_query(query: bytes) -> bytes:
    """``query-sort-by-name``: the ``&``-separated parameters sorted by name (the text before
    ``=``), parameters of the same name in their order (b"c=3&a=1&b=2&a=0" ->
    b"a=1&a=0&b=2&c=3")."""
    if b"&" not in query:
        return query
    params = query.split(b"&")
    return b"&".join(sorted(params, key=lambda p: p.partition(b"=")[0]))


def _on_path(fn):
    def run(target: bytes) -> bytes:
        path, query, frag = split_target(target)
        return join_target(fn(path), query, frag)
    return run


def _on_path_and_query(fn):
    def run(target: bytes) -> bytes:
        path, query, frag = split_target(target)
        return join_target(fn(path), None if query is None else fn(query), frag)
    return run


def _fragment_strip(target: bytes) -> bytes:
    h = target.find(b"#")
    return target if h < 0 else target[:h]


def _fragment_encode(target: bytes) -> bytes:
    h = target.find(b"#")
    return target if h < 0 else target[:h] + target[h:].replace(b"#", b"%23")


def _query_sort(target: bytes) -> bytes:
    path, query, frag = split_target(target)
    return join_target(path, None if query is None else sort_query(query), frag)


NORMALIZERS: dict[tuple[str, str], object] = {
    ("path-merge-slashes", ""): _on_path(merge_slashes),
    ("path-strip-dot", ""): _on_path(strip_dot),
    ("path-strip-dotdot", ""): _on_path(strip_dotdot),
    ("path-strip-dotdot", "full"): _on_path(lambda p: strip_dotdot(p, True)),
    ("percent-decode-unreserved", ""): _on_path_and_query(decode_unreserved),
    ("percent-decode-unreserved", "strict"): _on_path_and_query(lambda d: decode_unreserved(d, True)),
    ("percent-to-uppercase", ""): _on_path_and_query(uppercase_escapes),
    ("percent-to-uppercase", "strict"): _on_path_and_query(lambda d: uppercase_escapes(d, True)),
    ("fragment-strip", ""): _fragment_strip,
    ("fragment-encode", ""): _fragment_encode,
    ("query-sort-by-name", ""): _query_sort,
}
"""(normalizer, option) -> function of a whole request-target to the rewritten one."""

NORMALIZER_OPTIONS = {"path-strip-dotdot": "full", "percent-decode-unreserved": "strict",
                      "percent-to-uppercase": "strict"}
"""Normalizers that take an option, and its name."""


@dataclass(frozen=True)
class NormalizeRule:
    """One ``http-request normalize-uri <normalizer> [<option>]`` rule.

    Attributes:
        normalizer, option: as written ("path-strip-dotdot", "full"; option "" when none).
        fn: the whole target -> the rewritten target (NORMALIZERS); may raise
            NormalizeError.
        cond: the rule's acl.Condition (None: always).
        file, line: where the rule was written.
    """

    normalizer: str
    option: str
    fn: object
    cond: object = None
    file: str = ""
    line: int = 0


def parse_normalize(args: list[str], cond=None, file: str = "", line: int = 0) -> NormalizeRule:
    """Read the words after ``http-request normalize-uri`` (the condition split off).

    Raises:
        ValueError: no normalizer, an unknown one, or an option it does not take; the
            message follows "file:line: ".
    """
    names = sorted({n for n, _ in NORMALIZERS})
    if not args:
        raise ValueError("'http-request normalize-uri' expects a normalizer (one of: "
                         + ", ".join(names) + ")")
    name, opts = args[0], args[1:]
    if name not in names:
        raise ValueError(f"'http-request normalize-uri': unknown normalizer '{name}' (one of: "
                         + ", ".join(names) + ")")
    option = opts[0] if opts else ""
    if len(opts) > 1 or (name, option) not in NORMALIZERS:
        want = NORMALIZER_OPTIONS.get(name)
        raise ValueError(f"'http-request normalize-uri {name}': unexpected argument '{opts[-1]}'"
                         + (f" (only '{want}')" if want else " (it takes none)"))
    return NormalizeRule(name, option, NORMALIZERS[(name, option)], cond, file, line)


# -- what rules compare, and what is refused --------------------------------------------------

def rule_path(path: bytes) -> bytes:
    """The path an ACL's path fetches compare: escapes of unreserved characters decoded,
    the other escapes' hex in upper case (RFC 3986 section 6.2.2), runs of ``/`` merged.

    Args:
        path: the target's path (b"//%61dmin/%2f").

    Returns:
        b"/admin/%2F". An invalid escape is left as it is.
    """
    if b"%" in path:
        path = uppercase_escapes(decode_unreserved(path))
    return merge_slashes(path)


_DOUBLE = re.compile(rb"%25(2[eEfF]|5[cC])")
_ENC = re.compile(rb"%(2[fF]|5[cC])")


_PLAIN_BYTES_OUT = frozenset(b"%;#\\")
"""Bytes whose absence from a target (with no "/." and no leading ".") makes it plain.

(Testing a frozenset of ints against the target is several times quicker than testing
``b"%" in target`` one needle at a time on CPython 3.11: the bytes needle goes through the
buffer protocol; bytes.find, for one needle, is about twice as quick as ``in``.)"""

AMBIGUITY_MEMO_MAX = 1024
"""Longest target (bytes) whose ambiguity() verdict is remembered."""


def ambiguity(target: bytes) -> str | None:
    """Why a request-target that the rules let through would still be read differently
    by different origins, or None when it is not (_ambiguity, remembered for the 4,096
    most recent targets of at most AMBIGUITY_MEMO_MAX bytes: every request asks, and hot
    paths repeat; a plain target is told by _ambiguity's first test, before the memo, so
    targets that never repeat cost no memo work)."""
    if _PLAIN_BYTES_OUT.isdisjoint(target) and target[:1] != b"." and target.find(b"/.") < 0:
        return None  # (_ambiguity's first test, inline)
    if len(target) <= AMBIGUITY_MEMO_MAX:
        return _remembered_ambiguity(target)
    return _ambiguity(target)


def _ambiguity(target: bytes) -> str | None:
    """Why a request-target that the rules let through would still be read differently
    by different origins, or None when it is not.

    Args:
        target: the origin-form target after the ``normalize-uri`` rules (b"/a/../b").

    Returns:
        The reason (for logs), or None: a fragment (RFC 9112 section 3.2), an escaped
        ``/`` or a backslash, a double escape of a dot, slash or backslash, a dot segment
        (``.`` or ``..``, escaped or not, ``;`` parameters ignored), ``;`` parameters on an
        empty segment.
    """
    if _PLAIN_BYTES_OUT.isdisjoint(target) and target[:1] != b"." and b"/." not in target:
        return None  # the common target: none of what follows can apply (a dot segment needs "/.")
    if b"#" in target:
        return "fragment in the request-target"
    q = target.find(b"?")
    path = target if q < 0 else target[:q]
    if b"\\" in path:
        return "backslash in the path"
    if b"%" in path:
        m = _ENC.search(path)
        if m is not None:
            return "escaped '/' in the path" if m.group(1) in (b"2f", b"2F") else "escaped backslash in the path"
        if _DOUBLE.search(path):
            return "double-escaped dot, slash or backslash in the path"
        path = decode_unreserved(path)
    if b"." in path or b";" in path:
        for seg in path.split(b"/"):
            name = seg.partition(b";")[0]
            if name in (b".", b".."):
                return "dot segment in the path"
            if not name and seg:
                return "parameters on an empty path segment"  # Tomcat reads /;x/a as /a
    return None


_remembered_ambiguity = lru_cache(maxsize=4096)(_ambiguity)


def canonical_host(value: bytes) -> bytes:
    """A Host value without its port and trailing dots, as an origin picks its virtual
    host (case is kept: ACLs compare it as haproxy does, ``-i`` for case).

    Args:
        value: e.g. b"Admin.Example.com.:8080", b"[::1]:80".

    Returns:
        b"Admin.Example.com", b"[::1]".
    """
    v = value.strip(b" \t")
    if v.startswith(b"["):
        end = v.find(b"]")
        return v if end < 0 else v[:end + 1]
    host = v.partition(b":")[0]
    return host.rstrip(b".") or host
