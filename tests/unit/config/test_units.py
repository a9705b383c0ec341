"""splicer.config.units: haproxy time and size formats (configuration.txt 2.4)."""
import pytest

from splicer.config.units import parse_size, parse_time


@pytest.mark.parametrize("text, seconds", [
    ("0", 0.0),
    ("1500", 1.5),            # no unit: milliseconds, as in haproxy
    ("250us", 0.00025),
    ("100ms", 0.1),
    ("30s", 30.0),
    ("2m", 120.0),
    ("3h", 10800.0),
    ("1d", 86400.0),
    ("007s", 7.0),
    ("2147483647", 2147483.647),   # haproxy's largest timer
    ("2147483s", 2147483.0),
    ("24d", 2073600.0),
])
def test_parse_time_every_unit(text, seconds):
    assert parse_time(text) == seconds


@pytest.mark.parametrize("text, message", [
    ("", "empty time value"),
    ("abc", ("invalid time 'abc': expected digits followed by an optional unit "
            "(us, ms, s, m, h, d)")),
    ("-1s", ("invalid time '-1s': expected digits followed by an optional unit "
            "(us, ms, s, m, h, d)")),
    (" 1s", ("invalid time ' 1s': expected digits followed by an optional unit "
            "(us, ms, s, m, h, d)")),
    ("1.5s", "invalid time '1.5s': unknown unit '.5s' (expected us, ms, s, m, h or d)"),
    ("10x", "invalid time '10x': unknown unit 'x' (expected us, ms, s, m, h or d)"),
    ("10S", "invalid time '10S': unknown unit 'S' (expected us, ms, s, m, h or d)"),
    ("10 s", "invalid time '10 s': unknown unit ' s' (expected us, ms, s, m, h or d)"),
    ("5sec", "invalid time '5sec': unknown unit 'sec' (expected us, ms, s, m, h or d)"),
    ("2147483648", "time '2147483648' is too large (maximum is 2147483647 ms, about 24.8 days)"),
    ("25d", "time '25d' is too large (maximum is 2147483647 ms, about 24.8 days)"),
])
def test_parse_time_rejects_bad_values(text, message):
    with pytest.raises(ValueError) as info:
        parse_time(text)
    assert str(info.value) == message


@pytest.mark.parametrize("text, size", [
    ("0", 0),
    ("65536", 65536),
    ("16k", 16384),
    ("16K", 16384),
    ("1m", 1048576),
    ("2M", 2097152),
    ("1g", 1073741824),
    ("1G", 1073741824),
])
def test_parse_size_every_suffix(text, size):
    assert parse_size(text) == size


@pytest.mark.parametrize("text, message", [
    ("", "empty size value"),
    ("k", "invalid size 'k': expected digits followed by an optional k, m or g suffix"),
    ("-1", "invalid size '-1': expected digits followed by an optional k, m or g suffix"),
    ("1kb", "invalid size '1kb': unknown suffix 'kb' (expected k, m or g)"),
    ("1.5k", "invalid size '1.5k': unknown suffix '.5k' (expected k, m or g)"),
    ("10t", "invalid size '10t': unknown suffix 't' (expected k, m or g)"),
])
def test_parse_size_rejects_bad_values(text, message):
    with pytest.raises(ValueError) as info:
        parse_size(text)
    assert str(info.value) == message
