"""Checking HTTP Basic credentials against userlists without blocking the event loop.

Rule: the rules (http/acl.py, http/sample.py) read a verdict, never compute one: before a
frontend's rules run on a request, the session asks the Authenticator to put in
RequestView.auth, for every userlist the frontend's rules (and its backends') name, whether
the request's credentials are valid there. What is known at once is filled in at once; a
hashed password not seen before is verified off the loop, and only then do the rules run.

Theory of operation:
  1. fill() decodes the Authorization field (http/userlist.py basic_credentials). No
     credential, an unknown user, a user without a password: not authenticated, at once.
     An ``insecure-password`` is compared at once (hmac.compare_digest). A hashed
     password's verdict is looked up in a VerdictCache under credential_key(): a
     per-process random key HMACs (userlist, user, password), so the cache holds no
     password and nothing testable offline. A keep-alive client sending the same
     credentials costs one HMAC per request after its first.
  2. What fill() could not decide, verify() computes in a thread of its own (one per
     worker process: sha512-crypt at 5000 rounds is about 6 ms of pure Python there,
     bcrypt cost 10 about 80 ms of C that releases the GIL; see http/userlist.py
     HASH_SCHEMES), each distinct credential once: requests waiting for the same one share
     its verification. At most MAX_PENDING verifications wait at a time; a request beyond
     that is not authenticated (nothing is cached for it), so a flood of guesses queues
     no unbounded work and holds no unbounded passwords.
The pure-Python hashes hold the GIL while they run, so the loop thread shares the CPU with
the verifying thread in 5 ms slices (sys.getswitchinterval) for those few milliseconds: the
loop is slowed, never stopped, and only on a credential's first use.
"""
from __future__ import annotations

import asyncio
import os
from concurrent.futures import ThreadPoolExecutor
from typing import Mapping

from splicer.http.userlist import Userlist, VerdictCache, basic_credentials, credential_key

CACHE_SIZE = 4096
"""Verdicts kept per worker process (least recently used evicted first)."""

MAX_PENDING = 256
"""Most distinct credentials waiting for verification at once, per worker process."""


class Authenticator:
    """The verdicts of one worker process on the credentials requests carry.

    Args:
        userlists: {name: http.userlist.Userlist} of the configuration.
        loop: the worker's event loop.
        cache_size: verdicts kept (VerdictCache).
    """

    __slots__ = ("userlists", "loop", "cache", "_secret", "_pending", "_executor", "verified")

    def __init__(self, userlists: Mapping[str, Userlist], loop: asyncio.AbstractEventLoop,
                 cache_size: int = CACHE_SIZE) -> None:
        self.userlists = userlists
        self.loop = loop
        self.cache = VerdictCache(cache_size)
        self._secret = os.urandom(32)
        self._pending: dict[bytes, asyncio.Future] = {}
        self._executor: ThreadPoolExecutor | None = None
        self.verified = 0  # hashes computed (cache misses), for tests and stats

    def fill(self, view, lists: frozenset) -> list | None:
        """Set view.auth to {userlist: (user, groups)} for each of `lists` the request's
        credentials are known to be valid for.

        Returns:
            None when every verdict was known; else the [(key, userlist, user, password)]
            whose hash must be verified first (pass it to verify()).
        """
        auth: dict = {}
        view.auth = auth
        cred = basic_credentials(view.values(b"authorization"))
        if cred is None:
            return None
        user, password = cred
        missing = None
        for name in lists:
            ul = self.userlists.get(name)
            u = ul.user(user) if ul is not None else None
            if u is None or u.password is None:
                continue
            if not u.hashed:
                ok = ul.check(user, password)
            else:
                key = credential_key(self._secret, name, user, password)
                ok = self.cache.get(key)
                if ok is None:
                    if missing is None:
                        missing = []
                    missing.append((key, ul, user, password))
                    continue
            if ok:
                auth[name] = (user, ul.member_of.get(user, ()))
        return missing

    async def verify(self, view, missing: list) -> None:
        """Verify the credentials fill() left (off the loop, once per credential) and add
        the valid ones to view.auth. Never raises for a bad credential."""
        waits = []
        for key, ul, user, password in missing:
            fut = self._pending.get(key)
            if fut is None:
                if len(self._pending) >= MAX_PENDING:
                    continue  # too many waiting: not authenticated this time
                fut = self._pending[key] = self.loop.run_in_executor(self._pool(), ul.check, user, password)
                self.verified += 1
                fut.add_done_callback(lambda f, key=key: self._done(key, f))
            waits.append((fut, ul, user))
        for fut, ul, user in waits:
            try:
                ok = await asyncio.shield(fut)
            except Exception:
                ok = False
            if ok:
                view.auth[ul.name] = (user, ul.member_of.get(user, ()))

    def _done(self, key: bytes, fut: asyncio.Future) -> None:
        self._pending.pop(key, None)
        if not fut.cancelled() and fut.exception() is None:
            self.cache.put(key, bool(fut.result()))

    def _pool(self) -> ThreadPoolExecutor:
        if self._executor is None:
            self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="splicer-auth")
        return self._executor

    def close(self) -> None:
        """Stop the verifying thread (verifications not started are dropped)."""
        if self._executor is not None:
            self._executor.shutdown(wait=False, cancel_futures=True)
            self._executor = None


def userlists_of(rules) -> frozenset:
    """The userlists the conditions of `rules` read (anything with a ``cond``: http-request
    and http-response rules, use_backend rules), through their bound ACLs
    (http/sample.py Fetch.userlist)."""
    found: set[str] = set()
    for rule in rules:
        cond = getattr(rule, "cond", None)
        if cond is None:
            continue
        for term in cond.terms:
            for _, acl in term:
                for expr in getattr(acl, "exprs", (acl,)):
                    fetch = getattr(expr, "fetch", None)
                    if fetch is not None and fetch.userlist:
                        found.add(fetch.userlist)
    return frozenset(found)
