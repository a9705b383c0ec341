"""The master CLI (`-S PATH`, haproxy's master socket): its line protocol and answers, sans-I/O.

Theory of operation (haproxy management.txt, "master CLI"): a client connects to the master's
unix socket, sends one line and reads the answer until the master closes the connection. A
line may hold several commands separated by ';'. The command `prompt` makes the connection
interactive: it then stays open, each answer is followed by the prompt `master> `, an empty
line just shows the prompt again, and `quit` (or the client's EOF) ends it. Each answer ends
with an empty line, as haproxy's do.

This module only turns bytes into commands (CliSession) and facts into text (show_proc,
HELP); the master (runtime/master.py) runs the commands and owns the socket.
"""
from __future__ import annotations

from dataclasses import dataclass

PROMPT = "master> "
"""What an interactive connection sees before each command."""

MAX_LINE = 16384
"""Longest command line accepted, in bytes; a longer one ends the connection, however many
reads it arrives in."""

IDLE_TIMEOUT = 10.0
"""Seconds a client may stay silent before the master closes its connection (as the stats
socket's, haproxy's default `stats timeout`)."""

MAX_CLIENTS = 100
"""Most master CLI connections served at once; one more is closed as soon as it is accepted."""

NUL_REFUSED = "A NUL byte is not allowed in a command line: none of its commands was run.\n"
"""The answer to a line holding a NUL byte (haproxy reads its CLI lines as C strings: what
follows a NUL is never a command, so splicer runs no part of such a line, as the stats
socket does)."""


@dataclass(frozen=True)
class Reply:
    """An answer CliSession gives itself, in place of a command to run (a refused line)."""

    text: str


HELP = """\
The following commands are valid at this level:
  help                    : this message
  prompt                  : toggle interactive mode with prompt
  quit                    : disconnect
  show proc               : the master's and every worker's pid, type, reloads, uptime and version
  show counters [workers] : every worker's counters summed as one JSON line (workers: one line per worker)
  reload                  : reload the configuration and start new workers (Success=1, or Success=0 and why)
  @<n> <command>          : send a runtime API command to worker <n> (from 1)
  @!<pid> <command>       : send a runtime API command to the worker whose pid is <pid>
"""


class CliSession:
    """One master CLI connection: bytes in, commands out.

    Attributes:
        interactive: `prompt` was given (the connection stays open).
        done: the connection is to be closed once the pending answers are sent.
    """

    def __init__(self) -> None:
        self.buf = b""
        self.interactive = False
        self.done = False

    def feed(self, data: bytes) -> list:
        """Take bytes from the client (b"": its EOF).

        Returns:
            The commands of every complete line received, in order (";"-separated parts,
            stripped; an empty line gives [""] so that the caller shows the prompt again), as
            str; a line holding a NUL byte gives Reply(NUL_REFUSED) and runs nothing. `prompt`
            and `quit` are handled here and returned too (their answer is empty); what
            follows `quit` on its line is not returned. A line longer than MAX_LINE bytes,
            complete or not, returns nothing and ends the session (`done`).
        """
        if self.done:
            return []
        if data == b"":
            self.done = True
            line, self.buf = self.buf, b""
            return self._line(line) if line.strip() and len(line) <= MAX_LINE else []
        self.buf += data
        out: list = []
        while b"\n" in self.buf and not self.done:
            line, self.buf = self.buf.split(b"\n", 1)
            if len(line) > MAX_LINE:
                self.done = True
                break
            out += self._line(line)
            if not self.interactive:
                self.done = True  # one command line per connection
        if len(self.buf) > MAX_LINE:
            self.done = True  # the line being received is too long already
        if self.done:
            self.buf = b""
        return out

    def _line(self, raw: bytes) -> list:
        if b"\0" in raw:
            return [Reply(NUL_REFUSED)]
        text = raw.decode("utf-8", "replace").rstrip("\r")
        cmds = [c.strip() for c in text.split(";")]
        cmds = [c for c in cmds if c] or [""]
        for k, c in enumerate(cmds):
            if c == "prompt":
                self.interactive = not self.interactive
            elif c == "quit":
                self.done = True
                return cmds[:k + 1]
        return cmds

    def after_answer(self) -> str:
        """What follows an answer: the prompt on an interactive connection, else nothing."""
        return PROMPT if self.interactive and not self.done else ""


@dataclass(frozen=True)
class ProcRow:
    """One process of `show proc`.

    Attributes:
        pid: its process id.
        kind: "master" or "worker".
        reloads: reloads it has been through (the master: all of them).
        uptime: seconds since it started.
        version: splicer's version.
        generation: the configuration generation it serves (1, then +1 per reload).
        failed: (the master) reloads that failed.
    """

    pid: int
    kind: str
    reloads: int
    uptime: float
    version: str
    generation: int
    failed: int = 0


def uptime(seconds: float) -> str:
    """haproxy's uptime form: `0d00h05m10s`."""
    s = max(int(seconds), 0)
    return f"{s // 86400}d{s // 3600 % 24:02d}h{s // 60 % 60:02d}m{s % 60:02d}s"


def _row(r: ProcRow) -> str:
    reloads = f"{r.reloads} [failed: {r.failed}]" if r.kind == "master" else str(r.reloads)
    return f"{r.pid:<15} {r.kind:<15} {reloads:<15} {uptime(r.uptime):<15} {r.version:<15} {r.generation}\n"


def show_proc(master: ProcRow, workers: list[ProcRow], old: list[ProcRow]) -> str:
    """`show proc` as haproxy (2.5+) prints it, with splicer's generation as a last column:
    the master, `# workers` (current generation), `# old workers` (soft-stopping after a
    reload), `# programs` (none)."""
    head = f"{'#<PID>':<15} {'<type>':<15} {'<reloads>':<15} {'<uptime>':<15} {'<version>':<15} <generation>\n"
    return (head + _row(master) + "# workers\n" + "".join(map(_row, workers))
            + "# old workers\n" + "".join(map(_row, old)) + "# programs\n")
