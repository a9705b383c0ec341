"""Statements in, sections of raw entries out: the second stage of reading a configuration.

Rule: the parser decides which section each statement belongs to and hands the statement to its
registered keyword (keywords.py); it keeps the file and line of everything it records. It never
stops at the first problem: every error of every line is collected, as haproxy accumulates
ERR_ALERT, and raised together as ConfigErrors at the end. Checks that need more than one
statement (defaults inheritance, references between sections, duplicates) are resolve.py's.

Theory of operation: a line whose first word is a section keyword (``global``, ``defaults``,
``frontend``, ``backend``, ``listen``, ``userlist``, ``ring``) opens a section that lasts until the next one. Each
``frontend``/``backend``/``listen`` section remembers the ``defaults`` section in force where it
starts (None before the first one); a later ``defaults`` section replaces it for the sections
that follow. Other lines are ``[no] keyword args...`` statements of the current section. After
a broken section line, or an unsupported section (``peers``, ``resolvers``...), the lines up to
the next section are skipped so one mistake does not produce a cascade of errors.
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from splicer.config import keywords
from splicer.config.keywords import (
    SECTION_CUTOFF,
    SECTION_KINDS,
    UNSUPPORTED_SECTIONS,
    ArgError,
    Context,
    bad_name_char,
    describe_section,
    sections_text,
    similarity,
    suggest,
    valid_name,
)
from splicer.config.lexer import LexError, Statement, Token
from splicer.errors import ConfigError, ConfigErrors


@dataclass(frozen=True)
class Entry:
    """One setting recorded by a statement.

    Attributes:
        key: the model attribute it sets (``"maxconn"``, ``"timeout.client"``, ``"server"``...).
        value: its typed value (int, float seconds or None, str, bool, Server, tuple of Bind).
        file: configuration file path.
        line: 1-based line of the statement.
    """

    key: str
    value: object
    file: str
    line: int


@dataclass
class RawSection:
    """One section as written, before inheritance.

    Attributes:
        kind: "global", "defaults", "frontend", "listen", "backend", "userlist" or "ring".
        name: its name ("" for global and an unnamed defaults section).
        file: configuration file path.
        line: line of the section keyword.
        entries: the section's own settings, in file order.
        defaults: for frontend/listen/backend, the defaults section in force (haproxy: the last
            one above it), or None.
    """

    kind: str
    name: str
    file: str
    line: int
    entries: list[Entry] = field(default_factory=list)
    defaults: RawSection | None = None


@dataclass
class RawConfig:
    """A parsed configuration, ready for resolve().

    Attributes:
        path: configuration file path, as the caller gave it.
        sections: every section in file order (defaults and global included).
        warnings: "file:line: text" strings, in file order.
    """

    path: str
    sections: list[RawSection]
    warnings: list[str]


def parse(statements: Iterable[Statement], path: str,
          lex_errors: Iterable[LexError] = ()) -> RawConfig:
    """Sort statements into sections and read every keyword's arguments.

    Args:
        statements: lexer output, in file order.
        path: the file name used in messages, as the caller gave it.
        lex_errors: lexer errors of the same file; they are reported with the parser's own.

    Returns:
        The sections with their entries, and the warnings.

    Raises:
        ConfigErrors: every lexer and parser error, in line order, e.g.
            ``site.cfg:12: unknown keyword 'blance' in backend 'web'; did you mean 'balance'?``.
    """
    state = _State(path)
    state.errors.extend(ConfigError(path, e.line, e.msg) for e in lex_errors)
    for statement in statements:
        state.feed(statement)
    if state.errors:
        raise ConfigErrors(sorted(state.errors, key=lambda e: e.line))
    return RawConfig(path, state.sections, state.warnings)


class _State:
    """The parser's position: current section, last defaults, and what was collected so far."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.sections: list[RawSection] = []
        self.errors: list[ConfigError] = []
        self.warnings: list[str] = []
        self.current: RawSection | None = None
        self.defaults: RawSection | None = None
        self.skipping = False

    def error(self, line: int, msg: str) -> None:
        self.errors.append(ConfigError(self.path, line, msg))

    def warn(self, line: int, msg: str) -> None:
        self.warnings.append(f"{self.path}:{line}: {msg}")

    def feed(self, statement: Statement) -> None:
        tokens = self._cut_at_empty_word(statement)
        if not tokens:
            return
        words = [t.text for t in tokens]
        line = statement.line
        head = words[0]
        if head in SECTION_KINDS:
            self._open_section(words, line)
        elif head in UNSUPPORTED_SECTIONS:
            self.error(line, f"section '{head}' is not supported")
            self._skip()
        elif self.skipping:
            return
        elif self.current is None:
            section = suggest(head, SECTION_KINDS, SECTION_CUTOFF)
            if section:
                self.error(line, f"unknown section '{head}'; did you mean '{section}'?")
                self._skip()
            else:
                self.error(line, f"'{head}' is outside any section (a section starts with "
                                 "'global', 'defaults', 'frontend', 'backend' or 'listen')")
        else:
            self._statement(self.current, words, line)

    def _skip(self) -> None:
        self.current = None
        self.skipping = True

    def _cut_at_empty_word(self, statement: Statement) -> tuple[Token, ...]:
        """haproxy: an empty word (``""``, unset ``"$VAR"``) ends the argument list."""
        tokens = statement.tokens
        for index, token in enumerate(tokens):
            if token.text == "":
                if index + 1 < len(tokens):
                    self.warn(statement.line,
                              f"word {index + 1} (column {token.column}) is empty and ends the "
                              "statement; the words after it are ignored")
                return tokens[:index]
        return tokens

    def _open_section(self, words: list[str], line: int) -> None:
        kind = words[0]
        name = words[1] if len(words) > 1 else ""
        problem = None
        if kind == "global":
            if len(words) > 1:
                problem = f"'global' cannot handle unexpected argument '{words[1]}'"
        elif not name and kind != "defaults":
            problem = f"'{kind}' expects a name"
        elif name and not valid_name(name):
            problem = (f"character '{bad_name_char(name)}' is not permitted in {kind} name "
                       f"'{name}'")
        elif len(words) > 2:
            if words[2] == "from":
                problem = (f"'{kind} {name} from ...' (inheriting from a named defaults section) "
                           "is not supported")
            else:
                problem = f"'{kind}' cannot handle unexpected argument '{words[2]}'"
                if kind in ("frontend", "listen"):
                    problem += " (addresses go on a 'bind' line)"
        if problem:
            self.error(line, problem)
            self._skip()
            return
        section = RawSection(kind, name, self.path, line)
        if kind == "defaults":
            self.defaults = section
        elif kind not in ("global", "userlist", "ring"):
            section.defaults = self.defaults
        self.sections.append(section)
        self.current = section
        self.skipping = False

    def _statement(self, section: RawSection, words: list[str], line: int) -> None:
        where = describe_section(section.kind, section.name)
        negated = words[0] == "no"
        if negated:
            words = words[1:]
            if not words:
                self.error(line, "'no' expects a keyword")
                return
        name, args = words[0], words[1:]
        if name == "default" and not negated:
            self.error(line, "the 'default' prefix is not supported")
            return
        keyword = keywords.lookup(name, section.kind)
        if keyword is None:
            allowed = keywords.allowed_sections(name)
            if allowed:
                self.error(line, f"'{name}' is not allowed in {where} "
                                 f"(allowed in: {sections_text(allowed)})")
                return
            best = suggest(name, keywords.keywords_for(section.kind))
            new_section = suggest(name, SECTION_KINDS, SECTION_CUTOFF)
            if new_section and (best is None or
                                similarity(name, new_section) >= similarity(name, best)):
                self.error(line, f"unknown section '{name}'; did you mean '{new_section}'?")
                self._skip()
            elif best:
                self.error(line, f"unknown keyword '{name}' in {where}; did you mean '{best}'?")
            else:
                self.error(line, f"unknown keyword '{name}' in {where}")
            return
        if negated and not keyword.negatable:
            self.error(line, f"negation is not supported for '{name}'")
            return
        ctx = Context(section.kind, section.name, self.path, line, negated)
        try:
            keyword.parse(ctx, tuple(args))
        except ArgError as exc:
            self.error(line, str(exc))
            return
        section.entries.extend(Entry(key, value, self.path, line) for key, value in ctx.settings)
        for text in ctx.warnings:
            self.warn(line, text)
