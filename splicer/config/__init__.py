"""Configuration: haproxy-style text in, an immutable Config model out. No I/O besides reading the file."""
from splicer.config.loader import load, loads  # noqa: F401
from splicer.config.model import (  # noqa: F401
    Backend,
    Bind,
    Config,
    ForwardFor,
    Frontend,
    Global,
    Server,
    Timeouts,
)
