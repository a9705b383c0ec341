"""cffi build script (API mode) for splicer._engine: declarations and compile flags only.

Used by setup.py's ``cffi_modules=["native/engine_build.py:ffibuilder"]``; can also be run
directly (``python native/engine_build.py``) to build the extension in place for development.
"""
import os
import subprocess

from cffi import FFI

HERE = os.path.dirname(os.path.abspath(__file__))
# setuptools wants source paths relative to the project root, which is the build's cwd; a
# direct run compiles in a temporary directory, so it needs absolute paths
REL = HERE if __name__ == "__main__" else os.path.relpath(HERE)



def have_openssl() -> bool:
    """True when the C compiler finds OpenSSL's headers (Debian: libssl-dev); without them
    the engine is built without TLS (native/src/tls.c's stubs; spl_tls_available() is 0).
    SPLICER_NO_TLS=1 builds without it on purpose."""
    if os.environ.get("SPLICER_NO_TLS") == "1":
        return False
    cc = os.environ.get("CC", "cc").split()
    try:
        p = subprocess.run(cc + ["-E", "-x", "c", "-"], input="#include <openssl/ssl.h>\n",
                           capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return p.returncode == 0


TLS = have_openssl()

ffibuilder = FFI()
with open(os.path.join(HERE, "engine.cdef")) as f:
    ffibuilder.cdef(f.read())

ffibuilder.set_source(
    "splicer._engine",
    '#include "splicer/engine.h"',
    sources=[os.path.join(REL, "src", name) for name in ("pipe.c", "splice.c", "chunked.c", "head.c", "h1.c", "engine.c", "xhead.c", "datagram.c", "accept.c", "tls.c")],
    include_dirs=[os.path.join(REL, "include"), os.path.join(REL, "src")],
    depends=[os.path.join(REL, "include", "splicer", "engine.h")]
    + [os.path.join(REL, "src", name) for name in ("pool.h", "wheel.h", "tls.h")],
    define_macros=[("SPL_HAVE_TLS", "1")] if TLS else [],
    extra_compile_args=["-O2", "-std=gnu11", "-Wall", "-Wextra", "-Werror=implicit-function-declaration"],
    libraries=["pthread"] + (["ssl", "crypto"] if TLS else []),
)

if __name__ == "__main__":
    ffibuilder.compile(tmpdir=os.path.join(HERE, "..", "build", "cffi"), verbose=False)
