"""splicer.balance.hashing: haproxy's hash functions give haproxy's values.

The expected values were computed by haproxy's own definitions (src/hash.c hash_sdbm,
hash_djb2, hash_wt6, hash_crc32 and include/haproxy/intops.h __full_hash) compiled with gcc.
"""
import pytest

from splicer.balance.hashing import crc32, djb2, full_hash, gen_hash, sdbm, source_hash, wt6

KEYS = [b"", b"a", b"/index.html", b"hello world", b"user=42&x=1", b"Mozilla/5.0 (X11; Linux x86_64)"]
HAPROXY = {  # key: (sdbm, djb2, wt6, crc32)
    b"": (0x0, 0x1505, 0xF99A0360, 0x0),
    b"a": (0x61, 0x2B606, 0x714BF225, 0xE8B7BE43),
    b"/index.html": (0x33242976, 0xE114B9CF, 0x3101077E, 0xEA224B42),
    b"hello world": (0x19AE84C4, 0x3551C8C1, 0x6F46A0AA, 0x0D4A1185),
    b"user=42&x=1": (0x6598BF76, 0xAE7D92D3, 0x60A95C8D, 0x683EC881),
    b"Mozilla/5.0 (X11; Linux x86_64)": (0x3022B359, 0x1CBB7044, 0xDAFED84C, 0x9D2B4A79),
}


@pytest.mark.parametrize("key", KEYS)
def test_functions_match_haproxy(key):
    assert (sdbm(key), djb2(key), wt6(key), crc32(key)) == HAPROXY[key]


def test_full_hash_matches_haproxy():
    assert [full_hash(x) for x in (0, 1, 4096, 0x0A000001)] == [0xAB4ED927, 0x348681B6, 0x49C2008B, 0x2AA26E52]


def test_full_hash_wraps_its_input_to_32_bits():
    assert full_hash(2**32 + 1) == full_hash(1)


def test_gen_hash_applies_the_function_then_avalanche():
    assert gen_hash(b"/index.html") == 0x33242976
    assert gen_hash(b"/index.html", "djb2") == 0xE114B9CF
    assert gen_hash(b"/index.html", "sdbm", True) == full_hash(0x33242976)
    with pytest.raises(KeyError):
        gen_hash(b"x", "md5")


def test_source_hash_is_the_address_words_xored():
    assert source_hash("10.0.0.1") == 0x0A000001
    assert source_hash("10.0.0.1", avalanche=True) == 0x2AA26E52
    assert source_hash("::ffff:10.0.0.1") == 0x0A000001  # a mapped IPv4 address is the IPv4 one
    assert source_hash("2001:db8::1") == 0x20010DB8 ^ 0x1
    with pytest.raises(ValueError):
        source_hash("unknown")
