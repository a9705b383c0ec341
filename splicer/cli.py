"""`splicer -c FILE [--check]`: argument parsing and start-up only."""
from __future__ import annotations

import argparse
import asyncio
import logging
import sys

from splicer import __version__
from splicer.errors import ConfigErrors


def main(argv: list[str] | None = None) -> int:
    """Run the proxy, or validate its configuration.

    Returns:
        Exit status: 0 on success (or clean stop), 1 on a configuration error, 2 on usage
        errors (argparse), 3 when a listener cannot be opened.
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
    if args.check:
        print(f"Configuration file {args.config} is valid")
        return 0

    if args.loop == "uvloop":
        import uvloop
        loop = uvloop.new_event_loop()
    else:
        loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    from splicer.runtime.proxy import Proxy

    try:
        proxy = Proxy(config, loop)
        loop.run_until_complete(proxy.serve())
    except OSError as exc:
        print(f"splicer: {exc.strerror or exc}", file=sys.stderr)
        return 3
    finally:
        loop.close()
    return 0
