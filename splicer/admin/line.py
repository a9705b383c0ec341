"""The stats socket's line protocol (haproxy management.txt 9.3), sans-I/O.

Theory of operation: a client sends lines; each line holds one or more commands separated by
';' (a ';' or '\\' inside a command is written '\\;' / '\\\\'), each command is words
separated by blanks. In the default, non-interactive mode the connection carries one line
(and the lines that came with it, as haproxy runs every line already in its buffer): its
commands run in order and the connection closes after the last answer. `prompt` (on
the first line) enters the interactive mode: after each line the prompt "> " is sent and
the next line is awaited, until `quit`, a second `prompt` (the connection then closes after
that line) or the end of the input. Every answer ends with an empty line, so a script can
tell where one command's output stops even when several were pipelined on one line; no
answer contains an empty line itself.

CliSession decides all of this; the shell (runtime/adminsock.py) reads lines, sends what it
says and runs the Commands it hands out.
"""
from __future__ import annotations

from dataclasses import dataclass

from splicer.admin.commands import Answer, Command, Level, help_text, parse

PROMPT = "> "
"""What the interactive mode prints when it waits for a line (haproxy)."""

MAX_LINE = 16384
"""Longest accepted line, bytes (haproxy: the whole request must fit tune.bufsize); a
longer one ends the connection, however many reads it came in."""

NUL_REFUSED = "A NUL byte is not allowed in a command line: none of its commands was run.\n"
"""The answer to a line holding a NUL byte: haproxy reads its CLI lines as C strings, so
what follows a NUL is never a command; splicer runs no part of such a line (the master
CLI answers the same)."""


def split_commands(line: str) -> list[list[str]]:
    """Split a line into commands and each command into words.

    Args:
        line: one line without its end of line.

    Returns:
        One list of words per non-empty command, in order: ';' separates commands, blanks
        (spaces, tabs) separate words, a backslash makes the next character literal.
    """
    commands: list[list[str]] = []
    words: list[str] = []
    word: list[str] = []
    in_word = False
    i = 0
    while i < len(line):
        c = line[i]
        if c == "\\" and i + 1 < len(line):
            word.append(line[i + 1])
            in_word = True
            i += 2
            continue
        if c in " \t":
            if in_word:
                words.append("".join(word))
                word, in_word = [], False
        elif c == ";":
            if in_word:
                words.append("".join(word))
                word, in_word = [], False
            if words:
                commands.append(words)
            words = []
        else:
            word.append(c)
            in_word = True
        i += 1
    if in_word:
        words.append("".join(word))
    if words:
        commands.append(words)
    return commands


def answer(text: str) -> str:
    """A command's answer as sent: its text ending with an end of line (unless empty),
    then the empty line that closes every answer."""
    if text and not text.endswith("\n"):
        text += "\n"
    return text + "\n"


@dataclass
class CliSession:
    """One stats socket connection's state.

    Args:
        level: the socket's `level` (the session may lower it).
        servers: {backend: server names} to check `<bk>/<srv>` arguments against.

    Attributes:
        interactive: in prompt mode.
        closed: the connection is to be closed once what handle() returned is sent.
    """

    level: Level = Level.ADMIN
    servers: dict | None = None
    interactive: bool = False
    closed: bool = False

    def handle(self, line: str, more: bool = False) -> list[Answer | Command]:
        """Process one line.

        Args:
            line: the line, without its end of line.
            more: further lines came with it (they are in the shell's buffer already): a
                non-interactive connection runs them too before it closes.

        Returns:
            What to do, in order: send each Answer's text as is; run each Command and send
            `answer(its text)`. A line holding a NUL byte runs nothing and answers
            NUL_REFUSED; a line of empty commands (";") answers one empty answer. When `closed` is then True, close the connection after
            them; in interactive mode the prompt is the last Answer.
        """
        out: list[Answer | Command] = []
        leave = not self.interactive and not more  # a non-interactive connection carries one line
        if "\0" in line:
            commands: list[list[str]] = []
            out.append(Answer(answer(NUL_REFUSED)))
        else:
            commands = split_commands(line)
            if not commands and line.strip(" \t"):  # only ';': one empty answer (haproxy)
                out.append(Answer(answer("")))
        for words in commands:
            got = parse(words, self.level, self.servers)
            if isinstance(got, Answer):
                out.append(Answer(answer(got.text)))
                continue
            name = got.name
            if name == "quit":
                self.closed = True
                return out
            if name == "prompt":
                self.interactive = not self.interactive
                leave = not self.interactive and not more
                out.append(Answer(answer("")))
            elif name == "help":
                out.append(Answer(answer(help_text(self.level, tuple(got.value)))))
            elif name == "show cli level":
                out.append(Answer(answer(self.level.name.lower())))
            elif name in ("operator", "user"):
                wanted = Level.OPERATOR if name == "operator" else Level.USER
                if wanted > self.level:
                    out.append(Answer(answer("Permission denied")))
                else:
                    self.level = wanted
                    out.append(Answer(answer("")))
            else:
                out.append(got)
        if leave:
            self.closed = True
        elif self.interactive:
            out.append(Answer(PROMPT))
        return out

    def eof(self) -> None:
        """The client closed its side: nothing more will be read."""
        self.closed = True
