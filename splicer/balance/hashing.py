"""Hash functions of haproxy's `hash-type`: sdbm, djb2, wt6, crc32, and the avalanche mix.

Rule: every function here maps bytes (or a 32-bit integer) to an unsigned 32-bit integer
exactly as haproxy computes it (src/hash.c, include/haproxy/intops.h `__full_hash`, and
src/backend.c `gen_hash()` / `get_server_sh()`), so that a key reaches the server haproxy
would pick for the same server list. Pure arithmetic: no I/O, no clock.
"""
from __future__ import annotations

import ipaddress
import zlib
from collections.abc import Callable

MASK = 0xFFFFFFFF
"""Results are unsigned 32-bit integers (C `unsigned int`)."""


def sdbm(data: bytes) -> int:
    """sdbm: h = c + (h << 6) + (h << 16) - h per byte, modulo 2**32.

    Args:
        data: the key bytes.

    Returns:
        0 <= h < 2**32 (haproxy src/hash.c `hash_sdbm`; `hash-type ... sdbm`, the default).
    """
    h = 0
    for c in data:
        h = (c + (h << 6) + (h << 16) - h) & MASK
    return h


def djb2(data: bytes) -> int:
    """djb2 (Bernstein): h = h * 33 + c per byte from 5381, modulo 2**32.

    Returns:
        0 <= h < 2**32 (haproxy src/hash.c `hash_djb2`; `hash-type ... djb2`).
    """
    h = 5381
    for c in data:
        h = (h * 33 + c) & MASK
    return h


def _rotl(x: int, n: int) -> int:
    # C's (x << n) | (x >> (32 - n)) on unsigned ints; n == 0 gives x | x >> 32 == x
    n &= 31
    return ((x << n) | (x >> (32 - n))) & MASK if n else x


def wt6(data: bytes) -> int:
    """wt6, haproxy's own hash: two words mixed with data-dependent rotations.

    Returns:
        0 <= h < 2**32 (haproxy src/hash.c `hash_wt6`; `hash-type ... wt6`).
    """
    h0, h1 = 0xA53C965A, 0x5CA6953A
    step0, step1 = 6, 18
    for t in data:
        h0 = ~(h0 ^ t) & MASK
        h1 = ~(h1 + t) & MASK
        # C shifts by (32 - step): a step of 0 shifts by 32, which x86 reduces modulo 32
        t = _rotl(h1, step0)
        h1 = _rotl(h0, step1)
        h0 = t
        t = ((h0 >> 16) ^ h1) & 0xFFFF
        step0 = t & 0x1F
        step1 = t >> 11
    return (h0 ^ h1) & MASK


def crc32(data: bytes) -> int:
    """CRC-32 (IEEE 802.3, reflected polynomial 0xEDB88320), as zlib and haproxy compute it.

    Returns:
        0 <= h < 2**32 (haproxy src/hash.c `hash_crc32`; `hash-type ... crc32`).
    """
    return zlib.crc32(data) & MASK


def full_hash(a: int) -> int:
    """Bob Jenkins' 32-bit full avalanche integer hash, then times 3221225473.

    Args:
        a: 0 <= a < 2**32.

    Returns:
        0 <= h < 2**32 (haproxy include/haproxy/intops.h `__full_hash`: the `avalanche`
        modifier of `hash-type`, and the position of consistent-hash nodes).
    """
    a &= MASK
    a = ((a + 0x7ED55D16) + (a << 12)) & MASK
    a = ((a ^ 0xC761C23C) ^ (a >> 19)) & MASK
    a = ((a + 0x165667B1) + (a << 5)) & MASK
    a = ((a + 0xD3A2646C) ^ (a << 9)) & MASK
    a = ((a + 0xFD7046C5) + (a << 3)) & MASK
    a = ((a ^ 0xB55A4F09) ^ (a >> 16)) & MASK
    return (a * 3221225473) & MASK


FUNCTIONS: dict[str, Callable[[bytes], int]] = {
    "sdbm": sdbm, "djb2": djb2, "wt6": wt6, "crc32": crc32,
}
"""`hash-type` function name -> function."""


def gen_hash(data: bytes, function: str = "sdbm", avalanche: bool = False) -> int:
    """Hash a request key the way `hash-type <method> <function> [avalanche]` says.

    Args:
        data: the key (a URI part, a parameter or header value).
        function: "sdbm", "djb2", "wt6" or "crc32".
        avalanche: apply full_hash() to the result.

    Returns:
        0 <= h < 2**32 (haproxy src/backend.c `gen_hash()`).

    Raises:
        KeyError: an unknown function name (the config layer refuses those first).
    """
    h = FUNCTIONS[function](data)
    return full_hash(h) if avalanche else h


def source_hash(ip: str, avalanche: bool = False) -> int:
    """The `balance source` hash of a client address.

    haproxy does not run the `hash-type` function here: it XORs the address's 32-bit
    big-endian words (one for IPv4, four for IPv6), then applies the avalanche modifier
    when set (src/backend.c `get_server_sh()`).

    Args:
        ip: the client address as text, e.g. "10.0.0.1" or "2001:db8::1"; an
            IPv4-mapped IPv6 address counts as its IPv4 address.
        avalanche: the `avalanche` modifier of `hash-type`.

    Returns:
        0 <= h < 2**32.

    Raises:
        ValueError: `ip` is not an IP address.
    """
    addr = ipaddress.ip_address(ip)
    if isinstance(addr, ipaddress.IPv6Address) and addr.ipv4_mapped is not None:
        addr = addr.ipv4_mapped
    packed = addr.packed
    h = 0
    for k in range(0, len(packed), 4):
        h ^= int.from_bytes(packed[k:k + 4], "big")
    return full_hash(h) if avalanche else h
