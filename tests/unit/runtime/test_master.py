"""runtime/master.py's pure helpers."""
from splicer.config.model import Bind
from splicer.runtime.master import bind_key


def test_bind_key_is_the_address_listened_on():
    """A reload keeps a listening socket when the new `bind` means the same address."""
    assert bind_key(Bind("localhost", 80)) == bind_key(Bind("127.0.0.1", 80))
    assert bind_key(Bind("*", 80)) == bind_key(Bind("", 80)) == bind_key(Bind("0.0.0.0", 80))
    assert bind_key(Bind("*", 80)) != bind_key(Bind("*", 81))
    assert bind_key(Bind("127.0.0.1", 80)) != bind_key(Bind("127.0.0.2", 80))
    assert bind_key(Bind("[::1]", 80)) == bind_key(Bind("::1", 80))
    assert bind_key(Bind("no-such-host.invalid", 80)) == ("no-such-host.invalid", 80)
