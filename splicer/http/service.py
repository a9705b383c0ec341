"""Services a worker answers itself: haproxy's stats page (`stats uri` and the other `stats`
keywords) and `http-request use-service prometheus-exporter`.

Rule: sans-I/O. Here are the settings (StatsSettings), the rules that put a service in a
proxy's http-request rules (ServiceRule), and the decisions a request to a service needs:
whether it is for the stats URI (StatsUri), whether its Basic credentials are accepted
(authorized), which page it asks for (page_options), and what an admin form asks to do
(admin_commands). Serving (counters gathered over the workers, bytes sent) is
runtime/services.py's.

Theory of operation: haproxy checks a proxy's stats URI after that proxy's http-request
rules; config/resolve.py therefore appends one ServiceRule("stats") at the end of the
rules of each http frontend, listen or backend where stats are enabled. Its condition is
a StatsUri: the request target begins with the `stats uri` prefix (haproxy's
http_stats_check_uri()). `use-service prometheus-exporter` is an ordinary rule in its
place. Both are LocalRules (http/actions.py), so route.Switching stops at the first one
that applies, and both count as haproxy's `intercepted` requests.
"""
from __future__ import annotations

import base64
import binascii
import hmac
from dataclasses import dataclass, field
from urllib.parse import parse_qsl

from splicer.http.actions import LocalRule
from splicer.http.logformat import RuleError

SERVICES = ("prometheus-exporter",)
"""The services `http-request use-service` knows (haproxy's promex)."""

DEFAULT_URI = "/haproxy?stats"
"""haproxy's default `stats uri`."""

DEFAULT_REALM = "HAProxy Statistics"
"""haproxy's default `stats realm` (kept, so that saved browser credentials still apply)."""

ADMIN_ACTIONS = {"ready": "ready", "drain": "drain", "maint": "maint"}
"""Server actions of the stats page's admin form, as haproxy names them, and the
`set server <b>/<s> state <x>` state each one sets (runtime API)."""


@dataclass(frozen=True)
class StatsAdmin:
    """One `stats admin { if | unless } <cond>` line: the admin level is granted when its
    condition holds (haproxy)."""

    cond: object
    file: str = ""
    line: int = 0


@dataclass(frozen=True)
class StatsSettings:
    """The `stats` keywords of one proxy section (haproxy configuration.txt 4.2).

    Attributes:
        uri: `stats uri` prefix (bytes): any request target starting with it is the page.
        refresh: `stats refresh`, seconds (0: the page does not reload itself).
        realm: `stats realm`, the Basic challenge's realm.
        auth: `stats auth` accounts as (user, password) pairs (bytes); empty: no login.
        admin: `stats admin` lines: the admin level when any condition holds.
        show_legends: `stats show-legends` (addresses, cookies and ids on the page).
        show_version: `stats show-version` (`stats hide-version` is the default, as haproxy).
        show_node: `stats show-node` name (None: not shown); show_desc: `stats show-desc`.
        proxy: the name of the section they come from.
    """

    uri: bytes = DEFAULT_URI.encode()
    refresh: float = 0.0
    realm: str = DEFAULT_REALM
    auth: tuple = ()
    admin: tuple = ()
    show_legends: bool = False
    show_version: bool = False
    show_node: str | None = None
    show_desc: str | None = None
    proxy: str = ""


@dataclass(frozen=True)
class StatsUri:
    """The condition of the stats rule: the request target (origin-form) begins with the
    `stats uri` prefix (haproxy http_stats_check_uri()). `terms` are the admin conditions'
    (so that the userlists they read are checked before the rules run, runtime/auth.py)."""

    uri: bytes
    terms: tuple = ()
    unless: bool = False
    names: tuple = field(default=(), compare=False)

    def __call__(self, view) -> bool:
        return view.target.startswith(self.uri)


@dataclass(frozen=True)
class ServiceRule(LocalRule):
    """A LocalRule answered by a service of the worker.

    Attributes:
        service: "stats" or "prometheus-exporter".
        stats: the StatsSettings of a "stats" rule (None for the other services).
    """

    service: str = ""
    stats: StatsSettings | None = None


def stats_rule(settings: StatsSettings, file: str = "", line: int = 0) -> ServiceRule:
    """The rule resolve.py appends to a section's http-request rules when its stats are on."""
    terms = tuple(t for a in settings.admin for t in getattr(a.cond, "terms", ()))
    return ServiceRule("return", 200, StatsUri(settings.uri, terms), file=file, line=line,
                       service="stats", stats=settings)


def parse_use_service(args: list[str], cond, file: str = "", line: int = 0) -> ServiceRule:
    """Read `http-request use-service <service> [{if | unless} <cond>]` (the words after
    `use-service`, the condition already split off).

    Raises:
        RuleError: no service, an unknown one, or extra words.
    """
    if len(args) != 1:
        raise RuleError("'http-request use-service' expects one service name "
                        f"(supported: {', '.join(SERVICES)})")
    if args[0] not in SERVICES:
        raise RuleError(f"'http-request use-service': unknown service '{args[0]}' "
                        f"(supported: {', '.join(SERVICES)})")
    return ServiceRule("return", 200, cond, file=file, line=line, service=args[0])


def authorized(settings: StatsSettings, fields) -> bool:
    """Whether a request may see the page: no `stats auth` line, or its Authorization field
    carries Basic credentials (RFC 7617) of one of the accounts, compared in constant time.

    Args:
        fields: the request's (name, value) byte pairs.
    """
    if not settings.auth:
        return True
    for name, value in fields:
        if name.lower() != b"authorization":
            continue
        scheme, _, token = value.strip().partition(b" ")
        if scheme.lower() != b"basic":
            return False
        try:
            user, sep, password = base64.b64decode(token.strip(), validate=True).partition(b":")
        except (binascii.Error, ValueError):
            return False
        if not sep:
            return False
        ok = False
        for u, p in settings.auth:
            ok |= hmac.compare_digest(u, user) & hmac.compare_digest(p, password)
        return ok
    return False


@dataclass(frozen=True)
class PageOptions:
    """What the part of the target after the stats URI asks for (haproxy's `;csv`,
    `;norefresh`, `;up`, `;st=<status>` suffixes).

    Attributes:
        csv: the CSV export instead of the HTML page.
        norefresh: no automatic reload even with `stats refresh`.
        up: only the servers that are UP.
        status: an admin action's outcome to show ("DONE", "NONE", "ERRP", "DENY"...).
    """

    csv: bool = False
    norefresh: bool = False
    up: bool = False
    status: str = ""


def page_options(target: bytes, uri: bytes) -> PageOptions:
    """Read the `;`-separated options after the stats URI in `target`."""
    rest = target[len(uri):] if target.startswith(uri) else b""
    words = [w for w in rest.decode("latin-1").split(";")[1:] if w]
    status = next((w[3:] for w in words if w.startswith("st=")), "")
    return PageOptions("csv" in words, "norefresh" in words, "up" in words,
                       status if status.isalnum() else "")


def admin_commands(body: bytes, backend_ids: dict[int, str] | None = None) -> tuple[list[str], str]:
    """The runtime API commands an admin form POST asks for: `action=<a>` (ready, drain,
    maint), `b=<backend>` and one `s=<server>` per checked server (haproxy's form). The
    backend is a name or `#<iid>`, its proxy id (the `iid` column of the CSV), as haproxy's
    proxy_be_by_name() takes it.

    Args:
        body: the urlencoded form (application/x-www-form-urlencoded), bytes.
        backend_ids: proxy id -> backend name, for `b=#<iid>` (None: no id is known).

    Returns:
        (commands, status): `set server B/S state X` lines, and haproxy's outcome word when
        nothing is to be done: "NONE" (no server checked), "ERRP" (a bad action or backend).
    """
    try:
        pairs = parse_qsl(body.decode("ascii"), keep_blank_values=True, strict_parsing=False)
    except (UnicodeDecodeError, ValueError):
        return [], "ERRP"
    action = next((v for k, v in pairs if k == "action"), "")
    backend = next((v for k, v in pairs if k == "b"), "")
    servers = [v for k, v in pairs if k == "s"]
    if backend.startswith("#"):
        iid = backend[1:]
        backend = (backend_ids or {}).get(int(iid), "") if iid.isdigit() and iid.isascii() else ""
    if action not in ADMIN_ACTIONS or not backend or not _plain(backend):
        return [], "ERRP"
    if not servers:
        return [], "NONE"
    if not all(_plain(s) for s in servers):
        return [], "ERRP"
    return [f"set server {backend}/{s} state {ADMIN_ACTIONS[action]}" for s in servers], ""


def _plain(name: str) -> bool:
    """A proxy or server name as haproxy allows them (no space, no `/`, no `;`)."""
    return bool(name) and all(c.isalnum() or c in "-_.:" for c in name)
