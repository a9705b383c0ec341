"""haproxy's line syntax: configuration text in, words with their positions out.

Rule: everything that decides how a configuration line is split into words (quoting, escaping,
comments, environment expansion) lives here; nothing here knows any keyword or section.

Theory of operation (haproxy configuration.txt 2.2 "Quoting and escaping" and 2.3 "Environment
variables", following haproxy's parse_line()):

- One statement per line. Words are separated by runs of blanks (space, tab, VT, FF); a CR or
  the end of the line ends the statement, even inside quotes. Backslash-newline is *not* a
  continuation.
- ``#`` outside quotes starts a comment, even in the middle of a word (``a#b`` is ``a``).
- Single quotes (strong quoting) keep everything literally, backslashes and ``$`` included.
- Double quotes (weak quoting) keep blanks, ``#`` and ``'`` literally but still honour
  backslash escapes and expand environment variables.
- Quotes may open and close inside a word: ``a"b c"d`` is the single word ``ab cd``; ``""`` is
  an empty word.
- Outside single quotes, a backslash escapes: ``\\<space>``, ``\\\\``, ``\\#``, ``\\'``,
  ``\\"`` give the character; ``\\t``, ``\\n``, ``\\r`` give TAB, LF, CR; ``\\xHH`` gives the
  character with that code; ``\\$`` gives ``$`` inside double quotes. Any other backslash is
  kept as is (``\\1`` stays ``\\1``).
- Environment variables are expanded only inside double quotes: ``"$NAME"``, ``"${NAME}"``,
  ``"${NAME-default}"`` (default used when NAME is unset) and ``"${NAME[*]}"`` (the value is
  split on blanks into several words). A name starts with a letter or ``_`` and continues with
  letters, digits and ``_``. An unset variable expands to nothing. ``$`` outside double quotes
  is an ordinary character, as in haproxy. The pseudo-variables ``.LINE`` and ``.FILE`` give the
  current line number and file name.

Errors (unmatched quote or brace, bad variable name, bad ``\\x`` escape) are reported per line
as LexError so the parser can keep going and report every broken line at once.
"""
from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

BLANKS = " \t\v\f"
"""Characters separating words (C isspace() minus CR/LF, which end the line)."""

_HEX = "0123456789abcdefABCDEF"
_SIMPLE_ESCAPES = {" ": " ", "\\": "\\", "t": "\t", "n": "\n", "r": "\r", "#": "#",
                   "'": "'", '"': '"'}


@dataclass(frozen=True)
class Token:
    """One word of a statement, after unquoting, unescaping and expansion.

    Attributes:
        text: the word's final value (may be empty, e.g. from ``""``).
        line: 1-based line number in the file.
        column: 1-based column in the raw line where the word starts.
    """

    text: str
    line: int
    column: int


@dataclass(frozen=True)
class Statement:
    """One non-empty configuration line split into words.

    Attributes:
        tokens: the words, in order; never empty.
        line: 1-based line number.
    """

    tokens: tuple[Token, ...]
    line: int

    @property
    def words(self) -> tuple[str, ...]:
        """The tokens' texts."""
        return tuple(t.text for t in self.tokens)


class LexError(ValueError):
    """A line that cannot be split into words (haproxy's PARSE_ERR_* cases).

    Args:
        line: 1-based line number.
        column: 1-based column of the offending character (an unmatched quote reports the
            column where the quote opened).
        msg: what is wrong, without the "file:line: " prefix.
    """

    def __init__(self, line: int, column: int, msg: str) -> None:
        self.line = line
        self.column = column
        self.msg = msg
        super().__init__(msg)


class _Words:
    """Accumulates characters into words for one line."""

    def __init__(self, line: int) -> None:
        self.line = line
        self.tokens: list[Token] = []
        self.chars: list[str] = []
        self.start: int | None = None  # 1-based column of the current word, None = no word

    def begin(self, column: int) -> None:
        if self.start is None:
            self.start = column

    def emit(self, text: str, column: int) -> None:
        self.begin(column)
        self.chars.append(text)

    def end(self) -> None:
        if self.start is not None:
            self.tokens.append(Token("".join(self.chars), self.line, self.start))
        self.chars = []
        self.start = None


def tokenize_line(text: str, line: int = 1, env: Mapping[str, str] | None = None,
                  file: str = "") -> tuple[Token, ...]:
    """Split one configuration line into words, following haproxy's parse_line().

    Args:
        text: the raw line, without its trailing newline (a CR ends it anyway).
        line: its 1-based line number, stored in every Token.
        env: environment for ``"$VAR"`` expansion; None means ``os.environ``.
        file: file name returned by the ``"${.FILE}"`` pseudo-variable.

    Returns:
        The words in order; an empty tuple for a blank or comment-only line.

    Raises:
        LexError: unmatched quote or brace, invalid variable name, unsupported pseudo-variable,
            bad ``\\xHH`` escape, or a ``[`` after a variable name that is not ``[*]``.
    """
    if env is None:
        env = os.environ
    out = _Words(line)
    quote: str | None = None  # '"' or "'" while inside quotes
    quote_col = 0
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        col = i + 1
        if c in "\r\n":
            break  # haproxy ends the line here even inside quotes (then the quote is unmatched)
        if quote is None and c == "#":
            break
        if c == '"' and quote != "'":
            if quote is None:
                quote, quote_col = '"', col
                out.begin(col)
            else:
                quote = None
            i += 1
        elif c == "'" and quote != '"':
            if quote is None:
                quote, quote_col = "'", col
                out.begin(col)
            else:
                quote = None
            i += 1
        elif c == "\\" and quote != "'":
            i = _escape(text, i, quote, out)
        elif c in BLANKS and quote is None:
            out.end()
            i += 1
        elif c == "$" and quote == '"':
            i = _expand(text, i, line, env, file, out)
        else:
            out.emit(c, col)
            i += 1
    if quote is not None:
        kind = "double" if quote == '"' else "single"
        raise LexError(line, quote_col, f"unmatched {kind} quote starting at column {quote_col}")
    out.end()
    return tuple(out.tokens)


def _escape(text: str, i: int, quote: str | None, out: _Words) -> int:
    """Handle the backslash at text[i]; return the index of the next character to read."""
    col = i + 1
    nxt = text[i + 1] if i + 1 < len(text) else ""
    if nxt in _SIMPLE_ESCAPES:
        out.emit(_SIMPLE_ESCAPES[nxt], col)
        return i + 2
    if nxt == "$" and quote == '"':
        out.emit("$", col)
        return i + 2
    if nxt == "x":
        digits = text[i + 2:i + 4]
        if len(digits) != 2 or any(d not in _HEX for d in digits):
            raise LexError(out.line, col, f"invalid escape at column {col}: '\\x' must be "
                                          "followed by two hexadecimal digits")
        out.emit(chr(int(digits, 16)), col)
        return i + 4
    # Not an escape sequence: the backslash is an ordinary character (haproxy keeps "\1").
    out.emit("\\", col)
    return i + 1


def _expand(text: str, i: int, line: int, env: Mapping[str, str], file: str,
            out: _Words) -> int:
    """Expand the variable whose ``$`` is at text[i] (inside double quotes); return next index."""
    col = i + 1
    n = len(text)
    j = i + 1
    brace = j < n and text[j] == "{"
    if brace:
        j += 1
    if j >= n or not (_is_alpha(text[j]) or text[j] in "_."):
        raise LexError(line, col, f"invalid variable name after '$' at column {col}")
    name_start = j
    if text[j] == ".":
        j += 1
    while j < n and (_is_alnum(text[j]) or text[j] == "_"):
        j += 1
    name = text[name_start:j]
    value: str | None
    if name.startswith("."):
        if name == ".LINE":
            value = str(line)
        elif name == ".FILE":
            value = file
        else:
            raise LexError(line, col, f"unsupported variable '{name}' at column {col} "
                                      "(supported pseudo-variables: .LINE, .FILE)")
    else:
        value = env.get(name)
    split_words = False
    if brace and j < n and text[j] == "[":
        if text[j:j + 3] != "[*]":
            raise LexError(line, j + 1, f"invalid expansion at column {j + 1}: only '[*]' may "
                                        "follow a variable name")
        split_words = True
        j += 3
    if brace:
        if j < n and text[j] == "-":
            close = text.find("}", j)
            if close < 0:
                raise LexError(line, col, f"unmatched '{{' in variable at column {col}")
            if value is None:
                value = text[j + 1:close]
            j = close
        if j >= n or text[j] != "}":
            raise LexError(line, col, f"unmatched '{{' in variable at column {col}")
        j += 1
    out.begin(col)
    after_blank = False
    for ch in value or "":
        if split_words and ch in BLANKS:
            # "[*]": a run of blanks in the value ends the current word and starts the next.
            if not after_blank:
                out.end()
                out.begin(col)
            after_blank = True
            continue
        after_blank = False
        out.emit(ch, col)
    return j


def _is_alpha(c: str) -> bool:
    return c.isascii() and c.isalpha()


def _is_alnum(c: str) -> bool:
    return c.isascii() and c.isalnum()


def tokenize(text: str, env: Mapping[str, str] | None = None,
             file: str = "") -> tuple[list[Statement], list[LexError]]:
    """Split a whole configuration text into statements, collecting every line's error.

    Lines are separated by LF; each is read by tokenize_line(). Blank and comment-only lines
    produce no statement.

    Args:
        text: the file's contents.
        env: environment for ``"$VAR"`` expansion; None means ``os.environ``.
        file: file name for the ``"${.FILE}"`` pseudo-variable.

    Returns:
        (statements in file order, errors in file order). A line with an error gives no
        statement.
    """
    statements: list[Statement] = []
    errors: list[LexError] = []
    for number, raw in enumerate(text.split("\n"), start=1):
        try:
            tokens = tokenize_line(raw, number, env, file)
        except LexError as exc:
            errors.append(exc)
            continue
        if tokens:
            statements.append(Statement(tokens, number))
    return statements, errors
