"""The master process: opens the listeners, forks one worker per CPU, and supervises them.

Theory of operation (haproxy's master-worker model, with processes instead of threads):
the master binds every listener, then forks `nbthread` workers (default: one per CPU this
process may run on). Each worker pins itself to its CPU (`cpu-map`, else CPU number - 1
modulo the allowed CPUs), starts its own event loop and engine thread, and accepts on the
shared listening sockets. The master runs one asyncio event loop (and no other thread but a
reload's while it reads the configuration, see below), which serves the signals and one
control channel per worker (runtime/channel.py: newline-delimited JSON both ways over a
socketpair made before the fork; the worker answers through runtime/control.py, and asks the
master for cluster-wide stats and commands):
  - SIGCHLD: a worker exited. Unless stopping, it is logged and restarted (at most once a
    second per worker when it keeps crashing).
  - SIGTERM / SIGINT: every worker gets SIGTERM; any still alive after STOP_GRACE seconds
    gets SIGKILL; then the master exits 0.
  - SIGUSR1: soft stop (haproxy's): every worker gets SIGUSR1 and stops accepting, finishes
    what is in flight and exits; the master exits when the last is gone. `hard-stop-after`
    bounds the wait (then SIGTERM, then SIGKILL).
  - SIGUSR2 (or `reload` on the master CLI): reload. The configuration is read again, and
    the new listeners and stats sockets are bound, in a thread (the file, its `-f` files and
    its log targets' host names may take long to read or resolve: the loop keeps serving
    meanwhile, and no worker is forked until the thread is done); if that fails, the reasons
    are logged and nothing changes; else a new generation of workers starts on the same
    listening sockets (reused by address) and, once each serves, the old generation
    soft-stops.
  - SIGHUP: forwarded to every worker, which prints its counters line (haproxy's SIGHUP
    dumps the servers' states to the logs); it never stops the master.
  - `-S PATH`: the master CLI (runtime/mastercli.py): show proc, show counters, reload.
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
import errno
import gc
import json
import logging
import os
import signal
import socket
import sys
import threading
import time
from dataclasses import dataclass, field

from splicer import __version__
from splicer.config.model import Bind, Config
from splicer.errors import ConfigErrors
from splicer.runtime import channel, mastercli
from splicer.runtime.adminsock import AdminSockets, Bound, close_stats_sockets, open_stats_sockets
from splicer.runtime.channel import Channel, ChannelClosed
from splicer.stats import merge_stats

log = logging.getLogger("splicer")

STOP_GRACE = 10.0
"""Seconds workers get to finish after SIGTERM before they are killed."""
RESTART_DELAY = 1.0
"""Least seconds between two starts of the same worker (crash loop guard)."""

_SIGNALS = {signal.SIGCHLD, signal.SIGTERM, signal.SIGINT, signal.SIGUSR1, signal.SIGUSR2, signal.SIGHUP}

CLI_TIMEOUT = 5.0
"""Seconds the master CLI waits for each worker's answer (a loaded machine may be slow)."""

CLI_BACKOFF_MIN = 0.1
CLI_BACKOFF_MAX = 2.0
"""Least and most seconds the master CLI stops accepting after an EMFILE (doubling between)."""

READY_TIMEOUT = 30.0
"""Seconds a reload waits for every new worker to serve before soft-stopping the old ones
anyway (they would only hold connections in the backlog meanwhile)."""

LOADING_RETRY = 0.05
"""Seconds a worker's restart waits, again and again, while a reload's thread reads the
configuration: no fork while another thread may hold a lock (the resolver's, an import's)
that the child would then wait on forever."""


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
    # the master's objects are never collected here: one whose descriptor is closed below
    # must not close, when collected, the number a worker's own resource took since
    gc.freeze()
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


def bind_key(b: Bind) -> tuple:
    """What makes two `bind` lines the same listening socket across a reload: the address
    they listen on (listener.bind_address: '*', '' and 0.0.0.0 alike, a name resolved), or
    the line as written when its name does not resolve (it then fails to bind)."""
    from splicer.runtime.listener import bind_address

    try:
        return bind_address(b)
    except OSError:
        return b.host, b.port


def in_thread(loop: asyncio.AbstractEventLoop, fn, *args) -> asyncio.Future:
    """Run fn(*args) in a thread of its own and return a future of its result (or its
    exception), set in `loop`.

    The thread is a daemon, started for this call and gone once fn returns, unlike an
    executor's (kept between calls, and joined at exit: a master told to stop would wait for
    a resolver, or for a FIFO named by an `acl -f`, before it could exit).
    """
    future = loop.create_future()

    def settle(ok: bool, value) -> None:
        # the thread has nothing left to do but exit: wait for that (microseconds), so
        # that no fork that follows (a new generation of workers) meets it half gone
        thread.join(1.0)
        if not future.done():
            (future.set_result if ok else future.set_exception)(value)

    def run() -> None:
        try:
            got = (True, fn(*args))
        except BaseException as exc:  # handed to the awaiting coroutine, raised there
            got = (False, exc)
        try:
            loop.call_soon_threadsafe(settle, *got)
        except RuntimeError:
            pass  # the loop closed meanwhile: the master is gone, no one waits

    thread = threading.Thread(target=run, name="splicer-reload", daemon=True)
    thread.start()
    return future


@dataclass
class Prepared:
    """What a reload's thread made ready (Master._prepare()), not used yet.

    Attributes:
        config: the new configuration, loaded and checked.
        listeners: {frontend name: listening sockets}, the kept ones and the new ones.
        opened: the listening sockets of `listeners` bound for this reload.
        stats: the stats sockets bound for this reload (adminsock.open_stats_sockets()).
    """

    config: Config
    listeners: dict[str, list[socket.socket]]
    opened: list[socket.socket]
    stats: Bound

    def close(self) -> None:
        """Give back what was bound for this reload (it failed, or the master stops)."""
        for sock in self.opened:
            sock.close()
        close_stats_sockets(self.stats)


@dataclass
class Worker:
    """One forked worker, as the master knows it.

    Attributes:
        number: its number (from 1; its CPU and `cpu-map` entry).
        pid: its process id.
        generation: the configuration generation it serves (1, then +1 per reload).
        channel: the master's end of its control channel.
        reloads_at_start: the master's reload count when it was forked.
        started: when it was forked (time.time(), seconds).
    """

    number: int
    pid: int
    generation: int
    channel: Channel
    reloads_at_start: int = 0
    started: float = field(default_factory=time.time)


class Master:
    """Supervisor of the worker processes.

    Args:
        config: the resolved configuration.
        listeners: the listening sockets (listener.open_listeners()), inherited by workers.
        loop_kind: "uvloop" or "asyncio", the workers' event loop.
        config_path: the file a reload reads again (None: reloads fail).
        master_socket: path of the master CLI's unix socket (`-S`), or None.
        on_ready: called with the master's state: "ready" once the first workers serve and
            after each reload, "reloading" when one begins, "stopping" at a stop or soft
            stop (systemd notification, cli.py `-Ws`).
        stats_sockets: the stats sockets bound already (adminsock.open_stats_sockets(),
            cli.py); a `stats socket` line not among them is bound when the master starts.
    """

    def __init__(self, config: Config, listeners: dict[str, list[socket.socket]], loop_kind: str,
                 config_path: str | None = None, master_socket: str | None = None, on_ready=None,
                 stats_sockets: Bound | None = None) -> None:
        self.config = config
        self.config_path = config_path
        self.master_socket = master_socket
        self.on_ready = on_ready or (lambda state: None)
        self.reloads = 0
        self.failed_reloads = 0
        self.born = time.time()
        self._reloading: asyncio.Lock | None = None
        self._cli_sock: socket.socket | None = None
        self._cli_clients: set[asyncio.Task] = set()
        self._cli_backoff = 0.0                   # seconds accepting pauses after EMFILE (0: accepting)
        self._cli_resume: asyncio.TimerHandle | None = None
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
        self.admin = AdminSockets(self, stats_sockets)  # the stats sockets (runtime/adminsock.py)
        self._loading = False                     # a reload's thread is at work (no fork meanwhile)
        self._tasks: set[asyncio.Task] = set()

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
        task = self.loop.create_task(ch.start())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        self.workers[pid] = Worker(number, pid, self.generation, ch, self.reloads)
        self.started[number] = time.monotonic()
        log.info("worker %d started (pid %d)", number, pid)

    def _restart(self, number: int) -> None:
        self.pending.pop(number, None)
        if self.stopping:
            return
        if self._loading:  # see LOADING_RETRY
            self.pending[number] = self.loop.call_later(LOADING_RETRY, self._restart, number)
            return
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
                log.info("worker %d (pid %d, generation %d) %s", w.number, pid, w.generation, how)
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
        if not self.stopping:
            self.on_ready("stopping")
        self.stopping = True
        for h in self.pending.values():
            h.cancel()
        self.pending.clear()
        self._signal_all(signal.SIGTERM)
        self._kill_timer = self.loop.call_later(STOP_GRACE, self._kill)
        self._check_done()

    def _soft_stop(self) -> None:
        """SIGUSR1: every worker soft-stops (finishes what is in flight); the master exits
        when the last is gone; `hard-stop-after` bounds the wait."""
        if self.stopping:
            return
        log.info("master: soft stop of %d worker(s)", len(self.workers))
        self.on_ready("stopping")
        self.stopping = True
        for h in self.pending.values():
            h.cancel()
        self.pending.clear()
        self._soft_stop_workers(list(self.workers.values()))
        # no one accepts any more: new connections are refused (not queued for no one)
        for socks in self.listeners.values():
            for s in socks:
                s.close()
        self._check_done()

    def _soft_stop_workers(self, workers: list[Worker]) -> None:
        for w in workers:
            try:
                os.kill(w.pid, signal.SIGUSR1)  # a worker's SIGUSR1 is its soft stop
            except ProcessLookupError:
                pass
        after = self.config.global_.hard_stop_after
        if after:
            self.loop.call_later(after, self._hard_stop_after, [w.pid for w in workers])

    def _hard_stop_after(self, pids: list[int]) -> None:
        left = [p for p in pids if p in self.workers]
        if not left:
            return
        log.warning("master: hard-stop-after: stopping %d worker(s) still draining", len(left))
        for p in left:
            try:
                os.kill(p, signal.SIGTERM)
            except ProcessLookupError:
                pass
        self.loop.call_later(STOP_GRACE, self._kill_pids, left)

    def _kill_pids(self, pids: list[int]) -> None:
        for p in pids:
            if p in self.workers:
                try:
                    os.kill(p, signal.SIGKILL)
                except ProcessLookupError:
                    pass

    def _kill(self) -> None:
        if self.workers:
            log.warning("master: %d worker(s) did not stop in time; killing them", len(self.workers))
            self._signal_all(signal.SIGKILL)

    # -- reload ----------------------------------------------------------------------------

    async def reload(self) -> tuple[bool, str]:
        """Re-read the configuration (in a thread: _prepare()); on success fork a new
        generation of workers on the same listening sockets (reused by address; new binds
        and stats sockets opened, removed ones closed) and soft-stop the old generation once
        the new one serves (haproxy's SIGUSR2 / master CLI `reload`). A configuration that
        fails to load, or whose new listeners or stats sockets cannot be bound, changes
        nothing.

        Returns:
            (True, "") or (False, the reasons, one `file:line: ...` per line).
        """
        async with self._reloading:
            if self.stopping:
                return False, "stopping"
            self.on_ready("reloading")
            ok, why = await self._reload()
            self.on_ready("ready")
            return ok, why

    async def _reload(self) -> tuple[bool, str]:
        if self.config_path is None:
            return self._failed("no configuration file to reload")
        log.info("master: reload %d: reading %s", self.reloads + 1, self.config_path)
        self._loading = True
        try:
            ready = await in_thread(self.loop, self._prepare, self.config_path, self.config, self.listeners,
                                    self.admin.paths())
        finally:
            self._loading = False
        if isinstance(ready, str):
            return self._failed(ready)
        if self.stopping:  # a stop came while the thread worked: nothing is taken over
            ready.close()
            return self._failed("stopping")
        config, listeners = ready.config, ready.listeners
        kept = {id(s) for socks in listeners.values() for s in socks}
        for socks in self.listeners.values():
            for sock in socks:
                if id(sock) not in kept:
                    sock.close()
        for w in config.warnings:
            log.warning("%s", w)
        previous = [w for w in self.workers.values()]
        for h in self.pending.values():
            h.cancel()
        self.pending.clear()
        self.admin.keep_changes(self.config, config)  # before the new generation gets them
        self.config, self.listeners = config, listeners
        await self.admin.update(config, ready.stats)
        self.count = worker_count(config)
        self.generation += 1
        self.reloads += 1
        raise_fd_limit(config)
        log.info("master: reload %d: generation %d, %d worker(s)", self.reloads, self.generation, self.count)
        for number in range(1, self.count + 1):
            self._spawn(number)
        await self._wait_serving(READY_TIMEOUT)
        self._soft_stop_workers([w for w in previous if w.pid in self.workers])
        return True, ""

    @staticmethod
    def _prepare(path: str, current: Config, current_listeners: dict[str, list[socket.socket]],
                 stats_paths: frozenset[str]) -> Prepared | str:
        """A reload's blocking part, run in its thread: load the configuration at `path`
        (its log targets resolved and opened: runtime/targets.py), check it, bind the
        listeners `current` has no socket for (the others are reused by address) and the
        stats sockets whose path is not in `stats_paths`. It reads its arguments only and
        touches no state of the master.

        Returns:
            The Prepared reload, or why it fails (one `file:line: ...` per line); what it
            bound is then closed again.
        """
        from splicer.runtime.listener import open_listener
        from splicer.runtime.targets import load_checked

        try:
            config = load_checked(path)
        except ConfigErrors as exc:
            return "\n".join(str(e) for e in exc.errors)
        if not config.frontends:
            return f"{path}: no frontend or listen section: nothing to listen on"
        try:
            for number in range(1, worker_count(config) + 1):
                worker_cpus(config, number)
        except ValueError as exc:
            return str(exc)
        old = {}
        for fe in current.frontends:
            for b, sock in zip(fe.binds, current_listeners.get(fe.name, [])):
                old.setdefault(bind_key(b), sock)
        listeners: dict[str, list[socket.socket]] = {}
        opened: list[socket.socket] = []
        try:
            for fe in config.frontends:
                socks = []
                for b in fe.binds:
                    sock = old.get(bind_key(b))
                    if sock is None:
                        sock = open_listener(b)
                        opened.append(sock)
                    socks.append(sock)
                listeners[fe.name] = socks
            stats = open_stats_sockets(config.global_.stats_sockets, stats_paths)
        except OSError as exc:
            for sock in opened:
                sock.close()
            return str(exc.strerror or exc)
        return Prepared(config, listeners, opened, stats)

    def _failed(self, why: str) -> tuple[bool, str]:
        self.failed_reloads += 1
        for line in why.splitlines():
            log.error("reload failed: %s", line)
        log.error("reload failed: the running configuration and workers are kept")
        return False, why

    async def _wait_serving(self, timeout: float) -> None:
        """Until every current worker answers on its channel (it then accepts: Proxy.serve
        starts its channel after its listeners), or `timeout` seconds."""
        deadline = self.loop.time() + timeout
        while self.loop.time() < deadline and not self.stopping:
            replies = await self.ask_all({"op": "stats"}, timeout=max(0.1, deadline - self.loop.time()))
            if all("stats" in r for r in replies) and len(replies) == self.count:
                return
            await asyncio.sleep(0.05)

    # -- the master CLI (-S) ---------------------------------------------------------------

    def _cli_accept(self) -> None:
        """The master CLI's listening socket is readable: accept what waits (a batch per
        wake-up). Beyond mastercli.MAX_CLIENTS sessions a new connection is closed at once.
        Out of descriptors or memory (EMFILE, ENFILE, ENOBUFS, ENOMEM), accepting pauses
        (the connection waits in the backlog) for a delay that doubles up to CLI_BACKOFF_MAX
        seconds; that is logged once, and once more when accepting works again."""
        sock = self._cli_sock
        for _ in range(16):
            try:
                conn, _ = sock.accept()
            except (BlockingIOError, InterruptedError):
                return  # nothing more waits; EINTR: the next wake-up retries
            except OSError as exc:
                if exc.errno not in (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM):
                    continue  # ECONNABORTED and the like: that client left already
                if not self._cli_backoff:
                    log.error("master CLI: cannot accept (%s); pausing", exc.strerror or exc)
                self._cli_backoff = min(max(self._cli_backoff * 2, CLI_BACKOFF_MIN), CLI_BACKOFF_MAX)
                self.loop.remove_reader(sock.fileno())
                self._cli_resume = self.loop.call_later(self._cli_backoff, self._cli_listen)
                return
            if self._cli_backoff:
                log.warning("master CLI: accepting again")
                self._cli_backoff = 0.0
            if len(self._cli_clients) >= mastercli.MAX_CLIENTS:
                conn.close()
                continue
            task = self.loop.create_task(self._cli_connection(conn))
            self._cli_clients.add(task)
            task.add_done_callback(self._cli_clients.discard)

    def _cli_listen(self) -> None:
        self._cli_resume = None
        if self._cli_sock is not None:
            self.loop.add_reader(self._cli_sock.fileno(), self._cli_accept)

    async def _cli_connection(self, conn: socket.socket) -> None:
        try:
            conn.setblocking(False)
            reader, writer = await asyncio.open_unix_connection(sock=conn)
        except BaseException:
            conn.close()
            raise
        await self._cli_client(reader, writer)

    async def _cli_client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        session = mastercli.CliSession()
        try:
            while not session.done:
                data = await asyncio.wait_for(reader.read(65536), mastercli.IDLE_TIMEOUT)
                cmds = session.feed(data)
                for cmd in cmds:
                    out = cmd.text if isinstance(cmd, mastercli.Reply) else await self.cli_command(cmd)
                    if out:
                        writer.write(out.encode() + b"\n")
                if cmds:
                    writer.write(session.after_answer().encode())
                await writer.drain()
        except (TimeoutError, ConnectionError, OSError):
            pass
        except Exception:
            log.exception("master CLI failed")
        finally:
            writer.close()

    async def cli_command(self, cmd: str) -> str:
        """Run one master CLI command (mastercli.HELP lists them) and return its answer."""
        if cmd in ("", "prompt", "quit"):
            return ""
        if cmd == "help":
            return mastercli.HELP
        if cmd == "show proc":
            return self.show_proc()
        if cmd in ("show counters", "show counters workers"):
            if cmd.endswith("workers"):
                replies = await self.ask_all({"op": "stats"}, CLI_TIMEOUT)
                return "".join(json.dumps(r.get("stats", r), separators=(",", ":")) + "\n" for r in replies)
            return json.dumps(await self.cluster_stats(CLI_TIMEOUT), separators=(",", ":")) + "\n"
        if cmd == "reload":
            ok, why = await self.reload()
            return "Success=1\n" if ok else f"Success=0\n--\n{why}\n"
        if cmd.startswith("@"):
            target, _, line = cmd[1:].partition(" ")
            request = {"op": "command", "line": line.strip()}
            if target.startswith("!") and target[1:].isdigit() and int(target[1:]) in self.workers:
                reply = await self._ask_worker(self.workers[int(target[1:])], request, CLI_TIMEOUT)
            elif target.isdigit():
                reply = await self.ask(int(target), request, CLI_TIMEOUT)
            else:
                return f"Can't find the target PID matching the prefix '@{target}'\n"
            if "text" in reply:
                return reply["text"]
            return f"worker {target}: {reply.get('error', 'no answer')}\n"
        return f"Unknown command: '{cmd}'\n" + mastercli.HELP

    def show_proc(self) -> str:
        """The `show proc` table (mastercli.show_proc) of the master and its workers."""
        now = time.time()
        master = mastercli.ProcRow(os.getpid(), "master", self.reloads, now - self.born, __version__,
                                   self.generation, self.failed_reloads)

        def row(w: Worker) -> mastercli.ProcRow:
            return mastercli.ProcRow(w.pid, "worker", self.reloads - w.reloads_at_start, now - w.started,
                                     __version__, w.generation)
        workers = sorted(self.workers.values(), key=lambda w: (w.generation, w.number))
        return mastercli.show_proc(master, [row(w) for w in workers if w.generation == self.generation],
                                   [row(w) for w in workers if w.generation != self.generation])

    async def _open_cli(self) -> None:
        path = self.master_socket
        try:
            if os.path.exists(path) and not os.path.isfile(path):
                os.unlink(path)  # a previous run's socket
        except OSError:
            pass
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.bind(path)
            sock.listen(128)
            sock.setblocking(False)
        except OSError:
            sock.close()
            raise
        self._cli_sock = sock
        self._cli_listen()

    def _close_cli(self) -> None:
        """Stop listening on the master CLI, remove its socket file, end its sessions."""
        if self._cli_resume is not None:
            self._cli_resume.cancel()
        if self._cli_sock is not None:
            self.loop.remove_reader(self._cli_sock.fileno())
            self._cli_sock.close()
            self._cli_sock = None
            try:
                os.unlink(self.master_socket)
            except OSError:
                pass
        for t in list(self._cli_clients):
            t.cancel()

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
        return await self._ask_worker(w, request, timeout)

    async def _ask_worker(self, w: Worker, request: dict, timeout: float) -> dict:
        """ask() of one worker of any generation (the master CLI's `@!<pid>`)."""
        try:
            return await w.channel.ask(request, timeout)
        except TimeoutError:
            return {"error": "timeout", "worker": w.number}
        except ChannelClosed:
            return {"error": "closed", "worker": w.number}

    async def ask_all(self, request: dict, timeout: float = 2.0) -> list[dict]:
        """Send `request` to every live current-generation worker at once.

        Returns:
            One reply per worker, in worker-number order (errors as in ask()).
        """
        return list(await asyncio.gather(*(self.ask(w.number, request, timeout) for w in self.current())))

    async def cluster_stats(self, timeout: float = 2.0) -> dict:
        """Every current worker's counters, summed (splicer.stats.merge_stats); a worker
        that does not answer within `timeout` seconds is left out (its number is missing
        from the "worker" list)."""
        replies = await self.ask_all({"op": "stats"}, timeout)
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
            self.admin.close()  # what _serve() did not serve yet (it closes the rest itself)
            loop.close()

    def _reload_signal(self) -> None:
        task = self.loop.create_task(self.reload())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _first_ready(self) -> None:
        await self._wait_serving(READY_TIMEOUT)
        if not self.stopping:
            self.on_ready("ready")

    async def _serve(self, loop: asyncio.AbstractEventLoop) -> int:
        self.loop = loop
        self._done = loop.create_future()
        loop.add_signal_handler(signal.SIGCHLD, self._reap)
        loop.add_signal_handler(signal.SIGTERM, self._hard_stop)
        loop.add_signal_handler(signal.SIGINT, self._hard_stop)
        loop.add_signal_handler(signal.SIGUSR1, self._soft_stop)
        loop.add_signal_handler(signal.SIGUSR2, self._reload_signal)
        loop.add_signal_handler(signal.SIGHUP, self._signal_all, signal.SIGHUP)
        self._reloading = asyncio.Lock()
        if self.master_socket:
            try:
                await self._open_cli()
            except OSError as exc:
                log.error("cannot listen on master socket %s: %s", self.master_socket, exc.strerror or exc)
                return 3
        try:
            await self.admin.start()  # before any worker: one that cannot be bound stops the start
        except OSError as exc:
            log.error("%s", exc.strerror or exc)
            self._close_cli()
            return 3
        for number in range(1, self.count + 1):
            self._spawn(number)
        ready = loop.create_task(self._first_ready())
        try:
            return await self._done
        finally:
            ready.cancel()
            self.admin.close()
            self._close_cli()
            if self._kill_timer is not None:
                self._kill_timer.cancel()
            for sig in _SIGNALS:
                loop.remove_signal_handler(sig)
            for w in self.workers.values():
                w.channel.close()
