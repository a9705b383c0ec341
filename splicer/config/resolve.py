"""Post-parse pass: raw sections in, the frozen Config model out.

Rule: every decision that needs more than one statement lives here: ``defaults`` inheritance,
the ``listen`` split, references between sections and duplicate names. Like the parser, it
collects every error before raising ConfigErrors (haproxy's check_config_validity() does the
same after parsing), and it never does I/O.

Theory of operation (haproxy semantics unless noted):

- Defaults: each frontend/listen/backend starts from the settings of the ``defaults`` section
  in force where it begins (the last one above it; a later ``defaults`` section starts from
  scratch, it does not add to the previous one), then applies its own statements in order. A
  statement overrides an inherited value; ``no option X`` overrides an inherited ``option X``.
- A Frontend takes the frontend-side settings (mode, default_backend, maxconn, forwardfor,
  splice options, client/http-request/http-keep-alive timeouts); a Backend takes the
  backend-side ones (mode, balance, forwardfor, splice options, retries, retry-on, redispatch,
  connect/server/queue/tunnel timeouts). ``bind``, ``server``, ``http-request`` and
  ``http-response`` lines are never inherited (the last two are refused in defaults); a
  listen section's rules go to its Frontend only, so they run once per message.
- ``default-server`` lines set the options of the ``server`` lines after them: a server
  starts from the defaults section's ``default-server`` lines, then its own section's ones
  above it (each line changes only the options it names), then its own options.
- ``listen NAME`` becomes a Frontend and a Backend, both named NAME, with the section's
  settings; the Frontend's default_backend is NAME unless the listen section itself names
  another one (splicer ignores a default_backend inherited from defaults here, see
  docs/configuration.md).
- ACLs belong to their section (haproxy 7.1): ``acl`` lines of the same name add up into one
  ACL, and a condition (``http-request ... if``, ``use_backend ... if``) may only name ACLs
  declared above it in the same section, or predefined ones (haproxy 7.4); each condition is
  bound here to the section's ACLs, as they stand once the whole section is read.
- Checks: a frontend needs a ``bind`` and a default_backend (or, in mode http, some
  ``use_backend`` rule); the default_backend and every use_backend must name a backend (or
  listen) of the same mode; every ``use-server`` must name a server of its backend; a
  ``cookie`` in mode tcp is ignored with a warning (haproxy warns too); frontend names (frontend + listen) and backend names
  (backend + listen) are unique; server names are unique within a backend. A backend without
  servers is valid: its requests get 503. A layer-7 hash (``balance uri``, ``url_param``,
  ``hdr()``) in mode tcp falls back to roundrobin with a warning, as in haproxy.
  ``observe layer7`` needs mode http (an error, as haproxy's alert); ``observe`` on a server
  without ``check`` is accepted and does nothing (haproxy's health_adjust() needs a check
  task), with a warning that haproxy does not give.
- Userlists (haproxy 12.2): each ``userlist`` section's users and groups are put together
  (http/userlist.py build_userlist: duplicates, unknown groups and users are errors);
  userlist names are unique; every ``http_auth(<userlist>)`` /
  ``http_auth_group(<userlist>)`` of an ACL must name one, and the groups an
  ``http_auth_group`` ACL matches must be groups of it.
- ``timeout tarpit``: a proxy without one holds tarpitted requests for its ``timeout
  connect`` (haproxy proxy.c; a frontend sees the one of its defaults section), else 0.
"""
from __future__ import annotations

import dataclasses

from splicer.config.keywords import describe_section, did_you_mean
from splicer.config.model import (
    Backend,
    Balance,
    HashType,
    Bind,
    Config,
    Frontend,
    Global,
    LogTarget,
    Ring,
    Server,
    Timeouts,
)
from dataclasses import replace

from splicer.http.acl import PREDEFINED, Acl, AclExpr
from splicer.http.service import StatsSettings, stats_rule
from splicer.http.userlist import Userlist, build_userlist
from splicer.config.parser import Entry, RawConfig, RawSection
from splicer.errors import ConfigError, ConfigErrors

_ACCUMULATED = frozenset({"bind", "server", "default_server", "http_request", "http_response", "acl",
                          "use_backend", "use_server", "force_persist", "ignore_persist",
                          "stats_auth", "stats_admin", "log", "capture_request", "capture_response"})
_L7_HASHES = frozenset({"uri", "url_param", "hdr"})
_CONDITIONAL = ("http_request", "http_response", "use_backend", "use_server", "force_persist", "ignore_persist",
                "stats_admin")
_KEYWORD = {"http_request": "http-request", "http_response": "http-response", "use_backend": "use_backend",
            "use_server": "use-server", "force_persist": "force-persist", "ignore_persist": "ignore-persist",
            "stats_admin": "stats admin"}
_FRONT_TIMEOUTS = ("client", "http_request", "http_keep_alive")
_BACK_TIMEOUTS = ("connect", "server", "queue", "tunnel", "check")


def resolve(raw: RawConfig) -> Config:
    """Apply inheritance, split listen sections and check references.

    Args:
        raw: parser output.

    Returns:
        The immutable Config: frontends in file order, backends by name in file order, the
        parser's warnings followed by this pass's own.

    Raises:
        ConfigErrors: every problem found, in line order, e.g.
            ``site.cfg:9: frontend 'www': default_backend 'ap' not found; did you mean 'app'?``.
    """
    errors: list[ConfigError] = []
    warnings = list(raw.warnings)
    frontends: list[tuple[Frontend, str, Entry | None]] = []  # (frontend, its where, link)
    backends: dict[str, Backend] = {}
    fe_names: dict[str, RawSection] = {}
    be_names: dict[str, RawSection] = {}

    def error(line: int, msg: str) -> None:
        errors.append(ConfigError(raw.path, line, msg))

    def claim(names: dict[str, RawSection], section: RawSection) -> None:
        first = names.get(section.name)
        if first is None:
            names[section.name] = section
        else:
            error(section.line, f"{section.kind} '{section.name}' has the same name as "
                                f"{first.kind} '{first.name}' declared at "
                                f"{first.file}:{first.line}")

    userlists: dict[str, Userlist] = {}
    for section in raw.sections:
        if section.kind != "userlist":
            continue
        first = userlists.get(section.name)
        if first is not None:
            error(section.line, f"userlist '{section.name}' has the same name as the userlist "
                                f"declared at {first.file}:{first.line}")
            continue
        ul, problems = build_userlist(
            section.name, [e.value for e in section.entries if e.key == "user"],  # type: ignore[misc]
            [e.value for e in section.entries if e.key == "group"], section.file, section.line)  # type: ignore[misc]
        for line, msg in problems:
            error(line, msg)
        userlists[section.name] = ul

    rings = _rings(raw, error)
    global_ = _global(raw)
    global_ = replace(global_, logs=_ring_logs(global_.logs, rings, error))
    global_logs = global_.logs
    for section in raw.sections:
        if section.kind in ("global", "defaults", "userlist", "ring"):
            continue
        settings = _effective(section)
        where = describe_section(section.kind, section.name)
        mode = _value(settings, "mode", "tcp")
        forwardfor = settings.get("forwardfor")
        if mode == "tcp" and forwardfor is not None and forwardfor.value:
            warnings.append(f"{forwardfor.file}:{forwardfor.line}: {where}: 'option forwardfor' "
                            "is ignored in mode tcp")
        if mode == "tcp":
            for entry in section.entries:
                if entry.key in ("http_request", "http_response"):
                    keyword = entry.key.replace("_", "-")
                    warnings.append(f"{entry.file}:{entry.line}: {where}: '{keyword}' rules are "
                                    "ignored in mode tcp (they need mode http)")
        bound = _bind_conditions(section, where, error)
        _check_userlists(section, where, userlists, error)
        if section.kind in ("frontend", "listen"):
            claim(fe_names, section)
            if section.kind == "frontend":
                link = settings.get("default_backend")
            else:
                link = next((e for e in section.entries if e.key == "default_backend"), None)
            frontend = _frontend(section, settings, link, bound)
            frontend = replace(frontend, **_log_fields(section, settings, global_logs, rings, error, mode, where,
                                                           warnings))
            if not frontend.binds:
                error(section.line, f"{where} has no 'bind' line")
            if link is None and section.kind == "frontend" and not (frontend.use_backend and mode == "http"):
                error(section.line, f"{where} has no default_backend")
            if frontend.use_backend and mode != "http":
                error(frontend.use_backend[0].line, f"{where}: 'use_backend' needs mode http (this "
                                                     f"frontend is in mode {mode})")
            frontends.append((frontend, where, link))
        if section.kind in ("backend", "listen"):
            claim(be_names, section)
            backend = _backend(section, settings, bound)
            backend = replace(backend, logs=_ring_logs(_logs(section, global_logs), rings, error),
                              log_health_checks=bool(_value(settings, "log_health_checks", False)))
            if backend.mode == "tcp" and backend.balance in _L7_HASHES:
                entry = settings["balance"]
                warnings.append(f"{entry.file}:{entry.line}: {where}: 'balance {backend.balance}' "
                                "needs mode http; falling back to roundrobin")
                backend = replace(backend, balance="roundrobin", balance_args=Balance("roundrobin"))
            seen: dict[str, Server] = {}
            for server in backend.servers:
                if server.name in seen:
                    first = seen[server.name]
                    error(server.line, f"{where} has two servers named '{server.name}' "
                                       f"(first at {first.file}:{first.line})")
                else:
                    seen[server.name] = server
            for server in backend.servers:
                if server.observe == "layer7" and backend.mode != "http":
                    error(server.line, f"{where}: server '{server.name}': 'observe layer7' can only "
                                       "be used in http proxies")
                elif server.observe and not server.check:
                    # haproxy accepts it silently and observes nothing (health_adjust() needs
                    # a check task): splicer does the same, and says so
                    warnings.append(f"{server.file}:{server.line}: {where}: server '{server.name}': "
                                    f"'observe {server.observe}' has no effect without 'check'")
            for rule in backend.use_server:
                if rule.server not in seen:
                    error(rule.line, f"{where}: use-server '{rule.server}' names no server of this "
                                     "backend" + did_you_mean(rule.server, seen))
            if backend.cookie is not None and backend.mode != "http":
                entry = settings["cookie"]
                warnings.append(f"{entry.file}:{entry.line}: {where}: 'cookie' needs mode http; "
                                "it is ignored in mode tcp")
                backend = replace(backend, cookie=None)
            backends.setdefault(section.name, backend)

    for frontend, where, link in frontends:
        for rule in frontend.use_backend if frontend.mode == "http" else ():
            if rule.dynamic is not None:
                continue  # looked up per request (runtime/route.py)
            target = backends.get(rule.backend)
            if target is None:
                what = ("is a frontend, not a backend" if rule.backend in fe_names
                        else "not found" + did_you_mean(rule.backend, backends))
                error(rule.line, f"{where}: use_backend '{rule.backend}' {what}")
            elif target.mode != frontend.mode:
                error(rule.line, f"{where} is in mode {frontend.mode} but its use_backend "
                                 f"'{target.name}' is in mode {target.mode}")
        if link is None or frontend.default_backend is None:
            continue
        target = backends.get(frontend.default_backend)
        if target is None:
            if frontend.default_backend in fe_names:
                error(link.line, f"{where}: default_backend '{frontend.default_backend}' is a "
                                 "frontend, not a backend")
            else:
                error(link.line, f"{where}: default_backend '{frontend.default_backend}' not "
                                 f"found" + did_you_mean(frontend.default_backend, backends))
        elif target.mode != frontend.mode:
            error(link.line, f"{where} is in mode {frontend.mode} but its default_backend "
                             f"'{target.name}' is in mode {target.mode}")

    # one address, one listener: two binds on it would silently share its connections
    by_port: dict[int, list[tuple[str, str, Bind]]] = {}
    for frontend, where, _ in frontends if not errors else ():
        for b in frontend.binds:
            host = "*" if b.host in ("", "*", "0.0.0.0", "::", "[::]") else b.host.lower()
            taken = by_port.setdefault(b.port, [])
            clash = next((t for t in taken if "*" in (t[0], host) or t[0] == host), None)
            if clash is not None:
                error(b.line, f"{where}: bind {b.host or '*'}:{b.port} overlaps bind "
                              f"{clash[2].host or '*'}:{clash[2].port} of {clash[1]} at "
                              f"{clash[2].file}:{clash[2].line}")
            else:
                taken.append((host, where, b))

    if errors:
        raise ConfigErrors(sorted(errors, key=lambda e: e.line))
    return Config(
        path=raw.path,
        global_=global_,
        frontends=tuple(frontend for frontend, _, _ in frontends),
        backends=backends,
        warnings=tuple(warnings),
        userlists=userlists,
        rings=rings,
    )


def _check_userlists(section: RawSection, where: str, userlists: dict, error) -> None:
    """Every ``http_auth*(<userlist>)`` of the section's ACLs (named, or anonymous in a
    condition) names a userlist, and an ``http_auth_group`` ACL's patterns are groups of it
    (haproxy: "unable to find userlist"; a group it does not have can never match)."""
    for entry in section.entries:
        if entry.key == "acl":
            exprs = [entry.value[1]]  # type: ignore[index]
        else:
            cond = getattr(entry.value, "cond", None)
            if cond is None:
                continue
            exprs = [ref for term in cond.terms for _, ref in term if isinstance(ref, AclExpr)]
        for expr in exprs:
            name = expr.fetch.userlist
            if not name:
                continue
            ul = userlists.get(name)
            if ul is None:
                error(entry.line, f"{where}: '{expr.criterion}': userlist '{name}' not found"
                                  + did_you_mean(name, userlists))
            elif expr.criterion.startswith("http_auth_group"):
                for group, _ in expr.patterns:
                    if group not in ul.groups:
                        error(entry.line, f"{where}: '{expr.criterion}': userlist '{name}' has no "
                                          f"group '{group}'" + did_you_mean(group, ul.groups))


def _tarpit(settings: dict[str, Entry]) -> float:
    """`timeout tarpit`, else `timeout connect`, else 0 (haproxy proxy.c), seconds."""
    for key in ("timeout.tarpit", "timeout.connect"):
        value = _value(settings, key, None)
        if value is not None:
            return float(value)  # type: ignore[arg-type]
    return 0.0


def _rings(raw: RawConfig, error) -> dict[str, Ring]:
    """The `ring` sections by name (haproxy 12.5), each one's lines put together (the last
    of a repeated setting wins; `server` lines add up). A name used twice, a server name
    used twice in one ring, a `maxlen` above `size` are errors."""
    rings: dict[str, Ring] = {}
    for section in raw.sections:
        if section.kind != "ring":
            continue
        first = rings.get(section.name)
        if first is not None:
            error(section.line, f"ring '{section.name}' has the same name as the ring declared at "
                                f"{first.file}:{first.line}")
            continue
        values: dict = {}
        servers: list = []
        for entry in section.entries:
            if entry.key == "ring_server":
                name, target = entry.value  # type: ignore[misc]
                if any(n == name for n, _ in servers):
                    error(entry.line, f"ring '{section.name}': server '{name}' is declared twice")
                    continue
                servers.append((name, target))
            else:
                values[entry.key] = entry.value
        ring = Ring(section.name, values.get("ring_description", ""), values.get("ring_format", "raw"),
                    values.get("ring_maxlen", 0), values.get("ring_size", 16384),
                    values.get("ring_timeout.connect", 1.0), values.get("ring_timeout.server", 5.0),
                    tuple(servers), section.file, section.line)
        if ring.maxlen > ring.size:
            error(section.line, f"ring '{section.name}': maxlen {ring.maxlen} is more than its size {ring.size}")
        rings[section.name] = ring
    return rings


def _ring_logs(logs: tuple, rings: dict[str, Ring], error) -> tuple:
    """`logs` with each `log ring@<name>` target replaced by one target per server of that
    ring (its framing, size and timeouts; the ring's format; the `log` line's facility,
    levels and `len`, cut to the ring's maxlen). An unknown ring, or one without a server
    (haproxy keeps such a ring in memory for `show events`; splicer keeps none), is an
    error at the `log` line."""
    out: list = []
    for t in logs:
        if not isinstance(t, LogTarget) or t.kind != "ring":
            out.append(t)
            continue
        ring = rings.get(t.ring)
        if ring is None:
            error(t.line, f"log '{t.address}': no ring section named '{t.ring}'")
            continue
        if not ring.servers:
            error(t.line, f"log '{t.address}': ring '{t.ring}' has no server (splicer keeps no ring in "
                          "memory: a ring forwards to its servers)")
            continue
        maxlen = min(t.maxlen, ring.maxlen) if ring.maxlen else t.maxlen
        for _, server in ring.servers:
            out.append(replace(server, address=f"{t.address}/{server.address}", format=ring.format,
                               maxlen=maxlen, explicit_len=True, facility=t.facility, level=t.level,
                               minlevel=t.minlevel, ring=ring.name, ring_size=ring.size,
                               timeout_connect=ring.timeout_connect, timeout_server=ring.timeout_server,
                               file=t.file, line=t.line))
    return tuple(out)


def _logs(section: RawSection, global_logs: tuple) -> tuple:
    """The section's log targets: its defaults section's `log` lines, then its own, in
    order; `log global` adds the global section's, `no log` empties the list (haproxy)."""
    inherited = section.defaults.entries if section.defaults is not None else []
    logs: list = []
    for entry in [*inherited, *section.entries]:
        if entry.key != "log":
            continue
        if entry.value == "no":
            logs = []
        elif entry.value == "global":
            logs.extend(global_logs)
        else:
            logs.append(entry.value)
    return tuple(logs)


def _log_fields(section: RawSection, settings: dict[str, Entry], global_logs: tuple, rings: dict, error,
                mode: object,
                where: str, warnings: list) -> dict:
    """A Frontend's logging fields: targets, format, dontlognull and captures. The last of
    `option httplog`, `option tcplog` and `log-format` wins (each sets the format); with
    none, "" (haproxy's basic default format, format.DEFAULT); `option httplog` in mode tcp falls back to
    `option tcplog` with a warning, as haproxy does."""
    from splicer.log.format import TCPLOG

    entry = settings.get("log_format")
    fmt = ""
    if entry is not None:
        kind, fmt = entry.value  # type: ignore[misc]
        if kind == "httplog" and mode != "http":
            warnings.append(f"{entry.file}:{entry.line}: {where}: 'option httplog' needs mode http; "
                            "using 'option tcplog'")
            fmt = TCPLOG
    return {"logs": _ring_logs(_logs(section, global_logs), rings, error), "log_format": fmt,
            "dontlognull": bool(_value(settings, "dontlognull", False)),
            "capture_request": tuple(e.value for e in section.entries if e.key == "capture_request"),
            "capture_response": tuple(e.value for e in section.entries if e.key == "capture_response")}


def _effective(section: RawSection) -> dict[str, Entry]:
    """Last entry per key: the defaults section's, then the section's own (haproxy order)."""
    settings: dict[str, Entry] = {}
    inherited = section.defaults.entries if section.defaults is not None else []
    for entry in [*inherited, *section.entries]:
        if entry.key not in _ACCUMULATED:
            settings[entry.key] = entry
    return settings


def _value(settings: dict[str, Entry], key: str, default: object) -> object:
    entry = settings.get(key)
    return default if entry is None else entry.value


def _global(raw: RawConfig) -> Global:
    values: dict[str, object] = {}
    for section in raw.sections:
        if section.kind == "global":
            for entry in section.entries:
                if entry.key == "log":  # log lines add up, in file order
                    values["logs"] = (*values.get("logs", ()), entry.value)
                elif entry.key == "cpu_map":  # cpu-map lines add up; a later one for a worker wins
                    merged = dict(values.get("cpu_map", ()))
                    merged.update(entry.value)
                    values["cpu_map"] = tuple(sorted(merged.items()))
                elif entry.key == "stats_sockets":  # every `stats socket` line is one socket
                    values["stats_sockets"] = (*values.get("stats_sockets", ()), entry.value)
                else:
                    values[entry.key] = entry.value
    return Global(**values)  # type: ignore[arg-type]


def _errorfiles(settings: dict[str, Entry]) -> tuple[tuple[int, bytes], ...]:
    """`errorfile` settings (key ``errorfile.<code>``) as sorted (code, response) pairs."""
    return tuple(sorted((int(k.split(".", 1)[1]), e.value) for k, e in settings.items()  # type: ignore[misc]
                        if k.startswith("errorfile.")))


def _rules(section: RawSection, key: str, bound: dict | None = None) -> tuple:
    """The section's own rules under `key`, in file order, with their conditions bound
    (`bound`: {id(entry): rule} from _bind_conditions)."""
    bound = bound or {}
    return tuple(bound.get(id(entry), entry.value) for entry in section.entries if entry.key == key)


def _bind_conditions(section: RawSection, where: str, error) -> dict:
    """Bind the conditions of a section's rules to its ACLs (haproxy 7.1, 7.2).

    Returns:
        {id(entry): the entry's rule with its condition bound}, for every rule entry that
        has a condition whose names all resolved; the other names are reported to `error`:
        an unknown name, or one declared only below the rule that uses it.
    """
    exprs: dict[str, list] = {}
    first_line: dict[str, int] = {}
    for entry in section.entries:
        if entry.key == "acl":
            name, expr = entry.value  # type: ignore[misc]
            exprs.setdefault(name, []).append(expr)
            first_line.setdefault(name, entry.line)
    acls = {name: Acl(name, tuple(e)) for name, e in exprs.items()}
    declared: set[str] = set()
    out = {}
    for entry in section.entries:
        if entry.key == "acl":
            declared.add(entry.value[0])  # type: ignore[index]
            continue
        if entry.key not in _CONDITIONAL:
            continue
        rule = entry.value
        cond = getattr(rule, "cond", None)
        if cond is None:
            continue
        missing = False
        for name in cond.names:
            if name in declared or (name in PREDEFINED and name not in acls):
                continue
            missing = True
            what = f"'{_KEYWORD[entry.key]}' condition"
            if name in acls:
                error(entry.line, f"{where}: ACL '{name}' is used in a {what} before it is declared "
                                  f"(at line {first_line[name]})")
            else:
                error(entry.line, f"{where}: unknown ACL '{name}' in a {what}"
                                  + did_you_mean(name, [*declared, *PREDEFINED]))
        if not missing:
            out[id(entry)] = dataclasses.replace(rule, cond=cond.bind(acls))  # type: ignore[type-var]
    return out


_SPLICE_KEYS = ("splice_request", "splice_response", "splice_auto")


def _stats_rules(section: RawSection, settings: dict[str, Entry], bound: dict | None = None) -> tuple:
    """The stats rule (http/service.py stats_rule()) to append to the http-request rules of
    a section where any `stats` keyword enabled them (its own or its defaults section's),
    in mode http; () otherwise. `stats auth` lines add up, the defaults section's first."""
    enabled = settings.get("stats_enable")
    if enabled is None or _value(settings, "mode", "tcp") != "http":
        return ()
    inherited = section.defaults.entries if section.defaults is not None else []
    auth = tuple(e.value for e in [*inherited, *section.entries] if e.key == "stats_auth")
    node = _value(settings, "stats_show_node", None)
    desc = _value(settings, "stats_show_desc", None)
    stats = StatsSettings(
        uri=_value(settings, "stats_uri", StatsSettings.uri),  # type: ignore[arg-type]
        refresh=float(_value(settings, "stats_refresh", 0.0)),  # type: ignore[arg-type]
        realm=str(_value(settings, "stats_realm", StatsSettings.realm)),
        auth=auth,
        admin=_rules(section, "stats_admin", bound),
        show_legends=bool(_value(settings, "stats_show_legends", False)),
        show_version=bool(_value(settings, "stats_show_version", False))
        and "stats_hide_version" not in settings,
        show_node=(node or section.name) if node is not None else None,
        show_desc=desc if desc is not None else None,
        proxy=section.name,
    )
    return (stats_rule(stats, enabled.file, enabled.line),)


def _frontend(section: RawSection, settings: dict[str, Entry], link: Entry | None,
              bound: dict | None = None) -> Frontend:
    binds: list[Bind] = []
    for entry in section.entries:
        if entry.key == "bind":
            binds.extend(entry.value)  # type: ignore[arg-type]
    if section.kind == "listen" and link is None:
        default_backend: str | None = section.name
    else:
        default_backend = None if link is None else str(link.value)
    return Frontend(
        name=section.name,
        mode=str(_value(settings, "mode", "tcp")),
        binds=tuple(binds),
        default_backend=default_backend,
        maxconn=int(_value(settings, "maxconn", 0)),  # type: ignore[arg-type]
        forwardfor=_value(settings, "forwardfor", None),  # type: ignore[arg-type]
        splice_request=bool(_value(settings, "splice_request", False)),
        splice_response=bool(_value(settings, "splice_response", False)),
        splice_auto=bool(_value(settings, "splice_auto", False)),
        splice_named=any(k in settings for k in _SPLICE_KEYS),
        http_buffer_request=bool(_value(settings, "http_buffer_request", False)),
        accept_invalid_http_request=bool(_value(settings, "accept_invalid_http_request", False)),
        idle_close_on_response=bool(_value(settings, "idle_close_on_response", True)),
        ignore_probes=bool(_value(settings, "ignore_probes", False)),
        errorfiles=_errorfiles(settings),
        http_request=_rules(section, "http_request", bound) + _stats_rules(section, settings, bound),
        http_response=_rules(section, "http_response", bound),
        use_backend=_rules(section, "use_backend", bound),
        timeouts=Timeouts(**{name: _value(settings, "timeout." + name, None)
                             for name in _FRONT_TIMEOUTS}),  # type: ignore[arg-type]
        tarpit=_tarpit(settings),
        file=section.file,
        line=section.line,
    )


def _servers(section: RawSection) -> tuple[Server, ...]:
    """The section's servers with the `default-server` options in force above each one
    (the inherited defaults section's lines first), under the line's own options."""
    defaults: dict[str, object] = {}
    inherited = section.defaults.entries if section.defaults is not None else []
    for entry in inherited:
        if entry.key == "default_server":
            defaults.update(entry.value)  # type: ignore[arg-type]
    servers = []
    for entry in section.entries:
        if entry.key == "default_server":
            defaults.update(entry.value)  # type: ignore[arg-type]
        elif entry.key == "server":
            server: Server = entry.value  # type: ignore[assignment]
            extra = {k: v for k, v in defaults.items() if k not in server.explicit}
            servers.append(replace(server, **extra) if extra else server)
    return tuple(servers)


def _backend(section: RawSection, settings: dict[str, Entry], bound: dict | None = None) -> Backend:
    servers = _servers(section)
    return Backend(
        name=section.name,
        mode=str(_value(settings, "mode", "tcp")),
        balance=str(_value(settings, "balance", "roundrobin")),
        balance_args=_value(settings, "balance_args", None),  # type: ignore[arg-type]
        hash_type=_value(settings, "hash_type", HashType()),  # type: ignore[arg-type]
        hash_balance_factor=int(_value(settings, "hash_balance_factor", 0)),  # type: ignore[arg-type]
        allbackups=bool(_value(settings, "allbackups", False)),
        servers=servers,  # type: ignore[arg-type]
        forwardfor=_value(settings, "forwardfor", None),  # type: ignore[arg-type]
        splice_request=bool(_value(settings, "splice_request", False)),
        splice_response=bool(_value(settings, "splice_response", False)),
        splice_auto=bool(_value(settings, "splice_auto", False)),
        splice_named=any(k in settings for k in _SPLICE_KEYS),
        retries=int(_value(settings, "retries", 3)),  # type: ignore[arg-type]
        redispatch=bool(_value(settings, "redispatch", False)),
        retry_on=frozenset(_value(settings, "retry_on", frozenset({"conn-failure"}))),  # type: ignore[arg-type]
        forwarded=tuple(_value(settings, "forwarded", ())),  # type: ignore[arg-type]
        http_buffer_request=bool(_value(settings, "http_buffer_request", False)),
        abortonclose=bool(_value(settings, "abortonclose", False)),
        httpchk=_value(settings, "httpchk", None),  # type: ignore[arg-type]
        check_expect=tuple(_value(settings, "check_expect", ())),  # type: ignore[arg-type]
        errorfiles=_errorfiles(settings),
        http_request=(_rules(section, "http_request", bound) + _stats_rules(section, settings, bound)
                      if section.kind == "backend" else ()),
        http_response=_rules(section, "http_response", bound) if section.kind == "backend" else (),
        cookie=_value(settings, "cookie", None),
        persist=bool(_value(settings, "persist", False)),
        use_server=_rules(section, "use_server", bound),
        force_persist=_rules(section, "force_persist", bound),
        ignore_persist=_rules(section, "ignore_persist", bound),
        http_reuse=str(_value(settings, "http_reuse", "safe")),
        timeouts=Timeouts(**{name: _value(settings, "timeout." + name, None)
                             for name in _BACK_TIMEOUTS}),  # type: ignore[arg-type]
        tarpit=_tarpit(settings),
        load_server_state=str(_value(settings, "load_server_state", "none")),
        server_state_file_name=str(_value(settings, "server_state_file_name", "")),
        file=section.file,
        line=section.line,
    )
