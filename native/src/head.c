/*
 * Head end - where an HTTP/1.1 head ends in a buffer (the one byte-level rule about heads
 * that the engine needs; h11, in Python, parses the head itself).
 *
 * A head ends at its first empty line. As in splicer/http/h1.py's find_head_end() (the
 * regex \r?\n\r?\n), a bare LF counts as a line end here, so that a head with bare LF line
 * endings is read whole and then refused by Python's strict check with the right status.
 */
#include <stddef.h>
#include <sys/types.h>

#include "splicer/engine.h"

ssize_t spl_head_end(const char *buf, size_t len, size_t start)
{
	size_t p, q;

	for (p = start; p < len; p++) {
		if (buf[p] == '\r' && p + 1 < len && buf[p + 1] == '\n')
			q = p + 2;
		else if (buf[p] == '\n')
			q = p + 1;
		else
			continue;
		if (q < len && buf[q] == '\n')
			return (ssize_t)(q + 1);
		if (q + 1 < len && buf[q] == '\r' && buf[q + 1] == '\n')
			return (ssize_t)(q + 2);
	}
	return -1;
}
