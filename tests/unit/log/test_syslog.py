"""splicer.log.syslog: the frames of each `format`, PRI, levels and `len`."""
import re
import time

import pytest

from splicer.log.syslog import FACILITIES, INFO, LEVELS, Framer

NOW = time.mktime((2026, 2, 6, 12, 14, 14, 0, 0, -1)) + 0.5


def test_tables_follow_haproxy():
    assert len(FACILITIES) == 24 and FACILITIES.index("local0") == 16 and FACILITIES.index("daemon") == 3
    assert LEVELS.index("info") == INFO == 6 and LEVELS[0] == "emerg" and LEVELS[7] == "debug"


def test_local_is_rfc3164_without_hostname():
    f = Framer("local", 16, pid=42, host="box")
    assert f.frame(INFO, "msg", NOW) == b"<134>Feb  6 12:14:14 splicer[42]: msg\n"


def test_rfc3164_has_the_hostname():
    assert Framer("rfc3164", 16, pid=42, host="box").frame(INFO, "m", NOW) == b"<134>Feb  6 12:14:14 box splicer[42]: m\n"


def test_rfc5424():
    data = Framer("rfc5424", 1, pid=42, host="box").frame(INFO, "m", NOW).decode()
    assert re.fullmatch(r"<14>1 2026-02-06T12:14:14\.500000[+-]\d\d:\d\d box splicer 42 - - m\n", data), data


@pytest.mark.parametrize("fmt, out", [("priority", b"<134>m\n"), ("short", b"<6>m\n"), ("raw", b"m\n")])
def test_short_forms(fmt, out):
    assert Framer(fmt, 16).frame(INFO, "m", NOW) == out


def test_minlevel_caps_severity_and_level_filters_info():
    assert Framer("short", 16, minlevel=4).frame(2, "m", NOW) == b"<4>m\n"
    assert Framer("short", 16, level=5).sends_info is False
    assert Framer("short", 16, level=6).sends_info is True


def test_len_cuts_and_keeps_the_newline():
    data = Framer("raw", 16, maxlen=80).frame(INFO, "x" * 200, NOW)
    assert len(data) == 80 and data == b"x" * 79 + b"\n"
    assert Framer("raw", 16, maxlen=0).frame(INFO, "x" * 2000, NOW) == b"x" * 2000 + b"\n"


def test_unknown_format_is_refused():
    with pytest.raises(ValueError):
        Framer("cbor", 16)


@pytest.mark.parametrize("fmt", ["local", "rfc3164", "raw", "short"])
def test_join_is_the_frames_concatenated(fmt):
    f = Framer(fmt, 16, pid=1, host="h", maxlen=0)
    lines = ["a", "b c", "d"]
    assert f.join(INFO, lines, NOW) == b"".join(f.frame(INFO, x, NOW) for x in lines)


def test_frames_is_frame_of_each_with_the_cut():
    f = Framer("local", 16, pid=1, host="h", maxlen=80)
    lines = ["short", "y" * 300]
    assert f.frames(INFO, lines, NOW) == [f.frame(INFO, x, NOW) for x in lines]
    assert len(f.frames(INFO, lines, NOW)[1]) == 80


@pytest.mark.parametrize("fmt", ["local", "rfc5424", "raw"])
def test_fits_says_when_join_gives_the_frames_with_a_len(fmt):
    f = Framer(fmt, 16, pid=1, host="h", maxlen=120)
    head = len(f.frame(INFO, "", NOW)) - 1
    for n in (0, 1, 118 - head, 119 - head, 120 - head, 200):
        lines = ["a", "x" * n]
        if f.fits(INFO, lines, NOW):
            assert f.join(INFO, lines, NOW) == b"".join(f.frames(INFO, lines, NOW))
        else:  # some line is cut by len: only frames() cuts it
            assert n + head + 1 > 120
    assert f.fits(INFO, ["x" * (119 - head)], NOW) and not f.fits(INFO, ["x" * (120 - head)], NOW)
    assert f.fits(INFO, [], NOW) and Framer(fmt, 16, maxlen=0).fits(INFO, ["x" * 5000], NOW)
