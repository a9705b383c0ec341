/*
 * The express lane's request heads (engine.h "the express lane"): which request heads the
 * engine may route and relay by itself (spl_xhead_ok), and the head it sends for one
 * (spl_xhead_write): as splicer/http/h1.py forwards it, with the frontend's plain request
 * rules (spl_xrules_check; splicer/http/rules.py plain_edits()) made on it. Pure functions
 * of the head's bytes and its spl_h1_parse() index: no I/O, no allocation.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "splicer/engine.h"

#define SPL_XFF_NAME "X-Forwarded-For: "

/* Whether a request-target is plain: origin-form, no byte of "%;#\\" and no "/." (what
 * splicer/http/normalize.py ambiguity() tests first: such a target is never ambiguous). */
static int spl_target_plain(const char *t, uint32_t len)
{
	uint32_t i;

	if (len == 0 || t[0] != '/')
		return 0;
	for (i = 0; i < len; i++) {
		char c = t[i];

		if (c == '%' || c == ';' || c == '#' || c == '\\' || (c == '.' && t[i - 1] == '/'))
			return 0;
	}
	return 1;
}

/* The request body's length a Content-Length field of the indexed head says, as Python
 * forwards it by byte ranges (h1.py _length_as_written: digits without a leading zero, at
 * most 9 of them), or -1 when it says it otherwise. */
static int64_t spl_xhead_length(const char *buf, const uint32_t *idx)
{
	uint32_t i, nf = idx[2];

	for (i = 0; i < nf; i++) {
		const uint32_t *f = idx + SPL_H1_HDR_WORDS + SPL_H1_FIELD_WORDS * i;
		uint32_t k, len = f[3] - f[2];
		int64_t v = 0;

		if (f[4] != SPL_H1_ID_CONTENT_LENGTH)
			continue;
		if (len == 0 || len > 9 || (len > 1 && buf[f[2]] == '0'))
			return -1;
		for (k = 0; k < len; k++)
			v = v * 10 + (buf[f[2] + k] - '0'); /* (the tokenizer let only digits through) */
		return v;
	}
	return -1;
}

/* Whether the request head buf[0..len), indexed in idx, may take the express lane (see
 * engine.h) with at most `maxhdr` fields: a GET or HEAD without a body, or a POST, PUT,
 * PATCH or DELETE with a Content-Length body (or none). Sets *no_body for HEAD, *body to
 * the body's bytes and *close when it says `Connection: close`. */
int spl_xhead_ok(const char *buf, const uint32_t *idx, uint32_t maxhdr, int *no_body, uint64_t *body,
		 int *close)
{
	const uint32_t need = SPL_H1_F_PLAIN | SPL_H1_F_HOST | SPL_H1_F_HOST_OK;
	const uint32_t refuse = SPL_H1_F_TRANSFER_ENCODING | SPL_H1_F_EXPECT | SPL_H1_F_UPGRADE | SPL_H1_F_HOP;
	uint32_t flags = idx[3], m = idx[4];
	int may_have_body;

	if (idx[0] != SPL_H1_OK || idx[1] != SPL_H1_REQUEST || (flags & need) != need || (flags & refuse) ||
	    idx[2] > maxhdr)
		return 0;
	if ((flags & SPL_H1_F_CONNECTION) && !(flags & (SPL_H1_F_CONN_KEEP_ALIVE | SPL_H1_F_CONN_CLOSE)))
		return 0;
	*close = (flags & SPL_H1_F_CONN_CLOSE) != 0;
	*no_body = 0;
	*body = 0;
	if (m == 3 && memcmp(buf, "GET", 3) == 0)
		may_have_body = 0;
	else if (m == 4 && memcmp(buf, "HEAD", 4) == 0)
		may_have_body = 0, *no_body = 1;
	else if ((m == 4 && memcmp(buf, "POST", 4) == 0) || (m == 3 && memcmp(buf, "PUT", 3) == 0) ||
		 (m == 5 && memcmp(buf, "PATCH", 5) == 0) || (m == 6 && memcmp(buf, "DELETE", 6) == 0))
		may_have_body = 1;
	else
		return 0;
	if (flags & SPL_H1_F_CONTENT_LENGTH) {
		int64_t v;

		if (!may_have_body || (v = spl_xhead_length(buf, idx)) < 0)
			return 0;
		*body = (uint64_t)v;
	}
	return memcmp(buf + idx[7], "1.1", 3) == 0 && spl_target_plain(buf + idx[5], idx[6] - idx[5]);
}

/* Writes the IPv4 address `a` (host order) in dotted decimal at p; returns its length. */
static uint32_t spl_ipv4_text(uint32_t a, char *p)
{
	uint32_t n = 0;
	int shift, k;

	for (shift = 24; shift >= 0; shift -= 8) {
		uint32_t v = (a >> shift) & 0xff;
		char d[3];

		k = 0;
		do {
			d[k++] = (char)('0' + v % 10);
			v /= 10;
		} while (v > 0);
		while (k > 0)
			p[n++] = d[--k];
		if (shift > 0)
			p[n++] = '.';
	}
	return n;
}

/* The ASCII byte c in lower case. */
static uint8_t spl_lower(uint8_t c)
{
	return c >= 'A' && c <= 'Z' ? (uint8_t)(c + 32) : c;
}

/* Whether the field name buf[a..b) is `name` (n bytes, lower case), case-insensitively. */
static int spl_name_is(const char *buf, uint32_t a, uint32_t b, const uint8_t *name, uint32_t n)
{
	uint32_t i;

	if (b - a != n)
		return 0;
	for (i = 0; i < n; i++)
		if (spl_lower((uint8_t)buf[a + i]) != name[i])
			return 0;
	return 1;
}

/* Whether the names a[0..n) and b[0..m) are equal, case-insensitively. */
static int spl_names_equal(const uint8_t *a, uint32_t n, const uint8_t *b, uint32_t m)
{
	uint32_t i;

	if (n != m)
		return 0;
	for (i = 0; i < n; i++)
		if (spl_lower(a[i]) != spl_lower(b[i]))
			return 0;
	return 1;
}

/* Appends src[0..n) at out + *len when it fits within cap (out NULL: counts only). */
static void spl_put(char *out, uint32_t *len, uint32_t cap, const void *src, uint32_t n)
{
	if (out != NULL && *len + n <= cap)
		memcpy(out + *len, src, n);
	*len += n;
}

/* SPL_XPART_HDR: occurrence occ of the comma-separated values of the fields named
 * name[0..n) of the indexed head buf (splicer/http/logformat.py _last()); sets *at and
 * returns its length (0: none, or empty). */
static uint32_t spl_hdr_value(const char *buf, const uint32_t *idx, const uint8_t *name, uint32_t n, int occ,
			      uint32_t *at)
{
	uint32_t nf = idx[2], total = 0, want, seen = 0, i, k;

	for (i = 0; i < nf; i++) {
		const uint32_t *f = idx + SPL_H1_HDR_WORDS + SPL_H1_FIELD_WORDS * i;

		if (!spl_name_is(buf, f[0], f[1], name, n))
			continue;
		total++;
		for (k = f[2]; k < f[3]; k++)
			total += buf[k] == ',';
	}
	if (occ == 0 || (uint32_t)(occ < 0 ? -occ : occ) > total)
		return 0;
	want = occ > 0 ? (uint32_t)occ - 1 : total - (uint32_t)(-occ);
	for (i = 0; i < nf; i++) {
		const uint32_t *f = idx + SPL_H1_HDR_WORDS + SPL_H1_FIELD_WORDS * i;
		uint32_t a, b;

		if (!spl_name_is(buf, f[0], f[1], name, n))
			continue;
		for (a = f[2];; a = b + 1) { /* each element a..b, b at a comma or the value's end */
			for (b = a; b < f[3] && buf[b] != ','; b++)
				;
			if (seen++ == want) {
				while (a < b && (buf[a] == ' ' || buf[a] == '\t'))
					a++;
				while (b > a && (buf[b - 1] == ' ' || buf[b - 1] == '\t'))
					b--;
				*at = a;
				return b - a;
			}
			if (b >= f[3])
				break;
		}
	}
	return 0; /* (not reached: want < total) */
}

/* Writes the fields the request rules prog[0..plen) add (engine.h spl_xrules), but those whose bit is
 * clear in `alive`, for the indexed head buf from client address `addr`; returns nothing,
 * advances *n as spl_put. */
static void spl_xrules_adds(const uint8_t *prog, uint32_t plen, uint64_t alive, const char *buf, const uint32_t *idx,
			    uint32_t addr, char *out, uint32_t *n, uint32_t cap)
{
	const uint8_t *p = prog, *end = prog + plen;
	uint32_t k = 0;

	while (p < end) {
		uint32_t nlen = p[1], parts, j;
		const uint8_t *name = p + 2;

		if (p[0] == SPL_XOP_DEL) {
			p += 2 + nlen;
			continue;
		}
		parts = p[2 + nlen];
		p += 3 + nlen;
		if (!(alive >> k++ & 1)) { /* deleted by a later op: skip its parts */
			for (j = 0; j < parts; j++)
				p += p[0] == SPL_XPART_LIT ? 3u + (p[1] | (uint32_t)p[2] << 8) :
				     p[0] == SPL_XPART_HDR ? 3u + p[2] : 1u;
			continue;
		}
		spl_put(out, n, cap, name, nlen);
		spl_put(out, n, cap, ": ", 2);
		for (j = 0; j < parts; j++) {
			if (p[0] == SPL_XPART_LIT) {
				uint32_t len = p[1] | (uint32_t)p[2] << 8;

				spl_put(out, n, cap, p + 3, len);
				p += 3 + len;
			} else if (p[0] == SPL_XPART_HDR) {
				uint32_t at = 0, len = spl_hdr_value(buf, idx, p + 3, p[2], (int8_t)p[1], &at);

				spl_put(out, n, cap, buf + at, len);
				p += 3 + p[2];
			} else { /* SPL_XPART_SRC */
				char ip[16];

				spl_put(out, n, cap, ip, spl_ipv4_text(addr, ip));
				p++;
			}
		}
		spl_put(out, n, cap, "\r\n", 2);
	}
}

/* Which of the request's fields (bit i: field i, in dead[]) and of the fields they add (bit
 * k of the result: the k-th ADD) the request rules prog[0..plen) delete, for the indexed head buf. */
static uint64_t spl_xrules_dead(const uint8_t *prog, uint32_t plen, const char *buf, const uint32_t *idx, uint64_t *dead)
{
	const uint8_t *p = prog, *end = prog + plen;
	const uint8_t *added[SPL_XRULES_ADDS];
	uint64_t alive = 0;
	uint32_t k = 0, nf = idx[2], i, j;

	while (p < end) {
		uint32_t nlen = p[1], parts;

		if (p[0] == SPL_XOP_DEL) {
			for (i = 0; i < nf; i++) {
				const uint32_t *f = idx + SPL_H1_HDR_WORDS + SPL_H1_FIELD_WORDS * i;

				if (spl_name_is(buf, f[0], f[1], p + 2, nlen))
					dead[i / 64] |= (uint64_t)1 << (i % 64);
			}
			for (j = 0; j < k; j++)
				if (spl_names_equal(added[j] + 2, added[j][1], p + 2, nlen))
					alive &= ~((uint64_t)1 << j);
			p += 2 + nlen;
			continue;
		}
		added[k] = p;
		alive |= (uint64_t)1 << k++;
		parts = p[2 + nlen];
		p += 3 + nlen;
		for (j = 0; j < parts; j++)
			p += p[0] == SPL_XPART_LIT ? 3u + (p[1] | (uint32_t)p[2] << 8) : p[0] == SPL_XPART_HDR ? 3u + p[2] : 1u;
	}
	return alive;
}

uint32_t spl_xhead_write(const char *buf, uint32_t len, const uint32_t *idx, const uint8_t *prog, uint32_t plen,
			 int xff, uint32_t addr, char *out, uint32_t cap)
{
	uint32_t nf = idx[2], at = idx[SPL_H1_HDR_WORDS], n = 0, i;
	uint64_t dead[SPL_H1_MAX_FIELDS / 64] = {0}, alive = 0;

	if (plen != 0)
		alive = spl_xrules_dead(prog, plen, buf, idx, dead);
	spl_put(out, &n, cap, buf, at); /* the request line */
	for (i = 0; i < nf; i++) {
		const uint32_t *f = idx + SPL_H1_HDR_WORDS + SPL_H1_FIELD_WORDS * i;
		uint32_t end = i + 1 < nf ? f[SPL_H1_FIELD_WORDS] : len - 2;

		if (f[4] == SPL_H1_ID_CONNECTION || (dead[i / 64] >> (i % 64) & 1))
			continue;
		spl_put(out, &n, cap, buf + f[0], end - f[0]);
	}
	if (plen != 0)
		spl_xrules_adds(prog, plen, alive, buf, idx, addr, out, &n, cap);
	if (xff) {
		char ip[16];

		spl_put(out, &n, cap, SPL_XFF_NAME, sizeof(SPL_XFF_NAME) - 1);
		spl_put(out, &n, cap, ip, spl_ipv4_text(addr, ip));
		spl_put(out, &n, cap, "\r\n", 2);
	}
	spl_put(out, &n, cap, "\r\n", 2);
	return n <= cap ? n : 0;
}

int spl_xrules_check(const uint8_t *prog, uint32_t len)
{
	const uint8_t *p = prog, *end = prog + len;
	uint32_t adds = 0;

	if (len > SPL_XRULES_MAX || (prog == NULL && len != 0))
		return -EINVAL;
	while (p < end) { /* every op and part whole, as the hot path reads them unchecked */
		uint32_t parts, j;

		if (end - p < 2 || (p[0] != SPL_XOP_DEL && p[0] != SPL_XOP_ADD) || p[1] == 0 || end - p < 2 + p[1])
			return -EINVAL;
		if (p[0] == SPL_XOP_DEL) {
			p += 2 + p[1];
			continue;
		}
		if (++adds > SPL_XRULES_ADDS || end - p < 3 + p[1])
			return -EINVAL;
		parts = p[2 + p[1]];
		p += 3 + p[1];
		for (j = 0; j < parts; j++) {
			if (p >= end)
				return -EINVAL;
			if (p[0] == SPL_XPART_LIT) {
				if (end - p < 3 || end - p < 3 + (p[1] | p[2] << 8))
					return -EINVAL;
				p += 3 + (p[1] | p[2] << 8);
			} else if (p[0] == SPL_XPART_HDR) {
				if (end - p < 3 || p[2] == 0 || end - p < 3 + p[2])
					return -EINVAL;
				p += 3 + p[2];
			} else if (p[0] == SPL_XPART_SRC) {
				p++;
			} else {
				return -EINVAL;
			}
		}
	}
	return 0;
}
