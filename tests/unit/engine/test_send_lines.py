"""engine.binding.send_lines (native/src/datagram.c): a buffer of log lines sent one datagram
per line with sendmmsg(2), over real datagram sockets (a unix socketpair, UDP on 127.0.0.1)."""
import errno
import socket

import pytest

from splicer.engine.binding import send_lines
from splicer.errors import EngineError


def pair():
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
    a.setblocking(False)
    b.setblocking(False)
    return a, b


def received(sock) -> list[bytes]:
    out = []
    while True:
        try:
            out.append(sock.recv(65536))
        except BlockingIOError:
            return out


def test_one_datagram_per_line_across_batches():
    """200 lines (more than one sendmmsg batch of 64): each its own datagram, LF kept, in order."""
    a, b = pair()
    lines = [b"line %d %s\n" % (i, b"x" * (i % 7)) for i in range(200)]
    assert send_lines(a.fileno(), b"".join(lines)) == (200, 0, 0)
    assert received(b) == lines
    a.close()
    b.close()


def test_long_lines_cut_to_maxlen_with_their_lf():
    a, b = pair()
    data = b"short\n" + b"y" * 30 + b"\n" + b"z" * 9 + b"\n"
    assert send_lines(a.fileno(), data, maxlen=10) == (3, 0, 0)
    assert received(b) == [b"short\n", b"y" * 9 + b"\n", b"z" * 9 + b"\n"]  # 10 bytes: kept whole
    a.close()
    b.close()


def test_a_last_piece_without_lf_is_a_datagram():
    a, b = pair()
    assert send_lines(a.fileno(), b"a\nb") == (2, 0, 0)
    assert received(b) == [b"a\n", b"b"]
    assert send_lines(a.fileno(), b"") == (0, 0, 0)
    a.close()
    b.close()


def test_a_full_socket_drops_and_counts_never_waits():
    """Nobody reads: the datagrams past what the buffers hold are lost, counted, at once."""
    a, b = pair()
    a.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
    n = 2000
    sent, lost, err = send_lines(a.fileno(), (b"m" * 200 + b"\n") * n)
    assert err == 0 and lost > 0 and sent + lost == n
    assert len(received(b)) == sent
    a.close()
    b.close()


def test_a_peer_gone_stops_with_its_errno():
    a, b = pair()
    b.close()
    sent, lost, err = send_lines(a.fileno(), b"x\ny\n")
    assert (sent, lost) == (0, 0) and err in (errno.ECONNREFUSED, errno.ENOTCONN, errno.EPIPE)
    a.close()


def test_udp_refused_is_skipped_only_when_asked():
    """UDP to a closed port: the ICMP unreachable of one datagram fails a later send with
    ECONNREFUSED; with skip_refused that datagram is counted lost and the rest go on."""
    probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()  # nothing listens there now
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setblocking(False)
    s.connect(("127.0.0.1", port))
    total = {"sent": 0, "lost": 0}
    for _ in range(10):
        sent, lost, err = send_lines(s.fileno(), b"line\n" * 64, skip_refused=True)
        assert err == 0 and sent + lost == 64
        total["sent"] += sent
        total["lost"] += lost
    # each refusal drops the datagram it failed (sendmmsg hides its error in a short count:
    # that datagram is not sent again): on loopback about every other one, as send() by send()
    assert total["lost"] >= 640 // 4, total
    got_err = 0
    for _ in range(20):
        got_err = send_lines(s.fileno(), b"a\nb\nc\n")[2] or got_err
    assert got_err == errno.ECONNREFUSED
    s.close()


def test_bad_arguments():
    with pytest.raises(EngineError):
        send_lines(-1, b"x\n")
    a, b = pair()
    with pytest.raises(EngineError):
        send_lines(a.fileno(), b"x\n", maxlen=1)
    a.close()
    b.close()


def test_a_line_too_large_for_a_datagram_is_dropped_alone():
    """UDP over IPv4 carries at most 65,507 bytes: a longer line is dropped (EMSGSIZE) and
    counted, the lines around it go, and the socket stays usable."""
    sink = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sink.bind(("127.0.0.1", 0))
    sink.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
    sink.setblocking(False)
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setblocking(False)
    s.connect(sink.getsockname())
    data = b"before\n" + b"x" * 65600 + b"\n" + b"after\n"
    assert send_lines(s.fileno(), data) == (2, 1, 0)
    assert received(sink) == [b"before\n", b"after\n"]
    assert send_lines(s.fileno(), data, maxlen=65507) == (3, 0, 0)  # cut to a datagram's size: sent
    got = received(sink)
    assert [len(g) for g in got] == [7, 65507, 6] and got[1].endswith(b"x\n")
    s.close()
    sink.close()
