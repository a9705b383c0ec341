"""The stats sockets (`stats socket` in global), served by the master's event loop.

Theory of operation: the master listens on each configured unix socket; each connection
is a CLI session (admin/line.py) at the socket's `level`. A command the session does not
answer itself goes to the workers over the control channel (op "admin", runtime/control.py)
and their replies are merged into one answer (admin/merge.py): the operator sees one
splicer, not one worker at a time (where haproxy's threads share one process, splicer's
workers are processes). A change (`set server`, `enable`/`disable`) is applied by every
worker, and remembered here: the master hands the remembered changes to every worker it
forks later (a worker restarted after a crash, a new generation after a reload), which
applies them before it serves (runtime/command.py apply_changes()), so no worker ever
serves with a state the operator changed. Only the latest change of each kind per server
is kept. A reload keeps a server's changes only while its definition stays the same
(keep_changes(): the server still exists and its address, port, weight, disabled, backup and
check are unchanged): an operator who edits a server in the file gets what the file says.

The sockets are bound before any worker starts (cli.py, open_stats_sockets()): a path that
cannot be bound stops the start with `file:line: stats socket '<path>': cannot bind UNIX
socket: <reason>` (haproxy: "Binding [file:line] for frontend GLOBAL: ... cannot bind UNIX
socket (<reason>) [<path>]", then it exits). A reload binds the sockets of the paths it
adds before it changes anything (one that fails fails the reload, as a `bind` that fails
does), keeps the paths it keeps (with the new `level` and `mode`) and closes the ones it
removes (update()).

Nothing here blocks the master's loop: every socket is asyncio's; a client that stays
silent for IDLE_TIMEOUT seconds is disconnected (haproxy's `stats timeout`, 10 s).
"""
from __future__ import annotations

import asyncio
import logging
import os
import socket
import stat
import time

from splicer import __version__
from splicer.config.model import Config, StatsSocket
from splicer.admin.commands import ANY, CHANGE, LEVELS, Answer, Command, Level, parse
from splicer.admin.line import MAX_LINE, CliSession, answer, split_commands
from splicer.admin.merge import combine


log = logging.getLogger("splicer")

IDLE_TIMEOUT = 10.0
"""Seconds a stats socket client may stay silent before it is disconnected (haproxy's
default `stats timeout`)."""

WORKER_TIMEOUT = 5.0
"""Seconds the master waits for each worker's answer to a command."""


def _aspect(cmd: Command) -> str:
    """What part of a server a change sets (one remembered change per server and part)."""
    if cmd.name in ("enable server", "disable server") or cmd.action == "state":
        return "state"
    if cmd.name in ("enable health", "disable health"):
        return "health"
    return cmd.action


DEFINITION = ("host", "port", "weight", "disabled", "backup", "check")
"""The fields of a `server` line (config.model.Server) a remembered change depends on: when
one of them differs across a reload, the server's remembered changes are dropped."""


def same_definition(old, new) -> bool:
    """Whether two config.model.Server (one before, one after a reload) define the server
    alike for the changes remembered on it (DEFINITION's fields are equal)."""
    return all(getattr(old, f) == getattr(new, f) for f in DEFINITION)


def bind_unix(path: str, mode: int | None) -> socket.socket:
    """A listening unix socket at `path` with permissions `mode` from its first instant:
    bound under a temporary name, given its mode, then renamed over `path` (as haproxy does),
    so a stale socket file is replaced and no client can connect with the umask's rights.

    Raises:
        OSError: the directory is missing or not writable, or `path` is not a socket.
    """
    if os.path.lexists(path) and not stat.S_ISSOCK(os.lstat(path).st_mode):
        raise FileExistsError(17, f"{path} exists and is not a socket")
    tmp = f"{path}.{os.getpid()}.tmp"
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        if os.path.lexists(tmp):
            os.unlink(tmp)
        s.bind(tmp)
        if mode is not None:
            os.chmod(tmp, mode)
        s.listen(64)
        os.rename(tmp, path)
    except OSError:
        s.close()
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    s.setblocking(False)
    return s


Bound = list
"""What open_stats_sockets() returns: (StatsSocket, listening socket) pairs, in file order."""


def open_stats_socket(conf: "StatsSocket") -> socket.socket:
    """bind_unix() for one `stats socket` line.

    Raises:
        OSError: errno kept, with the message ``file:line: stats socket '<path>': cannot
            bind UNIX socket: <reason>`` (haproxy's words, sock_unix_bind_receiver()).
    """
    try:
        return bind_unix(conf.path, conf.mode)
    except OSError as exc:
        raise OSError(exc.errno, f"{conf.file}:{conf.line}: stats socket '{conf.path}': cannot bind "
                                 f"UNIX socket: {exc.strerror or exc}") from None


def open_stats_sockets(confs, keep: frozenset[str] | set[str] = frozenset()) -> Bound:
    """Bind every `stats socket` line of `confs` whose path is not in `keep` (the paths
    served already, across a reload).

    Returns:
        (StatsSocket, listening socket) pairs, in file order.

    Raises:
        OSError: the first line that cannot be bound (see open_stats_socket()); the sockets
            bound before it are closed and their files removed.
    """
    bound: Bound = []
    try:
        for conf in confs:
            if conf.path not in keep:
                bound.append((conf, open_stats_socket(conf)))
    except OSError:
        close_stats_sockets(bound)
        raise
    return bound


def close_stats_sockets(bound: Bound) -> None:
    """Close sockets open_stats_sockets() bound and never served, and remove their files."""
    for conf, sock in bound:
        sock.close()
        try:
            os.unlink(conf.path)
        except OSError:
            pass
    bound.clear()


class AdminSockets:
    """The master's stats sockets and the changes it remembers.

    Args:
        master: the Master (its config, ask(), ask_all(), current()).
        bound: sockets open_stats_sockets() bound for the master's configuration (cli.py
            binds them before the master starts); start() serves them.
    """

    def __init__(self, master, bound: Bound | None = None) -> None:
        self.master = master
        self.started = time.time()
        self._bound: Bound = list(bound or ())    # bound, not served yet
        self._servers: dict[str, asyncio.AbstractServer] = {}  # path -> its server
        self._confs: dict[str, "StatsSocket"] = {}              # path -> its line (level, mode)
        self._changes: dict[tuple[str, str, str], tuple[str, ...]] = {}
        self._clients: set[asyncio.Task] = set()

    # -- remembered changes ------------------------------------------------------------------

    def changes(self) -> tuple[tuple[str, ...], ...]:
        """The changes to replay on a new worker (words of each command, oldest first)."""
        return tuple(self._changes.values())

    def note(self, cmd: Command) -> None:
        """Remember a change every worker applied."""
        key = (cmd.backend, cmd.server, _aspect(cmd))
        self._changes.pop(key, None)
        self._changes[key] = cmd.words

    def note_line(self, line: str) -> None:
        """Remember the changes of a CLI line run through Master.cluster_command() (the
        stats page's actions)."""
        names = self._names()
        for words in split_commands(line):
            got = parse(words, Level.ADMIN, names)
            if isinstance(got, Command) and got.kind == CHANGE:
                self.note(got)

    def keep_changes(self, old: "Config", new: "Config") -> list[str]:
        """At a reload from `old` to `new`: keep the remembered changes of the servers that
        still exist in `new` with the same definition (same_definition()), drop the others,
        and log one line naming the servers dropped. The new generation then serves the
        edited configuration (haproxy itself forgets every runtime change at a reload; its
        way to carry states across one is the server-state-file).

        Returns:
            The servers whose changes were dropped, as "backend/server", in change order.
        """
        def server(cfg: "Config", backend: str, name: str):
            be = cfg.backends.get(backend)
            return next((s for s in be.servers if s.name == name), None) if be is not None else None

        dropped: list[str] = []
        for key in list(self._changes):
            backend, name, _ = key
            before, after = server(old, backend, name), server(new, backend, name)
            if before is None or after is None or not same_definition(before, after):
                del self._changes[key]
                if f"{backend}/{name}" not in dropped:
                    dropped.append(f"{backend}/{name}")
        if dropped:
            log.warning("reload: runtime changes dropped for %s (server removed or its definition changed: "
                        "the configuration applies)", ", ".join(dropped))
        return dropped

    # -- the sockets -------------------------------------------------------------------------

    def _names(self) -> dict[str, tuple[str, ...]]:
        return {name: tuple(s.name for s in be.servers) for name, be in self.master.config.backends.items()}

    def paths(self) -> frozenset[str]:
        """The paths served (and those bound, to be served): what a reload keeps."""
        return frozenset(self._servers) | {conf.path for conf, _ in self._bound}

    async def start(self) -> None:
        """Listen on every `stats socket` of the configuration: those bound already (the
        constructor's `bound`), then any other line, bound now. A stale socket file left by
        a previous run is replaced.

        Raises:
            OSError: a line that cannot be bound (open_stats_socket()'s message); what was
                bound and not served yet is closed, what is served stays (close() ends it).
        """
        try:
            self._bound += open_stats_sockets(self.master.config.global_.stats_sockets, self.paths())
        except OSError:
            close_stats_sockets(self._bound)
            raise
        await self._serve(self._bound)
        self._bound = []

    async def update(self, config: "Config", bound: Bound) -> None:
        """A reload to `config` succeeded: serve `bound` (its new paths, open_stats_sockets()
        with keep=paths()), close the paths it no longer has, and give the kept ones the
        `level` (for the connections accepted from now on) and the `mode` of its line."""
        lines = {conf.path: conf for conf in config.global_.stats_sockets}
        for path in [p for p in self._servers if p not in lines]:
            self._servers.pop(path).close()
            self._confs.pop(path, None)
            try:
                os.unlink(path)
            except OSError:
                pass
            log.info("stats socket %s closed (not in the configuration any more)", path)
        for path, conf in lines.items():
            before = self._confs.get(path)
            if path not in self._servers or before is None:
                continue
            self._confs[path] = conf
            if conf.mode is not None and conf.mode != before.mode:
                try:
                    os.chmod(path, conf.mode)
                except OSError as exc:
                    log.warning("stats socket %s: cannot change its mode: %s", path, exc.strerror or exc)
        await self._serve(bound)

    async def _serve(self, bound: Bound) -> None:
        for conf, listening in bound:
            old = self._servers.pop(conf.path, None)
            if old is not None:  # one path on two lines: the later line's socket took the file
                old.close()
            self._servers[conf.path] = await asyncio.start_unix_server(
                lambda r, w, path=conf.path: self._accepted(r, w, path), sock=listening, limit=MAX_LINE)
            self._confs[conf.path] = conf
            log.info("stats socket %s (level %s)", conf.path, conf.level)

    def close(self) -> None:
        """Stop listening, remove the socket files, end the open sessions (and close what
        was bound and never served)."""
        close_stats_sockets(self._bound)
        for path, server in self._servers.items():
            server.close()
            try:
                os.unlink(path)
            except OSError:
                pass
        self._servers.clear()
        for t in list(self._clients):
            t.cancel()

    def _accepted(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, path: str) -> None:
        conf = self._confs.get(path)
        level = LEVELS[conf.level if conf is not None else "user"]
        task = asyncio.get_running_loop().create_task(self._session(reader, writer, level))
        self._clients.add(task)
        task.add_done_callback(self._clients.discard)

    async def _session(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, level: Level) -> None:
        session = CliSession(level, self._names())
        buf = b""
        try:
            while not session.closed:
                data = await asyncio.wait_for(reader.read(MAX_LINE), IDLE_TIMEOUT)
                if not data:  # the client is done: a last line without its end of line runs
                    lines, buf = ([buf] if buf.strip() else []), b""
                    session.eof()
                else:
                    buf += data
                    *lines, buf = buf.split(b"\n")
                    if len(buf) > MAX_LINE:
                        break  # a line longer than MAX_LINE: haproxy closes too
                if any(len(raw) > MAX_LINE for raw in lines):
                    # a line longer than MAX_LINE, however many reads it took: the lines
                    # before it run, then the connection ends (haproxy closes too)
                    lines = lines[:next(k for k, raw in enumerate(lines) if len(raw) > MAX_LINE)]
                    too_long = True
                else:
                    too_long = False
                for k, raw in enumerate(lines):
                    line = raw.decode("utf-8", "replace").rstrip("\r")
                    for step in session.handle(line, more=k < len(lines) - 1 or bool(buf)):
                        if isinstance(step, Answer):
                            writer.write(step.text.encode())
                        else:
                            writer.write(answer(await self.run(step)).encode())
                        await writer.drain()
                    if session.closed:
                        break
                if too_long:
                    break
        except (TimeoutError, ConnectionError):
            pass
        except Exception:
            log.exception("stats socket session failed")
        finally:
            writer.close()

    # -- running a command on the workers ----------------------------------------------------

    def context(self) -> dict:
        """What admin.merge.combine() needs that only the master knows."""
        g = self.master.config.global_
        now = time.time()
        return {"version": __version__, "pid": os.getpid(), "uptime": now - self.started,
                "start_time": self.started, "workers": len(self.master.current()), "maxconn": g.maxconn,
                "maxpipes": g.maxpipes if g.maxpipes is not None else max(g.maxconn // 4, 1),
                "listeners": sum(len(v) for v in self.master.listeners.values()),
                "node": socket.gethostname(), "now": now}

    async def run(self, cmd: Command) -> str:
        """Run `cmd` on the workers (ANY: the first one) and return the merged answer; a
        change every worker accepted is remembered for the workers started later."""
        request = {"op": "admin", "words": list(cmd.words)}
        workers = self.master.current()
        if not workers:
            return "No worker is running.\n"
        if cmd.kind == ANY:
            replies = [await self.master.ask(workers[0].number, request, WORKER_TIMEOUT)]
        else:
            replies = await self.master.ask_all(request, WORKER_TIMEOUT)
        if cmd.kind == CHANGE and any("error" not in r for r in replies):
            self.note(cmd)
        return combine(cmd, replies, self.context())
