"""Fixtures of the raw-byte case suite: one recording origin for the session, and per test
module one splicer process per configuration variant (started on first use).

Cases run sequentially (the origin's script is switched per case); do not run this directory
with pytest-xdist.
"""
from __future__ import annotations

import pytest

from tests.cases.harness import RecordingOrigin
from tests.e2e.conftest import SplicerProcess
from tests.e2e.helpers import free_port, http_config


def _short(cfg: str) -> str:
    return (cfg.replace("timeout http-request 5s", "timeout http-request 500ms")
               .replace("timeout client 30s", "timeout client 1s")
               .replace("timeout server 30s", "timeout server 1s")
               .replace("timeout http-keep-alive 5s", "timeout http-keep-alive 1s"))


CONFIGS = {
    # http_config: nbthread 1, option forwardfor, option splice-auto, http-request 5s
    "default": lambda port, o: http_config(port, [("o", o)]),
    # slow-client / slow-server cases: http-request 500ms, client 1s, server 1s
    "short": lambda port, o: _short(http_config(port, [("o", o)])),
    # splicing forced in both directions
    "splice": lambda port, o: http_config(port, [("o", o)],
                                          extra_defaults="    option splice-request\n    option splice-response"),
    # two servers (both the origin), connect retries and redispatch
    "retry": lambda port, o: http_config(port, [("o1", o), ("o2", o)],
                                         extra_backend="    retries 3\n    option redispatch"),
    # a backend without servers
    "noserver": lambda port, o: http_config(port, []),
}


class Env:
    def __init__(self, origin: RecordingOrigin, tmp) -> None:
        self.origin = origin
        self.tmp = tmp
        self.running: dict[str, SplicerProcess] = {}
        self.no_server = {"noserver"}  # configs whose every request gets 503

    def splicer(self, name: str) -> SplicerProcess:
        sp = self.running.get(name)
        if sp is None:
            port = free_port()
            cfg = self.tmp / f"{name}.cfg"
            cfg.write_text(CONFIGS[name](port, self.origin.port))
            sp = SplicerProcess(cfg, self.tmp / f"{name}.log", [port])
            self.running[name] = sp
        return sp

    def stop(self) -> None:
        for sp in self.running.values():
            sp.stop()


@pytest.fixture(scope="session")
def origin():
    o = RecordingOrigin()
    yield o
    o.close()


@pytest.fixture(scope="module")
def env(origin, tmp_path_factory):
    e = Env(origin, tmp_path_factory.mktemp("cases"))
    yield e
    e.stop()
