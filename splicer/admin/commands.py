"""The runtime API's commands: their words, access levels, arguments and help lines.

Rule: whether a command exists, who may run it, what its arguments mean and what is wrong
with them is decided here and nowhere else (haproxy keeps the same table of `cli_kw`
entries next to each command's parser). parse() turns one command's words into a Command
or an Answer (the text the CLI sends back instead: a usage message, "Permission denied",
"Unknown command ..."); it never touches a runtime object.

Levels (haproxy management.txt 9.3 and the `level` argument of `stats socket`):
  - user: every `show` command that reveals no request data, `help`, `prompt`, `quit`;
  - operator: + `show sess`, `show errors` and `clear counters` (the max values);
  - admin: everything, i.e. + every command that changes a server and `clear counters all`.
A session may lower its own level (`operator`, `user`), never raise it.

How a command runs (Command.kind): SESSION commands are answered by the CLI session itself;
the others go to the workers through the master (runtime/adminsock.py): ANY to one worker,
EACH to every worker with the answers joined, MERGE to every worker with the answers merged
(admin/merge.py), CHANGE to every worker and remembered by the master, which replays it to
the workers it starts later, ALL to every worker without being remembered.
"""
from __future__ import annotations

import difflib
import ipaddress
from dataclasses import dataclass
from enum import IntEnum


class Level(IntEnum):
    """A CLI session's privilege (haproxy ACCESS_LVL_USER/OPER/ADMIN)."""

    USER = 0
    OPERATOR = 1
    ADMIN = 2


LEVELS = {"user": Level.USER, "operator": Level.OPERATOR, "admin": Level.ADMIN}
"""`stats socket ... level NAME` names."""

SESSION = "session"
ANY = "any"
EACH = "each"
MERGE = "merge"
CHANGE = "change"
ALL = "all"


@dataclass(frozen=True)
class Spec:
    """One command of the table.

    Attributes:
        words: the words that name it ("set", "server").
        level: the least level that may run it.
        usage: its synopsis as `help` prints it.
        help: what it does, one line.
        kind: how it runs (module docstring: SESSION, ANY, EACH, MERGE, CHANGE, ALL).
    """

    words: tuple[str, ...]
    level: Level
    usage: str
    help: str
    kind: str


SPECS: tuple[Spec, ...] = (
    Spec(("clear", "counters"), Level.OPERATOR, "clear counters [all]",
         "reset the max values of the counters (all: every counter)", ALL),
    Spec(("disable", "health"), Level.ADMIN, "disable health <bk>/<srv>",
         "stop a server's health checks (it is then considered UP)", CHANGE),
    Spec(("disable", "server"), Level.ADMIN, "disable server <bk>/<srv>",
         "put a server in maintenance (as 'set server ... state maint')", CHANGE),
    Spec(("enable", "health"), Level.ADMIN, "enable health <bk>/<srv>",
         "resume a server's health checks", CHANGE),
    Spec(("enable", "server"), Level.ADMIN, "enable server <bk>/<srv>",
         "take a server out of maintenance (as 'set server ... state ready')", CHANGE),
    Spec(("operator",), Level.USER, "operator",
         "lower this session's level to operator", SESSION),
    Spec(("set", "server"), Level.ADMIN, "set server <bk>/<srv> [opts]",
         "change a server's state (ready|drain|maint), weight (N or N%) or addr (A [port P])", CHANGE),
    Spec(("show", "backend"), Level.USER, "show backend",
         "list the backends", ANY),
    Spec(("show", "cli", "level"), Level.USER, "show cli level",
         "this session's level", SESSION),
    Spec(("show", "counters"), Level.USER, "show counters",
         "every counter of every worker, summed, as one JSON line (splicer)", MERGE),
    Spec(("show", "errors"), Level.OPERATOR, "show errors",
         "the last invalid requests each worker refused, with their bytes", MERGE),
    Spec(("show", "info"), Level.USER, "show info",
         "the processes' figures (summed over the workers)", MERGE),
    Spec(("show", "servers", "state"), Level.USER, "show servers state [<backend>]",
         "the servers' states in the server-state-file format (version 1)", ANY),
    Spec(("show", "sess"), Level.OPERATOR, "show sess",
         "the streams in flight, one line each, per worker", EACH),
    Spec(("show", "stat"), Level.USER, "show stat [<iid> <type> <sid>] [opts]",
         "the counters of each frontend, backend and server (CSV; opts: typed, up, no-maint)", MERGE),
    Spec(("shutdown", "sessions", "server"), Level.ADMIN, "shutdown sessions server <bk>/<srv>",
         "end every stream on a server now", ALL),
    Spec(("user",), Level.USER, "user",
         "lower this session's level to user", SESSION),
    Spec(("get", "weight"), Level.USER, "get weight <bk>/<srv>",
         "a server's current weight (and its initial one)", ANY),
    Spec(("set", "weight"), Level.ADMIN, "set weight <bk>/<srv> (DEPRECATED)",
         "change a server's weight (use 'set server' instead)", CHANGE),
    Spec(("help",), Level.USER, "help [<command>]",
         "list the commands (or those matching)", SESSION),
    Spec(("prompt",), Level.USER, "prompt",
         "toggle the interactive mode with its prompt", SESSION),
    Spec(("quit",), Level.USER, "quit",
         "close the connection", SESSION),
)
"""Every command, in the order `help` lists them."""

PERMISSION_DENIED = "Permission denied\n"
"""haproxy's answer to a command above the session's level."""

SERVER_STATES = ("ready", "drain", "maint")
"""`set server B/S state` values (haproxy)."""

MAX_WEIGHT = 256
"""Highest absolute server weight (haproxy SRV_UWGHT_MAX)."""

NO_SUCH_PROXY = "No such proxy.\n"
"""haproxy's answer to `show stat <iid> <type> <sid>` when <iid> names no proxy and is no
number but 0 (src/stats.c cli_parse_show_stat())."""

INVALID_DOMAIN = "Invalid statistics domain.\n"
"""haproxy's answer to `show stat domain X` for a domain it does not have."""

STATS_TYPE_FE, STATS_TYPE_BE, STATS_TYPE_SV, STATS_TYPE_SO = 0, 1, 2, 3
"""haproxy's object types (the CSV's `type` column); `show stat`'s <type> is a bit field of
`1 << type`: 1 frontends, 2 backends, 4 servers, 8 listeners, -1 everything."""


@dataclass(frozen=True)
class StatFilter:
    """What `show stat` dumps (haproxy 2.6 management.txt "show stat"; src/stats.c
    cli_parse_show_stat(), show_stat_ctx's STAT_BOUND, STAT_HIDE_DOWN, STAT_HIDE_MAINT).

    Attributes:
        proxy: the <iid>|<proxy> word as typed; "" when the command has no
            `<iid> <type> <sid>` (everything is dumped). A proxy of that name gives its id,
            otherwise the word is read as a number (C atoi()); -1 means every proxy.
            Resolved against the rows by stat_proxy_id().
        type: <type>, a bit field of `1 << STATS_TYPE_*` (-1: every type).
        sid: <sid>, a server id (the `sid` column), -1 for every server.
        up: `up`: only the servers UP, or DOWN but with checks on their way up; not those
            in maintenance, nor those DOWN for good.
        no_maint: `no-maint`: not the servers in maintenance.
    """

    proxy: str = ""
    type: int = -1
    sid: int = -1
    up: bool = False
    no_maint: bool = False

    @property
    def bound(self) -> bool:
        """`<iid> <type> <sid>` were given (haproxy STAT_BOUND)."""
        return self.proxy != ""

    def wants(self, obj_type: int) -> bool:
        """Objects of type `obj_type` (STATS_TYPE_*) are dumped at all."""
        return not self.bound or bool(self.type & (1 << obj_type))


@dataclass(frozen=True)
class Command:
    """One parsed command, ready to run.

    Attributes:
        spec: its table entry.
        words: the words as typed (what the master sends the workers, and replays).
        backend / server: the `<bk>/<srv>` argument ("" when it has none); for `show
            servers state`, the backend filter.
        action: what the command does, for those with variants: "state", "weight",
            "addr" (set server), "ready" / "maint" (enable / disable server), "on" / "off"
            (enable / disable health), "all" (clear counters all), "typed" (show stat).
        value: the action's value: a state name, a weight (int), an address; for `show
            stat`, its StatFilter.
        relative: the weight is a percentage of the server's initial weight.
        port: the new port of `set server ... addr ... port P` (None: unchanged).
    """

    spec: Spec
    words: tuple[str, ...]
    backend: str = ""
    server: str = ""
    action: str = ""
    value: object = None
    relative: bool = False
    port: int | None = None

    @property
    def name(self) -> str:
        """The command's name, e.g. "set server"."""
        return " ".join(self.spec.words)

    @property
    def kind(self) -> str:
        """How it runs: SESSION, ANY, EACH, MERGE, CHANGE or ALL (module docstring)."""
        return self.spec.kind


@dataclass(frozen=True)
class Answer:
    """Text the CLI sends back instead of running anything (an error, a usage line)."""

    text: str


def _lines(specs) -> str:
    """Help lines as haproxy prints them: "  <usage padded to 40>: <help>"."""
    return "".join(f"  {s.usage:<40}: {s.help}\n" for s in specs)


def help_text(level: Level, words: tuple[str, ...] = ()) -> str:
    """The `help` answer: the commands this level may run (those starting with `words`
    when given), one per line."""
    specs = [s for s in SPECS if s.level <= level and s.words[:len(words)] == tuple(words)]
    return "The following commands are valid at this level:\n" + _lines(specs)


def _unknown(words: tuple[str, ...], level: Level) -> Answer:
    """haproxy's answer to an unknown command: the commands of this level closest to it
    (by spelling, else by first word), else all of them."""
    allowed = [s for s in SPECS if s.level <= level]
    close = set(difflib.get_close_matches(" ".join(words), [" ".join(s.words) for s in allowed], n=5, cutoff=0.5))
    near = [s for s in allowed if " ".join(s.words) in close] or [s for s in allowed if s.words[0] == words[0]]
    if near:
        return Answer("Unknown command, but maybe one of the following ones is a better match:\n" + _lines(near))
    return Answer("Unknown command. Please enter one of the following commands only:\n" + _lines(allowed))


def find(words: tuple[str, ...]) -> Spec | None:
    """The table entry naming the command `words` starts with (the longest match), or None."""
    best = None
    for s in SPECS:
        if tuple(words[:len(s.words)]) == s.words and (best is None or len(s.words) > len(best.words)):
            best = s
    return best


def parse(words: tuple[str, ...] | list[str], level: Level,
          servers: dict[str, tuple[str, ...]] | None = None) -> Command | Answer:
    """Parse one command (its words, as split by admin/line.py).

    Args:
        words: the command's words.
        level: the session's level.
        servers: {backend name: its server names} to check `<bk>/<srv>` against (None: not
            checked, the worker checks).

    Returns:
        A Command, or the Answer to send back: "Permission denied", "Unknown command ...",
        or the usage error haproxy gives ("Require 'backend/server'.", "No such backend.",
        "No such server.", "'set server <srv> state' expects 'ready', 'drain' and 'maint'.",
        "Absolute weight can only be between 0 and 256 inclusive.", "Invalid statistics
        domain.", ...).
    """
    words = tuple(words)
    spec = find(words)
    if spec is None:
        return _unknown(words, level)
    if spec.level > level:
        return Answer(PERMISSION_DENIED)
    rest = words[len(spec.words):]
    name = " ".join(spec.words)
    if name == "clear counters":
        if rest and rest[0] == "all":
            if level < Level.ADMIN:
                return Answer(PERMISSION_DENIED)
            return Command(spec, words, action="all")
        return Command(spec, words)
    if name == "show stat":
        return parse_show_stat(spec, words, rest)
    if name == "show servers state":
        if rest:
            if servers is not None and rest[0] not in servers:
                return Answer(f"Can't find backend '{rest[0]}'.\n")
            return Command(spec, words, backend=rest[0])
        return Command(spec, words)
    if name == "help":
        return Command(spec, words, value=rest)
    if spec.words[-1] not in ("server", "health", "weight"):
        return Command(spec, words)
    # the commands on one server: <bk>/<srv> first
    if not rest or "/" not in rest[0]:
        return Answer("Require 'backend/server'.\n")
    backend, _, server = rest[0].partition("/")
    if servers is not None:
        if backend not in servers:
            return Answer("No such backend.\n")
        if server not in servers[backend]:
            return Answer("No such server.\n")
    args = rest[1:]
    if name in ("enable server", "disable server"):
        return Command(spec, words, backend, server, "ready" if spec.words[0] == "enable" else "maint")
    if name in ("enable health", "disable health"):
        return Command(spec, words, backend, server, "on" if spec.words[0] == "enable" else "off")
    if name in ("shutdown sessions server", "get weight"):
        return Command(spec, words, backend, server)
    if name == "set weight":  # haproxy's legacy form of `set server B/S weight`
        if not args:
            return Answer("Require <weight> or <weight%>.\n")
        got = parse_weight(args[0])
        if isinstance(got, Answer):
            return got
        return Command(spec, words, backend, server, "weight", got[0], got[1])
    # set server <bk>/<srv> ...
    usage = Answer("usage: set server <backend>/<server> addr | state | weight\n")
    if not args:
        return usage
    what = args[0]
    if what == "state":
        if len(args) < 2 or args[1] not in SERVER_STATES:
            return Answer("'set server <srv> state' expects 'ready', 'drain' and 'maint'.\n")
        return Command(spec, words, backend, server, "state", args[1])
    if what == "weight":
        if len(args) < 2:
            return Answer("Require <weight>.\n")
        got = parse_weight(args[1])
        if isinstance(got, Answer):
            return got
        return Command(spec, words, backend, server, "weight", got[0], got[1])
    if what == "addr":
        if len(args) < 2:
            return Answer("set server <b>/<s> addr requires an address and optionally a port.\n")
        try:
            addr = str(ipaddress.ip_address(args[1]))
        except ValueError:
            return Answer(f"Invalid addr '{args[1]}'.\n")
        port = None
        if len(args) >= 3:
            if args[2] != "port" or len(args) != 4:  # trailing words: the usage error
                return Answer("set server <b>/<s> addr requires an address and optionally a port.\n")
            if not args[3].isdigit() or not 0 < int(args[3]) < 65536:
                return Answer(f"Invalid port '{args[3]}'.\n")
            port = int(args[3])
        return Command(spec, words, backend, server, "addr", addr, port=port)
    return usage


def parse_weight(text: str) -> tuple[int, bool] | Answer:
    """A `set server ... weight` value: "N" (0..256) or "N%" (of the initial weight).

    Returns:
        (value, relative) or the Answer haproxy gives for a bad value (server.c
        server_parse_weight_change_request()).
    """
    relative = text.endswith("%")
    digits = text[:-1] if relative else text
    if not digits.isdigit():
        return Answer("Require <weight> or <weight%>.\n")
    n = int(digits)
    if not relative and n > MAX_WEIGHT:
        return Answer(f"Absolute weight can only be between 0 and {MAX_WEIGHT} inclusive.\n")
    return n, relative


def effective_weight(value: int, relative: bool, initial: int) -> int:
    """The absolute weight a parsed `weight` value means for a server of initial weight
    `initial`: N%, rounded down, capped at 256 (haproxy: relative to the initial weight)."""
    w = initial * value // 100 if relative else value
    return min(w, MAX_WEIGHT)


def atoi(text: str) -> int:
    """A number read as C's atoi() reads it, as haproxy reads `show stat`'s numbers: leading
    blanks, a sign, the digits up to the first other character; 0 when there are none
    ("x" -> 0, "3x" -> 3, "-1" -> -1)."""
    t = text.lstrip(" \t\n\r\f\v")
    sign = -1 if t[:1] == "-" else 1
    if t[:1] in ("-", "+"):
        t = t[1:]
    n = len(t) - len(t.lstrip("0123456789"))
    return sign * int(t[:n]) if n else 0


def parse_show_stat(spec: Spec, words: tuple[str, ...], rest: tuple[str, ...]) -> Command | Answer:
    """`show stat [domain proxy] [{<iid>|<proxy>} <type> <sid>] [typed] [up|no-maint]`, read
    as haproxy 2.6 reads it (management.txt "show stat"; src/stats.c cli_parse_show_stat()).

    When three words follow (after `domain proxy`), they are `<iid> <type> <sid>`, whatever
    they are: `show stat typed up desc` looks for a proxy "typed". The numbers are read as
    atoi() reads them. Then `typed`, `up` and `no-maint` may come in any order; any other
    word (`desc`, `json`, `show stat x`) is ignored, as haproxy ignores the words it does
    not know there (splicer has no `json` form and no descriptions: the CSV is printed).

    Args:
        spec: the `show stat` table entry.
        words: the whole command.
        rest: the words after `show stat`.

    Returns:
        The Command (action "typed" or "", value its StatFilter), or Answer(INVALID_DOMAIN)
        for a `domain` other than `proxy` (haproxy 2.6's other one, `resolvers`, is a
        domain splicer does not have). Whether <iid> names a proxy is known only from the
        rows (stat_proxy_id()).
    """
    rest = tuple(rest)
    if rest[:1] == ("domain",):
        if rest[1:2] != ("proxy",):
            return Answer(INVALID_DOMAIN)
        rest = rest[2:]
    proxy, obj_type, sid = "", -1, -1
    if len(rest) >= 3 and all(rest[:3]):
        proxy, obj_type, sid = rest[0], atoi(rest[1]), atoi(rest[2])
        rest = rest[3:]
    flt = StatFilter(proxy, obj_type, sid, up="up" in rest, no_maint="no-maint" in rest)
    return Command(spec, words, action="typed" if "typed" in rest else "", value=flt)


def stat_proxy_id(word: str, ids: dict[str, int]) -> int | None:
    """The proxy id `show stat`'s <iid>|<proxy> word selects (haproxy cli_parse_show_stat():
    a proxy of that name first, else the word as a number, -1 for all).

    Args:
        word: StatFilter.proxy.
        ids: {proxy name: its id (the `iid` column)}.

    Returns:
        The id (-1: every proxy; one no proxy has selects nothing), or None when the word is
        no proxy's name and reads as 0: haproxy then answers NO_SUCH_PROXY.
    """
    if word in ids:
        return ids[word]
    return atoi(word) or None
