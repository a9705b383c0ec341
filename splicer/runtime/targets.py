"""The checks of a loaded configuration that ask the system about its log targets.

Rule: everything that decides whether a `log` line's target, or a ring's `server`, can be
reached from this machine lives here (splicer/config stays sans-I/O: it reads its file and
asks nothing else). load_checked() is config.load() followed by check_targets(), on a Config
that resolved cleanly; --check, the start (cli.py) and a reload (master.py, in a thread)
load with it, so a target that can never work is reported at its `file:line`, instead of a
worker counting every message to it as dropped. It opens no socket but the resolver's.

Theory of operation (haproxy semantics unless noted):

- A host name of a UDP (`<host>[:<port>]`, `udp@`, `udp4@`, `udp6@`) or TCP (`tcp@`, `tcp4@`,
  `tcp6@`) target and of a ring's `server` is resolved once, with the system resolver, as
  haproxy's str2sa_range() does with PA_O_RESOLVE when it parses a `log` line (src/log.c
  parse_logger()) or a ring's server (src/sink.c, SRV_PARSE_INITIAL_RESOLVE): a name that
  does not resolve is an error, "invalid address" in haproxy's words. An IP literal is
  parsed, never resolved (haproxy's str2ip2() tries inet_pton() first); a `4`/`6` prefix
  forces the family, so `tcp6@10.0.0.1:601` is an error too.
- A `file@<path>` target (splicer's own) is opened as the workers open it, for appending,
  created when missing (O_WRONLY | O_APPEND | O_CREAT; O_NONBLOCK so a FIFO without a reader
  fails at once rather than blocking), then closed: a missing directory or a file that cannot
  be written is an error. The workers open it again themselves (splicer/log/target.py).
- The resolved addresses are not kept: the workers resolve the name again when they connect
  (haproxy keeps the address it resolved at parse time).
- `log global` repeats the global lines in each proxy, and `log ring@<name>` becomes one
  target per server of the ring: each line is checked once, by its `file:line`.
"""
from __future__ import annotations

import ipaddress
import os
import socket
from collections.abc import Callable, Iterator, Mapping

from splicer.config import load
from splicer.config.model import Config, LogTarget
from splicer.errors import ConfigError, ConfigErrors

FILE_FLAGS = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NONBLOCK | os.O_CLOEXEC
"""open(2) flags a `file@` target is tried with (the workers' own open adds nothing but is
kept open)."""
FILE_MODE = 0o640
"""Permissions of a log file created by the check (those the workers create it with)."""

Resolver = Callable[[str, int, int], object]
"""getaddrinfo(host, port, family) for one stream or datagram address; raises OSError
(socket.gaierror) when the name does not resolve."""


def load_checked(path: str, env: Mapping[str, str] | None = None) -> Config:
    """config.load(path, env), then check_targets() of the Config it gives (what `splicer -c
    FILE` loads, and a reload).

    Raises:
        ConfigErrors: load()'s errors, or, when it has none, every log target that cannot
            be used, e.g. ``site.cfg:2: log 'udp@no.such.host.invalid:514': invalid address:
            'no.such.host.invalid' (Name or service not known)``.
    """
    config = load(path, env)
    errors = check_targets(config)
    if errors:
        raise ConfigErrors(errors)
    return config


def check_targets(config: Config, resolver: Resolver | None = None) -> list[ConfigError]:
    """Every log target of `config` that cannot be used from this machine.

    Args:
        config: a resolved Config (loader.loads() output).
        resolver: resolves one host name (see Resolver); None: the system resolver
            (socket.getaddrinfo). Tests pass their own to count the calls.

    Returns:
        One ConfigError per `log` line or ring `server` line that fails, in file order, e.g.
        ``site.cfg:2: log 'udp@no.such.host.invalid:514': invalid address:
        'no.such.host.invalid' (Name or service not known)`` or ``site.cfg:3: log
        'file@/nonexistent/dir/x.log': cannot open '/nonexistent/dir/x.log' for appending: No
        such file or directory``. Empty when every target is usable.
    """
    errors: list[ConfigError] = []
    seen: set[tuple[str, int]] = set()
    names: dict[tuple[str, int], str | None] = {}  # (host, family) -> why it failed, None: resolved
    for what, t in _targets(config):
        if (t.file, t.line) in seen:
            continue
        seen.add((t.file, t.line))
        if t.kind == "file":
            why = _open_file(t.path)
        elif t.kind in ("udp", "tcp"):
            why = _resolve(t, names, resolver)
        else:
            continue
        if why:
            errors.append(ConfigError(t.file, t.line, f"{what}: {why}"))
    return sorted(errors, key=lambda e: (e.file, e.line))


def _targets(config: Config) -> Iterator[tuple[str, LogTarget]]:
    """(how a message names the line, target) for every target, ring servers included."""
    for ring in config.rings.values():
        for name, t in ring.servers:
            yield f"server '{name}'", t
    proxies = (config.global_, *config.frontends, *config.backends.values())
    for t in (t for p in proxies for t in p.logs):
        if not t.ring:  # a ring's server, checked above by its own line
            yield f"log '{t.address}'", t


def _open_file(path: str) -> str:
    """"" when `path` opens for appending (created if missing), else why not."""
    try:
        fd = os.open(path, FILE_FLAGS, FILE_MODE)
    except OSError as exc:
        return f"cannot open '{path}' for appending: {exc.strerror or exc}"
    os.close(fd)
    return ""


def _family(t: LogTarget) -> int:
    """The address family a target's prefix forces: 4, 6, or 0 (either)."""
    prefix = t.family or (t.address.partition("@")[0] if "@" in t.address else "")
    return {"tcp4": 4, "udp4": 4, "tcp6": 6, "udp6": 6}.get(prefix, 0)


def _resolve(t: LogTarget, names: dict, resolver: Resolver | None) -> str:
    """"" when the target's host is an IP literal of the right family or a name that
    resolves, else why not (each name is asked once)."""
    version = _family(t)
    try:
        literal = ipaddress.ip_address(t.host)
    except ValueError:
        literal = None
    if literal is not None:
        if version and literal.version != version:
            return f"invalid address: '{t.host}' is not an IPv{version} address"
        return ""
    key = (t.host, version)
    if key not in names:
        names[key] = _lookup(t, version, resolver)
    why = names[key]
    return f"invalid address: '{t.host}' ({why})" if why else ""


def _lookup(t: LogTarget, version: int, resolver: Resolver | None) -> str | None:
    """Ask the resolver about the target's host; None when it resolves, else its reason."""
    family = {4: socket.AF_INET, 6: socket.AF_INET6}.get(version, socket.AF_UNSPEC)
    socktype = socket.SOCK_STREAM if t.kind == "tcp" else socket.SOCK_DGRAM
    try:
        if resolver is not None:
            resolver(t.host, t.port, family)
        else:
            socket.getaddrinfo(t.host, t.port, family, socktype)
    except (OSError, UnicodeError) as exc:  # gaierror is an OSError; an IDNA label too long: UnicodeError
        return str(exc.strerror or exc) if isinstance(exc, OSError) else f"bad name: {exc}"
    return None
