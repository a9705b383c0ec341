"""Every unit test starts, and ends, with every memo of the sans-I/O core empty: each
functools.lru_cache at module level in splicer/http, balance, health and config (found, not
listed, so a new one is cleared too), the head memos (splicer.http.h1.HeadMemo) and the memo
of relay terms (splicer.http.machine._TERMS).

A memo answers an input seen before without running the code that computed it. Without this,
a test whose input an earlier test already used would read the earlier result instead of
running the code it is about; and under mutmut, whose workers fork from a process that ran
the whole suite, no mutant of that code would ever run for such an input (normalize.py's
remembered ambiguity verdicts hid 69 mutants so).
"""
from __future__ import annotations

import functools
import sys

import pytest

from splicer.http import h1, machine

CORE = ("splicer.http", "splicer.balance", "splicer.health", "splicer.config")


def core_memos() -> tuple[list, list]:
    """(the lru_cache wrappers, the HeadMemo instances) at module level in the core's
    imported modules."""
    caches, memos = [], []
    for name, module in list(sys.modules.items()):
        if module is None or not name.startswith(CORE):
            continue
        for value in list(vars(module).values()):
            if isinstance(value, functools._lru_cache_wrapper):
                caches.append(value)
            elif isinstance(value, h1.HeadMemo):
                memos.append(value)
    return caches, memos


def _empty() -> None:
    caches, memos = core_memos()
    for cache in caches:
        cache.cache_clear()
    for memo in memos:
        memo.reset()
    machine._TERMS.clear()


@pytest.fixture(autouse=True)
def empty_core_memos():
    _empty()
    yield
    _empty()
