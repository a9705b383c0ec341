"""The master process: opens the listeners, forks one worker per CPU, and supervises them.

Theory of operation (haproxy's master-worker model, with processes instead of threads):
the master binds every listener, then forks `nbthread` workers (default: one per CPU this
process may run on). Each worker pins itself to its CPU (`cpu-map`, else CPU number - 1
modulo the allowed CPUs), starts its own event loop and engine thread, and accepts on the
shared listening sockets. The master runs one asyncio event loop (no thread), which serves
the signals and one control channel per worker (runtime/channel.py: newline-delimited JSON
both ways over a socketpair made before the fork; the worker answers through
runtime/control.py, and asks the master for cluster-wide stats and commands):
  - SIGCHLD: a worker exited. Unless stopping, it is logged and restarted (at most once a
    second per worker when it keeps crashing).
  - SIGTERM / SIGINT: every worker gets SIGTERM; any still alive after STOP_GRACE seconds
    gets SIGKILL; then the master exits 0.
  - SIGUSR1: forwarded to every worker (each prints its counters line).
  - SIGHUP: the same as SIGUSR1 (haproxy's SIGHUP dumps the servers' states to the
    logs); it never stops the master, so it never leaves workers without one.
Signals are blocked around each fork: a forked worker resets the master's handlers (and
the loop's wake-up fd) before any signal reaches it, and keeps them blocked until its own
loop has installed its handlers (Proxy.serve). A forked worker closes every descriptor it
inherited but stdio, the listening sockets and its end of its channel (the master's loop,
the other workers' channels): what a worker needs besides is opened in the worker.
A worker dies with its master (PR_SET_PDEATHSIG: SIGTERM), so a master killed by any
signal never leaves orphaned workers holding the listening sockets.
"""
from __future__ import annotations

import asyncio
import gc
import logging
import os
import signal
import socket
import sys
import time
from dataclasses import dataclass, field

from splicer.config.model import Config
from splicer.runtime import channel
from splicer.runtime.adminsock import AdminSockets
from splicer.runtime.channel import Channel, ChannelClosed
from splicer.stats import merge_stats

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


def close_inherited(keep: set[int]) -> None:
    """Close every open descriptor of this (just forked) process but those in `keep`."""
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        if fd not in keep:
            try:
                os.close(fd)
            except OSError:
                pass  # the listdir's own descriptor, closed already


def _worker_main(config: Config, listeners: dict[str, list[socket.socket]], number: int, loop_kind: str,
                 master: int, ctl: socket.socket | None = None, changes: tuple = ()) -> int:
    """Body of a forked worker; returns its exit status."""
    import asyncio

    from splicer.runtime.proxy import Proxy

    # the signals stay blocked (as the master left them) until Proxy.serve() has installed
    # its handlers, so an early SIGUSR1 or SIGTERM waits instead of killing a starting worker
    signal.set_wakeup_fd(-1)  # the master's loop's
    for sig in _SIGNALS:
        signal.signal(sig, signal.SIG_DFL)
    asyncio.events._set_running_loop(None)  # forked from inside the master's loop
    keep = {0, 1, 2, *(s.fileno() for socks in listeners.values() for s in socks)}
    if ctl is not None:
        keep.add(ctl.fileno())
    close_inherited(keep)
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
        proxy = Proxy(config, loop, listeners, worker=number, channel=ctl, changes=changes)
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


@dataclass
class Worker:
    """One forked worker, as the master knows it.

    Attributes:
        number: its number (from 1; its CPU and `cpu-map` entry).
        pid: its process id.
        generation: the configuration generation it serves (1, then +1 per reload).
        channel: the master's end of its control channel.
        started: when it was forked (time.time(), seconds).
    """

    number: int
    pid: int
    generation: int
    channel: Channel
    started: float = field(default_factory=time.time)


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
        self.generation = 1
        self.workers: dict[int, Worker] = {}      # pid -> worker
        self.started: dict[int, float] = {}       # worker number -> last start (monotonic)
        self.pending: dict[int, asyncio.TimerHandle] = {}  # worker number -> its restart
        self.stopping = False
        self.status = 0
        self.loop: asyncio.AbstractEventLoop | None = None
        self._done: asyncio.Future | None = None
        self._kill_timer: asyncio.TimerHandle | None = None
        self.admin = AdminSockets(self)  # the stats sockets (runtime/adminsock.py)

    # -- workers ---------------------------------------------------------------------------

    def _spawn(self, number: int) -> None:
        ours, theirs = channel.socketpair()
        sys.stdout.flush()
        sys.stderr.flush()
        master = os.getpid()
        # blocked across the fork: the child must not run the master's handlers (they would
        # write to the master's loop) before it has reset them
        signal.pthread_sigmask(signal.SIG_BLOCK, _SIGNALS)
        try:
            pid = os.fork()
            if pid == 0:  # the worker
                status = 1
                try:
                    status = _worker_main(self.config, self.listeners, number, self.loop_kind, master, theirs,
                                          self.admin.changes())
                except BaseException:
                    log.exception("worker %d failed", number)
                finally:
                    logging.shutdown()
                    sys.stdout.flush()
                    sys.stderr.flush()
                    os._exit(status)
        finally:
            if os.getpid() == master:
                signal.pthread_sigmask(signal.SIG_UNBLOCK, _SIGNALS)
        theirs.close()
        ch = Channel(ours, lambda req, n=number: self._handle(n, req), name=f"worker {number}")
        self.loop.create_task(ch.start())
        self.workers[pid] = Worker(number, pid, self.generation, ch)
        self.started[number] = time.monotonic()
        log.info("worker %d started (pid %d)", number, pid)

    def _restart(self, number: int) -> None:
        self.pending.pop(number, None)
        if not self.stopping:
            self._spawn(number)

    def _reap(self) -> None:
        while self.workers:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
            w = self.workers.pop(pid, None)
            if w is None:
                continue
            w.channel.close()
            if os.WIFSIGNALED(status):
                how = f"killed by signal {os.WTERMSIG(status)}"
            else:
                how = f"exited with status {os.WEXITSTATUS(status)}"
            if self.stopping or w.generation != self.generation:
                log.info("worker %d (pid %d) %s", w.number, pid, how)
                continue
            log.warning("worker %d (pid %d) %s; restarting it", w.number, pid, how)
            delay = max(0.0, self.started.get(w.number, 0.0) + RESTART_DELAY - time.monotonic())
            self.pending[w.number] = self.loop.call_later(delay, self._restart, w.number)
        self._check_done()

    def _check_done(self) -> None:
        if self.stopping and not self.workers and not self._done.done():
            self._done.set_result(self.status)

    def current(self) -> list[Worker]:
        """The live workers of the current generation, by worker number."""
        return sorted((w for w in self.workers.values() if w.generation == self.generation), key=lambda w: w.number)

    def _signal_all(self, sig: int) -> None:
        for pid in list(self.workers):
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass

    # -- signals ---------------------------------------------------------------------------

    def _hard_stop(self) -> None:
        if self.stopping and self._kill_timer is not None:
            return
        log.info("master: stopping %d worker(s)", len(self.workers))
        self.stopping = True
        for h in self.pending.values():
            h.cancel()
        self.pending.clear()
        self._signal_all(signal.SIGTERM)
        self._kill_timer = self.loop.call_later(STOP_GRACE, self._kill)
        self._check_done()

    def _kill(self) -> None:
        if self.workers:
            log.warning("master: %d worker(s) did not stop in time; killing them", len(self.workers))
            self._signal_all(signal.SIGKILL)

    # -- the control channel ---------------------------------------------------------------

    async def ask(self, worker_number: int, request: dict, timeout: float = 2.0) -> dict:
        """Send `request` to the current-generation worker `worker_number` and return its reply.

        Returns:
            The worker's reply, or `{"error": "timeout"|"closed"|"no such worker",
            "worker": worker_number}` when it did not answer within `timeout` seconds,
            exited, or does not exist.
        """
        for w in self.current():
            if w.number == worker_number:
                break
        else:
            return {"error": "no such worker", "worker": worker_number}
        try:
            return await w.channel.ask(request, timeout)
        except TimeoutError:
            return {"error": "timeout", "worker": worker_number}
        except ChannelClosed:
            return {"error": "closed", "worker": worker_number}

    async def ask_all(self, request: dict, timeout: float = 2.0) -> list[dict]:
        """Send `request` to every live current-generation worker at once.

        Returns:
            One reply per worker, in worker-number order (errors as in ask()).
        """
        return list(await asyncio.gather(*(self.ask(w.number, request, timeout) for w in self.current())))

    async def cluster_stats(self) -> dict:
        """Every current worker's counters, summed (splicer.stats.merge_stats)."""
        replies = await self.ask_all({"op": "stats"})
        return merge_stats([r["stats"] for r in replies if "stats" in r])

    async def cluster_command(self, line: str) -> str:
        """Run the runtime API command `line` on every current worker ("command" op) and
        return their answers one after the other, in worker order; a worker that did not
        answer adds a line `worker N: error`."""
        self.admin.note_line(line)  # a change is replayed to the workers started later
        replies = await self.ask_all({"op": "command", "line": line})
        out = []
        for r in replies:
            if "text" in r:
                out.append(r["text"])
            else:
                out.append(f"worker {r.get('worker', '?')}: {r.get('error', 'no answer')}\n")
        return "".join(out)

    async def _handle(self, number: int, request: dict) -> dict:
        """A worker's request to the master: "cluster-stats" or "cluster-command"."""
        op = request.get("op")
        if op == "cluster-stats":
            return {"stats": await self.cluster_stats()}
        if op == "cluster-command":
            return {"text": await self.cluster_command(str(request.get("line", "")))}
        return {"error": f"unknown op {op!r}"}

    # -- main ------------------------------------------------------------------------------

    def run(self) -> int:
        """Start the workers and supervise them until SIGTERM/SIGINT; returns the exit status."""
        raise_fd_limit(self.config)
        try:
            for number in range(1, self.count + 1):
                worker_cpus(self.config, number)  # fail here, once, on a bad cpu-map
        except ValueError as exc:
            log.error("%s", exc)
            return 1
        log.info("master %d: %d worker(s); listening on %s", os.getpid(), self.count,
                 ", ".join(f"{fe.name}={b.host or '*'}:{b.port}" for fe in self.config.frontends for b in fe.binds))
        loop = asyncio.new_event_loop()
        try:
            return loop.run_until_complete(self._serve(loop))
        finally:
            for socks in self.listeners.values():
                for s in socks:
                    s.close()
            loop.close()

    async def _serve(self, loop: asyncio.AbstractEventLoop) -> int:
        self.loop = loop
        self._done = loop.create_future()
        loop.add_signal_handler(signal.SIGCHLD, self._reap)
        loop.add_signal_handler(signal.SIGTERM, self._hard_stop)
        loop.add_signal_handler(signal.SIGINT, self._hard_stop)
        loop.add_signal_handler(signal.SIGUSR1, self._signal_all, signal.SIGUSR1)
        loop.add_signal_handler(signal.SIGHUP, self._signal_all, signal.SIGHUP)
        for number in range(1, self.count + 1):
            self._spawn(number)
        await self.admin.start()
        try:
            return await self._done
        finally:
            self.admin.close()
            if self._kill_timer is not None:
                self._kill_timer.cancel()
            for sig in _SIGNALS:
                loop.remove_signal_handler(sig)
            for w in self.workers.values():
                w.channel.close()
