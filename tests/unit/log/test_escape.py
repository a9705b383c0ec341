"""splicer.log.escape: haproxy 8.6's #XX encoding."""
from splicer.log.escape import escape, escape_header, escape_sd


def test_printable_ascii_is_kept():
    assert escape(b"GET /a?b=1&c=%20 HTTP/1.1") == "GET /a?b=1&c=%20 HTTP/1.1"


def test_controls_high_bytes_quote_and_hash_become_hex():
    assert escape(b'GET /a"b#c\x00\x1b\x7f\x80\xff HTTP/1.1') == "GET /a#22b#23c#00#1B#7F#80#FF HTTP/1.1"
    assert escape(b"a\r\nb") == "a#0D#0Ab"  # a line can never be split


def test_header_captures_also_encode_their_delimiters():
    assert escape_header(b'a{b|c}d "e" #') == "a#7Bb#7Cc#7Dd #22e#22 #23"
    assert escape(b"a{b|c}") == "a{b|c}"  # only in captures


def test_sd_flag_escapes_quote_backslash_bracket():
    assert escape_sd('a"b\\c]d') == 'a\\"b\\\\c\\]d'
    assert escape_sd("plain") == "plain"
