"""cffi_modules cannot be declared in pyproject.toml (python-cffi/cffi#55), hence this file."""
from setuptools import setup

setup(cffi_modules=["native/engine_build.py:ffibuilder"])
