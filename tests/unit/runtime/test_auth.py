"""runtime/auth.py: what is decided at once, what is verified off the loop (once per
credential, shared by the requests waiting for it), and the bound on pending work."""
import asyncio
import base64
import threading

from splicer.http.sample import RequestView
from splicer.http.userlist import Group, User, build_userlist
from splicer.runtime import auth as auth_mod
from splicer.runtime.auth import Authenticator

SHA512 = "$6$saltsalt$TVLlQcbpFVof5W3Yz4DTP6gRstiNuHwwTt6GLc1E5n0U0aDehy0S5knV8wiOQSpT0Y77vwPZN.Pq.H91p5hVO1"


def lists():
    ul, _ = build_userlist("L", [User("tiger", SHA512), User("scott", "elgato", insecure=True)],
                           [Group("admins", ("tiger",))])
    return {"L": ul}


def view(user: bytes, password: bytes) -> RequestView:
    cred = b"Basic " + base64.b64encode(user + b":" + password)
    return RequestView(b"GET", b"/", b"/", b"1.1", [(b"Authorization", cred)])


def test_known_verdicts_are_filled_at_once():
    a = Authenticator(lists(), None)
    v = view(b"scott", b"elgato")
    assert a.fill(v, frozenset({"L"})) is None and v.auth == {"L": (b"scott", ())}
    for bad in (view(b"scott", b"x"), view(b"ghost", b"x"),
                RequestView(b"GET", b"/", b"/", b"1.1", [])):
        assert a.fill(bad, frozenset({"L"})) is None and bad.auth == {}
    assert a.verified == 0


def test_a_hash_is_verified_off_the_loop_once_then_cached():
    a = Authenticator(lists(), None)

    async def main():
        a.loop = asyncio.get_running_loop()
        loop_thread = threading.get_ident()
        seen = []
        v1, v2 = view(b"tiger", b"secret"), view(b"tiger", b"secret")
        m1, m2 = a.fill(v1, frozenset({"L"})), a.fill(v2, frozenset({"L"}))
        assert m1 is not None and m2 is not None and v1.auth == {}
        orig = auth_mod.Userlist.check

        def spy(self, user, password):
            seen.append(threading.get_ident())
            return orig(self, user, password)
        auth_mod.Userlist.check = spy
        try:
            await asyncio.gather(a.verify(v1, m1), a.verify(v2, m2))   # two requests, one hash
        finally:
            auth_mod.Userlist.check = orig
        assert v1.auth == v2.auth == {"L": (b"tiger", (b"admins",))}
        assert a.verified == 1 and len(seen) == 1 and seen[0] != loop_thread
        v3 = view(b"tiger", b"secret")
        assert a.fill(v3, frozenset({"L"})) is None and v3.auth == {"L": (b"tiger", (b"admins",))}
        bad = view(b"tiger", b"wrong")
        await a.verify(bad, a.fill(bad, frozenset({"L"})))
        assert bad.auth == {} and a.verified == 2
        again = view(b"tiger", b"wrong")
        assert a.fill(again, frozenset({"L"})) is None and again.auth == {}   # a negative verdict is kept
        assert len(a.cache) == 2
        a.close()
    asyncio.run(main())


def test_pending_verifications_are_bounded(monkeypatch):
    monkeypatch.setattr(auth_mod, "MAX_PENDING", 2)
    a = Authenticator(lists(), None)
    release = threading.Event()
    orig = auth_mod.Userlist.check
    monkeypatch.setattr(auth_mod.Userlist, "check", lambda self, u, p: release.wait(10) and orig(self, u, p))

    async def main():
        a.loop = asyncio.get_running_loop()
        views = [view(b"tiger", b"guess%d" % i) for i in range(3)] + [view(b"tiger", b"secret")]
        work = [asyncio.ensure_future(a.verify(v, a.fill(v, frozenset({"L"})))) for v in views]
        await asyncio.sleep(0)  # one turn of the loop: each verify() runs up to its first wait
        assert a.verified == 2           # the third and fourth found no room: not authenticated
        release.set()
        await asyncio.gather(*work)
        assert all(v.auth == {} for v in views)
        assert len(a.cache) == 2         # nothing cached for those turned away
        a.close()
    asyncio.run(main())
