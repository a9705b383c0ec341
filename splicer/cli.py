"""`splicer -c FILE [--check] [-S PATH] [-p PIDFILE] [-D] [-Ws]`: argument parsing and start-up only."""
from __future__ import annotations

import argparse
import logging
import os
import sys

from splicer import __version__
from splicer.errors import ConfigErrors


def main(argv: list[str] | None = None) -> int:
    """Run the proxy, or validate its configuration.

    Options as haproxy's: `-S PATH` the master CLI socket, `-p PIDFILE` the master's pid
    written there, `-D` daemon (the command returns once the master runs, detached),
    `-W`/`-Ws` master-worker mode (always on) and, with `s`, systemd notifications.

    Returns:
        Exit status: 0 on success (or clean stop), 1 on a configuration error (a log
        target that cannot be resolved or opened included), 2 on usage errors (argparse), 3
        when a listener, a stats socket or the master socket cannot be opened. The
        master process returns from here; workers are forked from it and never return
        (master.py).
    """
    ap = argparse.ArgumentParser(prog="splicer", description="HTTP/1.1 splicing reverse proxy and load balancer")
    ap.add_argument("-c", "--config", required=True, metavar="FILE", help="haproxy-style configuration file")
    ap.add_argument("--check", action="store_true", help="validate the configuration and exit (0 valid, 1 invalid)")
    ap.add_argument("--loop", choices=("uvloop", "asyncio"), default="uvloop", help="event loop (default uvloop)")
    ap.add_argument("-q", "--quiet", action="store_true",
                    help="log warnings and errors only (no counters line at a worker's exit)")
    ap.add_argument("-S", dest="master_socket", metavar="PATH", help="master CLI on this unix socket (haproxy -S)")
    ap.add_argument("-p", dest="pidfile", metavar="PIDFILE", help="write the master's pid to this file")
    ap.add_argument("-D", dest="daemon", action="store_true", help="run in the background (daemon)")
    ap.add_argument("-W", dest="mworker", nargs="?", const="", choices=("", "s"), metavar="s",
                    help="master-worker mode (always on); -Ws: notify systemd ($NOTIFY_SOCKET)")
    ap.add_argument("-V", "--version", action="version", version=f"splicer {__version__}")
    args = ap.parse_args(argv)

    logging.basicConfig(level=logging.WARNING if args.quiet else logging.INFO,
                        format="%(asctime)s splicer[%(process)d] %(levelname)s %(message)s", stream=sys.stderr)
    from splicer.runtime.targets import load_checked

    try:
        config = load_checked(args.config)
    except ConfigErrors as exc:
        for err in exc.errors:
            print(f"splicer: {err}", file=sys.stderr)
        print(f"splicer: configuration file {args.config} has {len(exc.errors)} error(s)", file=sys.stderr)
        return 1
    for w in config.warnings:
        print(f"splicer: warning: {w}", file=sys.stderr)
    if not config.frontends:  # haproxy: "no <listen> line. Nothing to do !"
        print(f"splicer: {args.config}: no frontend or listen section: nothing to listen on", file=sys.stderr)
        return 1
    if args.check:
        print(f"Configuration file {args.config} is valid")
        return 0

    from splicer.runtime import notify
    from splicer.runtime.adminsock import open_stats_sockets
    from splicer.runtime.listener import open_listeners
    from splicer.runtime.master import Master

    # every listening socket, the stats sockets too, is bound before -D detaches and before
    # any worker starts: one that cannot be bound is reported here, and nothing listens
    try:
        listeners = open_listeners(config)
    except OSError as exc:
        print(f"splicer: {exc.strerror or exc}", file=sys.stderr)
        return 3
    try:
        stats_sockets = open_stats_sockets(config.global_.stats_sockets)
    except OSError as exc:
        for socks in listeners.values():
            for s in socks:
                s.close()
        print(f"splicer: {exc.strerror or exc}", file=sys.stderr)
        return 3
    if args.daemon:
        daemonize()
    if args.pidfile:
        write_pidfile(args.pidfile)
    on_ready = (lambda state: notify.notify(state)) if args.mworker == "s" else None
    master = Master(config, listeners, args.loop, config_path=args.config, master_socket=args.master_socket,
                    on_ready=on_ready, stats_sockets=stats_sockets)
    try:
        return master.run()
    finally:
        if args.pidfile:
            try:
                os.unlink(args.pidfile)
            except OSError:
                pass


def daemonize() -> None:
    """haproxy's -D: fork; the parent exits 0 at once (its shell gets its prompt back), the
    child leaves the terminal's session (setsid) and reads stdin from /dev/null. stdout and
    stderr stay as given (redirect them, or use -q)."""
    sys.stdout.flush()
    sys.stderr.flush()
    if os.fork() > 0:
        os._exit(0)
    os.setsid()
    fd = os.open(os.devnull, os.O_RDONLY)
    os.dup2(fd, 0)
    os.close(fd)


def write_pidfile(path: str) -> None:
    """Write this process's pid and a newline to `path` (haproxy's -p), replacing it."""
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w") as f:
        f.write(f"{os.getpid()}\n")
    os.replace(tmp, path)
