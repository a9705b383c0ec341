"""The master process: opens the listeners, forks one worker per CPU, and supervises them.

Theory of operation (haproxy's master-worker model, with processes instead of threads):
the master binds every listener, then forks `nbthread` workers (default: one per CPU this
process may run on). Each worker pins itself to its CPU (`cpu-map`, else CPU number - 1
modulo the allowed CPUs), starts its own event loop and engine thread, and accepts on the
shared listening sockets. The master runs no event loop and no thread; it waits for signals:
  - SIGCHLD: a worker exited. Unless stopping, it is logged and restarted (at most once a
    second per worker when it keeps crashing).
  - SIGTERM / SIGINT: every worker gets SIGTERM; any still alive after STOP_GRACE seconds
    gets SIGKILL; then the master exits 0.
  - SIGUSR1: forwarded to every worker (each prints its counters line).
  - SIGHUP: the same as SIGUSR1 (haproxy's SIGHUP dumps the servers' states to the
    logs); it never stops the master, so it never leaves workers without one.
A worker dies with its master (PR_SET_PDEATHSIG: SIGTERM), so a master killed by any
signal never leaves orphaned workers holding the listening sockets.
"""
from __future__ import annotations

import gc
import logging
import os
import signal
import socket
import sys
import time

from splicer.config.model import Config

log = logging.getLogger("splicer")

STOP_GRACE = 10.0
"""Seconds workers get to finish after SIGTERM before they are killed."""
RESTART_DELAY = 1.0
"""Least seconds between two starts of the same worker (crash loop guard)."""

_SIGNALS = {signal.SIGCHLD, signal.SIGTERM, signal.SIGINT, signal.SIGUSR1, signal.SIGHUP}


def worker_cpus(config: Config, number: int) -> set[int]:
    """The CPUs worker `number` (from 1) is pinned to: its `cpu-map` entry, else one CPU.

    Raises:
        ValueError: a cpu-map entry names no CPU this process may use.
    """
    allowed = sorted(os.sched_getaffinity(0))
    mapped = dict(config.global_.cpu_map)
    if number in mapped:
        cpus = set(mapped[number]) & set(allowed)
        if not cpus:
            raise ValueError(f"cpu-map: worker {number} maps to CPUs {list(mapped[number])}, "
                             f"none of which is available (allowed: {allowed})")
        return cpus
    return {allowed[(number - 1) % len(allowed)]}


def fds_needed(config: Config) -> int:
    """File descriptors one worker may need (haproxy computes `ulimit-n` the same way): two
    per connection (client and server side), two per pipe of the engine's pool and of the
    loop's fallback pool (a quarter of its size), the listeners, and some spare."""
    g = config.global_
    maxpipes = g.maxpipes if g.maxpipes is not None else max(g.maxconn // 4, 1)
    return 2 * g.maxconn + 2 * (maxpipes + maxpipes // 4) + sum(len(f.binds) for f in config.frontends) + 64


def raise_fd_limit(config: Config) -> None:
    """Raise the soft RLIMIT_NOFILE towards fds_needed(), up to the hard limit (as haproxy
    does at start-up); warn when the hard limit is too low for `maxconn`."""
    import resource

    want = fds_needed(config)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft >= want:
        return
    new = want if hard == resource.RLIM_INFINITY else min(want, hard)
    resource.setrlimit(resource.RLIMIT_NOFILE, (new, hard))
    if new < want:
        log.warning("maxconn %d needs %d file descriptors but the hard limit is %d",
                    config.global_.maxconn, want, hard)


def worker_count(config: Config) -> int:
    """`nbthread`, or the number of CPUs this process may run on (haproxy's default)."""
    return config.global_.nbthread or len(os.sched_getaffinity(0))


PR_SET_PDEATHSIG = 1
"""prctl(2) option: the signal a process gets when its parent thread dies."""


def die_with_parent(parent: int) -> None:
    """Ask the kernel for SIGTERM when the parent (the master, pid `parent`) dies
    (prctl(2) PR_SET_PDEATHSIG), and exit at once when it died already (before the
    request could be made: the child's parent is then another process).

    Raises:
        OSError: prctl failed (errno kept).
    """
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0) == -1:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))
    if os.getppid() != parent:
        os._exit(0)


def _worker_main(config: Config, listeners: dict[str, list[socket.socket]], number: int, loop_kind: str,
                 master: int) -> int:
    """Body of a forked worker; returns its exit status."""
    import asyncio

    from splicer.runtime.proxy import Proxy

    # the signals stay blocked (as the master left them) until Proxy.serve() has installed
    # its handlers, so an early SIGUSR1 or SIGTERM waits instead of killing a starting worker
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    die_with_parent(master)
    os.sched_setaffinity(0, worker_cpus(config, number))
    try:
        # as the engine thread: a wake-up of the loop (an engine completion) does not preempt
        # the engine mid-batch on the CPU they share (see native/src/engine.c)
        os.sched_setscheduler(0, os.SCHED_BATCH, os.sched_param(0))
    except OSError:
        pass  # a restricted container: slower, not wrong
    if loop_kind == "uvloop":
        import uvloop
        loop = uvloop.new_event_loop()
    else:
        loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    try:
        proxy = Proxy(config, loop, listeners, worker=number)
        # what exists now (config, runtime objects, modules) lives as long as the worker: out
        # of the collector's sight; and a collection every GC_THRESHOLD allocations, not 700:
        # each request allocates a few dozen tracked objects that die young, in reference
        # counting, and cycles are rare
        gc.freeze()
        gc.set_threshold(GC_THRESHOLD, 20, 20)
        loop.run_until_complete(proxy.serve())
    finally:
        loop.close()
    return 0


GC_THRESHOLD = 50_000
"""Allocations between two young-generation collections in a worker (CPython's default is
700, which made the collector run every few requests; measured: about 10 % of the loop's
CPU per 1 KiB request)."""


class Master:
    """Supervisor of the worker processes.

    Args:
        config: the resolved configuration.
        listeners: the listening sockets (listener.open_listeners()), inherited by workers.
        loop_kind: "uvloop" or "asyncio", the workers' event loop.
    """

    def __init__(self, config: Config, listeners: dict[str, list[socket.socket]], loop_kind: str) -> None:
        self.config = config
        self.listeners = listeners
        self.loop_kind = loop_kind
        self.count = worker_count(config)
        self.workers: dict[int, int] = {}         # pid -> worker number
        self.started: dict[int, float] = {}       # worker number -> last start time
        self.pending: dict[int, float] = {}       # worker number -> when to restart it

    def _spawn(self, number: int) -> None:
        sys.stdout.flush()
        sys.stderr.flush()
        master = os.getpid()
        pid = os.fork()
        if pid == 0:  # the worker
            status = 1
            try:
                status = _worker_main(self.config, self.listeners, number, self.loop_kind, master)
            except BaseException:
                log.exception("worker %d failed", number)
            finally:
                logging.shutdown()
                sys.stdout.flush()
                sys.stderr.flush()
                os._exit(status)
        self.workers[pid] = number
        self.started[number] = time.monotonic()
        log.info("worker %d started (pid %d)", number, pid)

    def _reap(self, stopping: bool) -> None:
        while self.workers:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            number = self.workers.pop(pid, None)
            if number is None:
                continue
            if os.WIFSIGNALED(status):
                how = f"killed by signal {os.WTERMSIG(status)}"
            else:
                how = f"exited with status {os.WEXITSTATUS(status)}"
            if stopping:
                log.info("worker %d (pid %d) %s", number, pid, how)
                continue
            log.warning("worker %d (pid %d) %s; restarting it", number, pid, how)
            self.pending[number] = max(time.monotonic(), self.started.get(number, 0.0) + RESTART_DELAY)

    def run(self) -> int:
        """Start the workers and supervise them until SIGTERM/SIGINT; returns the exit status."""
        signal.pthread_sigmask(signal.SIG_BLOCK, _SIGNALS)
        raise_fd_limit(self.config)
        try:
            for number in range(1, self.count + 1):
                worker_cpus(self.config, number)  # fail here, once, on a bad cpu-map
        except ValueError as exc:
            log.error("%s", exc)
            return 1
        log.info("master %d: %d worker(s); listening on %s", os.getpid(), self.count,
                 ", ".join(f"{fe.name}={b.host or '*'}:{b.port}" for fe in self.config.frontends for b in fe.binds))
        for number in range(1, self.count + 1):
            self._spawn(number)
        stop_deadline = None
        while self.workers or (self.pending and stop_deadline is None):
            now = time.monotonic()
            for number, when in list(self.pending.items()):
                if when <= now and stop_deadline is None:
                    del self.pending[number]
                    self._spawn(number)
            timeout = 0.5
            if self.pending:
                timeout = max(0.01, min(self.pending.values()) - now)
            info = signal.sigtimedwait(_SIGNALS, timeout)
            if info is None:
                pass
            elif info.si_signo in (signal.SIGTERM, signal.SIGINT) and stop_deadline is None:
                log.info("master: stopping %d worker(s)", len(self.workers))
                stop_deadline = time.monotonic() + STOP_GRACE
                self.pending.clear()
                self._signal_all(signal.SIGTERM)
            elif info.si_signo in (signal.SIGUSR1, signal.SIGHUP):
                self._signal_all(info.si_signo)
            self._reap(stopping=stop_deadline is not None)
            if stop_deadline is not None and time.monotonic() > stop_deadline:
                log.warning("master: %d worker(s) did not stop in time; killing them", len(self.workers))
                self._signal_all(signal.SIGKILL)
                stop_deadline = time.monotonic() + STOP_GRACE
        for socks in self.listeners.values():
            for s in socks:
                s.close()
        return 0

    def _signal_all(self, sig: int) -> None:
        for pid in list(self.workers):
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
