"""The configuration model: frozen dataclasses, the only thing runtime/ reads from config/.

Everything here is immutable and fully resolved: `defaults` inheritance has been applied and
every `listen` section has been split into a Frontend and a Backend of the same name.
Times are float seconds (None = no timeout, as haproxy's "infinite"); sizes are bytes.
"""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Timeouts:
    """haproxy `timeout` keywords, in seconds; None means the keyword was not set (infinite).

    Attributes mirror haproxy's names: `timeout client`, `server`, `connect`, `http-request`,
    `http-keep-alive`, `queue`, `tunnel`, `check` (configuration.txt section 4.2,
    "timeout ...").
    """

    client: float | None = None
    server: float | None = None
    connect: float | None = None
    http_request: float | None = None
    http_keep_alive: float | None = None
    queue: float | None = None
    tunnel: float | None = None
    check: float | None = None


@dataclass(frozen=True)
class StatsSocket:
    """One `stats socket PATH [mode M] [level L] [expose-fd listeners]` line (global).

    Attributes:
        path: the unix socket's path.
        mode: its permission bits (`mode`, octal in the file), None: as the umask leaves them.
        level: "user", "operator" or "admin" (haproxy's default is admin).
        expose_fd: `expose-fd listeners` was given (accepted, no effect: see the docs).
    """

    path: str
    mode: int | None = None
    level: str = "admin"
    expose_fd: bool = False
    file: str = ""
    line: int = 0


@dataclass(frozen=True)
class LogTarget:
    """One `log <target> [len <n>] [format <f>] <facility> [<level> [<minlevel>]]` line
    (haproxy configuration.txt 4.2 "log"; splicer/log/target.py opens it).

    Attributes:
        kind: "fd" (a file descriptor: `stdout`, `stderr`, `fd@<n>`), "file" (splicer's
            `file@<path>`: a file opened for appending), "udp" (`<host>[:<port>]`,
            `udp@<host>:<port>`; port 514 by default), "unix" (an absolute path: a unix
            datagram socket, as haproxy's `/dev/log`), "tcp" (`tcp@<host>:<port>`,
            `tcp4@`, `tcp6@`: syslog over TCP) or "uxst" (`uxst@<path>`: a unix stream
            socket); "ring" (`ring@<name>`) until resolve.py replaces it with its ring
            section's server (a "tcp" or "uxst" target).
        address: the target as written (for messages and the stats' per-target counters).
        host / port: the UDP address; path: the unix socket or file path; fd: the descriptor.
        maxlen: `len`: most bytes of a message (80..65535; haproxy's default 1024).
        explicit_len: `len` was written (fd and file targets are only cut when it was).
        format: "local" (haproxy's default), "rfc3164", "rfc5424", "priority", "short",
            "timed", "iso" or "raw" (splicer/log/syslog.py frames each).
        facility: the syslog facility number (kern 0 ... local7 23).
        level: the least important severity sent (emerg 0 ... debug 7; default 7: all).
        minlevel: more severe messages are sent at this level (default 0: unchanged).
        family: "tcp4" or "tcp6" when the address must be of that family ("": either).
        ring: the ring section's name (`ring@<name>`; "" for an implicit ring).
        ring_size: bytes a stream target queues while its socket takes nothing (haproxy's
            ring `size`; an implicit ring's is BUFSIZE, 16384).
        octet_count: messages are framed with their length (RFC 6587 3.4.1, haproxy's
            `log-proto octet-count`), not ended with a line feed (`legacy`, the default).
        timeout_connect / timeout_server: seconds a stream target waits for its connection,
            and for its queued data to move (an implicit ring's: 1 s and 5 s).
    """

    kind: str
    address: str
    host: str = ""
    port: int = 0
    path: str = ""
    fd: int = -1
    maxlen: int = 1024
    explicit_len: bool = False
    format: str = "local"
    facility: int = 1
    level: int = 7
    minlevel: int = 0
    file: str = ""
    line: int = 0
    family: str = ""
    ring: str = ""
    ring_size: int = 16384
    octet_count: bool = False
    timeout_connect: float = 1.0
    timeout_server: float = 5.0


@dataclass(frozen=True)
class Global:
    """The `global` section.

    Attributes:
        maxconn: total concurrent client connections per process (haproxy `maxconn`).
        nbthread: worker count; None = number of CPUs (haproxy `nbthread`).
        bufsize: max request/response head in bytes (haproxy `tune.bufsize`, default 16384).
        maxhdr: max header fields in a head (haproxy `tune.http.maxhdr`, default 101).
        pipesize: pipe size in bytes set with F_SETPIPE_SZ; None = kernel default (`tune.pipesize`).
        maxpipes: max pipes in the pool; None = maxconn // 4 as haproxy computes it (`tune.maxpipes`).
        cpu_map: (worker number from 1, CPUs) pairs from `cpu-map`; a worker not listed runs
            on CPU (number - 1) modulo the CPUs it may use.
        stats_sockets: the `stats socket` lines (StatsSocket), in file order.
        server_state_file: `server-state-file`: the file the backends with
            `load-server-state-from-file global` read their servers' states from at start
            (None: none); relative to server_state_base unless it starts with '/'.
        server_state_base: `server-state-base`: the directory of the state files named
            by a relative path (None: the current directory).
        logs: its `log` lines, in file order (what `log global` stands for in a proxy).
        hard_stop_after: seconds a soft-stopping worker (SIGUSR1, or an old one after a
            reload) may take to finish its connections before it is stopped at once; None:
            no bound (haproxy `hard-stop-after`).
    """

    maxconn: int = 4096
    nbthread: int | None = None
    bufsize: int = 16384
    maxhdr: int = 101
    pipesize: int | None = None
    maxpipes: int | None = None
    cpu_map: tuple[tuple[int, tuple[int, ...]], ...] = ()
    stats_sockets: tuple["StatsSocket", ...] = ()
    server_state_file: str | None = None
    server_state_base: str | None = None
    logs: tuple[LogTarget, ...] = ()
    hard_stop_after: float | None = None


@dataclass(frozen=True)
class Bind:
    """One `bind ADDR:PORT` line: becomes one listener. host '' or '*' means all addresses."""

    host: str
    port: int
    file: str = ""
    line: int = 0


@dataclass(frozen=True)
class Server:
    """One `server NAME ADDR:PORT [options]` line, after its section's `default-server` lines.

    Attributes:
        weight: relative share of the weighted algorithms, 0..256 (haproxy default 1).
        maxconn: max concurrent connections to this server; 0 = unlimited (haproxy default).
        disabled: start in maintenance (haproxy `disabled`).
        check: run health checks (haproxy `check`): a TCP connect every `inter` seconds;
            `fall` failures in a row mark the server down, `rise` successes up again.
        backup: haproxy `backup`: takes traffic only when no active server is up.
        slowstart: haproxy `slowstart`, seconds (0 = none): after coming back UP, the
            server's weight and maxconn ramp up over this time.
        maxqueue: haproxy `maxqueue`: at most this many requests wait for this server
            (0 = no limit); see runtime/backend.py for how the backend queue counts them.
        cookie: haproxy `cookie <value>`: the value of the backend's persistence cookie
            that designates this server ("" = none; http/persist.py).
        pool_max_conn: haproxy `pool-max-conn`: most idle connections kept for reuse
            (-1 = no limit, 0 = none kept).
        fastinter / downinter: haproxy `fastinter` / `downinter`, seconds (0 = not set:
            `inter`): the check interval while the server's health is in transition (or an
            `on-error` event asked for it) / while it is fully DOWN (health/state.py).
        observe: haproxy `observe`: "layer4", "layer7", or "" (none); live traffic counts
            as health information (health/observe.py); it takes effect with `check` only.
        error_limit: haproxy `error-limit`: observed errors in a row that trigger `on_error`.
        on_error: haproxy `on-error`: "fastinter", "fail-check", "sudden-death" or "mark-down".
        on_marked_down: haproxy `on-marked-down`: "shutdown-sessions" or "" (none).
        on_marked_up: haproxy `on-marked-up`: "shutdown-backup-sessions" or "" (none).
        explicit: the option fields the `server` line itself sets; the others come from
            the `default-server` lines above it (resolve.py). Not part of equality.
    """

    name: str
    host: str
    port: int
    weight: int = 1
    maxconn: int = 0
    disabled: bool = False
    check: bool = False
    inter: float = 2.0
    rise: int = 2
    fall: int = 3
    backup: bool = False
    slowstart: float = 0.0
    maxqueue: int = 0
    cookie: str = ""
    pool_max_conn: int = -1
    fastinter: float = 0.0
    downinter: float = 0.0
    observe: str = ""
    error_limit: int = 10
    on_error: str = "fail-check"
    on_marked_down: str = ""
    on_marked_up: str = ""
    file: str = ""
    line: int = 0
    explicit: frozenset = field(default=frozenset(), compare=False)


@dataclass(frozen=True)
class Balance:
    """The `balance` line: the algorithm and its arguments (haproxy configuration.txt 4.2,
    "balance").

    Attributes:
        algorithm: "roundrobin", "static-rr", "leastconn", "first", "source", "uri",
            "url_param", "hdr" or "random".
        uri_len / uri_depth: `balance uri len N` / `depth N` (0 = not set).
        uri_whole / uri_path_only: `balance uri whole` / `path-only`.
        param: the parameter name of `url_param`, the field name of `hdr(<name>)`.
        use_domain_only: `balance hdr(<name>) use_domain_only`.
        draws: `random(<draws>)`, >= 1 (haproxy default 2).
    """

    algorithm: str = "roundrobin"
    uri_len: int = 0
    uri_depth: int = 0
    uri_whole: bool = False
    uri_path_only: bool = False
    param: str = ""
    use_domain_only: bool = False
    draws: int = 2


@dataclass(frozen=True)
class HashType:
    """The `hash-type <method> [<function> [avalanche]]` line (haproxy configuration.txt 4.2).

    Attributes:
        method: "map-based" (haproxy's default) or "consistent".
        function: "sdbm" (default), "djb2", "wt6" or "crc32".
        avalanche: the `avalanche` modifier (set by default with `consistent` and no function).
    """

    method: str = "map-based"
    function: str = "sdbm"
    avalanche: bool = False


@dataclass(frozen=True)
class SwitchingRule:
    """One ``use_backend <backend> [if|unless <condition>]`` line (haproxy 4.2 "use_backend").

    Attributes:
        backend: the backend's name, or the dynamic name as written (``be_%[req.hdr(host),lower]``).
        cond: the http.acl.Condition, bound to the section's ACLs; None: always.
        dynamic: for a dynamic name, its parsed parts (http.sample.parse_name_format), the
            backend being looked up per request; None for a literal name.
    """

    backend: str
    cond: object = None
    file: str = ""
    line: int = 0
    dynamic: tuple | None = None


@dataclass(frozen=True)
class UseServerRule:
    """One ``use-server <server> {if | unless} <condition>`` line (haproxy 4.2 "use-server").

    Attributes:
        server: the server's name (resolve.py checks it exists in the backend).
        cond: the http.acl.Condition, bound to the section's ACLs.
    """

    server: str
    cond: object = None
    file: str = ""
    line: int = 0


@dataclass(frozen=True)
class PersistRule:
    """One ``force-persist`` or ``ignore-persist {if | unless} <condition>`` line
    (haproxy 4.2 "force-persist", "ignore-persist").

    Attributes:
        kind: "force-persist" or "ignore-persist".
        cond: the http.acl.Condition, bound to the section's ACLs.
    """

    kind: str
    cond: object = None
    file: str = ""
    line: int = 0


@dataclass(frozen=True)
class ForwardFor:
    """haproxy ``option forwardfor [except <network>] [header <name>] [if-none]`` of one
    proxy (configuration.txt 4.2 "option forwardfor").

    Attributes:
        except_net: the client network (ipaddress.IPv4Network / IPv6Network) whose requests
            get no field from this proxy's option, or None.
        header: the field's name (b"X-Forwarded-For" by default).
        if_none: add the field only when the request has none of that name.
    """

    except_net: object = None
    header: bytes = b"X-Forwarded-For"
    if_none: bool = False


@dataclass(frozen=True)
class Frontend:
    """A `frontend` section, or the front half of a `listen` section.

    Attributes:
        mode: "http" or "tcp" (haproxy `mode`; "tcp" when no section sets it, as in haproxy).
        binds: listeners to open.
        default_backend: name of the Backend that receives all traffic.
        maxconn: max concurrent client connections on this frontend (haproxy default 0 = global).
        forwardfor: `option forwardfor` set here or in the defaults it inherits (its
            arguments), else None.
        splice_request / splice_response / splice_auto: the `option splice-*` flags set here.
        splice_named: some `option splice-*` line (or its `no` form) applies here, set or
            inherited; when neither proxy of a stream names one, splicer's measured default
            applies (runtime/route.py splice_policy). Derived: not part of equality.
        http_buffer_request: `option http-buffer-request` (the runtime ORs it with the backend's).
        accept_invalid_http_request: `option accept-invalid-http-request`: a request-target
            that stays ambiguous after the rules (http/normalize.py ambiguity) is forwarded
            instead of refused with 400.
        idle_close_on_response: `option idle-close-on-response` (on unless `no option
            idle-close-on-response`): during a soft stop an idle client connection is kept
            until its next response, sent with `Connection: close`; off: it is closed at once.
        ignore_probes: `option http-ignore-probes`: a new connection that ends (closed or
            timed out) before it sent a byte is closed in silence, neither answered (400 /
            408), counted nor logged, as a browser's pre-connect should be.
        errorfiles: (status, whole HTTP response) pairs from `errorfile`.
        http_request / http_response: the rules of its `http-request` / `http-response`
            lines (splicer.http.rules.HeaderRule, splicer.http.actions.LocalRule, and for
            http-response splicer.http.actions.StatusRule), in file
            order, their conditions bound to the section's ACLs (a listen section's are here).
        use_backend: its `use_backend` rules (SwitchingRule), in file order: the first whose
            condition holds names the request's backend, else default_backend.
        timeouts: client-side timeouts (client, http-request, http-keep-alive) are read here.
        tarpit: how long a request its ``http-request tarpit`` rules hold is held,
            seconds: `timeout tarpit`, else `timeout connect` as this section sees it
            (haproxy), else 0 (answered at once). Derived: not part of equality.
        logs: where its traffic is logged (`log` lines, `log global` expanded, `no log`
            applied), in order; empty: not logged.
        log_format: the log-format text its streams are logged with (`option httplog`,
            `option tcplog` and `log-format` resolved to one; splicer/log/format.py); ""
            for none of them: haproxy's basic default format (format.DEFAULT).
        dontlognull: `option dontlognull`: a connection that sent nothing is not logged.
        capture_request / capture_response: `capture request|response header <name> len
            <n>` lines as (lower-case name, n) pairs, in file order.
    """

    name: str
    mode: str
    binds: tuple[Bind, ...]
    default_backend: str | None
    maxconn: int = 0
    forwardfor: ForwardFor | None = None
    splice_request: bool = False
    splice_response: bool = False
    splice_auto: bool = False
    splice_named: bool = field(default=False, compare=False)
    http_buffer_request: bool = False
    accept_invalid_http_request: bool = False
    idle_close_on_response: bool = True
    ignore_probes: bool = False
    errorfiles: tuple[tuple[int, bytes], ...] = ()
    http_request: tuple = ()
    http_response: tuple = ()
    use_backend: tuple = ()
    timeouts: Timeouts = field(default_factory=Timeouts)
    tarpit: float = field(default=0.0, compare=False)
    logs: tuple[LogTarget, ...] = ()
    log_format: str = ""
    dontlognull: bool = False
    capture_request: tuple[tuple[str, int], ...] = ()
    capture_response: tuple[tuple[str, int], ...] = ()
    file: str = ""
    line: int = 0


@dataclass(frozen=True)
class Backend:
    """A `backend` section, or the back half of a `listen` section.

    Attributes:
        balance: the `balance` algorithm's name (default roundrobin); its arguments are in
            balance_args.
        balance_args: the whole `balance` line (Balance); None when constructed means
            `Balance(balance)`, the algorithm without arguments (filled in at creation).
        hash_type: `hash-type` (HashType; haproxy's default map-based sdbm).
        hash_balance_factor: `hash-balance-factor`, 0 (no bound) or > 100.
        allbackups: `option allbackups`: all backup servers take traffic when every active
            server is down, not only the first one.
        servers: in file order.
        retries: connection attempts after the first on a failed connect (haproxy `retries`, default 3).
        redispatch: `option redispatch`: a retry may go to another server.
        retry_on: haproxy `retry-on`: the events ("conn-failure", "empty-response",
            "junk-response", "response-timeout", "0rtt-rejected") and status codes (ints)
            that start a retry; the default is connection failures only, empty means none.
        forwarded: RFC 7239 parameters of `option forwarded` ("proto", "host", "by", "for");
            empty when the option is off.
        forwardfor: `option forwardfor` set here or in the defaults it inherits (its
            arguments), else None.
        http_buffer_request: `option http-buffer-request`.
        abortonclose: `option abortonclose`: a request whose client has closed is not sent.
        httpchk: `option httpchk`: the whole request a layer-7 health check sends (bytes),
            or None for layer-4 checks (a TCP connect).
        check_expect: `http-check expect status`: the (low, high) status ranges a check
            response must fall in; empty means haproxy's default, any 2xx or 3xx.
        errorfiles: (status, whole HTTP response) pairs from `errorfile`; they win over the
            frontend's.
        http_request / http_response: header rules of a `backend` section's `http-request` /
            `http-response` lines (empty for a listen section: its Frontend holds them, so
            they run once).
        cookie: the `cookie` line (http.persist.CookiePolicy), None: no cookie persistence.
        persist: `option persist`: a request whose cookie names a DOWN server is sent to it.
        use_server: its `use-server` rules (UseServerRule), in file order.
        force_persist / ignore_persist: its `force-persist` / `ignore-persist` conditions
            (PersistRule), in file order.
        http_reuse: `http-reuse`: "never", "safe" (haproxy's default), "aggressive" or "always".
        timeouts: server-side timeouts (connect, server, queue, tunnel) are read here.
        tarpit: the hold of its ``http-request tarpit`` rules, seconds, as Frontend.tarpit.
        load_server_state: `load-server-state-from-file`: "global" (its servers' states
            are read from the global `server-state-file` at start), "local" (from its own
            file, server_state_file_name) or "none".
        server_state_file_name: `server-state-file-name`: the file "local" reads ("": the
            backend's name), relative to `server-state-base` unless it starts with '/'.
        logs: its `log` lines (as Frontend.logs): where its servers' state changes and,
            with `option log-health-checks`, its health check results are logged.
        log_health_checks: `option log-health-checks`.
    """

    name: str
    mode: str
    balance: str = "roundrobin"
    balance_args: Balance | None = None
    hash_type: HashType = field(default_factory=HashType)
    hash_balance_factor: int = 0
    allbackups: bool = False
    servers: tuple[Server, ...] = ()
    forwardfor: ForwardFor | None = None
    splice_request: bool = False
    splice_response: bool = False
    splice_auto: bool = False
    splice_named: bool = field(default=False, compare=False)
    retries: int = 3
    redispatch: bool = False
    retry_on: frozenset = frozenset({"conn-failure"})
    forwarded: tuple[str, ...] = ()
    http_buffer_request: bool = False
    abortonclose: bool = False
    httpchk: bytes | None = None
    check_expect: tuple[tuple[int, int], ...] = ()
    errorfiles: tuple[tuple[int, bytes], ...] = ()
    http_request: tuple = ()
    http_response: tuple = ()
    cookie: object = None
    persist: bool = False
    use_server: tuple = ()
    force_persist: tuple = ()
    ignore_persist: tuple = ()
    http_reuse: str = "safe"
    timeouts: Timeouts = field(default_factory=Timeouts)
    tarpit: float = field(default=0.0, compare=False)
    load_server_state: str = "none"
    server_state_file_name: str = ""
    logs: tuple[LogTarget, ...] = ()
    log_health_checks: bool = False
    file: str = ""
    line: int = 0

    def __post_init__(self) -> None:
        if self.balance_args is None:
            object.__setattr__(self, "balance_args", Balance(self.balance))


@dataclass(frozen=True)
class Ring:
    """A `ring` section (haproxy configuration.txt 12.5): a log buffer and the syslog
    servers it forwards to over TCP or unix stream sockets; `log ring@<name>` sends there.

    Attributes:
        name: the section's name; description: its `description` ("": the name).
        format: the framing of its messages (`format`; haproxy's default for a ring: raw).
        maxlen: `maxlen`, most bytes of a message with its header (0: the `log` line's `len`).
        size: bytes queued per server while it takes nothing (`size`; default 16384).
        timeout_connect / timeout_server: seconds (`timeout connect` / `timeout server`;
            default 1 and 5).
        servers: (name, LogTarget of kind "tcp" or "uxst") per `server` line, in order;
            each gets a copy of every message (haproxy: the ring's contents go to all).
    """

    name: str
    description: str = ""
    format: str = "raw"
    maxlen: int = 0
    size: int = 16384
    timeout_connect: float = 1.0
    timeout_server: float = 5.0
    servers: tuple = ()
    file: str = ""
    line: int = 0


@dataclass(frozen=True)
class Config:
    """A whole, resolved configuration.

    Attributes:
        path: the file it was read from.
        global_: the `global` section (defaults if absent).
        frontends: frontends in file order (listen sections included).
        backends: backends by name (listen sections included).
        warnings: "file:line: text" strings for things accepted but ignored.
        userlists: the `userlist` sections by name (http.userlist.Userlist).
        rings: the `ring` sections by name (Ring; the `log ring@<name>` lines are already
            turned into their servers' targets).
    """

    path: str
    global_: Global
    frontends: tuple[Frontend, ...]
    backends: dict[str, Backend]
    warnings: tuple[str, ...] = ()
    userlists: dict = field(default_factory=dict)
    rings: dict = field(default_factory=dict)
