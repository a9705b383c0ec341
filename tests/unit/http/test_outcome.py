"""http/outcome.py: a transfer's Result, and how the parts of a chunked relay add up."""
from __future__ import annotations

from splicer.http.outcome import End, Result


def test_adding_a_part_sums_its_bytes_and_takes_its_end():
    """Result.add (a chunked relay's parts): moved, spliced and copied add up, and the
    whole ends as its last part did."""
    whole = Result(End.DONE, 10, 4, 6)
    whole.add(Result(End.SRC_EOF, 7, 5, 2))
    assert whole == Result(End.SRC_EOF, 17, 9, 8)
    whole.add(Result(End.DONE))
    assert whole == Result(End.DONE, 17, 9, 8)
