"""`balance source`: the client's IP address is the key.

Rule: the key is the address's 32-bit words XORed (hashing.source_hash(); haproxy does not
apply the `hash-type` function here, only its `avalanche` modifier); a client without an IP
address (a unix socket) has no key and is balanced round-robin, as haproxy does.
"""
from __future__ import annotations

from splicer.balance.hashing import source_hash


def source_key(client_ip: str, avalanche: bool = False) -> int | None:
    """The `balance source` key of a client.

    Args:
        client_ip: the address as text ("10.0.0.1", "::1"), or anything else when the
            client has none (e.g. "unknown").
        avalanche: `hash-type ... avalanche`.

    Returns:
        0 <= key < 2**32, or None without an IP address (haproxy get_server_sh()).
    """
    try:
        return source_hash(client_ip, avalanche)
    except ValueError:
        return None
