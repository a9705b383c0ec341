/*
 * The express lane - requests the engine routes by itself (see engine.h, "the express lane").
 *
 * Included once by engine.c, after the slot and engine types and the job phases it builds
 * on: an express request is the client's head job turned, in place, into the RELAY job the
 * caller would have submitted for it (send the head on a server connection, read the
 * response head, relay it, read the next head), on the connection the caller lent that head
 * job as its credit. Python keeps every decision but the one it delegated: it picks the server and
 * takes the connection from its idle pool before it lends it, counts and logs each request
 * from its credit's completion, and takes back any request the engine cannot finish
 * (SPL_X_HANDOVER). Nothing here allocates: a credit lives in its head job's slot, buffers
 * come from the head buffers beyond one a job (nbufs - maxjobs).
 */
#ifndef SPL_EXPRESS_H
#define SPL_EXPRESS_H

#define SPL_XFF_NAME "X-Forwarded-For: "
#define SPL_XFF_MAX (sizeof(SPL_XFF_NAME) - 1 + 15 + 2) /* the field line, at most */

/* Posts a credit's completion that carries nothing but its kind. */
static void spl_xpost(struct spl_engine *e, uint64_t id, uint32_t kind)
{
	struct spl_done d;

	memset(&d, 0, sizeof(d));
	d.id = id;
	d.how = SPL_END_DONE;
	d.phase = SPL_PHASE_END;
	d.head_buf = -1;
	d.xkind = kind;
	spl_post(e, &d);
}

/* The express head job that runs on client socket `cli` as job `head_id`, or NULL. */
static struct spl_slot *spl_head_slot(struct spl_engine *e, int cli, uint64_t head_id)
{
	const struct spl_fdreg *r;
	int k;

	if (cli < 0 || (uint32_t)cli >= e->nfds)
		return NULL;
	r = &e->fds[cli];
	for (k = 0; k < SPL_FD_USERS; k++) {
		struct spl_slot *s;

		if (r->users[k] == 0)
			continue;
		s = &e->slots[r->users[k] - 1];
		if (s->active && s->job.id == head_id && s->xarmed && !s->xbusy && !s->xhas)
			return s;
	}
	return NULL;
}

static void spl_run(struct spl_engine *e, struct spl_slot *s);
static void spl_finish(struct spl_engine *e, struct spl_slot *s, uint32_t how, int32_t res, uint32_t side);

/* SPL_OP_CREDIT: gives the credit to the head job it names, whose request waits for it
 * (SPL_X_WANT), and goes on with that request; or back when that job is over (X_UNUSED).
 * A refusal (no connection: dst_fd -1) hands the waiting head to the caller. */
static void spl_credit_take(struct spl_engine *e, const struct spl_job *m)
{
	struct spl_slot *s = spl_head_slot(e, m->src_fd, m->next_id);

	if (m->dst_fd < 0) { /* refused: the head goes to the caller as usual */
		if (s != NULL && s->xwant) {
			s->xwant = 0;
			spl_finish(e, s, SPL_END_DONE, 0, SPL_SIDE_SRC);
		}
		return;
	}
	if (s == NULL) {
		spl_xpost(e, m->id, SPL_X_UNUSED);
		return;
	}
	s->xc = (struct spl_xcredit){m->id, m->dst_fd, m->dst_gen};
	s->xhas = 1;
	if (s->xwant) {
		s->xwant = 0;
		spl_run(e, s); /* its request goes on the credit now */
	}
}

/* Whether the idle connection of a credit can carry a request now: nothing arrived on it
 * since it was found empty (the readiness cache vouches for it, or a peek finds nothing).
 * Bytes or an end of stream mean the server closed it or is out of step. */
static int spl_credit_alive(const struct spl_engine *e, const struct spl_xcredit *c)
{
	char byte;
	ssize_t n;

	if ((uint32_t)c->fd >= e->nfds)
		return 0;
	if (spl_fd_quiet(e, c->fd, c->gen))
		return 1;
	do
		n = recv(c->fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
	while (n == -1 && errno == EINTR);
	return n == -1 && errno == EAGAIN;
}

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
static int64_t spl_express_length(const char *buf, const uint32_t *idx)
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
 * PATCH or DELETE with a Content-Length body (or none). Sets *no_body for HEAD and *body
 * to the body's bytes. */
static int spl_express_ok(const char *buf, const uint32_t *idx, uint32_t maxhdr, int *no_body, uint64_t *body)
{
	const uint32_t need = SPL_H1_F_PLAIN | SPL_H1_F_HOST | SPL_H1_F_HOST_OK;
	const uint32_t refuse = SPL_H1_F_TRANSFER_ENCODING | SPL_H1_F_EXPECT | SPL_H1_F_UPGRADE | SPL_H1_F_HOP;
	uint32_t flags = idx[3], m = idx[4];
	int may_have_body;

	if (idx[0] != SPL_H1_OK || idx[1] != SPL_H1_REQUEST || (flags & need) != need || (flags & refuse) ||
	    idx[2] > maxhdr)
		return 0;
	if ((flags & SPL_H1_F_CONNECTION) && !(flags & SPL_H1_F_CONN_KEEP_ALIVE))
		return 0;
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

		if (!may_have_body || (v = spl_express_length(buf, idx)) < 0)
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

/* The request head buf[0..len) (indexed in idx) as splicer forwards it without rules
 * (splicer/http/h1.py forwarded_request() writes the same bytes): its request line and
 * field lines as received, without the Connection field, and with `X-Forwarded-For: addr`
 * last when xff. Writes it to out[0..cap); returns its length, or 0 when it does not fit. */
static uint32_t spl_express_head(const char *buf, uint32_t len, const uint32_t *idx, int xff, uint32_t addr,
				 char *out, uint32_t cap)
{
	uint32_t nf = idx[2], at = idx[SPL_H1_HDR_WORDS], n, i;

	if (len + SPL_XFF_MAX > cap)
		return 0;
	memcpy(out, buf, at); /* the request line */
	n = at;
	for (i = 0; i < nf; i++) {
		const uint32_t *f = idx + SPL_H1_HDR_WORDS + SPL_H1_FIELD_WORDS * i;
		uint32_t end = i + 1 < nf ? f[SPL_H1_FIELD_WORDS] : len - 2;

		if (f[4] == SPL_H1_ID_CONNECTION)
			continue;
		memcpy(out + n, buf + f[0], end - f[0]);
		n += end - f[0];
	}
	if (xff) {
		memcpy(out + n, SPL_XFF_NAME, sizeof(SPL_XFF_NAME) - 1);
		n += sizeof(SPL_XFF_NAME) - 1;
		n += spl_ipv4_text(addr, out + n);
		out[n++] = '\r';
		out[n++] = '\n';
	}
	out[n++] = '\r';
	out[n++] = '\n';
	return n;
}

/* The client's head job in slot s read a whole head: when it qualifies, asks the caller
 * for its credit (SPL_X_WANT) and waits for it, then turns the slot into the RELAY job of
 * an express request on the credit's connection. Returns 1 when it did, 2 while it waits
 * for the credit, 0 when the head goes to the caller as usual. */
static int spl_express(struct spl_engine *e, struct spl_slot *s)
{
	struct spl_job *job = &s->job;
	uint32_t extras = e->cfg.nbufs > e->cfg.maxjobs ? e->cfg.nbufs - e->cfg.maxjobs : 0;
	uint32_t *idx, n;
	char *buf;
	int no_body;
	uint64_t body;
	int32_t out;
	struct spl_xcredit c;

	if (s->xwant)
		return 2;
	if (s->hbuf == -1 || s->hgot == 0 || job->head_fd != job->src_fd || e->xheld + 2 > extras)
		return 0;
	buf = spl_hdata(e, s->hbuf);
	idx = spl_hidx(e, s->hbuf);
	spl_h1_parse(buf, s->hgot, idx);
	s->hindexed = 1; /* (handed to the caller, it needs no second pass) */
	if (!spl_express_ok(buf, idx, s->xmaxhdr, &no_body, &body) || s->hgot + SPL_XFF_MAX + body > e->cfg.bufsize)
		return 0;
	/* a body goes only when it is all there, read behind the head and sent with it in one
	 * send (a copied body, as the Python path's small body that came with its head) */
	if (body > s->hmore)
		return 0;
	if (!s->xhas) { /* ask for the connection the balancer picks for it */
		struct spl_done d;

		if (atomic_load_explicit(&e->inflight, memory_order_relaxed) + 1 > e->cfg.maxjobs)
			return 0; /* (no room for one more completion: the caller's way) */
		atomic_fetch_add_explicit(&e->inflight, 1, memory_order_relaxed);
		memset(&d, 0, sizeof(d));
		d.id = job->id;
		d.how = SPL_END_DONE;
		d.phase = SPL_PHASE_HEAD;
		d.head_buf = -1;
		d.xkind = SPL_X_WANT;
		spl_post(e, &d);
		s->xwant = 1;
		return 2;
	}
	c = s->xc;
	if (!spl_credit_alive(e, &c)) { /* the server closed it meanwhile: the caller takes the head */
		s->xhas = 0;
		spl_xpost(e, c.id, SPL_X_DEAD);
		return 0;
	}
	out = spl_hbuf_take(e);
	if (out == -1)
		return 0;
	if (spl_attach(e, s, 1, c.fd, c.gen) != 0) {
		e->hfree[e->nhfree++] = out;
		return 0; /* (the credit goes back with the head job's end) */
	}
	s->xhas = 0;
	n = spl_express_head(buf, s->hgot, idx, (s->xflags & SPL_RELAY_XFF) != 0, s->xaddr, spl_hdata(e, out),
			     e->cfg.bufsize);
	/* (it fits: checked above) the slot becomes the request's RELAY job; reg[0] holds the
	 * client, reg[1] the server, as spl_relay_plan leaves them */
	e->xheld += 2; /* the out buffer, and the request head kept for a handover */
	s->xout = out;
	s->qbuf = s->hbuf;
	s->qlen = s->hgot;
	s->xreq = s->hgot;
	s->xc = c;
	s->xbusy = 1;
	s->hbuf = -1;
	s->xbody = body;
	job->next_id = s->xnext;
	job->flags = SPL_JOB_RELAY | (body > 0 ? SPL_JOB_COPY : 0);
	if (body == 0) {
		job->src_fd = -1;
		job->src_gen = 0;
	} /* (else the client stays src: the body comes from it) */
	job->dst_fd = c.fd;
	job->dst_gen = c.gen;
	job->head_fd = c.fd;
	job->max_bytes = body;
	job->out_len = n;
	job->out_buf = -1;
	job->head_first_ms = s->x_first_ms;
	job->head_ms = s->x_ms;
	job->head_limit = s->x_limit;
	job->src_idle_ms = job->cli_idle_ms;
	job->dst_idle_ms = s->x_srv_ms;
	job->relay_flags = no_body ? SPL_RELAY_NO_BODY : 0;
	memset(s->dir, 0, sizeof(s->dir));
	s->dir[0].src = job->src_fd;
	s->dir[0].dst = c.fd;
	s->dir[0].left = body;
	s->dir[1].src = c.fd;
	s->dir[1].dst = -1;
	s->dir[1].left = UINT64_MAX;
	s->dir[1].done = 1;
	s->hgot = 0;
	s->hstarted = 0;
	s->hindexed = 0;
	s->hinfo = 0;
	s->hmore = 0;
	s->planned = 0;
	s->rextra = 0;
	s->rbody = 0;
	s->relayed = 0;
	s->rflags = 0;
	s->prefetched = 0;
	s->out_off = s->out_total = 0;
	s->pre = 0;
	s->copy_have = s->copy_off = 0;
	s->progress = 0;
	s->last_ms = e->now_ms;
	s->phase = SPL_PHASE_SEND;
	spl_timer_set(e, s);
	return 1;
}

/* Lets go of the out buffer of slot s's express request: the request is over. */
static void spl_xrelease(struct spl_engine *e, struct spl_slot *s)
{
	if (s->xout != -1) {
		e->hfree[e->nhfree++] = s->xout;
		s->xout = -1;
		e->xheld--;
	}
	s->xbusy = 0;
}

/* The express request of slot s was relayed whole (spl_chain, whose completion d becomes
 * its credit's SPL_X_DONE): the request and response heads' buffers go back (Python needs
 * only the status and sizes), the server connection goes back with the completion. */
static void spl_xdone(struct spl_engine *e, struct spl_slot *s, struct spl_done *d)
{
	if (s->qbuf != -1) {
		e->hfree[e->nhfree++] = s->qbuf;
		s->qbuf = -1;
		e->xheld--;
	}
	d->id = s->xc.id;
	d->xkind = SPL_X_DONE;
	d->bytes_rev = s->xbody; /* the request's body, sent whole with its head */
	d->xother = s->xnext;
	d->xstatus = s->xstatus;
	d->xreq = s->xreq;
	if (d->head_buf != -1)
		e->hfree[e->nhfree++] = d->head_buf;
	d->head_buf = -1;
	d->head_len = 0;
	spl_xrelease(e, s);
}

/* The express request of slot s ended otherwise (spl_finish: a failure, a timeout, a
 * cancel, or a response the engine does not relay): it is handed over. The credit ends
 * SPL_X_HANDOVER with what a RELAY job's completion would have said (the response head and
 * how its read ended; relayed, when the response had begun to go out, with how the relay
 * ended), then the client's head job with xkind SPL_X_HANDOVER and the request head, as if
 * it had just read it: the caller finishes the request as its own from there. */
static void spl_xfinish(struct spl_engine *e, struct spl_slot *s, uint32_t how, int32_t res, uint32_t side)
{
	struct spl_done d;

	memset(&d, 0, sizeof(d));
	d.id = s->xc.id;
	d.xother = s->xnext;
	d.xkind = SPL_X_HANDOVER;
	d.bytes_fwd = s->dir[0].moved;
	d.res = res;
	d.how = how;
	d.side = side;
	d.phase = how == SPL_END_DONE ? SPL_PHASE_END : s->phase;
	d.head_buf = -1;
	if (s->rbuf != -1) { /* relaying: the client saw the response begin */
		spl_relay_done(e, s, &d);
	} else if (s->hbuf != -1) {
		if (s->hgot > 0) { /* the response head, or what came of it */
			d.head_buf = s->hbuf;
			d.head_len = s->hgot;
			if (!s->hindexed)
				spl_index_head(e, s, how);
		} else {
			e->hfree[e->nhfree++] = s->hbuf;
		}
		s->hbuf = -1;
	}
	d.head_info = s->hinfo;
	d.head_more = s->hmore;
	spl_post(e, &d);
	memset(&d, 0, sizeof(d));
	d.id = s->xnext;
	d.how = SPL_END_DONE;
	d.phase = SPL_PHASE_END;
	d.xkind = SPL_X_HANDOVER;
	d.head_buf = s->qbuf; /* indexed when the express lane took it */
	d.head_len = s->qlen;
	d.head_more = (uint32_t)s->xbody; /* its body came with it (the caller's "whole" body) */
	s->qbuf = -1;
	e->xheld--;
	spl_post(e, &d);
	spl_xrelease(e, s);
}

#endif /* SPL_EXPRESS_H */
