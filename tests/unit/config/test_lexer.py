"""splicer.config.lexer: haproxy line syntax (configuration.txt 2.2 and 2.3, parse_line())."""
import pytest

from splicer.config.lexer import LexError, Statement, Token, tokenize, tokenize_line

ENV = {"HOST": "10.0.0.1", "PORT": "8080", "LIST": "a  b c", "EMPTY": "", "SPACED": "x y"}


def words(line, env=ENV):
    return [t.text for t in tokenize_line(line, 1, env, "site.cfg")]


@pytest.mark.parametrize("line, expected", [
    ("bind :80", ["bind", ":80"]),
    ("  \tserver  s1\t10.0.0.1:80  ", ["server", "s1", "10.0.0.1:80"]),
    ("a\vb\fc", ["a", "b", "c"]),
    ("", []),
    ("   ", []),
])
def test_words_split_on_blanks(line, expected):
    assert words(line) == expected


@pytest.mark.parametrize("line, expected", [
    ("# whole line", []),
    ("bind :80 # trailing", ["bind", ":80"]),
    ("bind :80#glued", ["bind", ":80"]),
    ('log "a # b"', ["log", "a # b"]),
    ("log 'a # b'", ["log", "a # b"]),
    (r"log a\#b", ["log", "a#b"]),
])
def test_comments_start_at_unquoted_hash(line, expected):
    assert words(line) == expected


@pytest.mark.parametrize("line, expected", [
    ('x "a b"', ["x", "a b"]),
    ("x 'a b'", ["x", "a b"]),
    ('x a"b c"d', ["x", "ab cd"]),
    ("x 'it\"s'", ["x", 'it"s']),
    ("x \"it's\"", ["x", "it's"]),
    ('x "a"\'b\'c', ["x", "abc"]),
    ('x ""', ["x", ""]),
    ("x '' y", ["x", "", "y"]),
])
def test_quotes_join_words(line, expected):
    assert words(line) == expected


@pytest.mark.parametrize("line, expected", [
    (r"x a\ b", ["x", "a b"]),
    (r"x a\\b", ["x", "a\\b"]),
    (r"x \"q\"", ["x", '"q"']),
    (r"x \'q\'", ["x", "'q'"]),
    (r"x a\tb a\nb a\rb", ["x", "a\tb", "a\nb", "a\rb"]),
    (r"x \x41\x7a", ["x", "Az"]),
    (r'x "a\"b"', ["x", 'a"b']),
    (r'x "a\ b"', ["x", "a b"]),
    (r"x \1 \d", ["x", "\\1", "\\d"]),          # not escapes: backslash kept
    (r"x 'a\tb\\'", ["x", "a\\tb\\\\"]),        # strong quoting keeps backslashes
    ("x tail\\", ["x", "tail\\"]),                # trailing backslash is literal, no continuation
])
def test_backslash_escapes(line, expected):
    assert words(line) == expected


@pytest.mark.parametrize("line, expected", [
    ('server s1 "${HOST}:${PORT}"', ["server", "s1", "10.0.0.1:8080"]),
    ('server s1 "$HOST:$PORT"', ["server", "s1", "10.0.0.1:8080"]),
    ('x "pre-${HOST}-post"', ["x", "pre-10.0.0.1-post"]),
    ('x "${UNSET}"', ["x", ""]),
    ('x "$UNSET"end', ["x", "end"]),
    ('x "${UNSET-fallback}"', ["x", "fallback"]),
    ('x "${HOST-fallback}"', ["x", "10.0.0.1"]),
    ('x "${EMPTY-fallback}"', ["x", ""]),       # default only when unset, as in haproxy
    ('x "${SPACED}"', ["x", "x y"]),             # no word splitting without [*]
    ('x "${LIST[*]}"', ["x", "a", "b", "c"]),
    ('x "<${LIST[*]}>"', ["x", "<a", "b", "c>"]),
    ("x $HOST ${HOST}", ["x", "$HOST", "${HOST}"]),   # unquoted: not expanded (haproxy 2.3)
    ("x '$HOST'", ["x", "$HOST"]),
    (r'x "\$HOST"', ["x", "$HOST"]),
    (r"x \$HOST", ["x", "\\$HOST"]),
    ('x "${.LINE}" "${.FILE}"', ["x", "1", "site.cfg"]),
])
def test_environment_expansion_in_double_quotes(line, expected):
    assert words(line) == expected


def test_default_environment_is_os_environ(monkeypatch):
    monkeypatch.setenv("SPLICER_TEST_PORT", "8443")
    assert [t.text for t in tokenize_line('bind ":${SPLICER_TEST_PORT}"')] == ["bind", ":8443"]


def test_cr_ends_the_statement():
    assert words("bind :80\r") == ["bind", ":80"]
    assert words("bind :80\r:81") == ["bind", ":80"]
    with pytest.raises(LexError) as info:
        tokenize_line('log "a\rb"', 3)
    assert info.value.msg == "unmatched double quote starting at column 5"


def test_tokens_keep_line_and_column():
    assert tokenize_line('  server s1 "a b"  x', 12, ENV) == (
        Token("server", 12, 3), Token("s1", 12, 10), Token("a b", 12, 13), Token("x", 12, 20),
    )


@pytest.mark.parametrize("line, column, message", [
    ('log "abc', 5, "unmatched double quote starting at column 5"),
    ("log 'abc", 5, "unmatched single quote starting at column 5"),
    ("log 'a\"b", 5, "unmatched single quote starting at column 5"),
    ('x "${HOST"', 4, "unmatched '{' in variable at column 4"),
    ('x "${HOST-def"', 4, "unmatched '{' in variable at column 4"),
    ('x "$1"', 4, "invalid variable name after '$' at column 4"),
    ('x "a$"', 5, "invalid variable name after '$' at column 5"),
    ('x "${LIST[0]}"', 10, ("invalid expansion at column 10: only '[*]' may follow a variable "
                           "name")),
    ('x "${.SECTION}"', 4, ("unsupported variable '.SECTION' at column 4 (supported "
                           "pseudo-variables: .LINE, .FILE)")),
    (r"x \x4", 3, "invalid escape at column 3: '\\x' must be followed by two hexadecimal digits"),
    (r"x \xZZ", 3, ("invalid escape at column 3: '\\x' must be followed by two hexadecimal "
                   "digits")),
])
def test_lex_errors(line, column, message):
    with pytest.raises(LexError) as info:
        tokenize_line(line, 7, ENV)
    assert (info.value.line, info.value.column, info.value.msg) == (7, column, message)


def test_tokenize_collects_statements_and_every_error():
    text = 'global\n\n  # comment\n  log "x\n  maxconn 10\nbad \'quote\n'
    statements, errors = tokenize(text, env={})
    assert statements == [
        Statement((Token("global", 1, 1),), 1),
        Statement((Token("maxconn", 5, 3), Token("10", 5, 11)), 5),
    ]
    assert [(e.line, e.msg) for e in errors] == [
        (4, "unmatched double quote starting at column 7"),
        (6, "unmatched single quote starting at column 5"),
    ]
    assert statements[1].words == ("maxconn", "10")


# --- columns and edge positions (mutation-testing gaps) -----------------------------------------

def test_a_word_starting_with_an_escape_starts_at_the_backslash():
    assert tokenize_line(r"\#x y") == (Token("#x", 1, 1), Token("y", 1, 5))
    assert tokenize_line(r"a \1") == (Token("a", 1, 1), Token("\\1", 1, 3))


@pytest.mark.parametrize("line, column, message", [
    ('x "$', 4, "invalid variable name after '$' at column 4"),
    ('x "${', 4, "invalid variable name after '$' at column 4"),
    ('x "$A', 3, "unmatched double quote starting at column 3"),
    ('x "${A', 4, "unmatched '{' in variable at column 4"),
    ('x "${A-b', 4, "unmatched '{' in variable at column 4"),
    ('x "${.}"', 4, "unsupported variable '.' at column 4 (supported pseudo-variables: .LINE, .FILE)"),
])
def test_expansion_cut_short_by_the_end_of_the_line(line, column, message):
    with pytest.raises(LexError) as exc:
        tokenize_line(line, 1, {"A": "v"}, "site.cfg")
    assert (exc.value.column, exc.value.msg, str(exc.value)) == (column, message, message)


def test_default_value_ends_at_the_first_brace_after_the_name():
    assert words('"}${UNSET-x}"') == ["}x"]
    assert words('"${UNSET-a}}"') == ["a}"]


def test_braced_name_is_read_from_its_first_character():
    assert words('"${HOST}:${PORT}"') == ["10.0.0.1:8080"]


def test_file_pseudo_variable_is_empty_without_a_file_name_and_the_path_through_loads():
    assert [t.text for t in tokenize_line('x "${.FILE}"')] == ["x", ""]
    statements, errors = tokenize('x "${.FILE}"\n', env={}, file="a.cfg")
    assert (statements[0].words, errors) == (("x", "a.cfg"), [])
    statements, _ = tokenize('x "${.FILE}"\n', env={})
    assert statements[0].words == ("x", "")
