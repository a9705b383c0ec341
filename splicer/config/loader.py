"""Entry point of the configuration package: a file (or a string) in, a Config out.

Rule: this is the only module of splicer/config that touches the file system, and it only
reads the one file it is given. It runs the three stages in order: lexer (words), parser
(sections and typed entries) and resolve (inheritance and cross-checks). Lexer and parser
errors are reported together; resolve's checks run only on a configuration that parsed
cleanly, as haproxy runs check_config_validity() only after a clean parse.
"""
from __future__ import annotations

from collections.abc import Mapping

from splicer.config.lexer import tokenize
from splicer.config.model import Config
from splicer.config.parser import parse
from splicer.config.resolve import resolve
from splicer.errors import ConfigError, ConfigErrors


def load(path: str, env: Mapping[str, str] | None = None) -> Config:
    """Read and resolve a haproxy-style configuration file (what ``splicer -c FILE`` loads).

    Args:
        path: the file to read; messages name it exactly as given here.
        env: environment for ``"$VAR"``/``"${VAR}"`` expansion; None means ``os.environ``.

    Returns:
        The resolved, immutable Config.

    Raises:
        ConfigErrors: the file cannot be read (a single error with line 0, e.g.
            ``site.cfg: cannot read file: No such file or directory``), is not UTF-8 (a single
            error at the line of the first bad byte), or every error found in it (see loads()).
    """
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise ConfigErrors([ConfigError(path, 0, f"cannot read file: {reason}")]) from exc
    try:
        # Decoding bytes ourselves keeps CRs: as in haproxy, a CR ends the statement on its line.
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise ConfigErrors([ConfigError(path, line, f"invalid UTF-8 byte "
                                                    f"0x{data[exc.start]:02x}")]) from exc
    return loads(text, path, env)


def loads(text: str, path: str = "<string>", env: Mapping[str, str] | None = None) -> Config:
    """Resolve a configuration given as text (used by tests and by load()).

    Args:
        text: the configuration, haproxy syntax.
        path: the name messages use for it.
        env: environment for ``"$VAR"`` expansion; None means ``os.environ``.

    Returns:
        The resolved, immutable Config; Config.warnings lists what was accepted but ignored.

    Raises:
        ConfigErrors: every lexer and parser error at once; or, if there were none, every
            resolve error at once. Each reads ``"<path>:<line>: <message>"``.
    """
    statements, lex_errors = tokenize(text, env=env, file=path)
    raw = parse(statements, path, lex_errors)
    return resolve(raw)
