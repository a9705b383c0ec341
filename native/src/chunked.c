/*
 * Chunked framing lines (RFC 9112 section 7.1), checked one whole line at a time.
 *
 * The engine relays a chunked body verbatim: it peeks at the source, feeds each framing line
 * (chunk-size line, the CRLF after chunk data, trailer lines) to spl_chunk_line(), then
 * splices the lines and the chunk data through its pipe. These are the rules of
 * splicer/http/chunked.py's ChunkedReader, byte for byte: tests/unit/engine/test_chunk_line.py
 * feeds both the same lines. No I/O, no allocation.
 */
#include <errno.h>
#include <string.h>

#include "splicer/engine.h"

#define SPL_CHUNK_MAX_DIGITS 16 /* 64-bit sizes: bodies over 4 GiB work, overflow is refused */

static int spl_hexval(unsigned char ch)
{
	if (ch >= '0' && ch <= '9')
		return ch - '0';
	if (ch >= 'a' && ch <= 'f')
		return ch - 'a' + 10;
	if (ch >= 'A' && ch <= 'F')
		return ch - 'A' + 10;
	return -1;
}

/* RFC 9110 section 5.6.2 tchar */
static int spl_tchar(unsigned char ch)
{
	return (ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
	       (ch != 0 && strchr("!#$%&'*+-.^_`|~", ch) != NULL);
}

int spl_chunk_line(struct spl_chunk *c, const char *line, size_t len)
{
	size_t body, end, i;
	uint64_t size = 0;

	if (c == NULL || line == NULL || c->state == SPL_CHUNK_DATA || c->state == SPL_CHUNK_END)
		return -EINVAL;
	if (len < 2 || line[len - 1] != '\n' || line[len - 2] != '\r')
		return -EPROTO; /* CRLF line endings only: a bare LF is refused */
	if (len > SPL_CHUNK_MAX_LINE)
		return -EPROTO;
	body = len - 2;
	for (i = 0; i < body; i++) {
		unsigned char ch = (unsigned char)line[i];

		if ((ch < 0x20 && ch != '\t') || ch == 0x7f)
			return -EPROTO; /* CR, NUL and the other controls (RFC 9110 section 5.5) */
	}
	switch (c->state) {
	case SPL_CHUNK_SIZE:
		for (end = 0; end < body && line[end] != ';'; end++)
			;
		if (end < body) /* BWS before the extensions (RFC 9112 section 7.1.1) */
			while (end > 0 && (line[end - 1] == ' ' || line[end - 1] == '\t'))
				end--;
		if (end == 0 || end > SPL_CHUNK_MAX_DIGITS)
			return -EPROTO;
		for (i = 0; i < end; i++) {
			int v = spl_hexval((unsigned char)line[i]);

			if (v < 0)
				return -EPROTO;
			size = (size << 4) | (uint64_t)v;
		}
		if (size > (uint64_t)INT64_MAX)
			return -EPROTO;
		if (size == 0) {
			c->state = SPL_CHUNK_TRAILER;
		} else {
			c->state = SPL_CHUNK_DATA;
			c->data = size;
		}
		return 0;
	case SPL_CHUNK_CRLF:
		if (body != 0)
			return -EPROTO; /* chunk data not followed by CRLF */
		c->state = SPL_CHUNK_SIZE;
		return 0;
	default: /* SPL_CHUNK_TRAILER: field lines up to an empty line */
		if (body == 0) {
			c->state = SPL_CHUNK_END;
			return 0;
		}
		c->trailer_bytes += (uint32_t)len;
		if (c->trailer_bytes > SPL_CHUNK_MAX_TRAILERS)
			return -EPROTO;
		/* a field line: field-name (a token, RFC 9110 section 5.1) ":" value */
		for (i = 0; i < body && line[i] != ':'; i++)
			if (!spl_tchar((unsigned char)line[i]))
				return -EPROTO;
		if (i == 0 || i == body)
			return -EPROTO;
		return 0;
	}
}
