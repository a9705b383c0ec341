"""`balance hdr(<name>) [use_domain_only]`: a request header's value is the key.

Rule: the first value of the first field `name` (case-insensitive; a comma ends a value,
surrounding blanks are not part of it) is hashed; a missing or empty one gives no key and
the request is balanced round-robin. `use_domain_only` hashes only the label before the
last dot ("1wt" of "haproxy.1wt.eu"), for Host (haproxy get_server_hh()).
"""
from __future__ import annotations

from collections.abc import Sequence

from splicer.balance.hashing import gen_hash


def header_value(headers: Sequence[tuple[bytes, bytes]], name: bytes) -> bytes | None:
    """The first comma-separated value of the first field `name`, stripped, or None.

    Args:
        headers: (name, value) pairs in wire order, names in any case.
        name: the field name, any case.
    """
    want = name.lower()
    for n, v in headers:
        if n.lower() == want:
            return v.split(b",", 1)[0].strip(b" \t")
    return None


def domain_only(value: bytes) -> bytes:
    """The label before the last dot of a host name: b"1wt" of b"haproxy.1wt.eu"; the
    whole value when it has no dot; b"www" of b"www.example" is b"www"."""
    end = value.rfind(b".")
    if end < 0:
        return value
    start = value.rfind(b".", 0, end) + 1
    return value[start:end]


def hdr_key(headers: Sequence[tuple[bytes, bytes]], name: bytes, use_domain_only: bool = False,
            function: str = "sdbm", avalanche: bool = False) -> int | None:
    """The `balance hdr()` key: gen_hash() of header_value() (domain_only() of it with
    `use_domain_only`), or None when the field is missing or empty."""
    value = header_value(headers, name)
    if not value:
        return None
    return gen_hash(domain_only(value) if use_domain_only else value, function, avalanche)
