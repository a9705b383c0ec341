"""Every http unit test starts with empty head memos (splicer.http.h1.HeadMemo) and an empty
memo of relay terms (splicer.http.machine._TERMS).

parse_request, parse_response, forwarded_request and forwarded_response answer a head seen
before from a module-level memo. Without this, a test whose head an earlier test already
parsed would read the earlier result instead of running the code it is about (and under
mutmut, whose workers fork from a process that ran the whole suite, no mutant of the
parsing or building code would ever run for such a head).
"""
import pytest

from splicer.http import h1, machine


@pytest.fixture(autouse=True)
def empty_head_memos():
    memos = (h1._REQUESTS, h1._RESPONSES, h1._FORWARDED_REQUESTS, h1._FORWARDED_RESPONSES)
    for memo in memos:
        memo.reset()
    machine._TERMS.clear()
    yield
    for memo in memos:
        memo.reset()
    machine._TERMS.clear()
