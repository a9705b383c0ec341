"""When a direction splices (SplicePolicy.wants): haproxy's options, and splicer's measured
splice-auto thresholds (benchmarks/crossover.py, benchmarks/chunk_crossover.py)."""
from __future__ import annotations

import pytest

from splicer.runtime.transfer import (CHUNK_SPLICE_AUTO_MIN, MIN_SPLICE_FORWARD, SPLICE_AUTO_MIN,
                                      SplicePolicy)


@pytest.mark.parametrize("policy, count, chunk, wanted", [
    (SplicePolicy.NEVER, 1 << 30, False, False),
    (SplicePolicy.NEVER, None, False, False),
    (SplicePolicy.ALWAYS, MIN_SPLICE_FORWARD, False, True),
    (SplicePolicy.ALWAYS, MIN_SPLICE_FORWARD - 1, False, False),   # haproxy's MIN_SPLICE_FORWARD
    (SplicePolicy.ALWAYS, None, False, True),                      # close-delimited
    (SplicePolicy.AUTO, SPLICE_AUTO_MIN, False, True),
    (SplicePolicy.AUTO, SPLICE_AUTO_MIN - 1, False, False),
    (SplicePolicy.AUTO, None, False, True),
    (SplicePolicy.AUTO, CHUNK_SPLICE_AUTO_MIN, True, True),        # the loop's chunk-by-chunk relay
    (SplicePolicy.AUTO, CHUNK_SPLICE_AUTO_MIN - 1, True, False),
    (SplicePolicy.ALWAYS, MIN_SPLICE_FORWARD, True, True),
])
def test_wants(policy, count, chunk, wanted):
    assert policy.wants(count, chunk) is wanted


def test_thresholds_are_the_measured_ones():
    assert (MIN_SPLICE_FORWARD, CHUNK_SPLICE_AUTO_MIN, SPLICE_AUTO_MIN) == (4096, 131072, 32768)
