"""The Prometheus exposition of the stats (haproxy's promex: `http-request use-service
prometheus-exporter`), through prometheus-client.

Rule: a pure function of a stats dict. Each scrape builds a CollectorRegistry of its own
with one collector that turns the (merged) stats into metric families, and renders it with
prometheus_client's generate_latest(); nothing is kept between scrapes, no global registry
is touched. Metric names and labels are haproxy's (addons/promex/README):
`haproxy_frontend_*` with a `proxy` label, `haproxy_backend_*` with `proxy`,
`haproxy_server_*` with `proxy` and `server`; the status metrics carry one sample per
`state` (1 for the current one), `haproxy_*_http_responses_total` one per `code` class.
splicer's own metrics are named `splicer_*`: body bytes spliced and copied per object,
the engine's and the loop's pipes.
"""
from __future__ import annotations

from prometheus_client.core import CollectorRegistry, CounterMetricFamily, GaugeMetricFamily
from prometheus_client.exposition import CONTENT_TYPE_PLAIN_0_0_4, generate_latest

CONTENT_TYPE = CONTENT_TYPE_PLAIN_0_0_4
"""The Content-Type of the exposition: the text format 0.0.4, as haproxy's promex sends
(generate_latest() writes it; every Prometheus reads it)."""

SERVER_STATES = ("DOWN", "UP", "MAINT", "DRAIN", "NOLB")
"""haproxy_server_status's `state` values (promex_srv_st[])."""

PROXY_STATES = ("DOWN", "UP")
"""haproxy_frontend_status's and haproxy_backend_status's `state` values."""

CHECK_STATES = ("L4OK", "L4TOUT", "L4CON", "L7OK", "L7TOUT", "L7RSP", "L7STS")
"""haproxy_server_check_status's `state` values splicer's checks can end with."""

CODES = (("1xx", "hrsp_1xx"), ("2xx", "hrsp_2xx"), ("3xx", "hrsp_3xx"), ("4xx", "hrsp_4xx"),
         ("5xx", "hrsp_5xx"))

# (metric name, help, stats key, counter?) per object kind; a key whose value is None is
# not exported for that object (haproxy leaves such fields out too)
_FRONTEND = (
    ("current_sessions", "Number of current sessions.", "scur", False),
    ("max_sessions", "Maximum observed number of active sessions.", "smax", False),
    ("limit_sessions", "Configured session limit.", "slim", False),
    ("sessions_total", "Total number of sessions.", "stot", True),
    ("bytes_in_total", "Current total of incoming bytes.", "bin", True),
    ("bytes_out_total", "Current total of outgoing bytes.", "bout", True),
    ("requests_denied_total", "Total number of denied requests.", "dreq", True),
    ("responses_denied_total", "Total number of denied responses.", "dresp", True),
    ("request_errors_total", "Total number of request errors.", "ereq", True),
    ("max_session_rate", "Maximum observed number of sessions per second.", "rate_max", False),
    ("http_requests_rate_max", "Maximum observed number of HTTP requests per second.", "req_rate_max", False),
    ("http_requests_total", "Total number of HTTP requests received.", "req_tot", True),
    ("connections_rate_max", "Maximum observed number of connections per second.", "rate_max", False),
    ("connections_total", "Total number of connections.", "stot", True),
    ("intercepted_requests_total", "Total number of intercepted HTTP requests.", "intercepted", True),
)
_BACKEND = (
    ("current_queue", "Number of current queued connections.", "qcur", False),
    ("max_queue", "Maximum observed number of queued connections.", "qmax", False),
    ("current_sessions", "Number of current sessions.", "scur", False),
    ("sessions_total", "Total number of sessions.", "stot", True),
    ("bytes_in_total", "Current total of incoming bytes.", "bin", True),
    ("bytes_out_total", "Current total of outgoing bytes.", "bout", True),
    ("requests_denied_total", "Total number of denied requests.", "dreq", True),
    ("responses_denied_total", "Total number of denied responses.", "dresp", True),
    ("connection_errors_total", "Total number of connection errors.", "econ", True),
    ("response_errors_total", "Total number of response errors.", "eresp", True),
    ("retry_warnings_total", "Total number of retry warnings.", "wretr", True),
    ("redispatch_warnings_total", "Total number of redispatch warnings.", "wredis", True),
    ("weight", "Service weight.", "weight", False),
    ("active_servers", "Current number of active servers.", "act", False),
    ("backup_servers", "Current number of backup servers.", "bck", False),
    ("check_up_down_total", "Total number of failed checks causing UP to DOWN server transitions.",
     "chkdown", True),
    ("check_last_change_seconds", "How long ago the last server state changed, in seconds.", "lastchg", False),
    ("downtime_seconds_total", "Total downtime (in seconds) for the service.", "downtime", True),
    ("max_session_rate", "Maximum observed number of sessions per second.", "rate_max", False),
    ("http_requests_total", "Total number of HTTP requests received.", "req_tot", True),
    ("client_aborts_total", "Total number of data transfers aborted by the client.", "cli_abrt", True),
    ("server_aborts_total", "Total number of data transfers aborted by the server.", "srv_abrt", True),
    ("intercepted_requests_total", "Total number of intercepted HTTP requests.", "intercepted", True),
    ("connection_reuses_total", "Total number of connection reuses.", "reused", True),
    ("uweight", "Server's user weight, or sum of active servers' user weights for a backend.",
     "uweight", False),
)
_SERVER = (
    ("current_sessions", "Number of current sessions.", "scur", False),
    ("max_sessions", "Maximum observed number of active sessions.", "smax", False),
    ("limit_sessions", "Configured session limit.", "slim", False),
    ("sessions_total", "Total number of sessions.", "stot", True),
    ("bytes_in_total", "Current total of incoming bytes.", "bin", True),
    ("bytes_out_total", "Current total of outgoing bytes.", "bout", True),
    ("responses_denied_total", "Total number of denied responses.", "dresp", True),
    ("connection_errors_total", "Total number of connection errors.", "econ", True),
    ("response_errors_total", "Total number of response errors.", "eresp", True),
    ("retry_warnings_total", "Total number of retry warnings.", "wretr", True),
    ("redispatch_warnings_total", "Total number of redispatch warnings.", "wredis", True),
    ("weight", "Service weight.", "weight", False),
    ("active", "Is the server active (not a backup).", "act", False),
    ("backup", "Is the server a backup.", "bck", False),
    ("check_failures_total", "Total number of failed individual health checks.", "chkfail", True),
    ("check_up_down_total", "Total number of failed checks causing UP to DOWN server transitions.",
     "chkdown", True),
    ("check_last_change_seconds", "How long ago the last server state changed, in seconds.", "lastchg", False),
    ("downtime_seconds_total", "Total downtime (in seconds) for the service.", "downtime", True),
    ("queue_limit", "Configured maxqueue for the server (0 meaning no limit).", "qlimit", False),
    ("current_throttle", "Current throttle percentage for the server, when slowstart is active.",
     "throttle", False),
    ("max_session_rate", "Maximum observed number of sessions per second.", "rate_max", False),
    ("client_aborts_total", "Total number of data transfers aborted by the client.", "cli_abrt", True),
    ("server_aborts_total", "Total number of data transfers aborted by the server.", "srv_abrt", True),
    ("connection_reuses_total", "Total number of connection reuses.", "reused", True),
    ("idle_connections_current", "Current number of idle connections available for reuse.", "idle", False),
    ("uweight", "Server's user weight, or sum of active servers' user weights for a backend.",
     "uweight", False),
)


def _family(name: str, doc: str, counter: bool, labels: list[str]):
    cls = CounterMetricFamily if counter else GaugeMetricFamily
    return cls(name, doc, labels=labels)


def _server_state(status: str) -> str:
    """promex_srv_status(): the first word of the stats status, "no check" counting as UP."""
    word = status.split(" ", 1)[0]
    return "UP" if word in ("UP", "no") else word


class StatsCollector:
    """A prometheus-client collector of one stats dict (Proxy.cluster_stats() or stats()).

    Args:
        stats: the stats dict.
    """

    def __init__(self, stats: dict) -> None:
        self.stats = stats

    def collect(self):
        """Yield every metric family (prometheus-client's collector protocol)."""
        st = self.stats
        fes = st.get("frontends", {})
        bes = st.get("backends", {})
        yield from self._objects("frontend", _FRONTEND, [((n,), fe) for n, fe in fes.items()], ["proxy"])
        yield from self._objects("backend", _BACKEND, [((n,), be) for n, be in bes.items()], ["proxy"])
        servers = [((b, s), srv) for b, be in bes.items() for s, srv in be.get("servers", {}).items()]
        yield from self._objects("server", _SERVER, servers, ["proxy", "server"])
        # the status gauges, one sample per state
        fam = GaugeMetricFamily("haproxy_frontend_status", "Current status of the service.",
                                labels=["proxy", "state"])
        for n, fe in fes.items():
            cur = "UP" if fe.get("status") in ("OPEN", "FULL") else "DOWN"
            for s in PROXY_STATES:
                fam.add_metric([n, s], 1 if s == cur else 0)
        yield fam
        fam = GaugeMetricFamily("haproxy_backend_status", "Current status of the service.",
                                labels=["proxy", "state"])
        for n, be in bes.items():
            for s in PROXY_STATES:
                fam.add_metric([n, s], 1 if s == be.get("status") else 0)
        yield fam
        fam = GaugeMetricFamily("haproxy_server_status", "Current status of the service.",
                                labels=["proxy", "server", "state"])
        chk = GaugeMetricFamily("haproxy_server_check_status", "Status of last health check, per state value.",
                                labels=["proxy", "server", "state"])
        code = GaugeMetricFamily("haproxy_server_check_code", "layer5-7 code, if available of the last health check.",
                                 labels=["proxy", "server"])
        dur = GaugeMetricFamily("haproxy_server_check_duration_seconds",
                                "Total duration of the latest server health check, in seconds.",
                                labels=["proxy", "server"])
        for (b, s), srv in servers:
            cur = _server_state(str(srv.get("status", "")))
            for state in SERVER_STATES:
                fam.add_metric([b, s, state], 1 if state == cur else 0)
            if srv.get("checked"):
                for state in CHECK_STATES:
                    chk.add_metric([b, s, state], 1 if state == srv.get("check_status") else 0)
                code.add_metric([b, s], srv.get("check_code") or 0)
                dur.add_metric([b, s], (srv.get("check_duration") or 0) / 1000.0)
        yield from (fam, chk, code, dur)
        for kind, objs in (("frontend", [((n,), fe) for n, fe in fes.items()]),
                           ("backend", [((n,), be) for n, be in bes.items()]), ("server", servers)):
            labels = ["proxy", "server"] if kind == "server" else ["proxy"]
            fam = CounterMetricFamily(f"haproxy_{kind}_http_responses_total",
                                      "Total number of HTTP responses.", labels=[*labels, "code"])
            for key, o in objs:
                for c, field in CODES:
                    fam.add_metric([*key, c], o.get(field, 0))
                fam.add_metric([*key, "other"], 0)
            yield fam
            for what, field in (("spliced", "spliced"), ("copied", "copied")):
                fam = CounterMetricFamily(
                    f"splicer_{kind}_{what}_bytes_total",
                    f"Body bytes moved {'through a pipe (splice)' if what == 'spliced' else 'through user space'}.",
                    labels=labels)
                for key, o in objs:
                    fam.add_metric(list(key), o.get(field, 0))
                yield fam
        yield from self._process(st)

    @staticmethod
    def _objects(kind: str, table, objs, labels):
        for name, doc, key, counter in table:
            fam = _family(f"haproxy_{kind}_{name}", doc, counter, labels)
            for lv, o in objs:
                v = o.get(key)
                if v is None or isinstance(v, (str, list, dict)):
                    continue
                fam.add_metric(list(lv), float(v))
            yield fam

    @staticmethod
    def _process(st: dict):
        workers = st.get("worker")
        fam = GaugeMetricFamily("splicer_workers", "Worker processes whose counters are summed here.")
        fam.add_metric([], len(workers) if isinstance(workers, list) else 1)
        yield fam
        e = st.get("engine", {})
        p = st.get("pipes", {})
        for name, doc, value, counter in (
                ("splicer_engine_spliced_bytes", "Bytes the engine moved with splice(2).", e.get("spliced_bytes"), True),
                ("splicer_engine_splice_calls", "splice(2) calls made by the engine.", e.get("splice_calls"), True),
                ("splicer_engine_jobs_active", "Transfers the engine runs now.", e.get("jobs_active"), False),
                ("splicer_engine_pipes_used", "Pipes of the engine's pool in use.", e.get("pipes_used"), False),
                ("splicer_engine_pipes_free", "Pipes of the engine's pool free.", e.get("pipes_free"), False),
                ("splicer_engine_pipes_max", "Most pipes the engine's pool holds.", e.get("pipes_max"), False),
                ("splicer_pipes_used", "Pipes of the loop's pool in use.", p.get("used"), False),
                ("splicer_pipes_spliced_bytes", "Bytes the loop's pipes moved.", p.get("spliced_bytes"), True)):
            if value is None:
                continue
            fam = _family(name, doc, counter, [])
            fam.add_metric([], float(value))
            yield fam


def render_metrics(stats: dict) -> bytes:
    """The text exposition of `stats` (a fresh registry, one StatsCollector).

    Returns:
        The bytes of the `/metrics` body, Content-Type CONTENT_TYPE.
    """
    registry = CollectorRegistry(auto_describe=False)
    registry.register(StatsCollector(stats))
    return generate_latest(registry)
