"""admin/commands.py: the command table, levels and haproxy's answers to bad commands."""
import pytest

from splicer.admin.commands import (ALL, ANY, CHANGE, EACH, MERGE, SESSION, Answer, Command, Level,
                                    effective_weight, help_text, parse, parse_weight)

NAMES = {"be": ("s1", "s2")}


def p(line, level=Level.ADMIN):
    return parse(tuple(line.split()), level, NAMES)


@pytest.mark.parametrize("line, kind", [
    ("show info", MERGE), ("show stat", MERGE), ("show counters", MERGE), ("show errors", MERGE),
    ("show servers state", ANY), ("show backend", ANY), ("show sess", EACH), ("clear counters", ALL),
    ("set server be/s1 weight 3", CHANGE), ("disable server be/s1", CHANGE), ("enable health be/s1", CHANGE),
    ("shutdown sessions server be/s1", ALL), ("help", SESSION), ("prompt", SESSION), ("quit", SESSION),
])
def test_each_command_runs_as_its_kind_says(line, kind):
    got = p(line)
    assert isinstance(got, Command) and got.kind == kind and got.words == tuple(line.split())


@pytest.mark.parametrize("line, least", [
    ("show info", Level.USER), ("show stat", Level.USER), ("show servers state", Level.USER),
    ("show backend", Level.USER), ("show counters", Level.USER), ("help", Level.USER),
    ("show sess", Level.OPERATOR), ("show errors", Level.OPERATOR), ("clear counters", Level.OPERATOR),
    ("clear counters all", Level.ADMIN), ("set server be/s1 state drain", Level.ADMIN),
    ("disable server be/s1", Level.ADMIN), ("enable server be/s1", Level.ADMIN),
    ("disable health be/s1", Level.ADMIN), ("shutdown sessions server be/s1", Level.ADMIN),
])
def test_levels_are_haproxys(line, least):
    for level in Level:
        got = p(line, level)
        if level >= least:
            assert isinstance(got, Command), (line, level)
        else:
            assert got == Answer("Permission denied\n"), (line, level)


def test_server_commands_parse_their_arguments():
    assert (lambda c: (c.backend, c.server, c.action, c.value))(p("set server be/s2 state maint")) == (
        "be", "s2", "state", "maint")
    c = p("set server be/s1 weight 50%")
    assert (c.action, c.value, c.relative) == ("weight", 50, True)
    c = p("set server be/s1 addr 10.0.0.7 port 8080")
    assert (c.action, c.value, c.port) == ("addr", "10.0.0.7", 8080)
    assert p("set server be/s1 addr ::1").value == "::1"
    assert p("disable server be/s1").action == "maint"
    assert p("enable server be/s1").action == "ready"
    assert p("disable health be/s1").action == "off"
    assert p("clear counters all").action == "all"
    assert p("show stat typed").action == "typed"
    assert p("show servers state be").backend == "be"


@pytest.mark.parametrize("line, text", [
    ("disable server be", "Require 'backend/server'.\n"),
    ("set server", "Require 'backend/server'.\n"),
    ("disable server nope/s1", "No such backend.\n"),
    ("set server be/s9 weight 1", "No such server.\n"),
    ("set server be/s1", "usage: set server <backend>/<server> addr | state | weight\n"),
    ("set server be/s1 fqdn x", "usage: set server <backend>/<server> addr | state | weight\n"),
    ("set server be/s1 state up", "'set server <srv> state' expects 'ready', 'drain' and 'maint'.\n"),
    ("set server be/s1 weight 257", "Absolute weight can only be between 0 and 256 inclusive.\n"),
    ("set server be/s1 weight x", "Require <weight> or <weight%>.\n"),
    ("set server be/s1 addr nowhere", "Invalid addr 'nowhere'.\n"),
    ("set server be/s1 addr 1.2.3.4 port 0", "Invalid port '0'.\n"),
    ("set server be/s1 addr 1.2.3.4 prt 80",
     "set server <b>/<s> addr requires an address and optionally a port.\n"),
    ("show servers state nope", "Can't find backend 'nope'.\n"),
])
def test_bad_arguments_get_haproxys_answers(line, text):
    assert p(line) == Answer(text)


def test_unknown_commands_list_the_closest_ones_or_all():
    close = p("shwo info", Level.USER)
    assert close.text.startswith("Unknown command, but maybe one of the following ones is a better match:\n")
    assert "  show info " in close.text
    every = p("frobnicate", Level.USER)
    assert every.text.startswith("Unknown command. Please enter one of the following commands only:\n")
    assert "show backend" in every.text and "set server" not in every.text  # only this level's


def test_help_lists_the_commands_of_the_level():
    user = help_text(Level.USER)
    admin = help_text(Level.ADMIN)
    assert user.startswith("The following commands are valid at this level:\n")
    assert "  show info                               : " in user
    assert "set server" not in user and "show errors" not in user
    assert "set server <bk>/<srv> [opts]" in admin and "show errors" in admin
    assert help_text(Level.ADMIN, ("show", "servers")).count("\n") == 2
    assert all(line == "" or len(line.split(": ", 1)[0]) == 42 for line in admin.split("\n")[1:])


def test_weights():
    assert parse_weight("0") == (0, False)
    assert parse_weight("256") == (256, False)
    assert parse_weight("150%") == (150, True)
    assert effective_weight(50, True, 3) == 1  # 50 % of 3, rounded down
    assert effective_weight(200, True, 200) == 256  # capped
    assert effective_weight(7, False, 3) == 7


@pytest.mark.parametrize("line, text", [
    ("set server be/s1 addr 1.2.3.4 port 80 extra",
     "set server <b>/<s> addr requires an address and optionally a port.\n"),
    ("set server be/s1 addr 1.2.3.4 extra",
     "set server <b>/<s> addr requires an address and optionally a port.\n"),
    ("set weight be", "Require 'backend/server'.\n"),
    ("set weight be/s9 3", "No such server.\n"),
    ("set weight be/s1", "Require <weight> or <weight%>.\n"),
    ("set weight be/s1 300", "Absolute weight can only be between 0 and 256 inclusive.\n"),
    ("get weight be/s9", "No such server.\n"),
    ("get weight nope/s1", "No such backend.\n"),
])
def test_trailing_words_and_the_legacy_weight_commands(line, text):
    assert p(line) == Answer(text)


def test_set_and_get_weight_are_haproxys_legacy_commands():
    cmd = p("set weight be/s1 50%")
    assert (cmd.kind, cmd.backend, cmd.server, cmd.action, cmd.value, cmd.relative) == (
        CHANGE, "be", "s1", "weight", 50, True)
    assert p("set weight be/s1 3", Level.OPERATOR) == Answer("Permission denied\n")
    got = p("get weight be/s2", Level.USER)
    assert (got.kind, got.name, got.backend, got.server) == (ANY, "get weight", "be", "s2")
