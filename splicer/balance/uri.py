"""`balance uri [len N] [depth N] [whole] [path-only]`: the request target is the key.

Rule: the hashed part of the target stops at the '?' (unless `whole`), after `len`
characters, and before the slash that opens directory level `depth + 1`; `path-only` starts
it at the first '/' (an absolute-form target's authority is skipped). haproxy
get_server_uh() with the `hash-type` function; every request has a key.
"""
from __future__ import annotations

from splicer.balance.hashing import gen_hash


def uri_part(target: bytes, length: int = 0, depth: int = 0, whole: bool = False,
             path_only: bool = False) -> bytes:
    """The part of a request target `balance uri` hashes.

    Args:
        target: the request-target as received, e.g. b"/img/a/b.png?v=2".
        length: `len N`: hash at most N bytes (0: no limit).
        depth: `depth N`: stop before the (N+1)-th '/' (0: no limit).
        whole: `whole`: the query string is hashed too.
        path_only: `path-only`: start at the path (after an absolute-form target's
            scheme and authority).

    Returns:
        e.g. b"/img/a" for depth 2, b"/img/a/b.png" without options.
    """
    if path_only and not target.startswith(b"/"):
        scheme = target.find(b"://")
        slash = target.find(b"/", scheme + 3 if scheme >= 0 else 0)
        target = target[slash:] if slash >= 0 else b""
    if length:
        target = target[:length]
    slashes = 0
    end = len(target)
    for k, c in enumerate(target):
        if c == 0x2F:  # '/'
            slashes += 1
            if depth and slashes == depth + 1:
                end = k
                break
        elif c == 0x3F and not whole:  # '?'
            end = k
            break
    return target[:end]


def uri_key(target: bytes, length: int = 0, depth: int = 0, whole: bool = False,
            path_only: bool = False, function: str = "sdbm", avalanche: bool = False) -> int:
    """The `balance uri` key: gen_hash() of uri_part() (arguments as there)."""
    return gen_hash(uri_part(target, length, depth, whole, path_only), function, avalanche)
