"""A frontend's routing decisions remembered by what they read.

Rule: everything that decides whether, and by what, a frontend's per-request Decision
(route.Switching.choose) may be remembered lives here; nothing here does I/O, reads the
clock, or decides anything itself (choose() does, on a miss).

Theory of operation: a Decision (which rule answers, which backend, how many rules ran)
is a pure function of what the frontend's http-request rules and use_backend rules read.
When every one of those rules only tests conditions and names (no rule edits the
message, sets a variable or reads one, server state, credential verdicts or the
response), what they read is the request head's bytes, and perhaps the connection's
addresses (``src``, ``src_port``, ``dst``, ``dst_port``): decision_reads() tells which,
from the fetches of every condition and of every dynamic backend name (sample.Fetch.reads,
an allow-list: a fetch it does not know makes the frontend's decisions never remembered).
The request head's bytes determine the request line, every field and the framing, so a
head seen before on a connection with the same addresses gets the Decision its first
occurrence got: DecisionMemo keeps them, keyed by the head's bytes alone, or by the head
and the address parts read (session.py builds that part once per connection). Clients on
kept-alive connections send the same head again and again (the same reasoning as
http/h1.py's HeadMemo, whose parse of the same bytes the session already did).

It is a bounded LRU: at most MEMO_ENTRIES decisions, for heads of at most MEMO_HEAD_MAX
bytes, the least recently used going first, so hostile heads that never repeat cost one
failed probe and one insertion each and never grow it. And it stops being asked when it
does not pay: when fewer than PAY_HITS of the PAY_WINDOW lookups of a window found their
head (traffic whose heads never repeat: a counter or a token in every URL, clients that
do not keep their connections alive), the next PAUSE requests are decided without it
(`pause` counts them down; the session reads it), its entries are dropped, and a new
window then tries it again.
"""
from __future__ import annotations

from collections import OrderedDict
from typing import Callable, Mapping

from splicer.config.model import Backend, Frontend
from splicer.http.acl import condition_reads
from splicer.http.actions import LocalRule

MEMO_ENTRIES = 1024
"""Most decisions a frontend remembers (the least recently used goes first)."""

PAY_WINDOW = 256
"""Lookups over which a DecisionMemo counts its hits."""

PAY_HITS = 32
"""Hits in a window below which the memo does not pay for its keys (an eighth)."""

PAUSE = 8192
"""Requests decided without the memo after a window in which it did not pay."""

MEMO_HEAD_MAX = 4096
"""Longest request head (bytes) whose decision is remembered (HeadMemo's limit)."""

ADDRESS_PARTS = ("src", "src_port", "dst", "dst_port")
"""The connection's parts a decision may read besides the head, in the order a key holds
them (session.py builds the key's address part in this order)."""


def decision_reads(fe: Frontend, backends: Mapping[str, Backend], names) -> tuple | None:
    """What the per-request decisions of frontend `fe` read besides the request head.

    Args:
        fe: the frontend's model; backends: every backend model by name; names: the
            backends its requests may go to (route.backend_names()).

    Returns:
        The address parts read, in ADDRESS_PARTS order (() for the head alone), or None
        when the decisions may not be remembered: some http-request rule of the frontend
        or of a backend in `names` is not a local action (allow, deny, return, redirect,
        auth, tarpit: header rules, rewrites, normalize-uri and variable rules change the
        request the later rules read), or a condition or a dynamic use_backend name reads
        anything but the head and the addresses (acl.condition_reads, sample.Fetch.reads).
    """
    parts: set = set()
    rules = [*fe.http_request, *(r for n in names for r in backends[n].http_request)]
    for r in rules:
        if type(r) is not LocalRule:
            return None
        reads = condition_reads(r.cond)
        if reads is None:
            return None
        parts |= reads
    for sw in fe.use_backend:
        reads = condition_reads(sw.cond)
        if reads is None:
            return None
        parts |= reads
        for p in sw.dynamic or ():
            if isinstance(p, bytes):
                continue
            if p.reads is None:
                return None
            parts.update(p.reads)
    return tuple(a for a in ADDRESS_PARTS if a in parts)


class DecisionMemo:
    """Decisions by the request parts they read (see the module's docstring): a bounded LRU.

    Args:
        reads: the address parts in the key besides the head (decision_reads()).
        max_entries: decisions kept at most; max_head: longest head kept, bytes.

    A key is the head's bytes when `reads` is empty, else (head, the tuple of the
    connection's values of `reads`, in order). The values are whatever the caller keeps
    for a hit (session.py: the Decision, the chosen backend and its Route).

    Attributes:
        pause: requests left that are to be decided without the memo (0: ask it); the
            caller counts them down (see the module's docstring).
        hits, misses: lookups so far that found, and did not find, their key.
    """

    __slots__ = ("reads", "max_entries", "max_head", "_d", "hits", "misses", "pause", "_left", "_paid")

    def __init__(self, reads: tuple, max_entries: int = MEMO_ENTRIES, max_head: int = MEMO_HEAD_MAX) -> None:
        self.reads = reads
        self.max_entries = max_entries
        self.max_head = max_head
        self._d: OrderedDict = OrderedDict()
        self.hits = self.misses = 0
        self.pause = 0
        self._left = PAY_WINDOW  # lookups left in this window
        self._paid = 0  # hits in this window

    def address(self, value_of: Callable[[str], object]) -> tuple:
        """The address part of a connection's keys: value_of(part) for each part of
        `reads`, in order (the same for every request of the connection: built once)."""
        return tuple(value_of(p) for p in self.reads)

    def key(self, head: bytes, address: tuple):
        """The key of a request whose head's bytes are `head`, on a connection whose
        address part (address()) is `address`: every input of its decision."""
        return (head, address) if self.reads else head

    def get(self, key):
        """What was kept for `key`, or None; a hit becomes the most recently used. The
        lookup that ends a window with fewer than PAY_HITS hits sets `pause` to PAUSE and
        drops every entry."""
        got = self._d.get(key)
        left = self._left - 1
        if got is None:
            self.misses += 1
        else:
            self.hits += 1
            self._paid += 1
            self._d.move_to_end(key)
        if left:
            self._left = left
        else:
            if self._paid < PAY_HITS:
                self.pause = PAUSE
                self._d.clear()
            self._left, self._paid = PAY_WINDOW, 0
        return got

    def put(self, key, head_len: int, value) -> None:
        """Keep `value` for `key` when the head (`head_len` bytes) is short enough, the
        least recently used entry going first when full."""
        if head_len > self.max_head:
            return
        d = self._d
        if len(d) >= self.max_entries:
            d.popitem(last=False)
        d[key] = value

    def __len__(self) -> int:
        return len(self._d)
