"""The runtime API's commands, run by a worker on its own runtime objects.

Rule: a worker runs what the master sends it (control.py ops "command" and "admin") and
answers with plain data: text, or the counters and captures the master merges over every
worker (admin/merge.py). Parsing and rendering are admin/'s; what each change does to a
server is runtime/backend.py's (set_admin, set_weight, set_address, set_checking).

The same functions apply the server-state-file (haproxy `load-server-state-from-file`) and
the changes the master remembers (a restarted or reloaded worker starts with them), so a
change means the same whether it came from an operator, a file or a replay.
"""
from __future__ import annotations

import logging
import os
from dataclasses import fields

from splicer.admin import servers_state as st
from splicer.admin.commands import Answer, Command, Level, effective_weight, help_text, parse
from splicer.admin.line import answer, split_commands
from splicer.http.termination import Cause
from splicer.runtime import status


log = logging.getLogger("splicer")


def server_names(proxy) -> dict[str, tuple[str, ...]]:
    """{backend name: its server names}, for admin.commands.parse()."""
    return {name: tuple(s.model.name for s in be.servers) for name, be in proxy.backends.items()}


def _server(proxy, cmd: Command):
    be = proxy.backends[cmd.backend]
    return be, next(s for s in be.servers if s.model.name == cmd.server)


def states_of(proxy, backend: str = "") -> list[st.ServerState]:
    """Every server's state (of `backend` only, when given) as `show servers state` prints it."""
    out = []
    now = proxy.loop.time()
    ids = status.proxy_ids(proxy)  # the `iid` of `show stat`: haproxy's proxy ids
    for be in proxy.backends.values():
        be_id = ids[be.name]
        if backend and be.name != backend:
            continue
        for srv in be.servers:
            m = srv.model
            i = srv.index
            if be.balancer.up[i]:
                op = st.SRV_ST_STARTING if be.balancer.warming(i, now) is not None else st.SRV_ST_RUNNING
            else:
                op = st.SRV_ST_STOPPED
            admin = ((st.SRV_ADMF_FMAINT if "MAINT" in srv.admin else 0)
                     | (st.SRV_ADMF_FDRAIN if "DRAIN" in srv.admin else 0))
            h = srv.health
            chk = st.CHECK_STATUS_CODES["INI"]
            result = st.CHK_RES_UNKNOWN
            health = 0
            if h is not None:
                health = h.state.health
                if h.last_status is not None:
                    chk = st.CHECK_STATUS_CODES[h.last_status.value]
                    result = st.CHK_RES_PASSED if h.last_status.passed else st.CHK_RES_FAILED
            check = ((st.CHK_ST_CONFIGURED if m.check else 0) | (st.CHK_ST_ENABLED if m.check and srv.checking else 0)
                     | (st.CHK_ST_PAUSED if m.check and "MAINT" in srv.admin else 0))
            out.append(st.ServerState(
                be_id=be_id, be_name=be.name, srv_id=i + 1, srv_name=m.name, srv_addr=srv.addr[0],
                op_state=op, admin_state=admin, uweight=srv.weight, iweight=m.weight,
                time_since_last_change=int(now - srv.last_change), check_status=chk, check_result=result,
                check_health=health, check_state=check, port=srv.addr[1]))
    return out


def _session_lines(proxy) -> str:
    """`show sess` on this worker: one line per stream in flight (an http session between
    two requests has none, as in haproxy); its age is its session's."""
    now = proxy.loop.time()
    lines = []
    for s in list(proxy.busy):
        stream = s.stream
        if stream is None:
            continue
        be = stream.be.name if stream.be is not None else "<NONE>"
        srv = stream.server.model.name if stream.server is not None else "<none>"
        phase = stream.shown_phase.value
        proto = "tcpv4" if isinstance(s.peer, tuple) else "unix_stream"
        lines.append(f"0x{id(s):x}: proto={proto} src={s.client_ip}:{s.client_port} fe={s.fe.name} "
                     f"be={be} srv={srv} age={int(now - s.started)}s phase={phase} worker={proxy.worker}\n")
    engine = proxy.engine
    for lane in proxy.lanes:  # the express lane's requests in flight (runtime/express.py)
        for credit in list(lane.inflight):
            s = credit.session
            phase = "D" if engine is not None and engine.relaying(credit.head_id) else "H"
            proto = "tcpv4" if isinstance(s.peer, tuple) else "unix_stream"
            lines.append(f"0x{id(s):x}: proto={proto} src={s.client_ip}:{s.client_port} fe={s.fe.name} "
                         f"be={lane.be.name} srv={credit.lease.server.model.name} age={int(now - s.started)}s "
                         f"phase={phase} worker={proxy.worker}\n")
    return "".join(lines)


def _clear_counters(proxy, every: bool) -> None:
    """`clear counters`: the max values (haproxy's smax, qmax, rate_max...) of every
    frontend, backend and server start again from their current values; with `all`, every
    counter starts again from 0 too (haproxy cli_parse_clear_counters())."""
    for fe in proxy.frontends:
        fe.smax = fe.active
    for be in proxy.backends.values():
        be.qmax = be.queued
        b = be.balancer
        b.active_max[:] = b.active
    rates = getattr(proxy, "rates", None)
    for r in (rates.rates.values() if rates is not None else ()):
        r.rate_max = r.rate
    objs = [fe.counters for fe in proxy.frontends]
    for be in proxy.backends.values():
        objs.append(be.counters)
        objs += [s.counters for s in be.servers]
    for c in objs:
        for f in fields(c):
            if every or f.name.endswith("max"):
                setattr(c, f.name, {} if isinstance(getattr(c, f.name), dict) else 0)


def execute(proxy, cmd: Command) -> dict:
    """Run one parsed command on this worker.

    Args:
        proxy: the worker's Proxy.
        cmd: a Command of any kind but SESSION, its names checked against this worker's
            configuration (parse(..., servers=server_names(proxy))).

    Returns:
        {"text": the answer} for most commands; {"data": {...}} for those the master
        merges over the workers: "show info" / "show stat" / "show counters" (the
        worker's Proxy.stats() under "stats"), "show errors" (its captures under "errors").
    """
    name = cmd.name
    if name in ("show info", "show stat", "show counters"):
        return {"data": {"stats": proxy.stats(), "worker": proxy.worker}}
    if name == "show errors":
        return {"data": {"errors": [c.as_dict() for c in proxy.errors]}}
    if name == "show servers state":
        return {"text": st.render(states_of(proxy, cmd.backend))}
    if name == "show backend":
        return {"text": "# name\n" + "".join(f"{n}\n" for n in proxy.backends)}
    if name == "show sess":
        return {"text": _session_lines(proxy)}
    if name == "clear counters":
        _clear_counters(proxy, cmd.action == "all")
        return {"text": ""}
    be, srv = _server(proxy, cmd)
    i = srv.index
    if name in ("enable server", "disable server"):
        be.set_admin(i, cmd.action)
    elif name in ("enable health", "disable health"):
        if not srv.model.check:
            verb = "enable" if cmd.action == "on" else "disable"
            return {"text": f"Health check was not configured on this server, cannot {verb}.\n"}
        be.set_checking(i, cmd.action == "on")
    elif name == "shutdown sessions server":
        n = be.shutdown_streams(i, Cause.KILLED, clients=True)
        if n:
            log.warning("backend %s server %s: %d stream(s) shut down (runtime API)", be.name, srv.model.name, n)
    elif cmd.action == "state":
        be.set_admin(i, str(cmd.value))
    elif cmd.action == "weight":
        be.set_weight(i, effective_weight(int(cmd.value), cmd.relative, srv.model.weight))
    elif name == "get weight":
        return {"text": f"{srv.weight} (initial {srv.model.weight})\n"}
    elif cmd.action == "addr":
        # haproxy server_set_inetaddr(): what changed is said, "nothing changed" otherwise
        old_host, old_port = srv.addr
        port = old_port if cmd.port is None else cmd.port
        changes = []
        if str(cmd.value) != old_host:
            changes.append(f"IP changed from '{old_host}' to '{cmd.value}'")
        if port != old_port:
            changes.append(f"port changed from '{old_port}' to '{port}'")
        if not changes:
            return {"text": "nothing changed\n"}
        be.set_address(i, str(cmd.value), port)
        return {"text": ", ".join(changes) + " by 'stats socket command'\n"}
    return {"text": ""}


def run_line(proxy, line: str) -> str:
    """Run every command of one CLI line on this worker alone, at admin level (control.py
    "command" op: Proxy.cluster_command() and the stats page's actions come this way);
    the answer of each as the socket would send it, merged answers over this worker only."""
    from splicer.admin.merge import combine

    out = []
    names = server_names(proxy)
    for words in split_commands(line):
        got = parse(words, Level.ADMIN, names)
        if isinstance(got, Answer):
            out.append(answer(got.text))
        elif got.name == "help":  # (what the master CLI's `@<n> help` shows: the admin level's)
            out.append(answer(help_text(Level.ADMIN, tuple(got.value))))
        elif got.name == "show cli level":
            out.append(answer("admin"))
        elif got.kind == "session":  # prompt, quit, operator, user: nothing to do on a worker
            out.append(answer(""))
        else:
            out.append(answer(combine(got, [execute(proxy, got)], proxy.admin_context())))
    return "".join(out)


def apply_changes(proxy, changes) -> None:
    """Replay the changes the master remembered (lists of words, oldest first) on this
    new worker; one that no longer applies (a server gone after a reload) is skipped."""
    names = server_names(proxy)
    for words in changes:
        got = parse(tuple(words), Level.ADMIN, names)
        if isinstance(got, Command) and got.kind == "change":
            execute(proxy, got)


def apply_server_states(proxy, states: list[st.ServerState], backends: set[str] | None) -> int:
    """Apply saved states (a server-state-file) to the servers they name (haproxy
    srv_state_srv_update(), by backend and server name): maintenance and drain, weight
    (unless the configured weight changed since the file was saved), address and port,
    health checks turned off. The operational state is not restored:
    the checks find it again. `backends`: the names of the backends that load the file
    (None: every one). Returns the servers updated."""
    n = 0
    for s in states:
        be = proxy.backends.get(s.be_name)
        if be is None or (backends is not None and be.name not in backends):
            continue
        srv = next((x for x in be.servers if x.model.name == s.srv_name), None)
        if srv is None:
            continue
        i = srv.index
        if s.admin_state & st.SRV_ADMF_FMAINT:
            be.set_admin(i, "maint")
        elif s.admin_state & st.SRV_ADMF_FDRAIN:
            be.set_admin(i, "drain")
        elif not s.admin_state & st.SRV_ADMF_CMAINT and "MAINT" in srv.admin and not srv.model.disabled:
            be.set_admin(i, "ready")
        if 0 <= s.uweight <= 256 and s.iweight == srv.model.weight:  # not when the configuration changed it
            be.set_weight(i, s.uweight)
        if s.srv_addr and s.port:
            be.set_address(i, s.srv_addr, s.port)
        if srv.model.check and s.check_state & st.CHK_ST_CONFIGURED and not s.check_state & st.CHK_ST_ENABLED:
            be.set_checking(i, False)
        n += 1
    return n


def state_file_of(g, be) -> str | None:
    """The state file backend model `be` loads at start, by its `load-server-state-from-file`
    (haproxy): "global": `server-state-file`; "local": `server-state-file-name`, else the
    backend's name; a relative path is taken in `server-state-base` (or the current
    directory). None: it loads none."""
    if be.load_server_state == "global":
        name = g.server_state_file
    elif be.load_server_state == "local":
        name = be.server_state_file_name or be.name
    else:
        return None
    if not name:
        return None
    return name if name.startswith("/") or not g.server_state_base else os.path.join(g.server_state_base, name)


def load_server_state_file(proxy) -> None:
    """At start, apply the state files to the backends that load one (haproxy
    apply_server_state(); each file is read once). A missing or unreadable file is logged
    and changes nothing, as in haproxy."""
    g = proxy.config.global_
    files: dict[str, set[str]] = {}
    for name, be in proxy.backends.items():
        path = state_file_of(g, be.model)
        if path is not None:
            files.setdefault(path, set()).add(name)
    for path, wanted in files.items():
        try:
            with open(path, encoding="utf-8", errors="replace") as f:
                states = st.parse(f.read())
        except OSError as exc:
            log.warning("server-state-file %s: %s; servers start as configured", path, exc.strerror or exc)
            continue
        except st.StateFileError as exc:
            log.warning("server-state-file %s: %s; servers start as configured", path, exc)
            continue
        n = apply_server_states(proxy, states, wanted)
        if proxy.worker == 1:
            log.info("server-state-file %s: %d server(s) restored", path, n)
