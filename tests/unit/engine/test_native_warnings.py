"""The C engine (native/src) compiles without a warning under -Wall -Wextra (the brief's
rule for native code), each source on its own, with the flags of native/engine_build.py."""
import shutil
import subprocess
from pathlib import Path

import pytest

NATIVE = Path(__file__).resolve().parents[3] / "native"
SOURCES = sorted((NATIVE / "src").glob("*.c"))


def _openssl_headers() -> bool:
    p = subprocess.run(["gcc", "-E", "-x", "c", "-"], input="#include <openssl/ssl.h>\n",
                       capture_output=True, text=True, timeout=60)
    return p.returncode == 0


BUILDS = [(s, ()) for s in SOURCES] + [(s, ("-DSPL_HAVE_TLS=1",)) for s in SOURCES if s.name == "tls.c"]
"""Every source as built without OpenSSL, and those that differ with it, as built with it."""


@pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc is needed to build the engine")
@pytest.mark.parametrize("source,defines", BUILDS, ids=lambda v: v.name if isinstance(v, Path) else " ".join(v) or "-")
def test_compiles_without_warnings(source, defines):
    if defines and not _openssl_headers():
        pytest.skip("OpenSSL's headers (libssl-dev) are not installed")
    p = subprocess.run(["gcc", "-c", "-o", "/dev/null", "-O2", "-std=gnu11", "-Wall", "-Wextra", "-Werror",
                        *defines, f"-I{NATIVE / 'include'}", f"-I{NATIVE / 'src'}", str(source)],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr


def test_every_source_is_built():
    """Each native/src/*.c is one of engine_build.py's sources (none forgotten)."""
    text = (NATIVE / "engine_build.py").read_text()
    assert SOURCES and all(f'"{s.name}"' in text for s in SOURCES)
