"""`balance url_param <name>`: the value of a query-string parameter is the key.

Rule: the first `name=value` pair of the query string (after the first '?') gives the key,
the value running to the next '&'; a parameter that is absent, or written without '=', gives
no key and the request is balanced round-robin (haproxy get_server_ph()). An empty value
is a key (the hash of nothing), as in haproxy. Names compare byte for byte (case matters).
"""
from __future__ import annotations

from splicer.balance.hashing import gen_hash


def url_param_value(target: bytes, name: bytes) -> bytes | None:
    """The value of parameter `name` in a request target's query string, or None.

    Args:
        target: e.g. b"/cart?user=42&x=1".
        name: e.g. b"user".

    Returns:
        e.g. b"42"; None when there is no query string or no `name=` in it.
    """
    q = target.find(b"?")
    if q < 0:
        return None
    for pair in target[q + 1:].split(b"&"):
        if pair.startswith(name) and pair[len(name):len(name) + 1] == b"=":
            return pair[len(name) + 1:]
    return None


def url_param_key(target: bytes, name: bytes, function: str = "sdbm",
                  avalanche: bool = False) -> int | None:
    """The `balance url_param` key: gen_hash() of url_param_value(), or None without it."""
    value = url_param_value(target, name)
    return None if value is None else gen_hash(value, function, avalanche)
