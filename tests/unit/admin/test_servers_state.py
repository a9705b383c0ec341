"""admin/servers_state.py: haproxy's `show servers state` version 1, rendered and read back."""
import pytest

from splicer.admin.servers_state import COLUMNS, ServerState, StateFileError, parse, render

# as haproxy 2.6 prints it for `server s1 127.0.0.1:18081 weight 3` and a checked, failing s2
HAPROXY = """1
# be_id be_name srv_id srv_name srv_addr srv_op_state srv_admin_state srv_uweight srv_iweight \
srv_time_since_last_change srv_check_status srv_check_result srv_check_health srv_check_state \
srv_agent_state bk_f_forced_id srv_f_forced_id srv_fqdn srv_port srvrecord srv_use_ssl srv_check_port \
srv_check_addr srv_agent_addr srv_agent_port
3 be 1 s1 127.0.0.1 2 0 3 3 0 1 0 2 0 0 0 0 - 18081 - 0 0 - - 0
3 be 2 s2 127.0.0.1 0 0 1 1 0 8 2 0 6 0 0 0 - 18082 - 0 0 - - 0
"""


def test_reads_haproxys_dump_and_writes_it_back_identically():
    states = parse(HAPROXY)
    assert [(s.be_name, s.srv_name, s.op_state, s.uweight, s.check_status, s.port) for s in states] == [
        ("be", "s1", 2, 3, 1, 18081), ("be", "s2", 0, 1, 8, 18082)]
    assert states[1].check_state == 6 and states[0].fqdn == ""
    assert render(states) == HAPROXY


def test_header_names_every_column():
    assert render([]).split("\n")[1] == "# " + " ".join(COLUMNS)
    assert len(COLUMNS) == 25


def test_comments_blank_lines_and_short_lines():
    text = "1\n# a comment\n\n1 be 1 s1 10.0.0.1 2 1 5 1 0 1 0 0 0 0 0 0 - 80\n"
    (s,) = parse(text)
    assert (s.admin_state, s.uweight, s.port, s.use_ssl) == (1, 5, 80, 0)
    assert parse("") == []


@pytest.mark.parametrize("text, message", [
    ("2\n", "line 1: unsupported version '2'"),
    ("1\n1 be 1 s1 10.0.0.1 2\n", "line 2: 6 fields, version 1 has 25"),
    ("1\n1 be x s1 10.0.0.1 2 1 5 1 0 1 0 0 0 0 0 0 - 80\n", "line 2: srv_id 'x' is not a number"),
])
def test_bad_files_say_which_line(text, message):
    with pytest.raises(StateFileError, match=message):
        parse(text)


def test_empty_strings_are_dashes():
    line = render([ServerState(1, "be", 1, "s1", "10.0.0.1", port=80)]).split("\n")[2]
    assert line.split()[17] == "-" and line.split()[18] == "80"
