"""The operator's view of the runtime objects: each frontend's, backend's and server's
counters together with its state, as Proxy.stats() returns them.

Rule: this module reads the runtime objects and never changes what they decide; the
renderers (splicer/report/) turn its dicts into CSV, HTML and Prometheus text. Field names
are haproxy's `show stat` column names (management.txt 9.1) wherever one exists.

Theory of operation: counters are plain integers kept by the objects themselves. Rates
(haproxy's `rate`, `req_rate`: events over the last elapsed second) are sampled once a
second by a RateSampler timer from the cumulative counters, so nothing on the request path
pays for them. Server status is worked out as haproxy's stats_fill_sv_computestate() does,
from the admin flags, the health check's counter and the balancer's state.
"""
from __future__ import annotations

import asyncio
import math

from splicer.balance.base import WEIGHT_SCALE
from splicer.health.state import CheckStatus
from splicer.stats import Rate

SAMPLE_EVERY = 1.0
"""Seconds between two rate samples (haproxy's rates are per second)."""


class RateSampler:
    """Samples the session and request counters of a Proxy once a second (stats.Rate).

    Args:
        proxy: the runtime Proxy.

    Attributes:
        rates: {key: Rate}; keys are ("fe", name, "rate"|"req_rate"), ("be", name) and
            ("srv", backend, server).
    """

    def __init__(self, proxy) -> None:
        self.proxy = proxy
        self.rates: dict[tuple, Rate] = {}
        self._timer: asyncio.TimerHandle | None = None

    def start(self) -> None:
        """Take a first sample now and one every SAMPLE_EVERY seconds until stop()."""
        self._tick()

    def stop(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def rate(self, key: tuple) -> Rate:
        r = self.rates.get(key)
        if r is None:
            r = self.rates[key] = Rate()
        return r

    def _tick(self) -> None:
        p = self.proxy
        now = p.loop.time()
        for fe in p.frontends:
            self.rate(("fe", fe.name, "rate")).sample(fe.counters.stot, now)
            self.rate(("fe", fe.name, "req_rate")).sample(fe.counters.req_tot, now)
        for be in p.backends.values():
            self.rate(("be", be.name)).sample(be.counters.stot + be.counters.reused, now)
            be.note_availability()
            for s in be.servers:
                self.rate(("srv", be.name, s.model.name)).sample(s.counters.stot + s.counters.reused, now)
        self._timer = p.loop.call_at(now + SAMPLE_EVERY, self._tick)


def proxy_ids(proxy) -> dict[str, int]:
    """haproxy's proxy ids (the `iid` column): 1, 2... in the order the sections are written
    in the configuration, a `listen` section's frontend and backend sharing one."""
    lines = {fe.name: (fe.model.file, fe.model.line) for fe in proxy.frontends}
    for be in proxy.backends.values():
        lines.setdefault(be.name, (be.model.file, be.model.line))
    return {name: k + 1 for k, name in enumerate(sorted(lines, key=lambda n: lines[n]))}


def _rates(sampler: RateSampler | None, key: tuple) -> tuple[int, int]:
    if sampler is None:
        return 0, 0
    r = sampler.rates.get(key)
    return (0, 0) if r is None else (r.rate, r.rate_max)


def server_status(srv, up: bool) -> str:
    """A server's `status` column as haproxy prints it (src/stats-proxy.c
    stats_fill_sv_computestate()): "MAINT"; "UP", "UP 2/3" (checks failing: health - rise
    + 1 of fall left), "DRAIN", "DRAIN 2/3", "no check" (UP, unchecked, or its checks turned
    off by `disable health`); "DOWN", "DOWN 1/2"
    (checks passing: health of rise).

    Args:
        srv: the runtime Server.
        up: the balancer's up flag for it.
    """
    if "MAINT" in srv.admin:
        return "MAINT"
    health = srv.health
    checked = health is not None and srv.model.check and srv.checking  # (`disable health`: "no check")
    if checked:
        st = health.state
        up = st.up
        h, rise, fall, full = st.health, st.rise, st.fall, st.full
    if up:
        going_down = checked and h < full
        if "DRAIN" in srv.admin:
            return f"DRAIN {h - rise + 1}/{fall}" if going_down else "DRAIN"
        if going_down:
            return f"UP {h - rise + 1}/{fall}"
        return "UP" if checked else "no check"
    if checked and h > 0:
        return f"DOWN {h}/{rise}"
    return "DOWN"


def server_stats(be, srv, now: float, sampler: RateSampler | None = None) -> dict:
    """One server's entry of Proxy.stats(): its Counters plus

    scur/smax (requests served now / most at once), slim (maxconn, None: none), qlimit
    (maxqueue, None: none), status (server_status()), weight (effective weight, rounded up
    as haproxy's), uweight (configured), act/bck (1/0: active or backup), backup (bool),
    admin (sorted flags), checked (bool), check_status ("INI", "L4OK"...; "" unchecked),
    check_code, check_duration (ms), check_desc, last_chk (text from outside), check_rise,
    check_fall, check_health, chkfail, chkdown, lastchg and downtime (seconds), throttle
    (slowstart %, None when not ramping), rate/rate_max (sessions per second), addr, sid,
    cookie, idle_conn_cur / used_conn_cur (its connections idle in the pool / lent to
    streams now), need_conn_est (the pool's estimate of the connections needed at once,
    runtime/pool.py; haproxy's est_need_conns).
    """
    b = be.balancer
    i = srv.index
    m = srv.model
    health = srv.health if m.check else None
    # checks turned off (`disable health`): no check status, as haproxy prints one only for
    # a server whose checks are enabled (stats_fill_sv_stats: CHK_ST_ENABLED)
    report = getattr(health, "report", None) if srv.checking else None
    warming = b.warming(i, now)
    d = srv.counters.as_dict()
    rate, rate_max = _rates(sampler, ("srv", be.name, m.name))
    d.update(
        scur=b.active[i], smax=b.active_max[i], slim=m.maxconn or None, qlimit=m.maxqueue or None,
        status=server_status(srv, b.up[i]), weight=math.ceil(b.eweight(i, now) / WEIGHT_SCALE),
        uweight=srv.weight, act=0 if m.backup else 1, bck=1 if m.backup else 0, backup=m.backup,
        admin=sorted(srv.admin), checked=health is not None,
        check_status=report.status if report else "", check_code=report.code if report else 0,
        check_duration=report.duration_ms if report else 0,
        check_desc=_desc(report.status) if report else "",
        last_chk=report.text if report else "",
        check_rise=m.rise, check_fall=m.fall,
        check_health=health.state.health if health is not None else 0,
        chkfail=report.chkfail if report else 0, chkdown=srv.avail.chkdown,
        lastchg=srv.avail.lastchg(now), downtime=srv.avail.downtime(now),
        throttle=None if warming is None else int(warming * 100),
        rate=rate, rate_max=rate_max, addr=f"{srv.addr[0]}:{srv.addr[1]}", sid=i + 1,
        cookie=m.cookie, idle=len(srv.idle),
        idle_conn_cur=len(srv.idle), used_conn_cur=len(srv.leases), need_conn_est=srv.idle.need,
    )
    return d


def _desc(status: str) -> str:
    try:
        return CheckStatus(status).desc
    except ValueError:
        return "Initializing" if status == "INI" else ""


def backend_stats(be, now: float, sampler: RateSampler | None = None, iid: int = 0) -> dict:
    """One backend's entry of Proxy.stats(): its Counters plus qcur, qmax, scur (requests
    served now), status (Backend.up: "UP" while a server is usable or when it has none, else
    "DOWN"), weight/uweight (sums
    over the group in use), act/bck (usable active / backup servers), chkdown, lastchg,
    downtime (of the backend as a whole, as haproxy), rate/rate_max, mode, algo, cookie,
    iid, and "servers": {name: server_stats()}."""
    be.note_availability()
    b = be.balancer
    m = be.model
    group = b.group()
    rate, rate_max = _rates(sampler, ("be", be.name))
    d = be.counters.as_dict()
    d.update(
        qcur=be.queued, qmax=be.qmax, scur=sum(b.active), smax=None,
        status="UP" if be.up else "DOWN",
        weight=sum(math.ceil(b.eweight(k, now) / WEIGHT_SCALE) for k in group),
        uweight=sum(b.weights[k] for k in group),
        act=sum(1 for s in be.servers if not s.model.backup and b.alive(s.index)),
        bck=sum(1 for s in be.servers if s.model.backup and b.alive(s.index)),
        chkdown=be.avail.chkdown, lastchg=be.avail.lastchg(now), downtime=be.avail.downtime(now),
        rate=rate, rate_max=rate_max, mode=m.mode, algo=m.balance, iid=iid,
        cookie=be.cookie.name if be.cookie is not None else "",
        servers={s.model.name: server_stats(be, s, now, sampler) for s in be.servers},
    )
    return d


def frontend_stats(fe, sampler: RateSampler | None = None, iid: int = 0) -> dict:
    """One frontend's entry of Proxy.stats(): its Counters plus scur (client connections
    open now), smax, slim (its maxconn), status ("OPEN", or "FULL" while it does not
    accept because a maxconn is reached: haproxy's words), rate/rate_max (sessions per
    second), req_rate/req_rate_max (requests per second), mode, iid."""
    rate, rate_max = _rates(sampler, ("fe", fe.name, "rate"))
    req_rate, req_rate_max = _rates(sampler, ("fe", fe.name, "req_rate"))
    d = fe.counters.as_dict()
    d.update(scur=fe.active, smax=getattr(fe, "smax", fe.active), slim=fe.maxconn,
             status="FULL" if fe.paused else "OPEN", rate=rate, rate_max=rate_max,
             req_rate=req_rate, req_rate_max=req_rate_max, mode=fe.model.mode, iid=iid)
    return d
