"""HttpSession's client address: an IPv4 peer is kept packed in one int (engine/binding
accept()), and read back as text and port; other families keep the socket module's object."""
import pytest

from splicer.engine.binding import unpack_peer
from splicer.runtime import session as session_mod
from splicer.runtime.session import HttpSession


def with_peer(peer) -> HttpSession:
    s = HttpSession.__new__(HttpSession)  # (only the address is looked at)
    s._peer = peer
    return s


@pytest.mark.parametrize("ip, port", [("10.0.1.2", 54321), ("0.0.0.0", 0), ("255.255.255.255", 65535),
                                      ("127.0.0.1", 80), ("192.168.200.7", 1)])
def test_ipv4_peer_packed_in_one_int(ip, port):
    a, b, c, d = (int(x) for x in ip.split("."))
    packed = (a << 24 | b << 16 | c << 8 | d) << 16 | port
    s = with_peer(packed)
    assert (s.client_ip, s.client_port, s.peer) == (ip, port, (ip, port))
    assert unpack_peer(packed) == (ip, port)
    assert s.client_ip == ip  # the second time from the worker's table of addresses


def test_other_families_keep_the_socket_modules_object():
    v6 = with_peer(("2001:db8::7", 8443, 0, 0))
    assert (v6.client_ip, v6.client_port, v6.peer) == ("2001:db8::7", 8443, ("2001:db8::7", 8443, 0, 0))
    unix = with_peer("")
    assert (unix.client_ip, unix.client_port, unix.peer) == ("unknown", 0, "")


def test_the_table_of_addresses_is_bounded(monkeypatch):
    monkeypatch.setattr(session_mod, "IP_TEXT_MAX", 3)
    monkeypatch.setattr(session_mod, "_IP_TEXT", {})
    for last in range(1, 11):
        s = with_peer((0x0A000000 | last) << 16 | 5000)
        assert s.client_ip == f"10.0.0.{last}"
        assert len(session_mod._IP_TEXT) <= 3
