"""engine.binding.accept (native/src/accept.c): a listener's waiting connections taken in one
call with accept4(2), over real TCP and unix sockets on this machine."""
import errno
import fcntl
import os
import resource
import socket

import pytest

from splicer.engine.binding import ACCEPT_MAX, accept, unpack_peer


@pytest.fixture
def listener():
    ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    ls.bind(("127.0.0.1", 0))
    ls.listen(256)
    ls.setblocking(False)
    clients = []
    yield ls, clients
    for c in clients:
        c.close()
    ls.close()


def connect(ls, clients, n):
    for _ in range(n):
        c = socket.create_connection(ls.getsockname())
        clients.append(c)
    return clients[-n:]


def close_all(taken):
    for fd, _ in taken:
        os.close(fd)


def test_each_connection_nonblocking_cloexec_nodelay_with_its_peer(listener):
    ls, clients = listener
    mine = connect(ls, clients, 3)
    taken = accept(ls.fileno(), 10, True)
    try:
        assert len(taken) == 3
        assert sorted(unpack_peer(p) for _, p in taken) == sorted(c.getsockname() for c in mine)
        for fd, peer in taken:
            assert os.get_blocking(fd) is False
            assert fcntl.fcntl(fd, fcntl.F_GETFD) & fcntl.FD_CLOEXEC
            s = socket.socket(fileno=fd)
            try:
                assert s.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) == 1
                assert s.getpeername() == unpack_peer(peer)
            finally:
                s.detach()
        assert accept(ls.fileno(), 10, True) == []  # the queue is empty now
    finally:
        close_all(taken)


def test_without_nodelay_nagle_stays_on(listener):
    ls, clients = listener
    connect(ls, clients, 1)
    taken = accept(ls.fileno(), 1, False)
    try:
        s = socket.socket(fileno=taken[0][0])
        assert s.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) == 0
        s.detach()
    finally:
        close_all(taken)


def test_at_most_max_conns_and_at_most_accept_max_per_call(listener):
    ls, clients = listener
    connect(ls, clients, ACCEPT_MAX + 6)
    first = accept(ls.fileno(), 4, True)
    big = accept(ls.fileno(), 10_000, True)
    rest = accept(ls.fileno(), 10_000, True)
    try:
        assert (len(first), len(big), len(rest)) == (4, ACCEPT_MAX, 2)
        assert len({fd for fd, _ in first + big + rest}) == ACCEPT_MAX + 6
        assert accept(ls.fileno(), 0, True) == []
    finally:
        close_all(first + big + rest)


def test_bytes_the_client_wrote_are_read_from_the_fd(listener):
    ls, clients = listener
    (c,) = connect(ls, clients, 1)
    c.sendall(b"hello")
    (fd, _), = accept(ls.fileno(), 1, True)
    try:
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM | socket.SOCK_NONBLOCK, 0, fd)
        assert s.gettimeout() == 0.0  # the type flag makes the socket object non-blocking too
        assert s.recv(5) == b"hello"
        s.close()
    except BaseException:
        os.close(fd)
        raise


def test_unix_peer_is_left_to_getpeername(tmp_path):
    path = str(tmp_path / "l.sock")
    ls = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    ls.bind(path)
    ls.listen(4)
    ls.setblocking(False)
    c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    c.connect(path)
    try:
        taken = accept(ls.fileno(), 4, True)  # nodelay asked: not applied to a unix socket
        assert len(taken) == 1 and taken[0][1] == -1
        close_all(taken)
    finally:
        c.close()
        ls.close()


def test_errors_raise_oserror_with_errno(listener):
    ls, clients = listener
    with pytest.raises(OSError) as bad:
        accept(-1, 1, True)
    assert bad.value.errno == errno.EINVAL
    r, w = os.pipe()
    try:
        with pytest.raises(OSError) as notsock:
            accept(r, 1, True)
        assert notsock.value.errno == errno.ENOTSOCK
    finally:
        os.close(r)
        os.close(w)


def test_out_of_descriptors_is_emfile_and_the_connection_waits(listener):
    """EMFILE on the first accept raises; the connection stays queued and is taken once
    descriptors are free again (haproxy pauses its listener the same way)."""
    ls, clients = listener
    connect(ls, clients, 1)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    fillers = []
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (len(os.listdir("/proc/self/fd")) + 8, hard))
        try:
            while True:
                fillers.append(os.open("/dev/null", os.O_RDONLY))
        except OSError:
            pass
        with pytest.raises(OSError) as full:
            accept(ls.fileno(), 4, True)
        assert full.value.errno == errno.EMFILE
    finally:
        for fd in fillers:
            os.close(fd)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    taken = accept(ls.fileno(), 4, True)
    assert len(taken) == 1
    close_all(taken)
