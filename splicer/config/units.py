"""Time and size units of haproxy's configuration language.

Rule: every time or size written in a configuration file is converted here and nowhere else.
Times come out as float seconds (the model's unit), sizes as int bytes. Both functions are pure
and raise ValueError with a message meant to follow "file:line: 'keyword': " in an error.

Theory of operation: a value is a plain decimal number (ASCII digits only; no sign, no fraction,
no spaces) immediately followed by an optional unit, exactly as haproxy's parse_time_err() and
parse_size_err() read them (haproxy configuration.txt section 2.4 "Time format").
"""
from __future__ import annotations

import re

TIME_UNITS: dict[str, tuple[int, int]] = {
    "us": (1, 1_000_000),
    "ms": (1, 1_000),
    "s": (1, 1),
    "m": (60, 1),
    "h": (3_600, 1),
    "d": (86_400, 1),
}
"""Time unit -> (multiplier, divisor) giving seconds; "" (no unit) means "ms"."""

SIZE_UNITS: dict[str, int] = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
"""Size suffix (case-insensitive) -> bytes per unit, 1024-based as in haproxy."""

MAX_TIME_MS = 2**31 - 1
"""Largest time haproxy's timers accept: 2147483647 ms, about 24.8 days."""

_NUMBER = re.compile(r"([0-9]+)(.*)\Z", re.DOTALL)


def parse_time(text: str) -> float:
    """Parse a haproxy time value into seconds.

    Implements haproxy's time format (configuration.txt 2.4): ``<digits>[unit]`` with unit one of
    ``us``, ``ms``, ``s``, ``m``, ``h``, ``d``; no unit means milliseconds. Units are
    case-sensitive, as in haproxy (``10S`` is an error).

    Args:
        text: the value as written, e.g. ``"30s"``, ``"1500"``, ``"100ms"``, ``"2m"``.

    Returns:
        The duration in seconds, e.g. 30.0, 1.5, 0.1, 120.0. ``"0"`` gives 0.0; the caller
        decides what zero means (for ``timeout`` keywords it means "no timeout", as in haproxy).

    Raises:
        ValueError: empty text, no leading digit, an unknown unit, or a value above
            2147483647 ms (haproxy's "timer overflow").
    """
    match = _NUMBER.match(text)
    if not match:
        if not text:
            raise ValueError("empty time value")
        raise ValueError(f"invalid time '{text}': expected digits followed by an optional unit "
                         "(us, ms, s, m, h, d)")
    digits, unit = match.groups()
    if unit == "":
        unit = "ms"
    if unit not in TIME_UNITS:
        raise ValueError(f"invalid time '{text}': unknown unit '{unit}' "
                         "(expected us, ms, s, m, h or d)")
    mult, div = TIME_UNITS[unit]
    value = int(digits)
    # Compare in integer microseconds so the limit check is exact for every unit.
    micros = value * mult * 1_000_000 // div
    if micros > MAX_TIME_MS * 1_000:
        raise ValueError(f"time '{text}' is too large (maximum is {MAX_TIME_MS} ms, "
                         "about 24.8 days)")
    return value * mult / div


MAX_TIME_S = 2**31 - 1
"""Largest time in seconds haproxy accepts where a keyword counts in seconds (2147483647 s)."""


def parse_seconds(text: str) -> int:
    """Parse a haproxy time value counted in whole seconds (haproxy parse_time_err() with
    TIME_UNIT_S, as `cookie ... maxidle` / `maxlife` read theirs): no unit means seconds.

    Returns:
        The duration in whole seconds, rounded down (``"1500ms"`` gives 1); ``"0"`` gives 0.

    Raises:
        ValueError: as parse_time() for the syntax; a non-zero value under one second
            (haproxy's "timer underflow"), or one above 2147483647 s ("timer overflow").
    """
    match = _NUMBER.match(text)
    if not match or match.group(2) not in ("", *TIME_UNITS):
        parse_time(text)  # raises the same message as every other time value
    digits, unit = match.groups()
    mult, div = TIME_UNITS[unit or "s"]
    value = int(digits) * mult // div
    if value == 0 and int(digits) != 0:
        raise ValueError(f"time '{text}' is under the minimum non-null value of 1 s")
    if value > MAX_TIME_S:
        raise ValueError(f"time '{text}' is too large (maximum is {MAX_TIME_S} s, about 68 years)")
    return value


def parse_size(text: str) -> int:
    """Parse a haproxy size value into bytes.

    Implements haproxy's parse_size_err(): ``<digits>[k|m|g]``, suffix case-insensitive and
    1024-based (``16k`` = 16384). Used by ``tune.pipesize``.

    Args:
        text: the value as written, e.g. ``"65536"``, ``"64k"``, ``"1M"``.

    Returns:
        The size in bytes.

    Raises:
        ValueError: empty text, no leading digit, or an unknown suffix.
    """
    match = _NUMBER.match(text)
    if not match:
        if not text:
            raise ValueError("empty size value")
        raise ValueError(f"invalid size '{text}': expected digits followed by an optional "
                         "k, m or g suffix")
    digits, unit = match.groups()
    factor = SIZE_UNITS.get(unit.lower()) if len(unit) <= 1 else None
    if factor is None:
        raise ValueError(f"invalid size '{text}': unknown suffix '{unit}' (expected k, m or g)")
    return int(digits) * factor
