"""cffi build script (API mode) for splicer._engine: declarations and compile flags only.

Used by setup.py's ``cffi_modules=["native/engine_build.py:ffibuilder"]``; can also be run
directly (``python native/engine_build.py``) to build the extension in place for development.
"""
import os

from cffi import FFI

HERE = os.path.dirname(os.path.abspath(__file__))
# setuptools wants source paths relative to the project root, which is the build's cwd; a
# direct run compiles in a temporary directory, so it needs absolute paths
REL = HERE if __name__ == "__main__" else os.path.relpath(HERE)

ffibuilder = FFI()
with open(os.path.join(HERE, "engine.cdef")) as f:
    ffibuilder.cdef(f.read())

ffibuilder.set_source(
    "splicer._engine",
    '#include "splicer/engine.h"',
    sources=[os.path.join(REL, "src", name) for name in ("pipe.c", "splice.c", "chunked.c", "head.c", "h1.c", "engine.c", "xhead.c", "datagram.c", "accept.c")],
    include_dirs=[os.path.join(REL, "include"), os.path.join(REL, "src")],
    depends=[os.path.join(REL, "include", "splicer", "engine.h")]
    + [os.path.join(REL, "src", name) for name in ("pool.h", "wheel.h")],
    extra_compile_args=["-O2", "-std=gnu11", "-Wall", "-Wextra", "-Werror=implicit-function-declaration"],
    libraries=["pthread"],
)

if __name__ == "__main__":
    ffibuilder.compile(tmpdir=os.path.join(HERE, "..", "build", "cffi"), verbose=False)
