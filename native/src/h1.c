/*
 * HTTP/1.1 head tokenizer - one pass over a whole head, spans not copies, no allocation.
 *
 * The engine runs it on every head it reads, so that Python receives the head with an index
 * of its parts in the same completion (haproxy's h1_headers_to_hdr_list is the model: the
 * start line's parts and every field's name and value as offsets into the buffer, plus flags
 * for the fields framing and hop-by-hop removal care about).
 *
 * h11 stays the definition of a valid head (splicer/http/h1.py). This file only answers with
 * certainty: SPL_H1_OK when the head is one that h11 plus splicer's strict rules accept, with
 * exactly the parts they would give; SPL_H1_REFUSE when a strict rule refuses it (a control
 * character, a bare CR or LF, obs-fold: refused whatever else the head holds); SPL_H1_UNSURE
 * for everything else (any other error, a Content-Length list, a transfer coding other than
 * chunked, an HTTP version other than 1.0/1.1 in a request, more than SPL_H1_MAX_FIELDS
 * fields...), which Python hands to h11 as before. tests/unit/http/test_h1_tokenizer.py holds
 * the two to agreement on every head they are fed.
 */
#include <ctype.h>
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "splicer/engine.h"

#define C_TCHAR 1  /* token character (RFC 9110 section 5.6.2) */
#define C_VCHAR 2  /* visible ASCII, 0x21-0x7e: a request-target byte (h11) */
#define C_FIELD 4  /* a byte a field value or reason phrase may hold: HTAB, SP, VCHAR, obs-text */
#define C_BAD 8    /* a control character splicer refuses anywhere in a head: all but HTAB/CR/LF */

_Static_assert(SPL_H1_INDEX_WORDS == SPL_H1_HDR_WORDS + SPL_H1_FIELD_WORDS * SPL_H1_MAX_FIELDS,
	       "index size");

static const uint8_t spl_h1_class[256] = {
	8, 8, 8, 8, 8, 8, 8, 8, 8, 4, 0, 8, 8, 0, 8, 8,
	8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8,
	4, 7, 6, 7, 7, 7, 7, 7, 6, 6, 7, 7, 6, 7, 7, 6,
	7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 6, 6, 6, 6, 6, 6,
	6, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7,
	7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 6, 6, 6, 7, 7,
	7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7,
	7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 6, 7, 6, 7, 8,
	4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4,
	4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4,
	4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4,
	4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4,
	4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4,
	4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4,
	4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4,
	4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4,
};

/* A field name the index knows, lowercase: its SPL_H1_ID_* and its SPL_H1_F_* flag. */
struct spl_h1_name {
	const char *name;
	uint32_t len;
	uint32_t id;
	uint32_t flag;
};

static const struct spl_h1_name spl_h1_names[] = {
	{ "host", 4, SPL_H1_ID_HOST, SPL_H1_F_HOST },
	{ "content-length", 14, SPL_H1_ID_CONTENT_LENGTH, SPL_H1_F_CONTENT_LENGTH },
	{ "transfer-encoding", 17, SPL_H1_ID_TRANSFER_ENCODING, SPL_H1_F_TRANSFER_ENCODING },
	{ "connection", 10, SPL_H1_ID_CONNECTION, SPL_H1_F_CONNECTION },
	{ "expect", 6, SPL_H1_ID_EXPECT, SPL_H1_F_EXPECT },
	{ "upgrade", 7, SPL_H1_ID_UPGRADE, SPL_H1_F_UPGRADE },
	{ "keep-alive", 10, SPL_H1_ID_KEEP_ALIVE, SPL_H1_F_HOP },
	{ "proxy-connection", 16, SPL_H1_ID_PROXY_CONNECTION, SPL_H1_F_HOP },
	{ "proxy-authenticate", 18, SPL_H1_ID_PROXY_AUTHENTICATE, SPL_H1_F_HOP },
	{ "proxy-authorization", 19, SPL_H1_ID_PROXY_AUTHORIZATION, SPL_H1_F_HOP },
	{ "te", 2, SPL_H1_ID_TE, SPL_H1_F_HOP },
	{ "trailer", 7, SPL_H1_ID_TRAILER, SPL_H1_F_HOP },
};

/* The entry of the field name p[0..len) in spl_h1_names, NULL for any other name.
 * Case-insensitive: c | 0x20 lowers a letter and maps no other token character onto a
 * letter or '-'. */
static const struct spl_h1_name *spl_h1_known(const unsigned char *p, size_t len)
{
	size_t i, k;

	for (k = 0; k < sizeof(spl_h1_names) / sizeof(spl_h1_names[0]); k++) {
		if (spl_h1_names[k].len != len)
			continue;
		for (i = 0; i < len; i++)
			if ((p[i] | 0x20) != (unsigned char)spl_h1_names[k].name[i])
				break;
		if (i == len)
			return &spl_h1_names[k];
	}
	return NULL;
}

/* The strict rules of splicer/http/h1.py strict_syntax_error(): 1 when the head holds a
 * control character other than HTAB, CR and LF, a CR not followed by LF, an LF not preceded
 * by CR, or a line starting with SP or HTAB after the first (obs-fold); else 0. */
static int spl_h1_strict_violation(const unsigned char *p, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++) {
		unsigned char c = p[i];

		if (spl_h1_class[c] & (C_TCHAR | C_FIELD))
			continue; /* the common case: one table look-up per byte */
		if (spl_h1_class[c] & C_BAD)
			return 1;
		if (c == '\r') {
			if (i + 1 == len || p[i + 1] != '\n')
				return 1;
		} else if (c == '\n') {
			if (i == 0 || p[i - 1] != '\r')
				return 1;
			if (i + 1 < len && (p[i + 1] == ' ' || p[i + 1] == '\t'))
				return 1;
		}
	}
	return 0;
}

/* 1 when the Host value p[0..len) is one splicer/http/h1.py's _HOST grammar takes: an
 * IP-literal in brackets or a reg-name (RFC 3986 section 3.2.2), then an optional port of
 * digits; 0 when it is not, or not certainly (Python's check then decides). */
static int spl_h1_host_ok(const unsigned char *p, size_t len)
{
	static const char reg[] = "-._~%!$&'()*+;=";
	size_t i = 0;

	if (len > 0 && p[0] == '[') {
		for (i = 1; i < len && (isxdigit(p[i]) || p[i] == ':' || p[i] == '.'); i++)
			;
		if (i == 1 || i >= len || p[i] != ']')
			return 0;
		i++;
	} else {
		while (i < len && (isalnum(p[i]) || (p[i] != 0 && strchr(reg, p[i]) != NULL)))
			i++;
	}
	if (i == len)
		return 1;
	if (p[i] != ':')
		return 0;
	for (i++; i < len; i++)
		if (p[i] < '0' || p[i] > '9')
			return 0;
	return 1;
}

/* SPL_H1_F_CONN_KEEP_ALIVE or SPL_H1_F_CONN_CLOSE when the Connection value p[0..len) is just
 * that option (any case), else 0. */
static uint32_t spl_h1_conn_option(const unsigned char *p, size_t len)
{
	static const char ka[] = "keep-alive", cl[] = "close";
	const char *want = len == 10 ? ka : len == 5 ? cl : NULL;
	size_t i;

	if (want == NULL)
		return 0;
	for (i = 0; i < len; i++)
		if ((p[i] | 0x20) != (unsigned char)want[i])
			return 0;
	return len == 10 ? SPL_H1_F_CONN_KEEP_ALIVE : SPL_H1_F_CONN_CLOSE;
}

/* Reads the field lines from p[*pos], after the start line, into idx; every line ends in
 * CRLF (the strict pass made sure). Returns SPL_H1_OK with *pos at the end of the empty line
 * and *hosts the number of Host fields (0 or 1), or SPL_H1_UNSURE. */
static int spl_h1_fields(const unsigned char *p, size_t len, size_t *pos, uint32_t *idx,
			 uint32_t *hosts)
{
	size_t i = *pos, ns, ne, vs, ve;
	uint32_t n = 0, flags = SPL_H1_F_PLAIN, flag, cls = 0, tes = 0, conns = 0, conn = 0, *f;
	const struct spl_h1_name *known;

	*hosts = 0;

	for (;;) {
		if (i + 1 < len && p[i] == '\r') { /* the empty line: its LF follows (strict pass) */
			*pos = i + 2;
			break;
		}
		ns = i;
		while (i < len && (spl_h1_class[p[i]] & C_TCHAR))
			i++;
		if (i == ns || i == len || p[i] != ':')
			return SPL_H1_UNSURE; /* no name, or a space before the colon: h11 decides */
		ne = i++;
		while (i < len && (p[i] == ' ' || p[i] == '\t'))
			i++;
		vs = i;
		while (i < len && p[i] != '\r') /* HTAB, SP, VCHAR or obs-text (strict pass) */
			i++;
		if (i + 1 >= len)
			return SPL_H1_UNSURE;
		ve = i;
		while (ve > vs && (p[ve - 1] == ' ' || p[ve - 1] == '\t'))
			ve--;
		if (vs != ne + 2 || p[ne + 1] != ' ' || ve != i)
			flags &= ~(uint32_t)SPL_H1_F_PLAIN; /* not as splicer writes a field line */
		i += 2;
		if (n == SPL_H1_MAX_FIELDS)
			return SPL_H1_UNSURE;
		known = spl_h1_known(p + ns, ne - ns);
		flag = known != NULL ? known->flag : 0;
		if (flag == SPL_H1_F_HOST) {
			if (++*hosts > 1)
				return SPL_H1_UNSURE; /* h11: "Found multiple Host: headers" */
			if (spl_h1_host_ok(p + vs, ve - vs))
				flags |= SPL_H1_F_HOST_OK;
		} else if (flag == SPL_H1_F_CONNECTION) {
			if (++conns == 1)
				conn = spl_h1_conn_option(p + vs, ve - vs);
		} else if (flag == SPL_H1_F_CONTENT_LENGTH) {
			/* h11 keeps one of equal values and rewrites a list: only a plain number of
			 * at most 20 digits (its limit), once, is certain here */
			size_t k;

			if (++cls > 1 || ve == vs || ve - vs > 20)
				return SPL_H1_UNSURE;
			for (k = vs; k < ve; k++)
				if (p[k] < '0' || p[k] > '9')
					return SPL_H1_UNSURE;
		} else if (flag == SPL_H1_F_TRANSFER_ENCODING) {
			/* h11 accepts only "chunked" (it lowers the value): certain when it is so already */
			if (++tes > 1 || ve - vs != 7 || memcmp(p + vs, "chunked", 7) != 0)
				return SPL_H1_UNSURE;
		}
		flags |= flag;
		f = idx + SPL_H1_HDR_WORDS + SPL_H1_FIELD_WORDS * n;
		f[0] = (uint32_t)ns;
		f[1] = (uint32_t)ne;
		f[2] = (uint32_t)vs;
		f[3] = (uint32_t)ve;
		f[4] = known != NULL ? known->id : SPL_H1_ID_OTHER;
		n++;
	}
	idx[2] = n;
	idx[3] = flags | (conns == 1 ? conn : 0);
	return SPL_H1_OK;
}

/* Request line: method SP request-target SP HTTP/d.d CRLF (h11's request_line, fullmatch). */
static int spl_h1_request(const unsigned char *p, size_t len, uint32_t *idx)
{
	size_t i = 0, ts;
	uint32_t hosts;
	int rc;

	while (i < len && (spl_h1_class[p[i]] & C_TCHAR))
		i++;
	if (i == 0 || i == len || p[i] != ' ')
		return SPL_H1_UNSURE;
	idx[4] = (uint32_t)i;
	ts = ++i;
	while (i < len && (spl_h1_class[p[i]] & C_VCHAR))
		i++;
	if (i == ts || i + 11 > len || p[i] != ' ' || memcmp(p + i + 1, "HTTP/1.", 7) != 0 ||
	    (p[i + 8] != '0' && p[i + 8] != '1') || p[i + 9] != '\r')
		return SPL_H1_UNSURE; /* another version (505 or 400) or form: h11 decides */
	idx[5] = (uint32_t)ts;
	idx[6] = (uint32_t)i;
	idx[7] = (uint32_t)(i + 6);
	i += 11;
	idx[1] = SPL_H1_REQUEST;
	rc = spl_h1_fields(p, len, &i, idx, &hosts);
	if (rc == SPL_H1_OK && hosts == 0 && p[idx[7] + 2] == '1')
		rc = SPL_H1_UNSURE; /* h11: a 1.1 request needs its Host */
	if (rc == SPL_H1_OK && i != len)
		rc = SPL_H1_UNSURE; /* bytes behind the head: not what the engine hands over */
	return rc;
}

/* Status line: HTTP/d.d SP 3DIGIT [SP reason-phrase] CRLF (h11's status_line, fullmatch). */
static int spl_h1_response(const unsigned char *p, size_t len, uint32_t *idx)
{
	size_t i = 12, rs;
	uint32_t status, hosts;
	int rc;

	if (len < 14 || p[5] < '0' || p[5] > '9' || p[6] != '.' || p[7] < '0' || p[7] > '9' ||
	    p[8] != ' ' || p[9] < '0' || p[9] > '9' || p[10] < '0' || p[10] > '9' || p[11] < '0' ||
	    p[11] > '9')
		return SPL_H1_UNSURE;
	status = (uint32_t)(p[9] - '0') * 100 + (uint32_t)(p[10] - '0') * 10 + (uint32_t)(p[11] - '0');
	if (status < 100)
		return SPL_H1_UNSURE; /* h11: an InformationalResponse must be 1xx */
	rs = i;
	if (p[i] == ' ') {
		rs = ++i;
		while (i < len && p[i] != '\r') /* HTAB, SP, VCHAR or obs-text (strict pass) */
			i++;
	}
	if (i + 1 >= len || p[i] != '\r')
		return SPL_H1_UNSURE;
	idx[1] = SPL_H1_RESPONSE;
	idx[4] = 5;
	idx[5] = status;
	idx[6] = (uint32_t)rs;
	idx[7] = (uint32_t)i;
	i += 2;
	rc = spl_h1_fields(p, len, &i, idx, &hosts); /* (a response needs no Host) */
	if (rc == SPL_H1_OK && i != len)
		rc = SPL_H1_UNSURE;
	return rc;
}

int spl_h1_parse(const char *buf, size_t len, uint32_t *idx)
{
	const unsigned char *p = (const unsigned char *)buf;
	int rc;

	if (buf == NULL || idx == NULL || len > UINT32_MAX)
		return -EINVAL;
	memset(idx, 0, SPL_H1_HDR_WORDS * sizeof(*idx));
	if (spl_h1_strict_violation(p, len)) {
		idx[0] = SPL_H1_REFUSE;
		return SPL_H1_REFUSE;
	}
	if (len >= 5 && memcmp(p, "HTTP/", 5) == 0) /* never a request line: '/' is no tchar */
		rc = spl_h1_response(p, len, idx);
	else
		rc = spl_h1_request(p, len, idx);
	if (rc != SPL_H1_OK) {
		idx[1] = idx[2] = idx[3] = 0;
		rc = SPL_H1_UNSURE;
	}
	idx[0] = (uint32_t)rc;
	return rc;
}

ssize_t spl_h1_relay(const char *buf, size_t len, const uint32_t *idx, uint32_t max_status,
		     uint32_t flags_in, char *out, size_t cap, uint64_t *body)
{
	const unsigned char *p = (const unsigned char *)buf;
	uint32_t status, n, flags, i, id;
	uint64_t count = 0;
	size_t at, o, start, end, k, tlen;
	const uint32_t *f;
	const char *tail;

	if (buf == NULL || idx == NULL || out == NULL || body == NULL)
		return -EINVAL;
	if (idx[0] != SPL_H1_OK || idx[1] != SPL_H1_RESPONSE || len < 14 || p[5] != '1' || p[7] != '1')
		return 0; /* unsure, a request, or not HTTP/1.1 (1.0 keep-alive rules differ) */
	status = idx[5];
	flags = idx[3];
	n = idx[2];
	if (status < 200 || status > max_status || !(flags & SPL_H1_F_PLAIN) ||
	    (flags & (SPL_H1_F_TRANSFER_ENCODING | SPL_H1_F_UPGRADE)))
		return 0;
	if ((flags & SPL_H1_F_CONNECTION) && !(flags & (SPL_H1_F_CONN_KEEP_ALIVE | SPL_H1_F_CONN_CLOSE)))
		return 0; /* not one field of just "keep-alive" or "close": it may name others to drop */
	if (!(flags_in & SPL_RELAY_NO_BODY) && status != 204 && status != 304) {
		if (!(flags & SPL_H1_F_CONTENT_LENGTH))
			return 0; /* delimited by the server's close: the client connection ends too */
		for (i = 0; i < n; i++) {
			f = idx + SPL_H1_HDR_WORDS + SPL_H1_FIELD_WORDS * i;
			if (f[4] != SPL_H1_ID_CONTENT_LENGTH)
				continue;
			if (f[3] - f[2] > 1 && p[f[2]] == '0')
				return 0; /* leading zeros: written anew, by Python */
			if (f[3] - f[2] > 18)
				return 0; /* beyond any body splicer meets (and 2^63) */
			for (k = f[2]; k < f[3]; k++)
				count = count * 10 + (uint64_t)(p[k] - '0');
		}
	}
	/* the status line as splicer writes it: HTTP/1.1 SP status SP reason CRLF */
	o = 0;
	if (cap < 13 + (idx[7] - idx[6]) + 2)
		return 0;
	memcpy(out, "HTTP/1.1 ", 9);
	memcpy(out + 9, p + 9, 3);
	out[12] = ' ';
	memcpy(out + 13, p + idx[6], idx[7] - idx[6]);
	o = 13 + (idx[7] - idx[6]);
	memcpy(out + o, "\r\n", 2);
	o += 2;
	/* the field lines as received, less Connection and Keep-Alive; any other hop-by-hop
	 * field needs Python */
	at = n ? idx[SPL_H1_HDR_WORDS] : len - 2;
	for (i = 0; i < n; i++) {
		f = idx + SPL_H1_HDR_WORDS + SPL_H1_FIELD_WORDS * i;
		id = f[4];
		if (id == SPL_H1_ID_OTHER || id == SPL_H1_ID_CONTENT_LENGTH || id == SPL_H1_ID_HOST ||
		    id == SPL_H1_ID_EXPECT)
			continue;
		if (id != SPL_H1_ID_CONNECTION && id != SPL_H1_ID_KEEP_ALIVE)
			return 0;
		start = f[0];
		end = i + 1 < n ? f[SPL_H1_FIELD_WORDS] : len - 2;
		if (o + (start - at) > cap)
			return 0;
		memcpy(out + o, p + at, start - at);
		o += start - at;
		at = end;
	}
	tail = (flags_in & SPL_RELAY_CLOSE_CLIENT) ? "Connection: close\r\n" :
	       (flags_in & SPL_RELAY_KEEP_ALIVE) ? "Connection: keep-alive\r\n" : "";
	tlen = strlen(tail);
	if (o + (len - 2 - at) + tlen + 2 > cap)
		return 0;
	memcpy(out + o, p + at, len - 2 - at);
	o += len - 2 - at;
	memcpy(out + o, tail, tlen);
	o += tlen;
	memcpy(out + o, "\r\n", 2);
	o += 2;
	*body = count;
	return (ssize_t)o;
}
