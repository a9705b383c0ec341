"""runtime/mastercli.py: the master CLI's line protocol and `show proc`, without sockets."""
from splicer.runtime.mastercli import PROMPT, CliSession, ProcRow, show_proc, uptime


def test_one_command_line_per_connection():
    s = CliSession()
    assert s.feed(b"show pr") == []
    assert not s.done
    assert s.feed(b"oc\nhelp\n") == ["show proc"]  # what follows the first line is not run
    assert s.done
    assert s.after_answer() == ""


def test_semicolons_separate_commands():
    s = CliSession()
    assert s.feed(b"show proc; show counters ;\r\n") == ["show proc", "show counters"]


def test_prompt_keeps_the_connection_and_shows_the_prompt():
    s = CliSession()
    assert s.feed(b"prompt\n") == ["prompt"]
    assert s.interactive and not s.done and s.after_answer() == PROMPT
    assert s.feed(b"\n") == [""]  # an empty line: the prompt again
    assert s.feed(b"show proc\nhelp\n") == ["show proc", "help"]
    assert not s.done
    assert s.feed(b"quit\n") == ["quit"]
    assert s.done and s.after_answer() == ""


def test_eof_runs_an_unterminated_last_line():
    s = CliSession()
    assert s.feed(b"show counters") == []
    assert s.feed(b"") == ["show counters"]
    assert s.done


def test_an_endless_line_ends_the_connection():
    s = CliSession()
    s.feed(b"x" * 20000)
    assert s.done


def test_uptime_form():
    assert uptime(0) == "0d00h00m00s"
    assert uptime(2 * 86400 + 3 * 3600 + 4 * 60 + 5.9) == "2d03h04m05s"


def test_show_proc_table():
    out = show_proc(ProcRow(10, "master", 2, 310, "1.0", 3, failed=1),
                    [ProcRow(12, "worker", 0, 72, "1.0", 3)], [ProcRow(11, "worker", 1, 100, "1.0", 2)])
    lines = out.splitlines()
    assert lines[0].split() == ["#<PID>", "<type>", "<reloads>", "<uptime>", "<version>", "<generation>"]
    assert lines[1].split() == ["10", "master", "2", "[failed:", "1]", "0d00h05m10s", "1.0", "3"]
    assert lines[2] == "# workers"
    assert lines[3].split() == ["12", "worker", "0", "0d00h01m12s", "1.0", "3"]
    assert lines[4] == "# old workers"
    assert lines[5].split()[:2] == ["11", "worker"]
    assert lines[6] == "# programs"


def test_an_overlong_line_in_several_reads_ends_the_connection_unrun():
    from splicer.runtime.mastercli import MAX_LINE
    s = CliSession()
    assert s.feed(b"show proc;" + b" " * (MAX_LINE // 2)) == []
    assert not s.done
    assert s.feed(b" " * (MAX_LINE // 2) + b"\n") == []  # complete now, but too long: not run
    assert s.done


def test_quit_ends_its_line():
    s = CliSession()
    assert s.feed(b"help;quit;show proc\n") == ["help", "quit"]
    assert s.done


def test_a_nul_byte_refuses_the_whole_line():
    from splicer.runtime.mastercli import NUL_REFUSED, Reply
    s = CliSession()
    assert s.feed(b"prompt\nshow proc;he\x00lp\nhelp\n") == ["prompt", Reply(NUL_REFUSED), "help"]
    assert not s.done
