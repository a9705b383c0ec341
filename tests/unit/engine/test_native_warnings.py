"""The C engine (native/src) compiles without a warning under -Wall -Wextra (the brief's
rule for native code), each source on its own, with the flags of native/engine_build.py."""
import shutil
import subprocess
from pathlib import Path

import pytest

NATIVE = Path(__file__).resolve().parents[3] / "native"
SOURCES = sorted((NATIVE / "src").glob("*.c"))


@pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc is needed to build the engine")
@pytest.mark.parametrize("source", SOURCES, ids=lambda p: p.name)
def test_compiles_without_warnings(source):
    p = subprocess.run(["gcc", "-c", "-o", "/dev/null", "-O2", "-std=gnu11", "-Wall", "-Wextra", "-Werror",
                        f"-I{NATIVE / 'include'}", f"-I{NATIVE / 'src'}", str(source)],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr


def test_every_source_is_built():
    """Each native/src/*.c is one of engine_build.py's sources (none forgotten)."""
    text = (NATIVE / "engine_build.py").read_text()
    assert SOURCES and all(f'"{s.name}"' in text for s in SOURCES)
