"""admin/line.py: splitting lines into commands, and the session's modes (management.txt 9.3)."""
from splicer.admin.commands import Answer, Command, Level
from splicer.admin.line import PROMPT, CliSession, answer, split_commands


def texts(steps):
    return [s.text if isinstance(s, Answer) else s.name for s in steps]


def test_split_on_semicolons_and_blanks_with_backslash_escapes():
    assert split_commands("show info;show stat") == [["show", "info"], ["show", "stat"]]
    assert split_commands("  set  server\tbe/s1 weight 3 ;; ") == [["set", "server", "be/s1", "weight", "3"]]
    assert split_commands(r"a\;b c\\d e\ f") == [["a;b", "c\\d", "e f"]]
    assert split_commands("") == []


def test_answers_end_with_an_empty_line():
    assert answer("") == "\n"
    assert answer("x") == "x\n\n"
    assert answer("x\n") == "x\n\n"


def test_one_line_then_close_without_prompt():
    s = CliSession(Level.ADMIN)
    steps = s.handle("show info;show cli level")
    assert [type(x) for x in steps] == [Command, Answer]
    assert steps[1].text == "admin\n\n"
    assert s.closed


def test_lines_sent_together_all_run_before_the_close():
    s = CliSession(Level.ADMIN)
    assert texts(s.handle("show cli level", more=True)) == ["admin\n\n"]
    assert not s.closed
    assert texts(s.handle("show cli level")) == ["admin\n\n"]
    assert s.closed


def test_prompt_mode_until_quit():
    s = CliSession(Level.USER)
    assert texts(s.handle("prompt")) == ["\n", PROMPT]
    assert not s.closed
    assert texts(s.handle("show backend")) == ["show backend", PROMPT]
    assert texts(s.handle("")) == [PROMPT]
    assert texts(s.handle("show cli level;quit;show info")) == ["user\n\n"]
    assert s.closed


def test_prompt_again_leaves_after_the_line():
    s = CliSession()
    s.handle("prompt")
    assert texts(s.handle("prompt;show backend")) == ["\n", "show backend"]
    assert s.closed


def test_level_only_goes_down():
    s = CliSession(Level.OPERATOR)
    s.handle("prompt")
    assert texts(s.handle("user;show cli level;operator;show cli level")) == [
        "\n", "user\n\n", "Permission denied\n\n", "user\n\n", PROMPT]
    assert texts(s.handle("show sess")) == ["Permission denied\n\n", PROMPT]


def test_help_and_errors_are_answered_by_the_session():
    s = CliSession(Level.USER, {"be": ("s1",)})
    steps = s.handle("help;disable server be/s1")
    assert steps[0].text.startswith("The following commands are valid at this level:\n")
    assert steps[0].text.endswith("\n\n") and "\n\n" not in steps[0].text[:-2]
    assert steps[1].text == "Permission denied\n\n"


def test_a_nul_byte_refuses_the_whole_line():
    from splicer.admin.line import NUL_REFUSED
    s = CliSession(Level.ADMIN)
    assert texts(s.handle("show info\0;disable server be/s1")) == [NUL_REFUSED + "\n"]
    assert s.closed
    s = CliSession(Level.ADMIN, interactive=True)
    assert texts(s.handle("disable server be/s1;\0")) == [NUL_REFUSED + "\n", PROMPT]
    assert not s.closed


def test_a_line_of_empty_commands_gets_one_empty_answer():
    s = CliSession(Level.ADMIN)
    assert texts(s.handle(";")) == ["\n"]
    assert s.closed
    assert texts(CliSession(Level.ADMIN, interactive=True).handle(" ; ;")) == ["\n", PROMPT]
    assert texts(CliSession(Level.ADMIN, interactive=True).handle("")) == [PROMPT]
