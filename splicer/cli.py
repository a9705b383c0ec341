"""`splicer -c FILE [--check]`: argument parsing and start-up only."""
from __future__ import annotations

import argparse
import logging
import sys

from splicer import __version__
from splicer.errors import ConfigErrors


def main(argv: list[str] | None = None) -> int:
    """Run the proxy, or validate its configuration.

    Returns:
        Exit status: 0 on success (or clean stop), 1 on a configuration error, 2 on usage
        errors (argparse), 3 when a listener cannot be opened. The master process returns
        from here; workers are forked from it and never return (master.py).
    """
    ap = argparse.ArgumentParser(prog="splicer", description="HTTP/1.1 splicing reverse proxy and load balancer")
    ap.add_argument("-c", "--config", required=True, metavar="FILE", help="haproxy-style configuration file")
    ap.add_argument("--check", action="store_true", help="validate the configuration and exit (0 valid, 1 invalid)")
    ap.add_argument("--loop", choices=("uvloop", "asyncio"), default="uvloop", help="event loop (default uvloop)")
    ap.add_argument("-q", "--quiet", action="store_true", help="log warnings and errors only")
    ap.add_argument("-V", "--version", action="version", version=f"splicer {__version__}")
    args = ap.parse_args(argv)

    logging.basicConfig(level=logging.WARNING if args.quiet else logging.INFO,
                        format="%(asctime)s splicer[%(process)d] %(levelname)s %(message)s", stream=sys.stderr)
    from splicer.config import load

    try:
        config = load(args.config)
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

    from splicer.runtime.listener import open_listeners
    from splicer.runtime.master import Master

    try:
        listeners = open_listeners(config)
    except OSError as exc:
        print(f"splicer: {exc.strerror or exc}", file=sys.stderr)
        return 3
    return Master(config, listeners, args.loop).run()
