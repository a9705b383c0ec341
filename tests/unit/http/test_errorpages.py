"""splicer.http.errorpages: generated error responses."""
import pytest

from splicer.http.errorpages import REASONS, error_response


def split(resp):
    head, _, body = resp.partition(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    fields = dict(line.split(b": ", 1) for line in lines[1:])
    return lines[0], fields, body


@pytest.mark.parametrize("status", sorted(REASONS) + [418])
def test_content_length_equals_body_and_connection_closes(status):
    start, fields, body = split(error_response(status))
    assert start == b"HTTP/1.1 %d %s" % (status, REASONS.get(status, "Error").encode())
    assert int(fields[b"content-length"]) == len(body)
    assert fields[b"connection"] == b"close"
    assert fields[b"content-type"] == b"text/html"
    assert fields[b"cache-control"] == b"no-cache"
    assert list(fields) == [b"content-length", b"cache-control", b"content-type", b"connection"]


def test_503_exact_bytes():
    body = b"<html><body><h1>503 Service Unavailable</h1>\nNo server is available to handle this request.\n</body></html>\n"
    assert error_response(503) == (
        b"HTTP/1.1 503 Service Unavailable\r\ncontent-length: %d\r\ncache-control: no-cache\r\n"
        b"content-type: text/html\r\nconnection: close\r\n\r\n" % len(body)) + body


def test_detail_replaces_default_text_and_length_follows_utf8():
    _, fields, body = split(error_response(400, "caf\u00e9 \u2014 bad"))
    assert body == "<html><body><h1>400 Bad Request</h1>\ncaf\u00e9 \u2014 bad\n</body></html>\n".encode()
    assert int(fields[b"content-length"]) == len(body) == 66


def test_status_without_text_uses_reason_as_text():
    _, _, body = split(error_response(403))
    assert body == b"<html><body><h1>403 Forbidden</h1>\nForbidden\n</body></html>\n"
