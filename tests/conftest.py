"""Shared pytest setup: nothing here starts processes (see tests/e2e/conftest.py)."""
