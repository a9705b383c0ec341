"""The SplicerError tree: every exception splicer raises on purpose lives here.

Per-stream outcomes (a timeout, a server dying mid-body) are data (see runtime/session.py),
not exceptions; exceptions are for configuration errors, bugs and the engine boundary.
"""
from __future__ import annotations


class SplicerError(Exception):
    """Root of splicer's exceptions. Never raised directly."""


class ConfigError(SplicerError):
    """One configuration error at a known place.

    Args:
        file: path of the configuration file as given to ``splicer -c``.
        line: 1-based line number, or 0 when the error concerns the file as a whole.
        msg: what is wrong, in haproxy's wording where one exists.

    ``str()`` gives ``"site.cfg:12: unknown keyword 'blance' in backend 'web'; did you mean 'balance'?"``.
    """

    def __init__(self, file: str, line: int, msg: str) -> None:
        self.file = file
        self.line = line
        self.msg = msg
        super().__init__(str(self))

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.msg}" if self.line else f"{self.file}: {self.msg}"


class ConfigErrors(SplicerError):
    """Every error found in one configuration (the parser collects all, as haproxy does).

    Args:
        errors: the individual ConfigError objects, in file order.
    """

    def __init__(self, errors: list[ConfigError]) -> None:
        self.errors = list(errors)
        super().__init__(str(self))

    def __str__(self) -> str:
        return "\n".join(str(e) for e in self.errors)


class EngineError(SplicerError, OSError):
    """A call into the native splice engine failed; ``errno`` holds the positive errno."""


class EngineBusy(EngineError):
    """The engine has no room (no free pipe, or its queue is full): the caller copies instead."""


class TlsError(SplicerError):
    """A TLS context could not be made: a certificate or key file missing, unreadable, not
    PEM or not matching, or an engine built without OpenSSL. The message names the file."""


class NoServerAvailable(SplicerError):
    """No server connection for the request: the client gets a 503.

    Attributes:
        termination: haproxy's termination state of the stream (http/termination.py): "SC"
            (no server up, or every connect refused), "sC" (the last connect timed out) or
            "sQ" (`timeout queue` struck while every server was at its maxconn).
        retries: connection attempts made again before giving up (the access log's %rc).
        server: the runtime server of the last failed connect, None when none was tried
            (the access log names it, as haproxy's %s: "the last server to which the
            connection was sent").
    """

    def __init__(self, message: str, termination: str = "SC", retries: int = 0, server=None) -> None:
        super().__init__(message)
        self.termination = termination
        self.retries = retries
        self.server = server
