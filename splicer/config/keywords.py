"""Keyword registry: every configuration keyword splicer knows, where it may appear, how its
arguments are read.

Rule: a keyword exists for splicer if and only if it is registered in KEYWORDS (or in the
OPTIONS/TIMEOUTS sub-tables for ``option X`` and ``timeout X``); the sections it may be used in
and its argument syntax are decided here and nowhere else (haproxy keeps the same tables next to
the code that owns them: cfg_kws, srv_kws, cfg_opts). Nothing here looks at other statements:
cross-statement checks (inheritance, references, duplicates) belong to resolve.py.

Theory of operation: the parser finds the Keyword for (word, section kind) with lookup(), then
calls ``keyword.parse(ctx, args)``. A parse function reads the words after the keyword, records
typed values with ``ctx.set(key, value)`` and notes with ``ctx.warn(text)``, or raises ArgError
with the message that follows "file:line: ". Keys are the model's attribute names
(``maxconn``, ``splice_auto``, ``timeout.http_request``, ...); ``bind``, ``server``, ``acl``,
``use_backend`` and the ``http_request``/``http_response`` rules accumulate, every other key
is overwritten by a later statement.
"""
from __future__ import annotations

import dataclasses
import difflib
import ipaddress
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace

from splicer.config.model import (Balance, Bind, ForwardFor, HashType, LogTarget, PersistRule, Server, StatsSocket,
                                  SwitchingRule, UseServerRule)
from splicer.config.units import parse_seconds, parse_size, parse_time
from splicer.health.observe import MODES as OBSERVE_MODES, ON_ERROR
from splicer.http.acl import AclError, parse_acl, parse_condition
from splicer.http.persist import MODES as COOKIE_MODES, CookiePolicy
from splicer.http.rules import FRAMING_FIELDS, RuleError, parse_rule
from splicer.http.sample import SampleError, parse_name_format
from splicer.http.service import StatsAdmin
from splicer.http.userlist import UserlistError, parse_group, parse_user

SECTION_KINDS: tuple[str, ...] = ("global", "defaults", "frontend", "listen", "backend", "userlist", "ring")
"""Section keywords, in the column order of haproxy's keyword matrix (``userlist`` and
``ring`` last: haproxy 12.2, a section of users and groups, and 12.5, a log buffer and the
syslog server it forwards to; neither is a proxy)."""

GLOBAL = frozenset({"global"})
PROXIES = frozenset({"defaults", "frontend", "listen", "backend"})
FRONT = frozenset({"defaults", "frontend", "listen"})     # frontend capability (+ defaults)
BACK = frozenset({"defaults", "listen", "backend"})       # backend capability (+ defaults)
FRONT_ONLY = frozenset({"frontend", "listen"})
BACK_ONLY = frozenset({"listen", "backend"})
EVERYWHERE = GLOBAL | PROXIES
USERLIST = frozenset({"userlist"})
RING = frozenset({"ring"})

UNSUPPORTED_SECTIONS = frozenset({
    "peers", "resolvers", "mailers", "program", "http-errors", "cache",
    "fcgi-app", "log-forward", "crt-store", "traces", "acme",
})
"""haproxy section keywords splicer does not implement: the whole section is refused."""

MAX_INT = 2**31 - 1
"""Upper bound of every integer argument (haproxy stores them in C ints)."""

IGNORED = "is accepted for haproxy compatibility and ignored"
"""Wording of every accept-and-ignore warning."""

_DIGITS = re.compile(r"[0-9]+\Z")
_NAME = re.compile(r"[A-Za-z0-9_.:-]+\Z")   # haproxy's invalid_char(): alnum and "-_.:"
_HOSTNAME = re.compile(r"(?=.{1,253}\Z)[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?"
                       r"(?:\.[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?)*\.?\Z")


class ArgError(ValueError):
    """A statement's arguments are wrong. ``str()`` is the message after "file:line: "."""


@dataclass
class Context:
    """What a keyword parse function knows about the statement it reads, and what it produces.

    Attributes:
        kind: section kind: "global", "defaults", "frontend", "listen" or "backend".
        name: the section's name ("" for global and an unnamed defaults section).
        file: configuration file path, as given by the caller.
        line: 1-based line number of the statement.
        negated: the statement started with ``no`` (haproxy's KWM_NO).
        settings: (key, value) pairs recorded by ``set``, in order.
        warnings: texts recorded by ``warn`` (without the "file:line: " prefix).
    """

    kind: str
    name: str
    file: str
    line: int
    negated: bool = False
    settings: list[tuple[str, object]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def where(self) -> str:
        """The section as messages name it, e.g. ``backend 'web'`` or ``global section``."""
        return describe_section(self.kind, self.name)

    def set(self, key: str, value: object) -> None:
        """Record a setting; resolve.py applies it (later statements win, bind/server add up)."""
        self.settings.append((key, value))

    def warn(self, text: str) -> None:
        """Record a warning for Config.warnings."""
        self.warnings.append(text)


ParseFn = Callable[[Context, Sequence[str]], None]


@dataclass(frozen=True)
class Keyword:
    """One registered keyword.

    Attributes:
        name: as written in the file: ``"maxconn"``, ``"timeout client"``, ``"option redispatch"``.
        sections: the section kinds it may be used in (haproxy's "May be used in sections").
        parse: reads the words after the keyword (see the module docstring).
        doc: where docs/configuration.md describes it.
        negatable: ``no <keyword>`` is accepted.
    """

    name: str
    sections: frozenset[str]
    parse: ParseFn
    doc: str
    negatable: bool = False


# --------------------------------------------------------------------------------------------
# Helpers shared by parse functions and by the parser's messages.

def describe_section(kind: str, name: str) -> str:
    """Name a section the way error messages do.

    Args:
        kind: section kind.
        name: section name, "" when it has none.

    Returns:
        ``"global section"``, ``"defaults section"``, ``"defaults 'name'"`` or ``"backend 'web'"``.
    """
    if kind == "global" or (kind == "defaults" and not name):
        return f"{kind} section"
    return f"{kind} '{name}'"


def sections_text(sections: Iterable[str]) -> str:
    """List section kinds in haproxy's matrix order, e.g. ``"defaults, frontend, listen"``."""
    wanted = set(sections)
    return ", ".join(kind for kind in SECTION_KINDS if kind in wanted)


SECTION_CUTOFF = 0.8
"""Similarity needed before a mistyped word is taken for a section keyword (``backnd``): higher
than for keywords, so that a short typo (``bnd``) is not read as the start of a new section."""


def suggest(word: str, candidates: Iterable[str], cutoff: float = 0.6) -> str | None:
    """Closest candidate to a mistyped word, or None (difflib.get_close_matches).

    Args:
        word: what the file says, e.g. ``"blance"``.
        candidates: the words valid at that place.
        cutoff: the lowest difflib similarity ratio (0..1) accepted.

    Returns:
        e.g. ``"balance"``.
    """
    matches = difflib.get_close_matches(word, sorted(set(candidates)), n=1, cutoff=cutoff)
    return matches[0] if matches else None


def similarity(a: str, b: str) -> float:
    """difflib's similarity ratio of two words, 0..1 (the measure suggest() ranks by)."""
    return difflib.SequenceMatcher(None, a, b).ratio()


def did_you_mean(word: str, candidates: Iterable[str]) -> str:
    """``"; did you mean 'X'?"`` for the closest candidate, or ``""`` when none is close."""
    best = suggest(word, candidates)
    return f"; did you mean '{best}'?" if best else ""


def doc_ref(title: str) -> str:
    """Link to the docs/configuration.md heading ``title`` (GitHub anchor rules)."""
    anchor = re.sub(r"[^a-z0-9 _-]", "", title.lower()).replace(" ", "-")
    return f"docs/configuration.md#{anchor}"


def parse_int(text: str, what: str, lo: int = 0, hi: int = MAX_INT) -> int:
    """Read a plain decimal integer argument.

    Args:
        text: the word, e.g. ``"2000"``. Only ASCII digits: no sign, no hex, no unit.
        what: the keyword for messages, e.g. ``"maxconn"``.
        lo: smallest accepted value.
        hi: largest accepted value.

    Returns:
        The value.

    Raises:
        ArgError: ``'maxconn' expects an integer, got 'abc'`` or
            ``'weight' must be between 0 and 256, got 300``.
    """
    if not _DIGITS.match(text):
        raise ArgError(f"'{what}' expects an integer, got '{text}'")
    value = int(text)
    if not lo <= value <= hi:
        raise ArgError(f"'{what}' must be between {lo} and {hi}, got {value}")
    return value


def valid_name(name: str) -> bool:
    """haproxy's rule for proxy and server names: letters, digits, ``-``, ``_``, ``.``, ``:``."""
    return bool(_NAME.match(name))


def bad_name_char(name: str) -> str:
    """First character of ``name`` haproxy would refuse (``name`` must not be valid_name)."""
    return next((c for c in name if not _NAME.match(c)), "")


def _need(args: Sequence[str], count: int, message: str) -> None:
    if len(args) < count:
        raise ArgError(message)


def _no_extra(what: str, args: Sequence[str], count: int) -> None:
    if len(args) > count:
        raise ArgError(f"'{what}' cannot handle unexpected argument '{args[count]}'")


def _check_section(keyword: Keyword, ctx: Context) -> None:
    if ctx.kind not in keyword.sections:
        raise ArgError(f"'{keyword.name}' is not allowed in {ctx.where} "
                       f"(allowed in: {sections_text(keyword.sections)})")


# --------------------------------------------------------------------------------------------
# Addresses (bind and server lines).

def split_host_port(text: str, what: str) -> tuple[str, str]:
    """Split ``HOST:PORT``, ``[IPv6]:PORT`` or unbracketed ``IPv6:PORT`` (last colon).

    Args:
        text: one address, e.g. ``"10.0.0.1:80"``, ``"[::1]:8080"``, ``":80"``.
        what: the statement for messages, e.g. ``"bind"`` or ``"server 's1'"``.

    Returns:
        (host without brackets, port text).

    Raises:
        ArgError: no port, unmatched bracket, or a haproxy address form splicer does not
            support (``unix@``, ``fd@``, ``ipv4@``..., ``/path``).
    """
    if "@" in text or text.startswith("/"):
        raise ArgError(f"{what}: address '{text}' is not supported (splicer uses TCP "
                       "[ADDR]:PORT addresses only)")
    if text.startswith("["):
        close = text.find("]")
        if close < 0:
            raise ArgError(f"{what}: missing ']' in address '{text}'")
        host, rest = text[1:close], text[close + 1:]
        if not rest.startswith(":"):
            raise ArgError(f"{what}: address '{text}' has no port (expected [ADDR]:PORT)")
        return host, rest[1:]
    host, colon, port = text.rpartition(":")
    if not colon:
        raise ArgError(f"{what}: address '{text}' has no port (expected [ADDR]:PORT)")
    return host, port


def parse_port(text: str, what: str) -> int:
    """Read the TCP port of a ``bind`` or ``server`` address: decimal, 1..65535.

    Args:
        text: the part after the last colon, e.g. ``"8080"``.
        what: the statement for messages, e.g. ``"bind"`` or ``"server 's1'"``.

    Returns:
        The port number.

    Raises:
        ArgError: e.g. ``bind: port 70000 is out of range (1..65535)``; port ranges
            (haproxy's ``80-85``) and relative ports (``+1``) are not supported.
    """
    if text and (text[0] in "+-" or "-" in text):
        raise ArgError(f"{what}: port '{text}' is not supported (splicer needs one port "
                       "number, no ranges or offsets)")
    if not _DIGITS.match(text):
        raise ArgError(f"{what}: invalid port '{text}'" if text else f"{what}: missing port")
    port = int(text)
    if not 1 <= port <= 65535:
        raise ArgError(f"{what}: port {port} is out of range (1..65535)")
    return port


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def parse_bind_address(text: str, file: str = "", line: int = 0) -> Bind:
    """Read one listening address of a ``bind`` line.

    haproxy keyword: ``bind [<address>]:<port>``. The address may be empty or ``*`` (all
    addresses), an IPv4 address, an IPv6 address (``[::1]`` or, as haproxy allows, ``::1``
    followed by ``:port``), or ``localhost``. Other host names are refused because the
    configuration layer does no name resolution.

    Args:
        text: e.g. ``":80"``, ``"*:443"``, ``"127.0.0.1:8080"``, ``"[::]:80"``.
        file: stored in the Bind.
        line: stored in the Bind.

    Returns:
        A Bind whose host has no brackets.

    Raises:
        ArgError: missing or invalid port, or an address that is not one of the forms above.
    """
    host, port_text = split_host_port(text, "bind")
    port = parse_port(port_text, "bind")
    if host not in ("", "*", "localhost") and not _is_ip(host):
        raise ArgError(f"bind: invalid address '{host}' (expected an IP address, '*', "
                       "'localhost' or nothing)")
    return Bind(host=host, port=port, file=file, line=line)


# --------------------------------------------------------------------------------------------
# global section.

def _int_keyword(key: str, what: str, lo: int, hi: int = MAX_INT) -> ParseFn:
    """Parse function for ``<what> <integer>`` (global ``maxconn``, ``nbthread``, ``tune.*``;
    proxy ``maxconn``, ``retries``), storing the value under ``key``."""
    def parse(ctx: Context, args: Sequence[str]) -> None:
        _need(args, 1, f"'{what}' expects an integer argument")
        _no_extra(what, args, 1)
        ctx.set(key, parse_int(args[0], what, lo, hi))
    return parse


def _parse_pipesize(ctx: Context, args: Sequence[str]) -> None:
    """haproxy ``tune.pipesize <size>``: key ``pipesize``, bytes."""
    _need(args, 1, "'tune.pipesize' expects a size argument")
    _no_extra("tune.pipesize", args, 1)
    try:
        size = parse_size(args[0])
    except ValueError as exc:
        raise ArgError(f"'tune.pipesize': {exc}") from None
    if not 1 <= size <= MAX_INT:
        raise ArgError(f"'tune.pipesize' must be between 1 and {MAX_INT} bytes, got {size}")
    ctx.set("pipesize", size)


def _parse_hard_stop_after(ctx: Context, args: Sequence[str]) -> None:
    """haproxy ``hard-stop-after <time>``: key ``hard_stop_after``, float seconds (default
    unit ms); 0 means no bound, as when the keyword is absent."""
    _need(args, 1, "'hard-stop-after' expects a time value (default unit: ms)")
    _no_extra("hard-stop-after", args, 1)
    try:
        seconds = parse_time(args[0])
    except ValueError as exc:
        raise ArgError(f"'hard-stop-after': {exc}") from None
    ctx.set("hard_stop_after", seconds or None)


def _int_set(text: str, what: str) -> list[int]:
    """``N``, ``N-M`` or a comma list of them -> sorted distinct integers."""
    out: set[int] = set()
    for part in text.split(","):
        lo, sep, hi = part.partition("-")
        first = parse_int(lo, what, 0, 4095)
        last = parse_int(hi, what, 0, 4095) if sep else first
        if last < first:
            raise ArgError(f"'cpu-map': invalid range '{part}' in {what}")
        out.update(range(first, last + 1))
    return sorted(out)


def _parse_cpu_map(ctx: Context, args: Sequence[str]) -> None:
    """haproxy ``cpu-map [auto:][1/]<thread-set> <cpu-set>...``: key ``cpu_map``, a tuple of
    (worker number, CPUs). splicer runs one process per worker, so the thread set names
    workers; ``auto:`` gives each worker of the set one CPU of the CPU set, in order."""
    _need(args, 2, "'cpu-map' expects a thread set and a CPU set, e.g. 'cpu-map 1/1 0'")
    spec = args[0]
    auto = spec.startswith("auto:")
    if auto:
        spec = spec[5:]
    group, sep, threads = spec.partition("/")
    if sep:
        if group not in ("1", "all"):
            raise ArgError(f"'cpu-map': only thread group 1 exists in splicer, got '{group}'")
    else:
        threads = group
    if threads == "all":
        raise ArgError("'cpu-map': name the workers ('1/1-4'), 'all' is not supported")
    workers = _int_set(threads, "the thread set")
    if 0 in workers:
        raise ArgError("'cpu-map': workers are numbered from 1")
    cpus = sorted({c for word in args[1:] for c in _int_set(word, "the CPU set")})
    if auto:
        if len(cpus) < len(workers):
            raise ArgError(f"'cpu-map auto:': {len(workers)} workers but only {len(cpus)} CPUs")
        ctx.set("cpu_map", tuple((w, (c,)) for w, c in zip(workers, cpus)))
    else:
        ctx.set("cpu_map", tuple((w, tuple(cpus)) for w in workers))


def _ignored(name: str, min_args: int = 0, max_args: int | None = None,
             usage: str = "") -> ParseFn:
    """Parse function for a keyword accepted for compatibility and ignored with a warning."""
    def parse(ctx: Context, args: Sequence[str]) -> None:
        if not ctx.negated:
            _need(args, min_args, f"'{name}' expects {usage}")
        if max_args is not None:
            _no_extra(name, args, max_args)
        shown = f"no {name}" if ctx.negated else name
        ctx.warn(f"'{shown}' {IGNORED}")
    return parse


STATS_LEVELS = ("user", "operator", "admin")
STATS_GLOBAL_IGNORED = frozenset({"timeout", "maxconn", "bind-process"})
"""`stats` sub-keywords of global splicer accepts and ignores (haproxy's CLI tunings)."""


def _parse_stats_global(ctx: Context, args: Sequence[str]) -> None:
    """haproxy ``stats socket <path> [mode <octal>] [level user|operator|admin]
    [expose-fd listeners]`` (global; several lines give several sockets): key
    ``stats_sockets``, one StatsSocket per line. ``stats timeout|maxconn|bind-process`` are
    accepted and ignored with a warning."""
    _need(args, 1, "'stats' expects 'socket' and a path, e.g. 'stats socket /run/splicer.sock'")
    sub = args[0]
    if sub in STATS_GLOBAL_IGNORED:
        ctx.warn(f"'stats {sub}' {IGNORED}")
        return
    if sub != "socket":
        raise ArgError(f"unknown keyword 'stats {sub}' in {ctx.where}; supported: 'stats socket'"
                       + did_you_mean(sub, ["socket", *sorted(STATS_GLOBAL_IGNORED)]))
    _need(args, 2, "'stats socket' expects a path")
    path = args[1]
    if path.startswith(("ipv4@", "ipv6@")) or ":" in path and not path.startswith(("/", "unix@")):
        raise ArgError(f"'stats socket': only unix sockets are supported, got '{path}'")
    if path.startswith("unix@"):
        path = path[len("unix@"):]
    mode, level, expose = None, "admin", False
    rest = list(args[2:])
    while rest:
        word = rest.pop(0)
        if word in ("mode", "level", "expose-fd"):
            if not rest:
                raise ArgError(f"'stats socket': '{word}' expects a value")
            value = rest.pop(0)
            if word == "mode":
                if not re.fullmatch(r"[0-7]{1,4}", value):
                    raise ArgError(f"'stats socket': 'mode' expects octal permissions such as 600, got '{value}'")
                mode = int(value, 8)
            elif word == "level":
                if value not in STATS_LEVELS:
                    raise ArgError(f"'stats socket': 'level' expects 'user', 'operator' or 'admin', got '{value}'")
                level = value
            else:
                if value != "listeners":
                    raise ArgError(f"'stats socket': 'expose-fd' expects 'listeners', got '{value}'")
                expose = True
        else:
            raise ArgError(f"'stats socket': unknown option '{word}'"
                           + did_you_mean(word, ["mode", "level", "expose-fd"]))
    ctx.set("stats_sockets", StatsSocket(path, mode, level, expose, ctx.file, ctx.line))


def _parse_server_state_file(ctx: Context, args: Sequence[str]) -> None:
    """haproxy ``server-state-file <file>`` (global): key ``server_state_file``."""
    _need(args, 1, "'server-state-file' expects a file name")
    _no_extra("server-state-file", args, 1)
    ctx.set("server_state_file", args[0])


def _parse_server_state_base(ctx: Context, args: Sequence[str]) -> None:
    """haproxy ``server-state-base <directory>`` (global): key ``server_state_base``."""
    _need(args, 1, "'server-state-base' expects a directory")
    _no_extra("server-state-base", args, 1)
    ctx.set("server_state_base", args[0])


LOAD_SERVER_STATE = ("global", "local", "none")


def _parse_load_server_state(ctx: Context, args: Sequence[str]) -> None:
    """haproxy ``load-server-state-from-file { global | local | none }``: key
    ``load_server_state``."""
    _need(args, 1, "'load-server-state-from-file' expects 'global', 'local' or 'none'")
    _no_extra("load-server-state-from-file", args, 1)
    if args[0] not in LOAD_SERVER_STATE:
        raise ArgError(f"'load-server-state-from-file' expects 'global', 'local' or 'none', got '{args[0]}'"
                       + did_you_mean(args[0], LOAD_SERVER_STATE))
    ctx.set("load_server_state", args[0])


def _parse_server_state_file_name(ctx: Context, args: Sequence[str]) -> None:
    """haproxy ``server-state-file-name [ { use-backend-name | <file> } ]``: key
    ``server_state_file_name`` ("" for the backend's name)."""
    _no_extra("server-state-file-name", args, 1)
    name = args[0] if args else "use-backend-name"
    ctx.set("server_state_file_name", "" if name == "use-backend-name" else name)


# --------------------------------------------------------------------------------------------
# Logging (haproxy configuration.txt 4.2 "log", "log-format", "capture"; section 8).

LOG_UNSUPPORTED = ("backend@", "ipv4@", "ipv6@")


def _log_target(text: str) -> LogTarget:
    """The target word of a `log` line (see LogTarget.kind)."""
    what = f"log '{text}'"
    address = text
    if text in ("stdout", "stderr"):
        return LogTarget("fd", text, fd=1 if text == "stdout" else 2)
    if text.startswith("fd@"):
        return LogTarget("fd", text, fd=parse_int(text[3:], f"{what}: the descriptor", 0))
    if text.startswith("file@"):
        if not text[5:]:
            raise ArgError(f"{what}: 'file@' expects a file path")
        return LogTarget("file", text, path=text[5:])
    if text.startswith(("tcp@", "tcp4@", "tcp6@")):
        family, rest = text.split("@", 1)
        host, port_text = split_host_port(rest, what)
        if not host or not port_text:
            raise ArgError(f"{what}: '{family}@' expects <host>:<port>")
        return LogTarget("tcp", address, host=host, port=parse_port(port_text, what),
                         family="" if family == "tcp" else family)
    if text.startswith("uxst@"):
        if not text[5:].startswith("/"):
            raise ArgError(f"{what}: 'uxst@' expects an absolute path")
        return LogTarget("uxst", address, path=text[5:])
    if text.startswith("ring@"):
        if not valid_name(text[5:]):
            raise ArgError(f"{what}: 'ring@' expects the name of a ring section")
        return LogTarget("ring", address, ring=text[5:])
    if text.startswith("unix@"):
        text = text[5:]
    if text.startswith("/"):
        return LogTarget("unix", address, path=text)
    if text.startswith(LOG_UNSUPPORTED):
        raise ArgError(f"{what}: target '{text.split('@')[0]}@' is not supported (splicer logs to stdout, "
                       "stderr, fd@<n>, file@<path>, a unix datagram socket path, [udp@]<host>[:<port>], "
                       "tcp@<host>:<port>, uxst@<path> or ring@<name>)")
    if text.startswith(("udp@", "udp4@", "udp6@")):
        text = text.split("@", 1)[1]
    if "@" in text:
        raise ArgError(f"{what}: unknown target prefix '{text.split('@')[0]}@'")
    if text.startswith("[") or text.count(":") == 1:
        host, port_text = split_host_port(text, what)
        port = parse_port(port_text, what)
    elif text.count(":") > 1:  # an unbracketed IPv6 address: the port is required after it
        host, port_text = split_host_port(text, what)
        port = parse_port(port_text, what)
    else:
        host, port = text, 514
    if not host:
        raise ArgError(f"{what}: missing address")
    return LogTarget("udp", address, host=host, port=port)


def _parse_log(ctx: Context, args: Sequence[str]) -> None:
    """haproxy ``log <target> [len <n>] [format <f>] <facility> [<level> [<minlevel>]]``,
    ``log global`` (proxies) and ``no log``: key ``log``, one value per line, in order
    (resolve.py puts a section's list together)."""
    from splicer.log.syslog import FACILITIES, FORMATS, LEVELS

    if ctx.negated:
        _no_extra("no log", args, 0)
        ctx.set("log", "no")
        return
    _need(args, 1, "'log' expects a target ('global' or an address) and a facility")
    if args[0] == "global":
        if ctx.kind == "global":
            raise ArgError("'log global' is only valid in a proxy section")
        _no_extra("log global", args, 1)
        ctx.set("log", "global")
        return
    target = _log_target(args[0])
    rest = list(args[1:])
    opts: dict[str, object] = {}
    while rest and rest[0] in ("len", "format", "sample", "profile"):
        word = rest.pop(0)
        if not rest:
            raise ArgError(f"'log': '{word}' expects a value")
        value = rest.pop(0)
        if word == "len":
            opts["maxlen"] = parse_int(value, "log len", 80, 65535)
            opts["explicit_len"] = True
        elif word == "format":
            if value not in FORMATS:
                raise ArgError(f"'log': unknown format '{value}' (supported: {', '.join(FORMATS)})"
                               + did_you_mean(value, FORMATS))
            opts["format"] = value
        else:
            raise ArgError(f"'log': '{word}' is not supported")
    if not rest:
        raise ArgError(f"'log {args[0]}' expects a facility ({', '.join(FACILITIES)})")
    if rest[0] not in FACILITIES:
        raise ArgError(f"'log': unknown facility '{rest[0]}'" + did_you_mean(rest[0], FACILITIES))
    opts["facility"] = FACILITIES.index(rest[0])
    for key, word in zip(("level", "minlevel"), rest[1:3]):
        if word not in LEVELS:
            raise ArgError(f"'log': unknown level '{word}' (known: {', '.join(LEVELS)})" + did_you_mean(word, LEVELS))
        opts[key] = LEVELS.index(word)
    if len(rest) > 3:
        raise ArgError(f"'log': unexpected '{rest[3]}' after the facility and levels")
    ctx.set("log", replace(target, file=ctx.file, line=ctx.line, **opts))


def _parse_log_format(ctx: Context, args: Sequence[str]) -> None:
    """haproxy ``log-format <fmt>``: key ``log_format`` = ("custom", fmt), checked here
    (splicer/log/format.py compiles it)."""
    from splicer.http.logformat import RuleError
    from splicer.log.format import LogFormat

    _need(args, 1, "'log-format' expects a format string")
    if len(args) > 1:
        raise ArgError("'log-format' expects only one argument (quote the format, or escape its spaces)")
    try:
        LogFormat(args[0], (1, 1))
    except RuleError as exc:
        raise ArgError(f"'log-format': {exc}") from None
    ctx.set("log_format", ("custom", args[0]))


def _log_option(name: str) -> ParseFn:
    """``option httplog`` / ``option tcplog``: key ``log_format`` = (name, its format)."""
    def parse(ctx: Context, args: Sequence[str]) -> None:
        from splicer.log.format import HTTPLOG, TCPLOG

        if args and args[0] == "clf":
            raise ArgError(f"'option {name} clf' is not supported")
        _no_extra(f"option {name}", args, 0)
        ctx.set("log_format", (name, HTTPLOG if name == "httplog" else TCPLOG))
    return parse


def _parse_capture(ctx: Context, args: Sequence[str]) -> None:
    """haproxy ``capture request header <name> len <n>`` and ``capture response header
    <name> len <n>``: keys ``capture_request`` / ``capture_response``, one (name, n) per
    line, in order."""
    if args and args[0] == "cookie":
        raise ArgError("'capture cookie' is not supported")
    if len(args) < 2 or args[0] not in ("request", "response") or args[1] != "header":
        raise ArgError("'capture' expects 'request header <name> len <length>' or "
                       "'response header <name> len <length>'")
    if len(args) != 5 or args[3] != "len":
        raise ArgError(f"'capture {args[0]} header' expects '<name> len <length>'")
    name = args[2]
    if not name.isascii() or not name or any(c in name for c in " \t:"):
        raise ArgError(f"'capture {args[0]} header': invalid field name '{name}'")
    ctx.set("capture_" + args[0], (name.lower(), parse_int(args[4], f"capture {args[0]} header len", 1, 65535)))


# --------------------------------------------------------------------------------------------
# Proxy sections.

SUPPORTED_MODES = ("http", "tcp")
HAPROXY_MODES = frozenset({"health", "log", "spop"})


def _parse_mode(ctx: Context, args: Sequence[str]) -> None:
    """haproxy ``mode { http | tcp }``: key ``mode``."""
    _need(args, 1, "'mode' expects 'http' or 'tcp'")
    _no_extra("mode", args, 1)
    mode = args[0]
    if mode in SUPPORTED_MODES:
        ctx.set("mode", mode)
    elif mode in HAPROXY_MODES:
        raise ArgError(f"mode '{mode}' is not supported (supported: http, tcp)")
    else:
        raise ArgError(f"unknown mode '{mode}'"
                       + (did_you_mean(mode, SUPPORTED_MODES) or " (supported: http, tcp)"))


def _parse_bind(ctx: Context, args: Sequence[str]) -> None:
    """haproxy ``bind [<addr>]:<port>[,...]`` without bind options: key ``bind``, tuple of Bind."""
    _need(args, 1, "'bind' expects [ADDR]:PORT[,[ADDR]:PORT...]")
    binds = []
    for part in args[0].split(","):
        if not part:
            raise ArgError(f"bind: empty address in '{args[0]}'")
        binds.append(parse_bind_address(part, ctx.file, ctx.line))
    if len(args) > 1:
        raise ArgError(f"unknown bind option '{args[1]}' (splicer's 'bind' takes only "
                       "[ADDR]:PORT[,[ADDR]:PORT...])")
    ctx.set("bind", tuple(binds))


def _parse_default_backend(ctx: Context, args: Sequence[str]) -> None:
    """haproxy ``default_backend <backend>``: key ``default_backend``."""
    _need(args, 1, "'default_backend' expects a backend name")
    _no_extra("default_backend", args, 1)
    ctx.set("default_backend", args[0])


SUPPORTED_BALANCE = ("roundrobin", "static-rr", "leastconn", "first", "source", "uri",
                     "url_param", "hdr(<name>)", "random")
"""The `balance` algorithms splicer implements (splicer/balance/), as haproxy spells them."""
HAPROXY_BALANCE = frozenset({"rdp-cookie", "hash", "log-hash", "sticky"})
"""haproxy algorithms splicer refuses as "not supported" rather than "unknown"."""
_BALANCE_NAMES = ("roundrobin", "static-rr", "leastconn", "first", "source", "uri", "url_param",
                  "hdr", "random")
_SUPPORTED_BALANCE_TEXT = "supported: " + ", ".join(SUPPORTED_BALANCE)
_RANDOM = re.compile(r"random(?:\((.*)\))?\Z")
_FIELD_NAME = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+\Z")  # a token (RFC 9110 section 5.1)


def _parse_acl(ctx: Context, args: Sequence[str]) -> None:
    """haproxy ``acl <name> <criterion> [flags] [operator] [<value>] ...``: key ``acl``, a
    (name, http.acl.AclExpr) pair; the lines of a section add up (same-name lines OR
    together, resolve.py). ``-f`` files are read now, relative to the configuration file."""
    import os

    try:
        ctx.set("acl", parse_acl(list(args), os.path.dirname(ctx.file), ctx.file, ctx.line))
    except AclError as exc:
        raise ArgError(str(exc)) from None


def _parse_use_backend(ctx: Context, args: Sequence[str]) -> None:
    """haproxy ``use_backend <backend> [{if | unless} <condition>]``: key ``use_backend``, a
    SwitchingRule whose condition is bound to the section's ACLs by resolve.py, which also
    checks that a literal backend exists. A name holding ``%[...]`` is dynamic: it is
    rendered per request (fetches with the ``lower``/``upper`` converters)."""
    import os

    _need(args, 1, "'use_backend' expects a backend name: use_backend <backend> [if|unless <condition>]")
    name = args[0]
    dynamic = None
    if "%" in name:
        try:
            dynamic = parse_name_format(name, os.path.dirname(ctx.file))
        except SampleError as exc:
            raise ArgError(f"'use_backend {name}': {exc}") from None
    if name in ("if", "unless"):
        raise ArgError("'use_backend' expects a backend name before the condition")
    cond = None
    if len(args) > 1:
        if args[1] not in ("if", "unless"):
            raise ArgError(f"'use_backend {name}': expected 'if' or 'unless', got '{args[1]}'")
        try:
            cond = parse_condition(list(args[1:]), os.path.dirname(ctx.file), ctx.file, ctx.line)
        except AclError as exc:
            raise ArgError(f"'use_backend {name}': {exc}") from None
    ctx.set("use_backend", SwitchingRule(name, cond, ctx.file, ctx.line, dynamic))


def _parse_balance(ctx: Context, args: Sequence[str]) -> None:
    """haproxy ``balance <algorithm> [<arguments>]``: keys ``balance`` (the algorithm's name)
    and ``balance_args`` (a Balance). Algorithms and arguments as haproxy's
    configuration.txt "balance" (src/backend.c backend_parse_balance()): ``roundrobin``,
    ``static-rr``, ``leastconn``, ``first``, ``source``, ``uri [len N] [depth N] [whole]
    [path-only]``, ``url_param <name>``, ``hdr(<name>) [use_domain_only]``,
    ``random[(<draws>)]``."""
    _need(args, 1, f"'balance' expects an algorithm ({_SUPPORTED_BALANCE_TEXT})")
    algo = args[0]
    rest = args[1:]
    if algo in ("roundrobin", "static-rr", "leastconn", "first", "source"):
        _no_extra(f"balance {algo}", args, 1)
        value = Balance(algo)
    elif _RANDOM.match(algo):
        draws = _RANDOM.match(algo).group(1)
        if draws is None or draws == "":
            n = 2
        elif not _DIGITS.match(draws):
            raise ArgError(f"'balance random': the number of draws must be an integer, got '{draws}'")
        else:
            n = int(draws)
            if n < 1:
                raise ArgError(f"'balance random': the number of draws must be at least 1, got {n}")
            if n > MAX_INT:
                raise ArgError(f"'balance random': the number of draws must be at most {MAX_INT}, got {n}")
        _no_extra(f"balance {algo}", args, 1)
        algo, value = "random", Balance("random", draws=n)
    elif algo.startswith("random("):
        raise ArgError(f"'balance {algo}': missing closing parenthesis")
    elif algo == "uri":
        value = _balance_uri(rest)
    elif algo == "url_param":
        _need(rest, 1, "'balance url_param' expects a URL parameter name")
        if len(rest) > 1:
            if rest[1] == "check_post":
                raise ArgError("'balance url_param': 'check_post' (a parameter in the request "
                               "body) is not supported")
            raise ArgError(f"'balance url_param' only accepts the 'check_post' modifier "
                           f"(got '{rest[1]}')")
        value = Balance("url_param", param=rest[0])
    elif algo.startswith("hdr(") or algo == "hdr":
        end = algo.find(")")
        name = algo[4:end] if end > 4 else ""
        if not name or end != len(algo) - 1 or "(" in name:
            raise ArgError("'balance hdr(<name>)' expects a header field name, e.g. 'hdr(host)'")
        if not _FIELD_NAME.match(name):
            raise ArgError(f"'balance hdr()': invalid header field name '{name}'")
        domain = False
        if rest:
            if rest[0] != "use_domain_only":
                raise ArgError(f"'balance {algo}' only accepts the 'use_domain_only' modifier "
                               f"(got '{rest[0]}')")
            _no_extra(f"balance {algo} use_domain_only", rest, 1)
            domain = True
        algo, value = "hdr", Balance("hdr", param=name, use_domain_only=domain)
    elif algo.split("(", 1)[0] in HAPROXY_BALANCE:
        raise ArgError(f"balance algorithm '{algo}' is not supported ({_SUPPORTED_BALANCE_TEXT})")
    else:
        raise ArgError(f"unknown balance algorithm '{algo}'"
                       + (did_you_mean(algo, _BALANCE_NAMES) or f" ({_SUPPORTED_BALANCE_TEXT})"))
    ctx.set("balance", algo)
    ctx.set("balance_args", value)


def _balance_uri(args: Sequence[str]) -> Balance:
    """The arguments of ``balance uri``: ``len N``, ``depth N`` (positive integers),
    ``whole``, ``path-only``, in any order."""
    length = depth = 0
    whole = path_only = False
    i = 0
    while i < len(args):
        arg = args[i]
        if arg in ("len", "depth"):
            if i + 1 >= len(args):
                raise ArgError(f"'balance uri': '{arg}' expects a positive integer")
            n = parse_int(args[i + 1], f"balance uri {arg}", 1)
            if arg == "len":
                length = n
            else:
                depth = n
            i += 2
        elif arg == "whole":
            whole = True
            i += 1
        elif arg == "path-only":
            path_only = True
            i += 1
        else:
            raise ArgError(f"'balance uri' only accepts 'len', 'depth', 'path-only' and 'whole' "
                           f"(got '{arg}')" + did_you_mean(arg, ("len", "depth", "path-only", "whole")))
    return Balance("uri", uri_len=length, uri_depth=depth, uri_whole=whole, uri_path_only=path_only)


HASH_METHODS = ("map-based", "consistent")
HASH_FUNCTIONS = ("sdbm", "djb2", "wt6", "crc32")


def _parse_hash_type(ctx: Context, args: Sequence[str]) -> None:
    """haproxy ``hash-type <method> [<function> [avalanche]]``: key ``hash_type``, a
    HashType. The function defaults to sdbm; ``consistent`` without a function means
    ``consistent sdbm avalanche``, as in haproxy (src/cfgparse-listen.c)."""
    _need(args, 1, "'hash-type' expects 'map-based' or 'consistent'")
    method = args[0]
    if method not in HASH_METHODS:
        raise ArgError(f"'hash-type' only supports 'consistent' and 'map-based' (got '{method}')"
                       + did_you_mean(method, HASH_METHODS))
    if len(args) == 1:
        ctx.set("hash_type", HashType(method, "sdbm", method == "consistent"))
        return
    function = args[1]
    if function == "none":
        raise ArgError("'hash-type': function 'none' (the key used as a number) is not supported")
    if function not in HASH_FUNCTIONS:
        raise ArgError(f"'hash-type' only supports the hash functions 'sdbm', 'djb2', 'wt6' and "
                       f"'crc32' (got '{function}')" + did_you_mean(function, HASH_FUNCTIONS))
    avalanche = False
    if len(args) > 2:
        if args[2] != "avalanche":
            raise ArgError(f"'hash-type' only supports 'avalanche' as a modifier (got '{args[2]}')")
        avalanche = True
    _no_extra("hash-type", args, 3)
    ctx.set("hash_type", HashType(method, function, avalanche))


def _parse_hash_balance_factor(ctx: Context, args: Sequence[str]) -> None:
    """haproxy ``hash-balance-factor <factor>``: key ``hash_balance_factor``, 0 (no bound)
    or an integer above 100 (a percentage of the mean load)."""
    _need(args, 1, "'hash-balance-factor' expects an integer argument")
    _no_extra("hash-balance-factor", args, 1)
    factor = parse_int(args[0], "hash-balance-factor")
    if 0 < factor <= 100:
        raise ArgError(f"'hash-balance-factor' must be 0 or greater than 100, got {factor}")
    ctx.set("hash_balance_factor", factor)


SERVER_OPTIONS = ("weight", "maxconn", "maxqueue", "disabled", "enabled", "check", "no-check",
                  "inter", "fastinter", "downinter", "rise", "fall", "backup", "no-backup", "slowstart",
                  "cookie", "pool-max-conn", "observe", "error-limit", "on-error", "on-marked-down",
                  "on-marked-up")
"""Server options splicer reads (on `server` and `default-server` lines)."""

HAPROXY_SERVER_OPTIONS = frozenset({
    "addr", "agent-check", "agent-inter", "agent-port", "alpn", "ca-file",
    "crt", "id", "init-addr",
    "minconn", "non-stick", "pool-purge-delay", "port", "proto", "redir", "resolvers",
    "resolve-prefer", "send-proxy", "send-proxy-v2", "sni", "source", "ssl",
    "track", "verify", "check-ssl", "check-sni", "tfo", "ws", "hash-key",
})
"""haproxy server options that splicer refuses as "not supported" rather than "unknown"."""

_SERVER_FLAGS = {"disabled": ("disabled", True), "enabled": ("disabled", False),
                 "check": ("check", True), "no-check": ("check", False),
                 "backup": ("backup", True), "no-backup": ("backup", False)}
"""Flag options: option -> (Server field, value); the ``no-``/``enabled`` forms undo a
`default-server` setting, as in haproxy."""


_SERVER_CHOICES = {
    "observe": ("observe", ("none", *OBSERVE_MODES), "one of 'none', 'layer4', 'layer7'"),
    "on-error": ("on_error", ON_ERROR, "one of 'fastinter', 'fail-check', 'sudden-death' or 'mark-down'"),
    "on-marked-down": ("on_marked_down", ("shutdown-sessions",), "'shutdown-sessions'"),
    "on-marked-up": ("on_marked_up", ("shutdown-backup-sessions",), "'shutdown-backup-sessions'"),
}
"""Options taking one word of a fixed list: option -> (Server field, the words, what the
message says is expected); haproxy src/server.c srv_parse_observe() and its neighbours
(`observe none` turns observing off: the field is "")."""


def _server_options(what: str, args: Sequence[str]) -> dict[str, object]:
    """Read the options of a `server` or `default-server` line.

    Args:
        what: the line for messages, e.g. ``server 's1'`` or ``default-server``.
        args: the words after the address (server) or after the keyword (default-server).

    Returns:
        Server field -> value, for the options the line names (the last one wins).

    Raises:
        ArgError: e.g. ``server 's1': 'weight' must be between 0 and 256, got 300``.
    """
    out: dict[str, object] = {}
    i = 0
    while i < len(args):
        opt = args[i]
        if opt in ("weight", "maxconn", "maxqueue", "inter", "fastinter", "downinter", "rise", "fall",
                   "slowstart", "error-limit"):
            if i + 1 >= len(args):
                raise ArgError(f"{what}: '{opt}' expects a value")
            value = args[i + 1]
            if opt == "weight":
                out["weight"] = _server_int(what, opt, value, 0, 256)
            elif opt in ("maxconn", "maxqueue"):
                out[opt] = _server_int(what, opt, value, 0, MAX_INT)
            elif opt in ("inter", "fastinter", "downinter", "slowstart"):
                try:
                    seconds = parse_time(value)
                    if opt != "slowstart" and seconds == 0:
                        raise ValueError("the interval must be greater than zero")
                except ValueError as exc:
                    raise ArgError(f"{what}: '{opt}': {exc}") from None
                out[opt] = seconds
            else:
                out[opt.replace("-", "_")] = _server_int(what, opt, value, 1, MAX_INT)
            i += 2
        elif opt in _SERVER_CHOICES:
            field_name, choices, expected = _SERVER_CHOICES[opt]
            if i + 1 >= len(args):
                raise ArgError(f"{what}: '{opt}' expects a value")
            value = args[i + 1]
            if value not in choices:
                raise ArgError(f"{what}: '{opt}' expects {expected} but got '{value}'")
            out[field_name] = "" if value == "none" else value
            i += 2
        elif opt in ("cookie", "pool-max-conn"):
            if i + 1 >= len(args):
                raise ArgError(f"{what}: '{opt}' expects a value")
            value = args[i + 1]
            if opt == "cookie":
                if not value or any(c in value for c in ";, \t=\"\\") or not value.isprintable():
                    # RFC 6265 section 4.1.1 cookie-octet: no CTL, whitespace, DQUOTE, comma,
                    # semicolon or backslash ('=' is refused too: it would read as a name)
                    raise ArgError(f"{what}: 'cookie' value '{value}' is not a valid cookie value "
                                   "(RFC 6265: no space, comma, semicolon, quote, backslash or '=')")
                out["cookie"] = value
            else:
                if value == "-1":
                    out["pool_max_conn"] = -1
                else:
                    out["pool_max_conn"] = _server_int(what, opt, value, 0, MAX_INT)
            i += 2
        elif opt in _SERVER_FLAGS:
            field_name, flag = _SERVER_FLAGS[opt]
            out[field_name] = flag
            i += 1
        elif opt in HAPROXY_SERVER_OPTIONS:
            raise ArgError(f"{what}: option '{opt}' is not supported")
        else:
            raise ArgError(f"{what}: unknown option '{opt}'" + did_you_mean(opt, SERVER_OPTIONS))
    return out


def _parse_server(ctx: Context, args: Sequence[str]) -> None:
    """haproxy ``server <name> <addr>:<port> [options]``: key ``server``, a Server whose
    ``explicit`` names the options the line sets (resolve.py fills the others from the
    `default-server` lines above it). Options: SERVER_OPTIONS."""
    _need(args, 2, "'server' expects <name> <addr>:<port> [options]")
    name, address = args[0], args[1]
    if not valid_name(name):
        raise ArgError(f"character '{bad_name_char(name)}' is not permitted in server name "
                       f"'{name}'")
    what = f"server '{name}'"
    host, port_text = split_host_port(address, what)
    port = parse_port(port_text, what)
    if host in ("", "*"):
        raise ArgError(f"{what}: address '{address}' has no host")
    if not _is_ip(host) and not _HOSTNAME.match(host):
        raise ArgError(f"{what}: invalid host '{host}'")
    options = _server_options(what, args[2:])
    ctx.set("server", Server(name=name, host=host, port=port, file=ctx.file, line=ctx.line,
                             explicit=frozenset(options), **options))  # type: ignore[arg-type]


def _parse_default_server(ctx: Context, args: Sequence[str]) -> None:
    """haproxy ``default-server [options]``: key ``default_server``, the (field, value)
    pairs it sets; they apply to the `server` lines that follow, in this section and in the
    sections that inherit this `defaults` section (resolve.py). Options: SERVER_OPTIONS."""
    _need(args, 1, "'default-server' expects at least one server option")
    ctx.set("default_server", tuple(_server_options("default-server", args).items()))


def _server_int(what: str, opt: str, value: str, lo: int, hi: int) -> int:
    try:
        return parse_int(value, opt, lo, hi)
    except ArgError as exc:
        raise ArgError(f"{what}: {exc}") from None


# persistence and reuse: cookie, use-server, force-persist, ignore-persist, http-reuse  -----

_COOKIE_FLAGS = ("indirect", "nocache", "postonly", "preserve", "httponly", "secure")
_COOKIE_UNSUPPORTED = ("dynamic",)
_COOKIE_TIMES = ("maxidle", "maxlife")


def _parse_cookie(ctx: Context, args: Sequence[str]) -> None:
    """haproxy ``cookie <name> [rewrite | insert | prefix] [indirect] [nocache] [postonly]
    [preserve] [httponly] [secure] [domain <domain>]* [maxidle <idle>] [maxlife <life>]``: key
    ``cookie``, an http.persist.CookiePolicy. haproxy's own checks: the three modes exclude
    each other, ``indirect`` does not go with ``rewrite``, ``preserve`` needs ``insert`` or
    ``indirect``; ``maxidle`` / ``maxlife`` take a time in seconds by default (units.
    parse_seconds). ``dynamic`` and ``attr`` are refused (not supported)."""
    _need(args, 1, "'cookie' expects <name> [rewrite|insert|prefix] [options]")
    name = args[0]
    if not name or not _FIELD_NAME.match(name):
        raise ArgError(f"'cookie': invalid cookie name '{name}' (RFC 6265: a token)")
    mode = ""
    flags: dict[str, bool] = {}
    domains: list[str] = []
    times: dict[str, int] = {}
    i = 1
    while i < len(args):
        word = args[i]
        if word in COOKIE_MODES:
            if mode and mode != word:
                raise ArgError(f"'cookie {name}': '{mode}' and '{word}' modes are mutually exclusive")
            mode = word
        elif word in _COOKIE_FLAGS:
            flags[word] = True
        elif word == "domain":
            if i + 1 >= len(args):
                raise ArgError(f"'cookie {name}': 'domain' expects <domain> as argument")
            domain = args[i + 1]
            if not _HOSTNAME.match(domain.lstrip(".")):
                raise ArgError(f"'cookie {name}': invalid domain '{domain}'")
            domains.append(domain)
            i += 1
        elif word in _COOKIE_TIMES:
            if i + 1 >= len(args):
                raise ArgError(f"'cookie {name}': '{word}' expects <{word[3:]}time> in seconds as argument")
            try:
                times[word] = parse_seconds(args[i + 1])
            except ValueError as exc:
                raise ArgError(f"'cookie {name}': '{word}': {exc}") from None
            i += 1
        elif word in _COOKIE_UNSUPPORTED or word == "attr":
            raise ArgError(f"'cookie {name}': '{word}' is not supported")
        else:
            raise ArgError(f"'cookie {name}': unknown option '{word}'"
                           + did_you_mean(word, (*COOKIE_MODES, *_COOKIE_FLAGS, "domain", *_COOKIE_TIMES)))
        i += 1
    if mode == "rewrite" and flags.get("indirect"):
        raise ArgError(f"'cookie {name}': 'rewrite' and 'indirect' modes are mutually exclusive")
    if flags.get("preserve") and not (mode == "insert" or flags.get("indirect")):
        raise ArgError(f"'cookie {name}': 'preserve' requires at least 'insert' or 'indirect'")
    ctx.set("cookie", CookiePolicy(name, mode or "rewrite", domains=tuple(domains), **flags, **times))


def _condition(what: str, ctx: Context, args: Sequence[str]):
    """The ``{if | unless} <condition>`` that must follow `what` (haproxy requires one)."""
    import os

    if not args or args[0] not in ("if", "unless"):
        raise ArgError(f"'{what}' requires either 'if' or 'unless' followed by a condition")
    try:
        return parse_condition(list(args), os.path.dirname(ctx.file), ctx.file, ctx.line)
    except AclError as exc:
        raise ArgError(f"'{what}': {exc}") from None


def _parse_use_server(ctx: Context, args: Sequence[str]) -> None:
    """haproxy ``use-server <server> {if | unless} <condition>``: key ``use_server``, a
    UseServerRule; resolve.py checks that the server exists in this backend."""
    _need(args, 1, "'use-server' expects <server> {if | unless} <condition>")
    name = args[0]
    if name in ("if", "unless"):
        raise ArgError("'use-server' expects a server name before the condition")
    cond = _condition(f"use-server {name}", ctx, args[1:])
    ctx.set("use_server", UseServerRule(name, cond, ctx.file, ctx.line))


def _persist_rule(kind: str) -> ParseFn:
    """Parse function for haproxy ``force-persist`` / ``ignore-persist {if | unless}
    <condition>``: key ``force_persist`` / ``ignore_persist``, a PersistRule."""
    def parse(ctx: Context, args: Sequence[str]) -> None:
        ctx.set(kind.replace("-", "_"), PersistRule(kind, _condition(kind, ctx, args), ctx.file, ctx.line))
    return parse


HTTP_REUSE = ("never", "safe", "aggressive", "always")
"""haproxy `http-reuse` strategies (configuration.txt 4.2), from the most cautious."""


def _parse_http_reuse(ctx: Context, args: Sequence[str]) -> None:
    """haproxy ``http-reuse { never | safe | aggressive | always }``: key ``http_reuse``."""
    _need(args, 1, "'http-reuse' expects one of " + ", ".join(HTTP_REUSE))
    _no_extra("http-reuse", args, 1)
    if args[0] not in HTTP_REUSE:
        raise ArgError(f"'http-reuse' expects one of {', '.join(HTTP_REUSE)}, got '{args[0]}'"
                       + did_you_mean(args[0], HTTP_REUSE))
    ctx.set("http_reuse", args[0])


# timeout <name> <time>  ------------------------------------------------------------------

def _timeout(name: str) -> ParseFn:
    """Parse function for haproxy ``timeout <name> <time>``: key ``timeout.<name>``, float
    seconds, or None for ``0`` (no timeout, as in haproxy)."""
    what = f"timeout {name}"
    key = "timeout." + name.replace("-", "_")

    def parse(ctx: Context, args: Sequence[str]) -> None:
        _need(args, 1, f"'{what}' expects a time value (default unit: ms)")
        _no_extra(what, args, 1)
        try:
            seconds = parse_time(args[0])
        except ValueError as exc:
            raise ArgError(f"'{what}': {exc}") from None
        # As in haproxy, 0 means "no timeout" (TICK_ETERNITY); the model spells it None.
        ctx.set(key, seconds or None)
    return parse


TIMEOUTS: dict[str, Keyword] = {
    name: Keyword(f"timeout {name}", sections, _timeout(name), doc_ref(f"timeout {name}"))
    for name, sections in (
        ("client", FRONT), ("http-request", FRONT), ("http-keep-alive", FRONT),
        ("server", BACK), ("connect", BACK), ("queue", BACK), ("tunnel", BACK), ("check", BACK),
        ("tarpit", PROXIES),
    )
}
"""``timeout X`` sub-keywords. Sections follow the model: client-side timeouts are read from
the Frontend, server-side ones from the Backend (see docs/configuration.md for where this is
stricter than haproxy)."""

HAPROXY_TIMEOUTS = frozenset({"client-fin", "server-fin", "client-hs"})


def _parse_timeout(ctx: Context, args: Sequence[str]) -> None:
    """haproxy ``timeout <name> <time>``: dispatches to TIMEOUTS after the section check."""
    _need(args, 1, "'timeout' expects a timeout name and a value")
    name = args[0]
    keyword = TIMEOUTS.get(name)
    if keyword is None:
        if name in HAPROXY_TIMEOUTS:
            raise ArgError(f"timeout '{name}' is not supported")
        raise ArgError(f"unknown timeout '{name}' in {ctx.where}"
                       + did_you_mean(name, _sub_candidates(TIMEOUTS, ctx.kind)))
    _check_section(keyword, ctx)
    keyword.parse(ctx, args[1:])


# option <name> [args]  -------------------------------------------------------------------

def _flag(name: str, key: str | None) -> ParseFn:
    """Parse function for a boolean haproxy ``[no] option <name>``: key ``key`` (None: nothing
    is stored)."""
    def parse(ctx: Context, args: Sequence[str]) -> None:
        _no_extra(f"option {name}", args, 0)
        if key is not None:
            ctx.set(key, not ctx.negated)
    return parse


FORWARDFOR_ARGS = ("except", "header", "if-none")


def _parse_forwardfor(ctx: Context, args: Sequence[str]) -> None:
    """haproxy ``option forwardfor [except <network>] [header <name>] [if-none]``: key
    ``forwardfor``, a model.ForwardFor. <network> is an address with an optional mask
    (``127.0.0.0/8``, ``10.0.0.0/255.0.0.0``, ``::1/128``); <name> a field name (token)."""
    except_net, header, if_none = None, b"X-Forwarded-For", False
    i = 0
    while i < len(args):
        arg = args[i]
        if arg in ("except", "header"):
            if i + 1 >= len(args):
                raise ArgError(f"'option forwardfor {arg}' expects a value")
            value = args[i + 1]
            if arg == "except":
                try:
                    except_net = ipaddress.ip_network(value, strict=False)
                except ValueError:
                    raise ArgError(f"'option forwardfor except' expects a network (address[/mask]), "
                                   f"not '{value}'") from None
            else:
                if not _FIELD_NAME.match(value):
                    raise ArgError(f"'option forwardfor header' expects a field name, not '{value}'")
                if value.lower().encode("ascii") in FRAMING_FIELDS:
                    raise ArgError(f"'option forwardfor header {value}': splicer writes that field itself "
                                   "(message framing or connection management)")
                header = value.encode("ascii")
            i += 2
        elif arg == "if-none":
            if_none = True
            i += 1
        else:
            raise ArgError(f"'option forwardfor': unknown argument '{arg}'"
                           + did_you_mean(arg, FORWARDFOR_ARGS))
    ctx.set("forwardfor", ForwardFor(except_net, header, if_none))


FORWARDED_PARAMS = ("proto", "host", "by", "for")


def _parse_forwarded(ctx: Context, args: Sequence[str]) -> None:
    """haproxy ``option forwarded [proto] [host] [by] [for]``: key ``forwarded``, the tuple of
    RFC 7239 parameters to send; with no argument, ``for`` alone (as haproxy). The ``*-expr``
    and ``*_port`` forms are refused."""
    params: list[str] = []
    for arg in args:
        if arg not in FORWARDED_PARAMS:
            raise ArgError(f"'option forwarded': unsupported argument '{arg}' (supported: "
                           + ", ".join(FORWARDED_PARAMS) + ")" + did_you_mean(arg, FORWARDED_PARAMS))
        if arg not in params:
            params.append(arg)
    ctx.set("forwarded", tuple(params) if params else ("for",))


RETRY_ON_EVENTS = ("conn-failure", "empty-response", "junk-response", "response-timeout",
                   "0rtt-rejected")
"""haproxy `retry-on` failure events (0rtt-rejected needs TLS early data: accepted, never met)."""
RETRY_ON_STATUSES = (401, 403, 404, 408, 425, 429, 500, 501, 502, 503, 504)
"""Status codes haproxy's `retry-on` accepts."""
RETRY_ON_ALL = frozenset({"conn-failure", "empty-response", "junk-response", "response-timeout",
                          "0rtt-rejected", 500, 502, 503, 504})
"""What haproxy's `retry-on all-retryable-errors` stands for."""


def _parse_retry_on(ctx: Context, args: Sequence[str]) -> None:
    """haproxy ``retry-on <keywords>...``: key ``retry_on``, a frozenset of event names and
    status codes (ints). ``none`` (alone) disables every retry, connection failures included;
    ``all-retryable-errors`` stands for RETRY_ON_ALL. A later statement replaces an earlier
    one, as in haproxy."""
    _need(args, 1, "'retry-on' expects 'none' or at least one of: "
                   + ", ".join([*RETRY_ON_EVENTS, "all-retryable-errors", "<status>"]))
    found: set[object] = set()
    for arg in args:
        if arg == "none":
            if len(args) != 1:
                raise ArgError("'retry-on': 'none' can only be used alone")
        elif arg == "all-retryable-errors":
            found |= RETRY_ON_ALL
        elif arg in RETRY_ON_EVENTS:
            found.add(arg)
        elif _DIGITS.match(arg) and int(arg) in RETRY_ON_STATUSES:
            found.add(int(arg))
        elif _DIGITS.match(arg):
            raise ArgError(f"'retry-on': status {arg} cannot be retried (supported: "
                           + ", ".join(map(str, RETRY_ON_STATUSES)) + ")")
        else:
            raise ArgError(f"'retry-on': unknown keyword '{arg}'"
                           + did_you_mean(arg, [*RETRY_ON_EVENTS, "all-retryable-errors", "none"]))
    ctx.set("retry_on", frozenset(found))


def _header_rule(side: str) -> ParseFn:
    """Parse function for haproxy ``http-request`` / ``http-response`` header actions: key
    ``http_request`` / ``http_response``, a HeaderRule; the rules of a section add up in
    file order (see splicer/http/rules.py for what is supported)."""
    def parse(ctx: Context, args: Sequence[str]) -> None:
        try:
            rule = parse_rule(list(args), side, ctx.file, ctx.line)
        except RuleError as exc:
            raise ArgError(str(exc)) from None
        if getattr(rule, "action", "") == "auth" and rule.realm is None:
            # haproxy: the realm defaults to the name of the proxy the rule belongs to
            rule = dataclasses.replace(rule, realm=ctx.name)
        ctx.set(f"http_{side}", rule)
    return parse


def _userlist_line(kind: str) -> ParseFn:
    """Parse function for the ``user`` and ``group`` lines of a ``userlist`` section
    (haproxy 12.2): key ``user`` / ``group``, a userlist.User / userlist.Group; the
    section's lines are put together, and their references checked, by resolve.py."""
    fn = parse_user if kind == "user" else parse_group

    def parse(ctx: Context, args: Sequence[str]) -> None:
        try:
            ctx.set(kind, fn(list(args), ctx.file, ctx.line))
        except UserlistError as exc:
            raise ArgError(f"{ctx.where}: {exc}") from None
    return parse


# --------------------------------------------------------------------------------------------
# ring sections (haproxy configuration.txt 12.5 "Ring buffers"): a log buffer and the syslog
# server(s) over TCP or a unix stream socket that it forwards to (resolve.py puts a
# section's lines together into a model.Ring and turns each `log ring@<name>` into them).

def _ring_description(ctx: Context, args: Sequence[str]) -> None:
    """``description <text>``: key ``ring_description`` (the words joined)."""
    _need(args, 1, "'description' expects a text")
    ctx.set("ring_description", " ".join(args))


def _ring_format(ctx: Context, args: Sequence[str]) -> None:
    """``format <format>``: key ``ring_format`` (the framing of the ring's messages; its
    default is ``raw``)."""
    from splicer.log.syslog import FORMATS

    _need(args, 1, "'format' expects a log format")
    _no_extra("format", args, 1)
    if args[0] not in FORMATS:
        raise ArgError(f"'format': unknown format '{args[0]}' (supported: {', '.join(FORMATS)})"
                       + did_you_mean(args[0], FORMATS))
    ctx.set("ring_format", args[0])


def _ring_maxlen(ctx: Context, args: Sequence[str]) -> None:
    """``maxlen <length>``: key ``ring_maxlen``, most bytes of a message, its header
    included (80..65535, as a `log` line's `len`)."""
    _need(args, 1, "'maxlen' expects a length in bytes")
    _no_extra("maxlen", args, 1)
    ctx.set("ring_maxlen", parse_int(args[0], "maxlen", 80, 65535))


def _ring_size(ctx: Context, args: Sequence[str]) -> None:
    """``size <size>``: key ``ring_size``, bytes queued while the server takes nothing
    (haproxy's default BUFSIZE, 16384; at least 1024)."""
    _need(args, 1, "'size' expects a size in bytes")
    _no_extra("size", args, 1)
    try:
        size = parse_size(args[0])
    except ValueError as exc:
        raise ArgError(f"'size': {exc}") from None
    if not 1024 <= size <= 1 << 30:
        raise ArgError(f"'size': {size} bytes is out of range (1024 to 1g)")
    ctx.set("ring_size", size)


def _ring_timeout(ctx: Context, args: Sequence[str]) -> None:
    """``timeout connect|server <time>``: keys ``ring_timeout.connect`` / ``ring_timeout.server``
    (seconds: the wait for the server's connection, and for queued data to move)."""
    _need(args, 2, "'timeout' expects 'connect' or 'server' and a time")
    if args[0] not in ("connect", "server"):
        raise ArgError(f"unknown timeout '{args[0]}' in {ctx.where} (a ring has 'connect' and 'server')"
                       + did_you_mean(args[0], ("connect", "server")))
    _no_extra(f"timeout {args[0]}", args, 2)
    try:
        value = parse_time(args[1])
    except ValueError as exc:
        raise ArgError(f"'timeout {args[0]}': {exc}") from None
    if value <= 0:
        raise ArgError(f"'timeout {args[0]}' must be more than 0")
    ctx.set(f"ring_timeout.{args[0]}", value)


def _ring_server(ctx: Context, args: Sequence[str]) -> None:
    """``server <name> <address> [log-proto legacy|octet-count]``: key ``ring_server``, a
    LogTarget of kind "tcp" (``<host>:<port>``, ``tcp@``, ``tcp4@``, ``tcp6@``) or "uxst"
    (``unix@<path>``, ``uxst@<path>`` or an absolute path: a unix stream socket), named
    ``<name>``. ``log-proto``: RFC 6587 framing, ``legacy`` (each message ends with a line
    feed, the default) or ``octet-count`` (each starts with its length)."""
    _need(args, 2, "'server' expects a name and an address")
    name, text = args[0], args[1]
    if not valid_name(name):
        raise ArgError(f"character '{bad_name_char(name)}' is not permitted in server name '{name}'")
    what = f"server '{name}'"
    if text.startswith(("unix@", "uxst@")):
        text = text[5:]
    if text.startswith("/"):
        target = LogTarget("uxst", text, path=text)
    else:
        family = ""
        if text.startswith(("tcp@", "tcp4@", "tcp6@")):
            family, text = text.split("@", 1)
            family = "" if family == "tcp" else family
        elif "@" in text:
            raise ArgError(f"{what}: address prefix '{text.split('@')[0]}@' is not supported in a ring "
                           "(tcp@, tcp4@, tcp6@, unix@ or uxst@)")
        host, port_text = split_host_port(text, what)
        if not host or not port_text:
            raise ArgError(f"{what}: '{text}' expects <host>:<port>")
        target = LogTarget("tcp", args[1], host=host, port=parse_port(port_text, what), family=family)
    rest = list(args[2:])
    octets = False
    while rest:
        word = rest.pop(0)
        if word != "log-proto":
            raise ArgError(f"{what}: '{word}' is not supported on a ring's server (only 'log-proto')")
        if not rest or rest[0] not in ("legacy", "octet-count"):
            raise ArgError(f"{what}: 'log-proto' expects 'legacy' or 'octet-count'")
        octets = rest.pop(0) == "octet-count"
    ctx.set("ring_server", (name, replace(target, octet_count=octets, file=ctx.file, line=ctx.line)))


def _ring_unsupported(word: str, why: str) -> ParseFn:
    def parse(ctx: Context, args: Sequence[str]) -> None:
        raise ArgError(f"'{word}' is not supported in a ring ({why})")
    return parse


HTTPCHK_METHOD = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+\Z")  # a token (RFC 9110 section 9.1)
HTTPCHK_FIELD = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+:[\t -~]*\Z")


def _parse_httpchk(ctx: Context, args: Sequence[str]) -> None:
    """haproxy ``option httpchk [[<method>] <uri> [<version>]]``: key ``httpchk``, the whole
    check request. Defaults as haproxy: ``OPTIONS / HTTP/1.0``; one argument is the URI.
    haproxy's old way of adding fields in the version word (``"HTTP/1.1\\r\\nHost:\\ www"``)
    is read too; an HTTP/1.1 check without Host gets a warning, as in haproxy nothing is
    added. The request always ends with ``Connection: close``."""
    _no_extra("option httpchk", args, 3)
    method, uri, version = "OPTIONS", "/", "HTTP/1.0"
    if len(args) == 1:
        uri = args[0]
    elif len(args) >= 2:
        method, uri = args[0], args[1]
        if len(args) == 3:
            version = args[2]
    lines = version.split("\r\n")
    version, fields = lines[0], [f for f in lines[1:] if f]
    if not HTTPCHK_METHOD.match(method):
        raise ArgError(f"'option httpchk': invalid method '{method}'")
    if not uri.startswith("/") or any(c in uri for c in " \t\r\n\x00") or not uri.isascii():
        raise ArgError(f"'option httpchk': invalid URI '{uri}' (an absolute path such as /health)")
    if version not in ("HTTP/1.0", "HTTP/1.1"):
        raise ArgError(f"'option httpchk': invalid HTTP version '{version}' (HTTP/1.0 or HTTP/1.1)")
    for f in fields:
        if not HTTPCHK_FIELD.match(f):
            raise ArgError(f"'option httpchk': invalid header field '{f}'")
    if version == "HTTP/1.1" and not any(f.lower().startswith("host:") for f in fields):
        ctx.warn("'option httpchk': an HTTP/1.1 check without a Host field: most servers answer "
                 "400 (RFC 9112 section 3.2); add one as haproxy allows: "
                 "\"HTTP/1.1\\r\\nHost:\\ www.example.com\"")
    head = "\r\n".join([f"{method} {uri} {version}", *fields, "Connection: close", "", ""])
    ctx.set("httpchk", head.encode("ascii"))


def _parse_http_check(ctx: Context, args: Sequence[str]) -> None:
    """haproxy ``http-check expect status <codes>``: key ``check_expect``, the (low, high)
    ranges of a comma list of codes and ranges (``200``, ``200-399``, ``200,204``)."""
    _need(args, 1, "'http-check' expects 'expect status <codes>'")
    if args[0] != "expect":
        raise ArgError(f"'http-check {args[0]}' is not supported (supported: http-check expect status <codes>)")
    if len(args) < 2 or args[1] != "status":
        shown = args[1] if len(args) > 1 else ""
        raise ArgError(f"'http-check expect {shown}' is not supported (supported: http-check expect status <codes>)")
    _need(args, 3, "'http-check expect status' expects a status code or range, e.g. 200 or 200-399")
    _no_extra("http-check expect status", args, 3)
    ranges = []
    for part in args[2].split(","):
        lo, sep, hi = part.partition("-")
        a = parse_int(lo, "http-check expect status", 100, 599)
        b = parse_int(hi, "http-check expect status", 100, 599) if sep else a
        if b < a:
            raise ArgError(f"'http-check expect status': empty range '{part}'")
        ranges.append((a, b))
    ctx.set("check_expect", tuple(ranges))


ERRORFILE_CODES = (200, 400, 401, 403, 404, 405, 407, 408, 410, 413, 425, 429, 500, 501, 502, 503, 504)
"""Status codes `errorfile` may replace (haproxy's list)."""
ERRORFILE_MAX = 16384
"""Largest errorfile accepted, bytes (haproxy: it must fit in a buffer)."""


def _parse_errorfile(ctx: Context, args: Sequence[str]) -> None:
    """haproxy ``errorfile <code> <file>``: key ``errorfile.<code>``, the file's bytes. The
    file holds a whole HTTP response (status line, fields, body) sent as-is; a relative path
    is taken from the configuration file's directory."""
    _need(args, 2, "'errorfile' expects a status code and a file name")
    _no_extra("errorfile", args, 2)
    code = parse_int(args[0], "errorfile", 100, 599)
    if code not in ERRORFILE_CODES:
        raise ArgError(f"'errorfile': status code {code} cannot be replaced (codes: "
                       + ", ".join(map(str, ERRORFILE_CODES)) + ")")
    import os

    path = args[1] if os.path.isabs(args[1]) else os.path.join(os.path.dirname(ctx.file) or ".", args[1])
    try:
        with open(path, "rb") as f:
            data = f.read(ERRORFILE_MAX + 1)
    except OSError as exc:
        raise ArgError(f"'errorfile {code}': cannot read '{args[1]}': {exc.strerror}") from None
    if len(data) > ERRORFILE_MAX:
        raise ArgError(f"'errorfile {code}': '{args[1]}' is larger than {ERRORFILE_MAX} bytes")
    if not data.startswith((b"HTTP/1.0 ", b"HTTP/1.1 ")) or b"\r\n\r\n" not in data:
        raise ArgError(f"'errorfile {code}': '{args[1]}' is not an HTTP response "
                       "(status line, fields, empty line, body; CRLF line endings)")
    ctx.set(f"errorfile.{code}", data)


OPTIONS: dict[str, Keyword] = {
    "forwardfor": Keyword("option forwardfor", PROXIES, _parse_forwardfor,
                          doc_ref("option forwardfor")),
    "forwarded": Keyword("option forwarded", BACK, _parse_forwarded, doc_ref("option forwarded")),
    "splice-auto": Keyword("option splice-auto", PROXIES, _flag("splice-auto", "splice_auto"),
                           doc_ref("option splice-auto"), negatable=True),
    "splice-request": Keyword("option splice-request", PROXIES,
                              _flag("splice-request", "splice_request"),
                              doc_ref("option splice-request"), negatable=True),
    "splice-response": Keyword("option splice-response", PROXIES,
                               _flag("splice-response", "splice_response"),
                               doc_ref("option splice-response"), negatable=True),
    "redispatch": Keyword("option redispatch", BACK, _flag("redispatch", "redispatch"),
                          doc_ref("option redispatch"), negatable=True),
    "accept-invalid-http-request": Keyword("option accept-invalid-http-request", FRONT,
                                           _flag("accept-invalid-http-request",
                                                 "accept_invalid_http_request"),
                                           doc_ref("option accept-invalid-http-request"),
                                           negatable=True),
    "http-buffer-request": Keyword("option http-buffer-request", PROXIES,
                                   _flag("http-buffer-request", "http_buffer_request"),
                                   doc_ref("option http-buffer-request"), negatable=True),
    "idle-close-on-response": Keyword("option idle-close-on-response", FRONT,
                                      _flag("idle-close-on-response", "idle_close_on_response"),
                                      doc_ref("option idle-close-on-response"), negatable=True),
    "http-ignore-probes": Keyword("option http-ignore-probes", FRONT,
                                  _flag("http-ignore-probes", "ignore_probes"),
                                  doc_ref("option http-ignore-probes"), negatable=True),
    "abortonclose": Keyword("option abortonclose", BACK, _flag("abortonclose", "abortonclose"),
                            doc_ref("option abortonclose"), negatable=True),
    "persist": Keyword("option persist", BACK, _flag("persist", "persist"), doc_ref("option persist"),
                       negatable=True),
    "allbackups": Keyword("option allbackups", BACK, _flag("allbackups", "allbackups"),
                          doc_ref("option allbackups"), negatable=True),
    "httpchk": Keyword("option httpchk", BACK, _parse_httpchk, doc_ref("option httpchk")),
    "httplog": Keyword("option httplog", FRONT, _log_option("httplog"), doc_ref("option httplog")),
    "tcplog": Keyword("option tcplog", FRONT, _log_option("tcplog"), doc_ref("option tcplog")),
    "dontlognull": Keyword("option dontlognull", FRONT, _flag("dontlognull", "dontlognull"),
                           doc_ref("option dontlognull"), negatable=True),
    "log-health-checks": Keyword("option log-health-checks", BACK, _flag("log-health-checks", "log_health_checks"),
                                 doc_ref("option log-health-checks"), negatable=True),
    # Keep-alive is splicer's only HTTP connection mode, as it is haproxy's default one, so
    # the option (and its negation, which in haproxy falls back to that default) sets nothing.
    "http-keep-alive": Keyword("option http-keep-alive", PROXIES,
                               _flag("http-keep-alive", None),
                               doc_ref("option http-keep-alive"), negatable=True),
}
"""``option X`` sub-keywords."""

HAPROXY_OPTIONS = frozenset({
    "accept-invalid-http-response",
    "checkcache", "clitcpka", "contstats", "dontlog-normal",
    "external-check", "h1-case-adjust-bogus-client",
    "h1-case-adjust-bogus-server",
    "http-no-delay", "http-pretend-keepalive", "http-restrict-req-hdr-names",
    "http-server-close", "http-use-proxy-header", "httpclose",
    "httpslog", "independent-streams", "ldap-check",
    "log-separate-errors", "logasap", "mysql-check", "nolinger", "originalto",
    "pgsql-check", "prefer-last-server", "redis-check", "smtpchk", "socket-stats",
    "spop-check", "srvtcpka", "ssl-hello-chk", "tcp-check", "tcp-smart-accept",
    "tcp-smart-connect", "tcpka", "transparent",
    "disable-h2-upgrade",
})
"""haproxy options that splicer refuses as "not supported" rather than "unknown"."""


def _parse_option(ctx: Context, args: Sequence[str]) -> None:
    """haproxy ``[no] option <name> ...``: dispatches to OPTIONS after the section and
    negation checks."""
    _need(args, 1, "'option' expects an option name")
    name = args[0]
    keyword = OPTIONS.get(name)
    if keyword is None:
        if name in HAPROXY_OPTIONS:
            raise ArgError(f"option '{name}' is not supported")
        raise ArgError(f"unknown option '{name}' in {ctx.where}"
                       + did_you_mean(name, _sub_candidates(OPTIONS, ctx.kind)))
    _check_section(keyword, ctx)
    if ctx.negated and not keyword.negatable:
        raise ArgError(f"negation is not supported for option '{name}'")
    keyword.parse(ctx, args[1:])


def _sub_candidates(table: dict[str, Keyword], kind: str) -> list[str]:
    """Sub-keywords valid in ``kind``, or all of them if none is (for "did you mean")."""
    valid = [name for name, kw in table.items() if kind in kw.sections]
    return valid or list(table)


def _stats_flag(key: str, name: str) -> ParseFn:
    """Parse function for a `stats <name>` flag without arguments: key `key` True, and
    stats enabled (haproxy: any `stats` statement alone enables them)."""
    def parse(ctx: Context, args: Sequence[str]) -> None:
        _no_extra(f"stats {name}", args, 0)
        ctx.set("stats_enable", True)
        ctx.set(key, True)
    return parse


def _stats_word(key: str, name: str, what: str, optional: bool = False) -> ParseFn:
    """Parse function for `stats <name> <word>` (or `[<word>]` when `optional`: key `key`
    gets "" then); stats are enabled too."""
    def parse(ctx: Context, args: Sequence[str]) -> None:
        if not optional:
            _need(args, 1, f"'stats {name}' expects {what}")
        _no_extra(f"stats {name}", args, 1)
        ctx.set("stats_enable", True)
        ctx.set(key, args[0] if args else "")
    return parse


def _parse_stats_uri(ctx: Context, args: Sequence[str]) -> None:
    """haproxy `stats uri <prefix>`: key `stats_uri`, bytes; it must start with `/`."""
    _need(args, 1, "'stats uri' expects a URI prefix, e.g. /haproxy?stats")
    _no_extra("stats uri", args, 1)
    uri = args[0]
    if not uri.startswith("/") or not uri.isascii() or any(c in uri for c in " \t\r\n\x00"):
        raise ArgError(f"'stats uri': invalid prefix '{uri}' (an absolute path such as /haproxy?stats)")
    ctx.set("stats_enable", True)
    ctx.set("stats_uri", uri.encode("ascii"))


def _parse_stats_refresh(ctx: Context, args: Sequence[str]) -> None:
    """haproxy `stats refresh <delay>`: key `stats_refresh`, seconds (no unit: seconds)."""
    _need(args, 1, "'stats refresh' expects a delay, e.g. 5s")
    _no_extra("stats refresh", args, 1)
    try:
        delay = float(parse_seconds(args[0]))
    except ValueError as exc:
        raise ArgError(f"'stats refresh': {exc}") from None
    ctx.set("stats_enable", True)
    ctx.set("stats_refresh", delay)


def _parse_stats_auth(ctx: Context, args: Sequence[str]) -> None:
    """haproxy `stats auth <user>:<passwd>`: key `stats_auth` (accumulated), (user,
    password) bytes."""
    _need(args, 1, "'stats auth' expects <user>:<password>")
    _no_extra("stats auth", args, 1)
    user, sep, password = args[0].partition(":")
    if not sep or not user:
        raise ArgError(f"'stats auth': '{args[0]}' is not <user>:<password>")
    ctx.set("stats_enable", True)
    ctx.set("stats_auth", (user.encode("utf-8"), password.encode("utf-8")))


def _parse_stats_admin(ctx: Context, args: Sequence[str]) -> None:
    """haproxy `stats admin { if | unless } <cond>`: key `stats_admin` (accumulated), a
    service.StatsAdmin whose condition resolve.py binds to the section's ACLs."""
    if not args or args[0] not in ("if", "unless"):
        raise ArgError("'stats admin' expects a condition: stats admin { if | unless } <cond>")
    try:
        cond = parse_condition(list(args), "", ctx.file, ctx.line)
    except AclError as exc:
        raise ArgError(f"'stats admin': {exc}") from None
    ctx.set("stats_admin", StatsAdmin(cond, ctx.file, ctx.line))


STATS: dict[str, Keyword] = {
    "enable": Keyword("stats enable", PROXIES, _stats_flag("stats_enable", "enable"), doc_ref("stats enable")),
    "uri": Keyword("stats uri", PROXIES, _parse_stats_uri, doc_ref("stats uri")),
    "refresh": Keyword("stats refresh", PROXIES, _parse_stats_refresh, doc_ref("stats refresh")),
    "auth": Keyword("stats auth", PROXIES, _parse_stats_auth, doc_ref("stats auth")),
    "realm": Keyword("stats realm", PROXIES, _stats_word("stats_realm", "realm", "a realm"),
                     doc_ref("stats realm")),
    "admin": Keyword("stats admin", FRONT_ONLY | BACK_ONLY, _parse_stats_admin, doc_ref("stats admin")),
    "show-legends": Keyword("stats show-legends", PROXIES, _stats_flag("stats_show_legends", "show-legends"),
                            doc_ref("stats show-legends")),
    "hide-version": Keyword("stats hide-version", PROXIES, _stats_flag("stats_hide_version", "hide-version"),
                            doc_ref("stats hide-version")),
    "show-version": Keyword("stats show-version", PROXIES, _stats_flag("stats_show_version", "show-version"),
                            doc_ref("stats show-version")),
    "show-node": Keyword("stats show-node", PROXIES, _stats_word("stats_show_node", "show-node", "a name", True),
                         doc_ref("stats show-node")),
    "show-desc": Keyword("stats show-desc", PROXIES, _stats_word("stats_show_desc", "show-desc", "a text", True),
                         doc_ref("stats show-desc")),
}
"""The `stats` keywords of proxy sections (haproxy 4.2), each its own entry in the docs."""

HAPROXY_STATS = frozenset({"scope", "http-request", "show-modules", "bind-process", "socket"})
"""haproxy `stats` keywords of proxy sections splicer refuses with 'not supported'."""


def _parse_stats(ctx: Context, args: Sequence[str]) -> None:
    """haproxy `stats <keyword> ...` in a proxy section: dispatches to STATS after the
    section check."""
    _need(args, 1, "'stats' expects a keyword (" + ", ".join(STATS) + ")")
    name = args[0]
    keyword = STATS.get(name)
    if keyword is None:
        if name in HAPROXY_STATS:
            raise ArgError(f"'stats {name}' is not supported")
        raise ArgError(f"unknown keyword 'stats {name}' in {ctx.where}"
                       + did_you_mean(name, _sub_candidates(STATS, ctx.kind)))
    _check_section(keyword, ctx)
    keyword.parse(ctx, args[1:])


# --------------------------------------------------------------------------------------------
# The registry.

def _kw(name: str, sections: frozenset[str], parse: ParseFn, title: str | None = None,
        negatable: bool = False) -> Keyword:
    return Keyword(name, sections, parse, doc_ref(title or name), negatable)


KEYWORDS: tuple[Keyword, ...] = (
    # global
    _kw("maxconn", GLOBAL, _int_keyword("maxconn", "maxconn", 1), "maxconn (global)"),
    _kw("nbthread", GLOBAL, _int_keyword("nbthread", "nbthread", 1, 4096)),
    _kw("cpu-map", GLOBAL, _parse_cpu_map),
    _kw("tune.bufsize", GLOBAL, _int_keyword("bufsize", "tune.bufsize", 1024)),
    _kw("tune.http.maxhdr", GLOBAL, _int_keyword("maxhdr", "tune.http.maxhdr", 1, 32767)),
    _kw("tune.pipesize", GLOBAL, _parse_pipesize),
    _kw("maxpipes", GLOBAL, _int_keyword("maxpipes", "maxpipes", 1)),
    _kw("tune.maxpipes", GLOBAL, _int_keyword("maxpipes", "tune.maxpipes", 1), "maxpipes"),
    _kw("hard-stop-after", GLOBAL, _parse_hard_stop_after),
    _kw("daemon", GLOBAL, _ignored("daemon", 0, 0), "ignored global keywords"),
    _kw("user", GLOBAL, _ignored("user", 1, 1, "a user name"), "ignored global keywords"),
    _kw("group", GLOBAL, _ignored("group", 1, 1, "a group name"), "ignored global keywords"),
    _kw("chroot", GLOBAL, _ignored("chroot", 1, 1, "a directory"), "ignored global keywords"),
    _kw("pidfile", GLOBAL, _ignored("pidfile", 1, 1, "a file name"), "ignored global keywords"),
    _kw("stats", GLOBAL, _parse_stats_global, "stats socket"),
    _kw("server-state-file", GLOBAL, _parse_server_state_file),
    _kw("server-state-base", GLOBAL, _parse_server_state_base),
    _kw("log", EVERYWHERE, _parse_log, "log", negatable=True),
    _kw("log-format", FRONT, _parse_log_format),
    _kw("capture", FRONT_ONLY, _parse_capture, "capture request header"),
    # proxies
    _kw("mode", PROXIES, _parse_mode),
    _kw("bind", FRONT_ONLY, _parse_bind),
    _kw("default_backend", FRONT, _parse_default_backend),
    _kw("use_backend", FRONT_ONLY, _parse_use_backend),
    _kw("acl", FRONT_ONLY | BACK_ONLY, _parse_acl),
    _kw("maxconn", FRONT, _int_keyword("maxconn", "maxconn", 0), "maxconn (proxies)"),
    _kw("balance", BACK, _parse_balance),
    _kw("server", BACK_ONLY, _parse_server),
    _kw("default-server", BACK, _parse_default_server),
    _kw("hash-type", BACK, _parse_hash_type),
    _kw("hash-balance-factor", BACK, _parse_hash_balance_factor),
    _kw("cookie", BACK, _parse_cookie),
    _kw("use-server", BACK_ONLY, _parse_use_server),
    _kw("force-persist", BACK_ONLY, _persist_rule("force-persist")),
    _kw("ignore-persist", BACK_ONLY, _persist_rule("ignore-persist")),
    _kw("http-reuse", BACK, _parse_http_reuse),
    _kw("retries", BACK, _int_keyword("retries", "retries", 0)),
    _kw("load-server-state-from-file", BACK, _parse_load_server_state),
    _kw("server-state-file-name", BACK_ONLY, _parse_server_state_file_name),
    _kw("retry-on", BACK, _parse_retry_on),
    _kw("errorfile", PROXIES, _parse_errorfile),
    _kw("http-check", BACK, _parse_http_check, "http-check expect"),
    _kw("http-request", FRONT_ONLY | BACK_ONLY, _header_rule("request")),
    _kw("http-response", FRONT_ONLY | BACK_ONLY, _header_rule("response")),
    _kw("timeout", PROXIES, _parse_timeout, "4.1 Keyword matrix"),
    _kw("option", PROXIES, _parse_option, "4.1 Keyword matrix", negatable=True),
    _kw("stats", PROXIES, _parse_stats, "stats enable"),
    # userlist
    _kw("user", USERLIST, _userlist_line("user"), "user (userlist)"),
    _kw("group", USERLIST, _userlist_line("group"), "group (userlist)"),
    # ring
    _kw("description", RING, _ring_description, "ring"),
    _kw("format", RING, _ring_format, "ring"),
    _kw("maxlen", RING, _ring_maxlen, "ring"),
    _kw("size", RING, _ring_size, "ring"),
    _kw("timeout", RING, _ring_timeout, "ring"),
    _kw("server", RING, _ring_server, "ring"),
    _kw("backing-file", RING, _ring_unsupported("backing-file", "splicer keeps no ring in memory or in a file: "
                                                "it forwards to its server"), "ring"),
)
"""Every top-level keyword. A name may appear twice with disjoint sections (``maxconn``)."""


def lookup(name: str, kind: str) -> Keyword | None:
    """The keyword ``name`` as registered for section kind ``kind``, or None.

    Args:
        name: first word of the statement (after a ``no`` prefix).
        kind: section kind.
    """
    for keyword in KEYWORDS:
        if keyword.name == name and kind in keyword.sections:
            return keyword
    return None


def allowed_sections(name: str) -> frozenset[str]:
    """Every section kind where the top-level keyword ``name`` is registered (empty: unknown)."""
    found: frozenset[str] = frozenset()
    for keyword in KEYWORDS:
        if keyword.name == name:
            found |= keyword.sections
    return found


def keywords_for(kind: str) -> list[str]:
    """Names of the top-level keywords valid in section kind ``kind`` (for "did you mean")."""
    names = [kw.name for kw in KEYWORDS if kind in kw.sections]
    return sorted(set(names) | ({"no"} if kind in PROXIES else set()))


def all_keywords() -> list[Keyword]:
    """Every documented keyword: top-level ones, then ``timeout X`` and ``option X``."""
    return [*KEYWORDS, *TIMEOUTS.values(), *OPTIONS.values(), *STATS.values()]
