/*
 * Engine - a pinned thread with its own epoll that runs splice jobs submitted by Python.
 *
 * Python (one thread) submits jobs and cancels through a single-producer ring and wakes the
 * engine with an eventfd; the engine posts one completion per job into a second ring and
 * signals another eventfd that Python's event loop watches. The engine never calls into
 * Python and never takes the GIL. Each job's sockets are registered edge-triggered in the
 * engine's epoll while the job runs and removed before its completion is posted, so Python
 * may reuse them (next keep-alive request) as soon as it has reaped the completion.
 * Everything is allocated in spl_engine_new(); the data path allocates nothing.
 *
 * A job runs in phases (enum spl_phase), each optional: SEND writes a head from the caller's
 * out buffer, BODY moves the body (spliced through a pipe, or copied through the out buffer
 * with SPL_JOB_COPY), HEAD reads the next head from a socket into one of the engine's head
 * buffers, exactly (a peek finds its end, so nothing past it is read). So one job carries a
 * request head to a server and brings its response head back, or a response head and body to
 * a client, and Python makes no socket call on the way. A head buffer is taken when the head's
 * first byte can be read (an idle keep-alive connection holds none) and is lent to Python with
 * the completion, which gives it back through a release ring (spl_hbuf_release).
 *
 * Three pieces of state make waiting cheap: the readiness cache (struct spl_fdreg `quiet`): a
 * socket found empty with no read event since is waited on, not read; muting (`muted`): the
 * source of a pipe that waits for room at its destination is not listened to meanwhile
 * (spl_mute); and the timer wheel (wheel.h), which holds every job's timeout and is turned
 * once per tick.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "splicer/engine.h"
#include "pool.h"
#include "tls.h"
#include "wheel.h"

#define SPL_HBUF_PAD 64          /* head buffers hold head_limit + 1 bytes (a peek one past) */
#define SPL_HIDX_BYTES (SPL_H1_INDEX_WORDS * sizeof(uint32_t)) /* a head buffer's index, at its start */
#define SPL_FD_USERS 4           /* jobs that may use one fd at once (a body and a head...) */
#define SPL_MAX_FDS (1u << 22)   /* the fd table's size at most (RLIMIT_NOFILE beyond it) */

/* What the engine knows of one fd number. A socket stays registered in the epoll from its
 * first job on, across jobs (no epoll_ctl per job), as long as the caller names it with the
 * same non-zero generation; a new generation means a new socket under a reused fd number
 * (the old one was closed, which removed its registration), so it is registered anew. A job
 * with generation 0 registers the fd for its own run only (epoll_ctl ADD, then DEL). */
struct spl_fdreg {
	uint32_t gen;                  /* generation registered, 0 = none lasting */
	uint32_t users[SPL_FD_USERS];  /* slot + 1 of each running job that uses the fd, 0 = none
	                                * (so that the table starts as zero pages: calloc) */
	uint32_t avail;                /* with `known`: bytes the socket holds at most, as a short
	                                * read or peek found them, less those consumed since */
	uint8_t known;                 /* `avail` is valid */
	uint8_t ended;                 /* an end of stream, reset or error was reported: the
	                                * socket is never quiet again (a short read may have
	                                * stopped at a FIN it does not report) */
	atomic_uchar quiet;            /* the socket holds nothing to read: it was found empty and
	                                * no read event came since (read by spl_fd_quiet()) */
	uint8_t muted;                 /* registered without EPOLLIN: its one job waits for room
	                                * at its destination (spl_mute) */
	struct spl_tls *tls;           /* the socket's TLS session (tls.c), NULL = plain; lives
	                                * as long as the registration's generation */
	uint8_t tls_ended;             /* its session was ended (SPL_JOB_TLS_CLOSE): the socket
	                                * is only to be closed, never read or written plain */
};

#define SPL_EV_ALL (EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET) /* a registration's events */
#define SPL_EV_MUTED (EPOLLOUT | EPOLLET)                     /* the same, muted */

#define SPL_WAKE_TAG UINT64_MAX /* epoll tag of the wake eventfd */
#define SPL_MAX_EVENTS 256      /* epoll events taken per wait */
#define SPL_TICK_MS SPL_POLL_TICK_MS /* one tick of the timer wheel: timeouts fire within a tick */
#define SPL_BUDGET (16u << 20)  /* bytes one direction may move before others get a turn */
#define SPL_INLINE_BUDGET (4u << 20) /* the same, inline: the loop waits for the whole turn */
#define SPL_TURN_BUDGET (16u << 20) /* inline: bytes one turn moves before it leaves the
                                    * remaining jobs for the next turn (the loop runs between) */
#define SPL_MIN_PROGRESS 1024   /* bytes that must move to restart an idle timeout */
#define SPL_CHUNK_TURNS 64      /* chunked segments one run may move before others get a turn */
#define SPL_TRIM_MS 1000        /* a free head buffer left untaken this long goes back to the kernel */
#define SPL_PAGE 4096u          /* buffers are laid out in whole pages of this size (or a multiple) */

enum spl_op {
	SPL_OP_SUBMIT = 0,
	SPL_OP_CANCEL = 1,
	SPL_OP_CREDIT = 2, /* job.id: the credit, dst_fd/dst_gen its connection (-1: refused),
	                    * dst_idle_ms its connect_ms, src_fd the client, next_id the
	                    * client's head job */
};

/* A server connection lent for one express request (spl_credit). */
struct spl_xcredit {
	uint64_t id;
	int32_t fd;
	uint32_t gen;
	uint32_t connect_ms; /* > 0: a new connection, maybe still connecting (spl_credit) */
};

enum spl_wait {
	SPL_WAIT_NONE = 0,
	SPL_WAIT_SRC = 1,
	SPL_WAIT_DST = 2,
};

struct spl_msg {
	uint32_t op;        /* enum spl_op */
	uint32_t pad;
	struct spl_job job; /* for a cancel, only job.id is read */
};

struct spl_dir {
	struct spl_pipe *pipe; /* lent by the pool while the job runs */
	uint64_t left;         /* bytes still to read from src, UINT64_MAX = until EOF */
	uint64_t moved;        /* bytes written to dst */
	int src;               /* fd read by this direction */
	int dst;               /* fd written by this direction */
	uint8_t done;          /* this direction reached its end */
	uint8_t wait;          /* enum spl_wait: what it last blocked on */
	uint32_t have, off;    /* a copied tunnel: bytes in this direction's half of the out
	                        * buffer, of which written */
};

struct spl_slot {
	struct spl_job job;
	struct spl_dir dir[2]; /* [0] src->dst, [1] dst->src (tunnels only) */
	struct spl_chunk chunk; /* SPL_JOB_CHUNKED: where the body's framing is */
	uint32_t line_len;      /* SPL_JOB_CHUNKED: bytes of a framing line read so far */
	int reg[2];            /* fds this job is attached to (struct spl_fdreg), -1 when none */
	uint64_t last_ms;      /* when the idle timeout last restarted (or the job started) */
	uint64_t progress;     /* bytes moved since last_ms */
	int32_t next_free;     /* free list link */
	uint8_t active;        /* a job occupies this slot */
	uint8_t ready;         /* the slot is on the ready list (budget used up) */
	uint8_t hstarted;      /* HEAD: the head's first byte was seen */
	uint8_t prefetched;    /* SEND: the body bytes to send behind the head were looked for */
	uint8_t hindexed;      /* HEAD: the head in hbuf is tokenized already (spl_relay) */
	uint32_t phase;        /* enum spl_phase the job is in */
	uint32_t out_off;      /* SEND: bytes of the out buffer written */
	uint32_t out_total;    /* SEND: out_len plus body bytes read in behind the head (COPY) */
	uint32_t pre;          /* SEND: of out_total, body bytes */
	uint32_t copy_have;    /* BODY with COPY: bytes in the out buffer */
	uint32_t copy_off;     /* BODY with COPY: of which written */
	int32_t hbuf;          /* HEAD: the head buffer taken, -1 = none */
	uint32_t hgot;         /* HEAD: head bytes read (consumed) */
	uint32_t hinfo;        /* HEAD: struct spl_done.head_info */
	uint32_t hmore;        /* HEAD: struct spl_done.head_more */
	uint64_t phase_ms;     /* HEAD: when it started waiting, then when its first byte came */
	int32_t rbuf;          /* RELAY: the head buffer of the response head being relayed, -1 = none */
	uint32_t rlen;         /* RELAY: its bytes */
	uint32_t relayed;      /* RELAY: bytes of the response head as forwarded (0: not relayed) */
	uint32_t rflags;       /* RELAY: enum spl_relay_flag of the completion */
	uint64_t rhead_ms;     /* RELAY: when the response head was in */
	uint64_t rbody;        /* RELAY, planned: the response body's bytes (spl_relay_plan) */
	uint32_t rextra;       /* RELAY, planned: of them, bytes read with the head (behind it in hbuf) */
	/* the express lane (SPL_RELAY_EXPRESS, see engine.h) */
	uint8_t xarmed;        /* the client's next heads may take the express lane */
	uint8_t xbusy;         /* an express request is under way: the slot runs its RELAY job */
	uint32_t xbe;          /* the backend whose credits it takes */
	uint32_t xaddr;        /* the client's IPv4 address (X-Forwarded-For, the rules' src) */
	uint32_t xflags;       /* the arming job's relay flags (SPL_RELAY_XFF) */
	uint32_t xmaxhdr;      /* most fields an express request may have */
	uint32_t x_first_ms, x_ms, x_limit, x_srv_ms; /* the server side's head timeouts and
	                        * limit, and its idle timeout, from the arming job */
	uint32_t xstatus;      /* the relayed response's status */
	uint32_t xreq;         /* the request head's bytes */
	uint64_t xbody;        /* the request body's bytes (a Content-Length body sent whole) */
	uint64_t xnext;        /* the client's head job id */
	struct spl_xcredit xc; /* its credit: the connection of its next express request */
	uint8_t xhas;          /* xc holds one */
	uint8_t xwant;         /* its request waits for the credit it asked for (SPL_X_WANT) */
	uint8_t xclose;        /* the express request's response closes the client connection */
	uint8_t xconnecting;   /* SEND on a credit's new connection: timed by its connect_ms */
	int32_t qbuf;          /* the request head's buffer, kept until its response is relayed */
	uint32_t qlen;         /* its bytes */
	int32_t xout;          /* a head buffer serving as the out buffer of the express request */
	uint8_t planned;       /* RELAY: 0 = not looked at, 1 = relayed (spl_relay_plan took the
	                        * pipe and the client socket), 2 = declined: the caller gets the head */
};

/* The request rules of one express backend (spl_xrules; engine.h). */
struct spl_xrules {
	uint32_t len;
	uint8_t prog[SPL_XRULES_MAX];
};

struct spl_engine {
	struct spl_cfg cfg;
	int ep;                       /* the engine's epoll */
	int wake_fd;                  /* Python -> engine: "messages queued" */
	int done_fd;                  /* engine -> Python: "completions ready" */
	pthread_t thread;             /* thread mode only */
	int inline_mode;              /* SPL_ENGINE_INLINE: no thread, the caller turns it */
	uint64_t budget;              /* bytes a job's direction moves per turn (SPL_*BUDGET) */
	uint64_t turn_moved;          /* bytes moved in this turn so far */
	atomic_int stop;
	/* submit ring: Python produces, engine consumes */
	struct spl_msg *sq;
	uint32_t sq_mask;
	atomic_uint sq_head;          /* next to consume (engine) */
	atomic_uint sq_tail;          /* next to produce (Python) */
	/* completion ring: engine produces, Python consumes */
	struct spl_done *cq;
	uint32_t cq_mask;
	atomic_uint cq_head;          /* next to consume (Python) */
	atomic_uint cq_tail;          /* next to produce (engine) */
	atomic_uint inflight;         /* submitted and not reaped */
	atomic_int sleeping;          /* the engine waits in epoll_wait with nothing queued */
	int pushed;                   /* Python: messages queued since the last spl_wake() */
	/* engine-thread state */
	struct spl_slot *slots;       /* cfg.maxjobs slots */
	char *lines;                  /* cfg.maxjobs line buffers of SPL_CHUNK_MAX_LINE bytes */
	int32_t free_head;
	uint32_t *ready;              /* slots to run again without an event (budget used up) */
	uint32_t nready;
	uint32_t active;              /* jobs running */
	struct spl_wheel wheel;       /* the jobs' timeouts (wheel.h), one timer per slot at most */
	uint64_t now_ms;
	int posted;                   /* completions posted since done_fd was last written */
	struct spl_pool *pool;
	/* buffers: out buffers are the caller's (Python picks one per job), head buffers the
	 * engine's (taken at a head's first byte, lent to Python with the completion) */
	char *obufs;                  /* cfg.nbufs x cfg.bufsize */
	char *hbufs;                  /* cfg.nbufs x hbuf_size */
	size_t hbuf_size;
	int32_t *hfree;               /* free head buffers, a stack (engine thread) */
	uint32_t nhfree;
	uint32_t hlow;                /* the stack's lowest depth since the last trim: the entries
	                               * below it were not taken for a whole period (spl_trim_hbufs) */
	uint32_t htrim;               /* of the stack's bottom entries, how many were given back */
	uint64_t trim_ms;             /* when spl_trim_hbufs last ran */
	uint32_t *rel;                /* release ring: Python produces, engine consumes */
	uint32_t rel_mask;
	atomic_uint rel_head;
	atomic_uint rel_tail;
	struct spl_tlink *tlinks;     /* the wheel's links, one per slot */
	uint32_t xheld;               /* head buffers express requests hold beyond one a job
	                               * (at most nbufs - maxjobs: the jobs never lack one) */
	struct spl_xrules *xrules;    /* SPL_X_BACKENDS request rules (spl_xrules), by express backend */
	struct spl_fdreg *fds;        /* by fd number, nfds entries */
	struct spl_tls_ctx *tls_ctxs[SPL_TLS_CTXS]; /* spl_engine_tls_ctx(), set before use */
	uint32_t ntls;                /* TLS sessions alive (struct spl_fdreg tls) */
	uint32_t nfds;
	/* counters published for other threads */
	atomic_ullong st_spliced, st_calls, st_eagain, st_done, st_nopipe, st_timeouts, st_killed;
	atomic_uint st_active, st_pipes_used, st_pipes_free, st_pipe_size;
};

static uint64_t spl_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static uint32_t spl_pow2(uint32_t n)
{
	uint32_t p = 1;

	while (p < n)
		p <<= 1;
	return p;
}

/* Writes 1 to an eventfd. EAGAIN means the counter is already non-zero: the reader will
 * wake anyway, so it is not an error. */
static void spl_signal(int fd)
{
	uint64_t one = 1;

	while (write(fd, &one, sizeof(one)) == -1 && errno == EINTR)
		;
}

/* Clears an eventfd (non-blocking): EAGAIN means it was already clear. */
static void spl_drain(int fd)
{
	uint64_t v;

	while (read(fd, &v, sizeof(v)) == -1 && errno == EINTR)
		;
}

/* ---- engine thread: jobs ------------------------------------------------------------ */

/* Takes back onto the free stack the head buffers Python released (spl_hbuf_release). */
static void spl_hbuf_reclaim(struct spl_engine *e)
{
	uint32_t head = atomic_load_explicit(&e->rel_head, memory_order_relaxed);
	uint32_t tail = atomic_load_explicit(&e->rel_tail, memory_order_acquire);

	while (head != tail) {
		e->hfree[e->nhfree++] = (int32_t)e->rel[head & e->rel_mask];
		head++;
	}
	atomic_store_explicit(&e->rel_head, head, memory_order_release);
}

/* Takes a free head buffer, first taking back those Python released. Returns its index, or
 * -1 when none is free (cannot happen while nbufs >= maxjobs: a job holds at most one). */
static int32_t spl_hbuf_take(struct spl_engine *e)
{
	spl_hbuf_reclaim(e);
	if (e->nhfree == 0)
		return -1;
	if (--e->nhfree < e->hlow)
		e->hlow = e->nhfree;
	return e->hfree[e->nhfree];
}

/* Gives the whole pages of [p, p + len) back to the kernel: they read as zeros when next
 * touched (MADV_DONTNEED on private anonymous memory). An error only leaves them resident. */
static void spl_pages_drop(char *p, size_t len)
{
	uintptr_t lo = ((uintptr_t)p + SPL_PAGE - 1) & ~(uintptr_t)(SPL_PAGE - 1);
	uintptr_t hi = ((uintptr_t)p + len) & ~(uintptr_t)(SPL_PAGE - 1);

	if (hi > lo)
		(void)madvise((void *)lo, hi - lo, MADV_DONTNEED);
}

/* Every SPL_TRIM_MS, the head buffers that stayed at the bottom of the free stack for the
 * whole period (none of them was taken: a burst of requests is over) give their pages back,
 * so that memory touched by a burst does not stay charged to the idle connections that
 * follow it. The stack hands out its top first, so the buffers in use keep their pages. */
static void spl_trim_hbufs(struct spl_engine *e)
{
	uint32_t i;

	spl_hbuf_reclaim(e); /* (on top: the ones released last are the warmest) */
	if (e->htrim > e->hlow)
		e->htrim = e->hlow; /* taken since their trim: touched again */
	for (i = e->htrim; i < e->hlow; i++)
		spl_pages_drop(e->hbufs + (size_t)e->hfree[i] * e->hbuf_size, e->hbuf_size);
	e->htrim = e->hlow;
	e->hlow = e->nhfree;
	e->trim_ms = e->now_ms;
}

static char *spl_hdata(const struct spl_engine *e, int32_t hbuf);

/* The out buffer of slot s: its job's, or an express request's head buffer. */
static char *spl_obuf_of(struct spl_engine *e, const struct spl_slot *s)
{
	if (s->xout >= 0)
		return spl_hdata(e, s->xout);
	return e->obufs + (size_t)s->job.out_buf * e->cfg.bufsize;
}

/* Does the job have a body phase? (max_bytes 0 = no body; UINT64_MAX = until EOF) */
static int spl_has_body(const struct spl_job *job)
{
	return (job->flags & SPL_JOB_CHUNKED) || job->max_bytes > 0;
}

/* The earliest time (ms) at which the job in slot s could time out as it stands, UINT64_MAX
 * when it cannot: in the HEAD phase the head's limit from the phase's start (the first
 * byte's wait, then the whole head's); before it, the shorter idle timeout from the last
 * progress (a tunnel: the client side's), which is the real one or earlier, since which side
 * it waits on may change without the timer moving. */
static uint64_t spl_due_ms(const struct spl_slot *s)
{
	const struct spl_job *j = &s->job;
	uint32_t m;

	if (s->phase == SPL_PHASE_HEAD) {
		m = s->hstarted ? j->head_ms : j->head_first_ms;
		return m ? s->phase_ms + m : UINT64_MAX;
	}
	m = j->src_idle_ms;
	if (j->flags & SPL_JOB_DISCARD) { /* dst_idle_ms: the whole discard's limit */
		uint64_t idle = m ? s->last_ms + m : UINT64_MAX;
		uint64_t whole = j->dst_idle_ms ? s->phase_ms + j->dst_idle_ms : UINT64_MAX;

		return idle < whole ? idle : whole;
	}
	if (!(j->flags & SPL_JOB_TUNNEL) && j->dst_idle_ms && (m == 0 || j->dst_idle_ms < m))
		m = j->dst_idle_ms;
	return m ? s->last_ms + m : UINT64_MAX;
}

/* Puts slot s's timer where its deadline is now (spl_due_ms), or takes it out of the wheel
 * when the job cannot time out. Called when a job starts and whenever its deadline may have
 * come earlier (a new phase, a head's first byte); progress alone never needs it. */
static void spl_timer_set(struct spl_engine *e, struct spl_slot *s)
{
	struct spl_wheel *w = &e->wheel;
	int32_t i = (int32_t)(s - e->slots);
	uint64_t due = spl_due_ms(s);

	if (due == UINT64_MAX) {
		spl_wheel_del(w, i);
		return;
	}
	due = (due + SPL_TICK_MS - 1) / SPL_TICK_MS; /* the first tick at or after it */
	if (due <= w->tick)
		due = w->tick + 1; /* that tick's bucket was checked already: the next one */
	if (w->link[i].on) {
		if (w->link[i].due == due)
			return;
		spl_wheel_del(w, i);
	} else if (w->count == 0) {
		w->tick = e->now_ms / SPL_TICK_MS; /* the wheel starts turning from now */
		if (due <= w->tick)
			due = w->tick + 1;
	}
	spl_wheel_add(w, i, due);
}

static void spl_publish(struct spl_engine *e)
{
	const struct spl_pool *p = e->pool;

	atomic_store_explicit(&e->st_spliced, p->spliced_bytes, memory_order_relaxed);
	atomic_store_explicit(&e->st_calls, p->splice_calls, memory_order_relaxed);
	atomic_store_explicit(&e->st_eagain, p->eagain_waits, memory_order_relaxed);
	atomic_store_explicit(&e->st_killed, p->killed, memory_order_relaxed);
	atomic_store_explicit(&e->st_active, e->active, memory_order_relaxed);
	atomic_store_explicit(&e->st_pipes_used, p->used, memory_order_relaxed);
	atomic_store_explicit(&e->st_pipes_free, p->created - p->used, memory_order_relaxed);
	atomic_store_explicit(&e->st_pipe_size, p->last_size, memory_order_relaxed);
}

/* Posts a completion. The ring cannot be full: it has room for maxjobs entries and at most
 * maxjobs jobs are in flight (spl_submit refuses more until completions are reaped). */
static void spl_post(struct spl_engine *e, const struct spl_done *d)
{
	uint32_t tail = atomic_load_explicit(&e->cq_tail, memory_order_relaxed);

	e->cq[tail & e->cq_mask] = *d;
	atomic_store_explicit(&e->cq_tail, tail + 1, memory_order_release);
	atomic_fetch_add_explicit(&e->st_done, 1, memory_order_relaxed);
	e->posted = 1;
}

/* Readiness cache (what haproxy's fd cache does for speculative I/O): per registered socket,
 * the engine remembers having found it empty, so that a job going on with it (the response
 * head after the request was sent, the next request head after a response) waits for the
 * read event instead of trying a read certain to end in EAGAIN. The epoll is edge-triggered,
 * so every arrival after the socket was found empty brings an event, and spl_engine_main()
 * clears `quiet` on each read event: `quiet` is never set while a byte or an end of stream
 * waits unseen. A socket is found empty by an EAGAIN, by a short read (fewer bytes than
 * asked for), or by consuming exactly the bytes a short peek saw (`known`/`avail`); a read
 * not recorded here (a splice) only makes `avail` too large, which never sets `quiet`. A
 * short read stops before a FIN without reporting it, so once an event has reported an end
 * of stream (EPOLLRDHUP, EPOLLHUP, EPOLLERR: final) the socket is never quiet again; a FIN
 * coming after the read that found the socket empty brings an event of its own. */
static int spl_is_quiet(const struct spl_engine *e, int fd)
{
	return atomic_load_explicit(&e->fds[fd].quiet, memory_order_relaxed);
}

static void spl_set_quiet(struct spl_fdreg *r, int quiet)
{
	r->known = 0;
	atomic_store_explicit(&r->quiet, (unsigned char)(quiet && !r->ended), memory_order_relaxed);
}

/* Records in the readiness cache what a read of `asked` bytes from `fd` returned: `got`
 * bytes, 0 for an end of stream, -1 with errno set (left unchanged here); `peek` when the
 * bytes stayed in the socket (MSG_PEEK). */
static void spl_saw_read(struct spl_engine *e, int fd, size_t asked, ssize_t got, int peek)
{
	struct spl_fdreg *r = &e->fds[fd];

	if (r->tls != NULL)
		return; /* what the session holds is not the socket's: never found empty */
	if (got == -1) {
		if (errno == EAGAIN)
			spl_set_quiet(r, 1);
		return;
	}
	if (got == 0) { /* an end of stream stays readable: never quiet */
		spl_set_quiet(r, 0);
		return;
	}
	if (peek) {
		r->known = (size_t)got < asked && got <= (ssize_t)UINT32_MAX;
		r->avail = (uint32_t)got;
		return;
	}
	if ((size_t)got < asked) {
		spl_set_quiet(r, 1);
	} else if (r->known) {
		if ((size_t)got < r->avail)
			r->avail -= (uint32_t)got;
		else
			spl_set_quiet(r, (size_t)got == r->avail);
	}
}

/* recv(2) and send(2) of the engine: through the socket's TLS session when it has one. */
static ssize_t spl_recv(struct spl_engine *e, int fd, void *buf, size_t len, int flags)
{
	struct spl_tls *t = e->fds[fd].tls;

	if (t != NULL)
		return spl_tls_recv(t, buf, len, flags & MSG_PEEK);
	if (e->fds[fd].tls_ended) {
		errno = ESHUTDOWN; /* the session's records are not a plain socket's bytes */
		return -1;
	}
	return recv(fd, buf, len, flags | MSG_DONTWAIT);
}

static ssize_t spl_send(struct spl_engine *e, int fd, const void *buf, size_t len)
{
	struct spl_tls *t = e->fds[fd].tls;

	if (t != NULL)
		return spl_tls_send(t, buf, len);
	if (e->fds[fd].tls_ended) {
		errno = ESHUTDOWN; /* no plaintext where the peer expects records */
		return -1;
	}
	return send(fd, buf, len, MSG_NOSIGNAL | MSG_DONTWAIT);
}

/* The TLS session of `fd` as named with generation `gen`, NULL when plain (or not yet seen). */
static struct spl_tls *spl_tls_of(const struct spl_engine *e, int fd, uint32_t gen)
{
	if (fd < 0 || (uint32_t)fd >= e->nfds || gen == 0 || e->fds[fd].gen != gen)
		return NULL;
	return e->fds[fd].tls;
}

/* Muting (what haproxy gets by polling a socket for reading only while it wants to read):
 * a direction whose pipe waits for room at its destination reads nothing from its source
 * until then, yet with EPOLLIN registered every segment arriving at the source would wake
 * the engine for a run that only finds the destination still full (an upload whose server
 * reads slower than the client sends woke the engine ten times as often as haproxy). So
 * while it waits for its destination, the source's only job takes EPOLLIN (and EPOLLRDHUP)
 * out of the registration, and puts them back as soon as it reads again, moves on or ends.
 * EPOLL_CTL_MOD re-reads the socket's state, so bytes or an end of stream that arrived
 * while muted bring an event then: nothing is lost for the edge-triggered epoll and the
 * readiness cache. Returns 0 or -errno (the registration is unchanged then). */
static int spl_unmute(struct spl_engine *e, int fd)
{
	struct epoll_event ev;

	if (!e->fds[fd].muted)
		return 0;
	memset(&ev, 0, sizeof(ev));
	ev.events = SPL_EV_ALL;
	ev.data.u64 = (uint64_t)fd;
	if (epoll_ctl(e->ep, EPOLL_CTL_MOD, fd, &ev) == -1)
		return -errno;
	e->fds[fd].muted = 0;
	return 0;
}

/* Mutes `fd`, the source of a direction of slot s that waits for room at its destination,
 * when s is its only job (see spl_unmute). A failure leaves it unmuted: merely wasteful. */
static void spl_mute(struct spl_engine *e, const struct spl_slot *s, int fd)
{
	struct spl_fdreg *r = &e->fds[fd];
	uint32_t user = (uint32_t)(s - e->slots) + 1;
	struct epoll_event ev;
	int k;

	if (r->muted || (s->reg[0] != fd && s->reg[1] != fd))
		return;
	for (k = 0; k < SPL_FD_USERS; k++)
		if (r->users[k] != 0 && r->users[k] != user)
			return; /* another job may wait for its bytes */
	memset(&ev, 0, sizeof(ev));
	ev.events = SPL_EV_MUTED;
	ev.data.u64 = (uint64_t)fd;
	if (epoll_ctl(e->ep, EPOLL_CTL_MOD, fd, &ev) == 0)
		r->muted = 1;
}

/* Attaches the job in slot s to `fd` (role 0 src, 1 dst) named with generation `gen`,
 * registering the fd in the epoll (edge-triggered, both ways) unless this very socket is
 * registered already. Returns 0 or -errno (-EBADF past the fd table, -EBUSY when too many
 * jobs use the fd). */
static int spl_attach(struct spl_engine *e, struct spl_slot *s, int role, int fd, uint32_t gen)
{
	struct spl_fdreg *r;
	struct epoll_event ev;
	int k;

	if (fd < 0 || (uint32_t)fd >= e->nfds)
		return -EBADF;
	r = &e->fds[fd];
	for (k = 0; k < SPL_FD_USERS && r->users[k] != 0; k++)
		;
	if (k == SPL_FD_USERS)
		return -EBUSY;
	if (r->gen == 0 || r->gen != gen) {
		/* a new registration: nothing is known of what the socket holds, and a session
		 * left by the socket that had this number before is void (that socket is gone) */
		if (r->tls != NULL) {
			spl_tls_free(r->tls, 0);
			r->tls = NULL;
			e->ntls--;
		}
		r->tls_ended = 0;
		r->known = 0;
		r->ended = 0;
		atomic_store_explicit(&r->quiet, 0, memory_order_relaxed);
		memset(&ev, 0, sizeof(ev));
		ev.events = SPL_EV_ALL;
		ev.data.u64 = (uint64_t)fd;
		r->muted = 0;
		/* EEXIST: this socket is registered already (by another job running on it, or by
		 * the caller's earlier generation of it): it stays so */
		if (epoll_ctl(e->ep, EPOLL_CTL_ADD, fd, &ev) == -1 && errno != EEXIST)
			return -errno;
		r->gen = gen;
	} else if (r->muted) {
		int rc = spl_unmute(e, fd); /* the new job may wait for bytes to read */

		if (rc != 0)
			return rc;
	}
	r->users[k] = (uint32_t)(s - e->slots) + 1;
	s->reg[role] = fd;
	return 0;
}

/* Detaches slot s from `fd`; a registration without a generation ends with its last job. */
static void spl_detach(struct spl_engine *e, struct spl_slot *s, int fd)
{
	struct spl_fdreg *r = &e->fds[fd];
	uint32_t user = (uint32_t)(s - e->slots) + 1;
	int k, left = 0;

	for (k = 0; k < SPL_FD_USERS; k++) {
		if (r->users[k] == user)
			r->users[k] = 0;
		else if (r->users[k] != 0)
			left = 1;
	}
	if (r->gen != 0 && !left && spl_unmute(e, fd) != 0)
		r->gen = 0; /* cannot be put back as it was: registered anew by its next job */
	/* errors ignored: ENOENT/EBADF only mean it is no longer registered (closed) */
	if (r->gen == 0 && !left) {
		epoll_ctl(e->ep, EPOLL_CTL_DEL, fd, NULL);
		if (r->tls != NULL) { /* (a session needs a generation: one ends with its job) */
			spl_tls_free(r->tls, 0);
			r->tls = NULL;
			e->ntls--;
		}
		r->muted = 0;
		spl_set_quiet(r, 0); /* no events any more: nothing can be known */
	}
}

/* The index of a head buffer: SPL_H1_INDEX_WORDS words at its start, right before the
 * head's bytes (spl_hdata), so that a short head and the used part of its index share a
 * page: a buffer lent to a head touches one page, not one at each end. */
static uint32_t *spl_hidx(const struct spl_engine *e, int32_t hbuf)
{
	return (uint32_t *)(e->hbufs + (size_t)hbuf * e->hbuf_size);
}

/* The bytes of a head buffer (head_limit + SPL_HBUF_PAD of them), after its index. */
static char *spl_hdata(const struct spl_engine *e, int32_t hbuf)
{
	return e->hbufs + (size_t)hbuf * e->hbuf_size + SPL_HIDX_BYTES;
}

/* Tokenizes the head that slot s read, whole (how DONE), into its buffer's index for
 * Python (spl_engine_hidx); a head cut short is marked SPL_H1_UNSURE. */
static void spl_index_head(struct spl_engine *e, const struct spl_slot *s, uint32_t how)
{
	uint32_t *idx = spl_hidx(e, s->hbuf);

	if (how == SPL_END_DONE)
		spl_h1_parse(spl_hdata(e, s->hbuf), s->hgot, idx);
	else
		idx[0] = SPL_H1_UNSURE;
}

/* Lends the head slot s read (hbuf, tokenized now unless it was) to the completion d, or
 * gives the buffer back when it holds no byte; the slot holds no head buffer after it. */
static void spl_lend_head(struct spl_engine *e, struct spl_slot *s, struct spl_done *d, uint32_t how)
{
	if (s->hgot > 0) {
		d->head_buf = s->hbuf;
		d->head_len = s->hgot;
		if (!s->hindexed)
			spl_index_head(e, s, how);
	} else {
		e->hfree[e->nhfree++] = s->hbuf;
	}
	s->hbuf = -1;
}

/* Lends the relayed response head (indexed when the relay began) to the completion d. */
static void spl_relay_done(struct spl_engine *e, struct spl_slot *s, struct spl_done *d);
static void spl_xdone(struct spl_engine *e, struct spl_slot *s, struct spl_done *d);

static void spl_relay_done(struct spl_engine *e, struct spl_slot *s, struct spl_done *d)
{
	uint64_t ms = e->now_ms - s->rhead_ms;

	d->head_buf = s->rbuf;
	d->head_len = s->rlen;
	d->relayed = s->relayed;
	d->relay_flags = s->rflags;
	d->relay_ms = ms > UINT32_MAX ? UINT32_MAX : (uint32_t)ms;
	s->rbuf = -1;
}

static void spl_xfinish(struct spl_engine *e, struct spl_slot *s, uint32_t how, int32_t res, uint32_t side);
static void spl_xpost(struct spl_engine *e, uint64_t id, uint32_t kind);

/* Ends the job in slot s: detaches its fds, returns its pipes, posts its completion. */
static void spl_finish(struct spl_engine *e, struct spl_slot *s, uint32_t how, int32_t res, uint32_t side)
{
	struct spl_done d;
	uint32_t i;

	for (i = 0; i < 2; i++) {
		if (s->reg[i] != -1)
			spl_detach(e, s, s->reg[i]);
		s->reg[i] = -1;
		if (s->dir[i].pipe != NULL)
			spl_pipe_put(e->pool, s->dir[i].pipe);
		s->dir[i].pipe = NULL;
	}
	if (s->ready) {
		for (i = 0; i < e->nready; i++) {
			if (&e->slots[e->ready[i]] == s) {
				e->ready[i] = e->ready[--e->nready];
				break;
			}
		}
		s->ready = 0;
	}
	if (s->xbusy) {
		spl_xfinish(e, s, how, res, side);
		goto freed;
	}
	if (s->xhas) { /* first: its connection is back in its pool before the head is handled */
		spl_xpost(e, s->xc.id, SPL_X_UNUSED);
		s->xhas = 0;
	}
	memset(&d, 0, sizeof(d));
	d.id = s->job.id;
	d.xkind = s->xclose ? SPL_X_CLOSED : SPL_X_NONE; /* (spl_xclosed) */
	d.bytes_fwd = s->dir[0].moved;
	d.bytes_rev = s->dir[1].moved;
	d.res = res;
	d.how = how;
	d.side = side;
	d.phase = how == SPL_END_DONE ? SPL_PHASE_END : s->phase;
	d.head_buf = -1;
	if (s->hbuf != -1) /* lent to Python with the completion */
		spl_lend_head(e, s, &d, how);
	else if (s->rbuf != -1) /* a relay that failed: the response head goes with it */
		spl_relay_done(e, s, &d);
	d.head_info = s->hinfo;
	d.head_more = s->hmore;
	spl_post(e, &d);
	if (s->job.flags & (SPL_JOB_THEN_HEAD | SPL_JOB_RELAY)) { /* the head job that was to follow never starts */
		memset(&d, 0, sizeof(d));
		d.id = s->job.next_id;
		d.res = -ECANCELED;
		d.how = SPL_END_CANCELLED;
		d.phase = SPL_PHASE_SEND;
		d.head_buf = -1;
		spl_post(e, &d);
	}
freed:
	if (how == SPL_END_TIMEOUT)
		atomic_fetch_add_explicit(&e->st_timeouts, 1, memory_order_relaxed);
	spl_wheel_del(&e->wheel, (int32_t)(s - e->slots));
	s->active = 0;
	e->active--;
	s->next_free = e->free_head;
	e->free_head = (int32_t)(s - e->slots);
}

static void spl_make_ready(struct spl_engine *e, struct spl_slot *s)
{
	if (!s->ready) {
		s->ready = 1;
		e->ready[e->nready++] = (uint32_t)(s - e->slots);
	}
}

/* Counts a pump's bytes toward the idle timeout: a body's timeout restarts only once
 * SPL_MIN_PROGRESS bytes moved since its last start, so a peer trickling a byte now and then
 * cannot hold the job forever; a tunnel (interactive: small messages are normal) restarts on
 * any byte. */
static void spl_progress(struct spl_engine *e, struct spl_slot *s, const struct spl_move *mv, int tunnel)
{
	e->turn_moved += mv->bytes_out;
	s->progress += mv->bytes_in + mv->bytes_out;
	if (s->progress >= (tunnel ? 1u : SPL_MIN_PROGRESS)) {
		s->last_ms = e->now_ms;
		s->progress = 0;
	}
}

static int spl_run_splice(struct spl_engine *e, struct spl_slot *s);

/* spl_progress() for `n` bytes moved outside a pump (heads, copied bodies). */
static void spl_progress_n(struct spl_engine *e, struct spl_slot *s, uint64_t n)
{
	e->turn_moved += n;
	s->progress += n;
	if (s->progress >= SPL_MIN_PROGRESS) {
		s->last_ms = e->now_ms;
		s->progress = 0;
	}
}

/* Before a read of dir's src in a loop that moved `turn` bytes so far: 1 when it may read,
 * 0 when the job leaves the rest for its next turn (its budget is used: the ready list) or
 * waits for a read event (the socket was found empty, no event since). */
static int spl_may_read(struct spl_engine *e, struct spl_slot *s, struct spl_dir *dir, uint64_t turn)
{
	if (turn >= e->budget) {
		spl_make_ready(e, s);
		return 0;
	}
	if (spl_is_quiet(e, dir->src)) {
		dir->wait = SPL_WAIT_SRC;
		return 0;
	}
	return 1;
}

/* After a read of dir's src failed (-1, errno set): 1 when it is to be tried again (EINTR:
 * nothing was read), 0 when the direction now waits for src (EAGAIN) or the job was
 * finished (another error, on `side`). */
static int spl_read_again(struct spl_engine *e, struct spl_slot *s, struct spl_dir *dir, uint32_t side)
{
	if (errno == EINTR)
		return 1;
	if (errno == EAGAIN) {
		dir->wait = SPL_WAIT_SRC;
		return 0;
	}
	spl_finish(e, s, SPL_END_ERROR, -errno, side);
	return 0;
}

/* Runs a chunked body (SPL_JOB_CHUNKED). Each framing line (size line, the CRLF after the
 * data, a trailer line) is read out of src into the slot's line buffer: a peek finds its end
 * so nothing past it is taken, and a partial line is taken too, because bytes left waiting
 * in the socket can hold its whole receive window and stall the sender. A whole line is
 * checked by spl_chunk_line() and written into the (then empty) pipe; the chunk data after a
 * size line is spliced. The pipe forwards everything in order, so the body goes out
 * verbatim, never read past its end (a pipelined request or a reused server connection stays
 * in the socket); only the framing lines pass through user space. Returns 1 when the body
 * is through (the pipe empty), 0 when it waits, used its turn or ended the job. */
static int spl_run_chunked(struct spl_engine *e, struct spl_slot *s)
{
	struct spl_dir *dir = &s->dir[0];
	struct spl_chunk *c = &s->chunk;
	char *line = e->lines + (size_t)(s - e->slots) * SPL_CHUNK_MAX_LINE;
	const char *lf;
	ssize_t n, got;
	size_t take;
	int turns;

	for (turns = 0; turns < SPL_CHUNK_TURNS; turns++) {
		/* also when only the pipe holds bytes: they must reach dst before the next line;
		 * a segment is moved as any counted body is (it is through, or the job waits, used
		 * its budget or ended) */
		if ((dir->left > 0 || dir->pipe->data > 0) && !spl_run_splice(e, s))
			return 0;
		if (c->state == SPL_CHUNK_END)
			return 1;
		if (c->state == SPL_CHUNK_DATA) { /* its size line went out: now the chunk data */
			dir->left = c->data;
			c->data = 0;
			c->state = SPL_CHUNK_CRLF;
			continue;
		}
		/* a framing line: find its end without taking anything past it */
		n = recv(dir->src, line + s->line_len, SPL_CHUNK_MAX_LINE - s->line_len, MSG_PEEK);
		if (n == -1) {
			if (spl_read_again(e, s, dir, SPL_SIDE_SRC))
				continue;
			return 0;
		}
		if (n == 0) {
			spl_finish(e, s, SPL_END_PEER_CLOSED, 0, SPL_SIDE_SRC);
			return 0;
		}
		lf = memchr(line + s->line_len, '\n', (size_t)n);
		take = lf != NULL ? (size_t)(lf - (line + s->line_len)) + 1 : (size_t)n;
		do
			got = recv(dir->src, line + s->line_len, take, 0);
		while (got == -1 && errno == EINTR);
		if (got <= 0) { /* the peek saw these bytes: only a failing socket loses them */
			spl_finish(e, s, SPL_END_ERROR, got == 0 ? -EPIPE : -errno, SPL_SIDE_SRC);
			return 0;
		}
		s->line_len += (uint32_t)got;
		s->progress += (uint64_t)got;
		if ((size_t)got < take || lf == NULL) { /* a partial line: wait for its end */
			if (s->line_len >= SPL_CHUNK_MAX_LINE) {
				spl_finish(e, s, SPL_END_BAD_FRAMING, -EPROTO, SPL_SIDE_SRC); /* too long */
				return 0;
			}
			continue; /* peek again: EAGAIN (edge-triggered: more bytes wake us) or more */
		}
		if (spl_chunk_line(c, line, s->line_len) != 0) {
			spl_finish(e, s, SPL_END_BAD_FRAMING, -EPROTO, SPL_SIDE_SRC);
			return 0;
		}
		/* into the empty pipe (a pipe holds far more than a line: the write is whole) */
		do
			got = write(dir->pipe->prod, line, s->line_len);
		while (got == -1 && errno == EINTR);
		if (got != (ssize_t)s->line_len) {
			spl_finish(e, s, SPL_END_ERROR, got == -1 ? -errno : -EIO, SPL_SIDE_DST);
			return 0;
		}
		dir->pipe->data += s->line_len;
		s->line_len = 0;
	}
	spl_make_ready(e, s); /* many small segments in a row: let other jobs run */
	return 0;
}

/* After a pump of `dir`: its source is muted while the pipe waits for room at the
 * destination, listened to again otherwise (spl_unmute). Returns 0, or -1 when the source
 * could not be listened to again (the job is finished: it would never hear of its bytes). */
static int spl_listen(struct spl_engine *e, struct spl_slot *s, struct spl_dir *dir,
		      const struct spl_move *mv)
{
	int rc;

	if (mv->how == SPL_STOP_DST_AGAIN) {
		spl_mute(e, s, dir->src);
		return 0;
	}
	rc = spl_unmute(e, dir->src);
	if (rc == 0)
		return 0;
	spl_finish(e, s, SPL_END_ERROR, rc, dir == &s->dir[0] ? SPL_SIDE_SRC : SPL_SIDE_DST);
	return -1;
}

/* Ends the writing half of `fd` after its last byte: a FIN, or a TLS session's close_notify
 * (after which nothing more can be written to it; the reading half stays). */
static void spl_shut_wr(struct spl_engine *e, int fd)
{
	struct spl_tls *t = e->fds[fd].tls;

	if (t != NULL)
		spl_tls_notify(t);
	else
		shutdown(fd, SHUT_WR); /* ENOTCONN only means the peer is fully gone */
}

/* One direction of a copied tunnel (SPL_JOB_TUNNEL with SPL_JOB_COPY: a TLS side, or no pipe):
 * recv into its half of the out buffer, send it on, until it would block, ends or used its
 * share of the budget. Returns 0, or -1 when it finished the job (an error). */
static int spl_tunnel_copy(struct spl_engine *e, struct spl_slot *s, int d)
{
	struct spl_dir *dir = &s->dir[d];
	uint32_t cap = e->cfg.bufsize / 2;
	char *buf = spl_obuf_of(e, s) + (size_t)d * cap;
	uint64_t turn = 0;
	ssize_t n;

	for (;;) {
		while (dir->off < dir->have) {
			n = spl_send(e, dir->dst, buf + dir->off, dir->have - dir->off);
			if (n == -1 && errno == EINTR)
				continue;
			if (n == -1 && errno == EAGAIN) {
				dir->wait = SPL_WAIT_DST;
				return 0;
			}
			if (n == -1) {
				spl_finish(e, s, SPL_END_ERROR, -errno, d == 0 ? SPL_SIDE_DST : SPL_SIDE_SRC);
				return -1;
			}
			dir->off += (uint32_t)n;
			dir->moved += (uint64_t)n;
			turn += (uint64_t)n;
			spl_progress_n(e, s, (uint64_t)n);
		}
		dir->have = dir->off = 0;
		if (!spl_may_read(e, s, dir, turn))
			return 0;
		n = spl_recv(e, dir->src, buf, cap, 0);
		spl_saw_read(e, dir->src, cap, n, 0);
		if (n > 0) {
			dir->have = (uint32_t)n;
			continue;
		}
		if (n == 0) { /* the end of this way: passed on once all its bytes went */
			spl_shut_wr(e, dir->dst);
			dir->done = 1;
			return 0;
		}
		if (spl_read_again(e, s, dir, d == 0 ? SPL_SIDE_SRC : SPL_SIDE_DST))
			continue;
		return s->active ? 0 : -1; /* waiting, or finished by the error */
	}
}

/* Runs a tunnel: both directions until each would block, ends or uses its budget; finishes
 * the job once both reached EOF. */
static void spl_run_tunnel(struct spl_engine *e, struct spl_slot *s)
{
	struct spl_move mv;
	int d;

	if (s->job.flags & SPL_JOB_COPY) {
		for (d = 0; d < 2; d++)
			if (!s->dir[d].done && spl_tunnel_copy(e, s, d) != 0)
				return;
		if (s->dir[0].done && s->dir[1].done)
			spl_finish(e, s, SPL_END_DONE, 0, SPL_SIDE_SRC);
		return;
	}

	for (d = 0; d < 2; d++) {
		struct spl_dir *dir = &s->dir[d];
		uint32_t src_side = d == 0 ? SPL_SIDE_SRC : SPL_SIDE_DST;
		uint32_t dst_side = d == 0 ? SPL_SIDE_DST : SPL_SIDE_SRC;

		if (dir->done)
			continue;
		if (spl_pump(e->pool, dir->pipe, dir->src, dir->dst, UINT64_MAX, e->budget, &mv) != 0) {
			spl_finish(e, s, SPL_END_ERROR, -EINVAL, SPL_SIDE_SRC);
			return;
		}
		dir->moved += mv.bytes_out;
		spl_progress(e, s, &mv, 1);
		if (spl_listen(e, s, dir, &mv) != 0)
			return;
		dir->wait = SPL_WAIT_NONE;
		switch (mv.how) {
		case SPL_STOP_SRC_AGAIN:
			dir->wait = SPL_WAIT_SRC;
			break;
		case SPL_STOP_DST_AGAIN:
			dir->wait = SPL_WAIT_DST;
			break;
		case SPL_STOP_BUDGET:
			spl_make_ready(e, s);
			break;
		case SPL_STOP_EOF:
		case SPL_STOP_DONE:
			/* the pipe is empty here: forwarding the FIN loses nothing (haproxy #2505).
			 * ENOTCONN only means the peer is fully gone; the other way will see it. */
			shutdown(dir->dst, SHUT_WR);
			dir->done = 1;
			break;
		case SPL_STOP_SRC_ERROR:
			spl_finish(e, s, SPL_END_ERROR, -mv.err, src_side);
			return;
		default: /* SPL_STOP_DST_ERROR */
			spl_finish(e, s, SPL_END_ERROR, -mv.err, dst_side);
			return;
		}
	}
	if (s->dir[0].done && s->dir[1].done)
		spl_finish(e, s, SPL_END_DONE, 0, SPL_SIDE_SRC);
}

/* BODY phase through a pipe (counted or until EOF). Returns 1 when the body is through, 0
 * when it waits, used its budget or ended the job. */
static int spl_run_splice(struct spl_engine *e, struct spl_slot *s)
{
	struct spl_dir *dir = &s->dir[0];
	struct spl_move mv;

	if (spl_pump(e->pool, dir->pipe, dir->src, dir->dst, dir->left, e->budget, &mv) != 0) {
		spl_finish(e, s, SPL_END_ERROR, -EINVAL, SPL_SIDE_SRC);
		return 0;
	}
	dir->moved += mv.bytes_out;
	if (dir->left != UINT64_MAX)
		dir->left -= mv.bytes_in;
	spl_progress(e, s, &mv, 0);
	if (spl_listen(e, s, dir, &mv) != 0)
		return 0;
	dir->wait = SPL_WAIT_NONE;
	switch (mv.how) {
	case SPL_STOP_SRC_AGAIN:
		dir->wait = SPL_WAIT_SRC;
		return 0;
	case SPL_STOP_DST_AGAIN:
		dir->wait = SPL_WAIT_DST;
		return 0;
	case SPL_STOP_BUDGET:
		spl_make_ready(e, s);
		return 0;
	case SPL_STOP_DONE:
		return 1;
	case SPL_STOP_EOF:
		if (dir->left != UINT64_MAX) {
			spl_finish(e, s, SPL_END_PEER_CLOSED, 0, SPL_SIDE_SRC);
			return 0;
		}
		/* the pipe is empty here: forwarding the FIN loses nothing (haproxy #2505) */
		if (s->job.flags & SPL_JOB_SHUT_WR_ON_EOF)
			shutdown(dir->dst, SHUT_WR);
		return 1;
	case SPL_STOP_SRC_ERROR:
		spl_finish(e, s, SPL_END_ERROR, -mv.err, SPL_SIDE_SRC);
		return 0;
	default: /* SPL_STOP_DST_ERROR */
		spl_finish(e, s, SPL_END_ERROR, -mv.err, SPL_SIDE_DST);
		return 0;
	}
}

/* Writes buf[*off..len) to the direction's dst, advancing *off, counting progress (and, with
 * `body`, the bytes as moved body bytes). Returns 1 once all is written, 0 when dst is full
 * (the direction waits for room) or failed (the job is finished). */
static int spl_send_all(struct spl_engine *e, struct spl_slot *s, const char *buf, uint32_t *off, uint32_t len,
			int body)
{
	struct spl_dir *dir = &s->dir[0];
	ssize_t n;

	while (*off < len) {
		n = spl_send(e, dir->dst, buf + *off, len - *off);
		if (n == -1) {
			if (errno == EINTR)
				continue; /* interrupted before anything was written: again */
			if (errno == EAGAIN) { /* dst's send buffer is full: wait for room */
				dir->wait = SPL_WAIT_DST;
				return 0;
			}
			spl_finish(e, s, SPL_END_ERROR, -errno, SPL_SIDE_DST);
			return 0;
		}
		*off += (uint32_t)n;
		if (body)
			dir->moved += (uint64_t)n;
		spl_progress_n(e, s, (uint64_t)n);
	}
	return 1;
}

/* BODY phase with SPL_JOB_COPY: recv into the out buffer, send it on, never asking src for
 * more than the body has left. Returns as spl_run_splice(). */
static int spl_run_copy(struct spl_engine *e, struct spl_slot *s)
{
	struct spl_dir *dir = &s->dir[0];
	char *buf = spl_obuf_of(e, s);
	uint64_t turn = 0;
	ssize_t n;
	size_t want;

	for (;;) {
		if (s->copy_off < s->copy_have) {
			uint32_t before = s->copy_off;

			if (!spl_send_all(e, s, buf, &s->copy_off, s->copy_have, 1))
				return 0;
			turn += s->copy_off - before;
		}
		s->copy_have = s->copy_off = 0;
		if (dir->left == 0)
			return 1;
		if (!spl_may_read(e, s, dir, turn))
			return 0;
		want = dir->left < e->cfg.bufsize ? (size_t)dir->left : e->cfg.bufsize;
		n = spl_recv(e, dir->src, buf, want, 0);
		spl_saw_read(e, dir->src, want, n, 0);
		if (n == -1) {
			if (spl_read_again(e, s, dir, SPL_SIDE_SRC))
				continue;
			return 0;
		}
		if (n == 0) {
			if (dir->left != UINT64_MAX) {
				spl_finish(e, s, SPL_END_PEER_CLOSED, 0, SPL_SIDE_SRC);
				return 0;
			}
			if (s->job.flags & SPL_JOB_SHUT_WR_ON_EOF)
				shutdown(dir->dst, SHUT_WR);
			return 1;
		}
		s->copy_have = (uint32_t)n;
		if (dir->left != UINT64_MAX)
			dir->left -= (uint64_t)n;
	}
}

/* BODY phase of SPL_JOB_DISCARD: reads src and drops the bytes, never asking for more than
 * are left: in the kernel (recv MSG_TRUNC: nothing copied), or decrypted through the socket's
 * TLS session into the slot's line buffer. Returns as spl_run_splice(). */
static int spl_run_discard(struct spl_engine *e, struct spl_slot *s)
{
	struct spl_dir *dir = &s->dir[0];
	char *line = e->lines + (size_t)(s - e->slots) * SPL_CHUNK_MAX_LINE;
	int tls = e->fds[dir->src].tls != NULL;
	uint64_t turn = 0;
	size_t want;
	ssize_t n;

	for (;;) {
		if (dir->left == 0)
			return 1;
		if (!spl_may_read(e, s, dir, turn))
			return 0;
		want = tls ? SPL_CHUNK_MAX_LINE : (size_t)1 << 20;
		if (dir->left < (uint64_t)want)
			want = (size_t)dir->left;
		n = tls ? spl_recv(e, dir->src, line, want, 0) : recv(dir->src, line, want, MSG_TRUNC | MSG_DONTWAIT);
		spl_saw_read(e, dir->src, want, n, 0);
		if (n > 0) {
			if (dir->left != UINT64_MAX)
				dir->left -= (uint64_t)n;
			dir->moved += (uint64_t)n;
			turn += (uint64_t)n;
			spl_progress_n(e, s, (uint64_t)n);
			continue;
		}
		if (n == 0) {
			if (dir->left != UINT64_MAX) {
				spl_finish(e, s, SPL_END_PEER_CLOSED, 0, SPL_SIDE_SRC);
				return 0;
			}
			return 1;
		}
		if (spl_read_again(e, s, dir, SPL_SIDE_SRC))
			continue;
		return 0;
	}
}

/* SEND phase: writes the out buffer's head to dst. With SPL_JOB_COPY and a counted body that
 * fits behind the head, the body bytes already in src are read in first, so that head and
 * body leave in one send. Returns 1 once all is written, 0 when it waits or ended the job. */
static int spl_run_send(struct spl_engine *e, struct spl_slot *s)
{
	struct spl_dir *dir = &s->dir[0];
	char *buf = spl_obuf_of(e, s);
	ssize_t n;

	if (!s->prefetched) {
		s->prefetched = 1;
		/* s->pre: body bytes the out buffer holds behind the head already (a relay's,
		 * read with the response head), 0 otherwise */
		s->out_total = s->job.out_len + s->pre;
		if ((s->job.flags & SPL_JOB_COPY) && dir->left != UINT64_MAX && dir->left > 0 &&
		    dir->left <= e->cfg.bufsize - s->out_total && !spl_is_quiet(e, dir->src)) {
			do
				n = spl_recv(e, dir->src, buf + s->out_total, (size_t)dir->left, 0);
			while (n == -1 && errno == EINTR);
			spl_saw_read(e, dir->src, (size_t)dir->left, n, 0);
			/* nothing yet (EAGAIN), an end or an error: the body phase meets it again */
			if (n > 0) {
				s->pre += (uint32_t)n;
				s->out_total += (uint32_t)n;
				dir->left -= (uint64_t)n;
			}
		}
	}
	if (!spl_send_all(e, s, buf, &s->out_off, s->out_total, 0))
		return 0;
	dir->moved += s->pre;
	dir->wait = SPL_WAIT_NONE;
	return 1;
}

static int spl_relay_plan(struct spl_engine *e, struct spl_slot *s, const char *buf, uint32_t len);

/* HEAD phase: reads one head from head_fd into a head buffer, exactly: a peek finds its end
 * and only that much is read, so a body or a pipelined request behind it stays in the socket.
 * An incomplete head's bytes are read (they all belong to the head), so the socket does not
 * stay readable. One exception: a response head the engine relays with a copied body
 * (SPL_JOB_RELAY, decided on the peeked head) is read with the body bytes the peek saw behind
 * it, which the relay sends on with it (rextra). Returns 1 when the head is complete, 0 when
 * it waits or ended the job. */
static int spl_run_head(struct spl_engine *e, struct spl_slot *s)
{
	int fd = s->job.head_fd;
	uint32_t limit = s->job.head_limit;
	uint32_t side = fd == s->job.src_fd ? SPL_SIDE_SRC : SPL_SIDE_DST;
	ssize_t n, got, end;
	char *buf;
	size_t k, extra;

	for (;;) {
		if (spl_is_quiet(e, fd)) { /* found empty, no read event since: wait for one */
			if (s->hbuf != -1 && s->hgot == 0) {
				e->hfree[e->nhfree++] = s->hbuf;
				s->hbuf = -1;
			}
			return 0;
		}
		if (s->hbuf == -1) {
			s->hbuf = spl_hbuf_take(e);
			if (s->hbuf == -1) {
				spl_finish(e, s, SPL_END_ERROR, -ENOBUFS, side);
				return 0;
			}
		}
		buf = spl_hdata(e, s->hbuf);
		n = spl_recv(e, fd, buf + s->hgot, limit - s->hgot + 1, MSG_PEEK);
		spl_saw_read(e, fd, limit - s->hgot + 1, n, 1);
		if (n == -1) {
			if (errno == EINTR)
				continue; /* interrupted before anything was read: again */
			if (errno == EAGAIN) { /* no byte yet: wait (an idle connection holds no buffer) */
				if (s->hgot == 0) {
					e->hfree[e->nhfree++] = s->hbuf;
					s->hbuf = -1;
				}
				return 0;
			}
			/* a reset or another failure ends the head like an end of stream would */
			spl_finish(e, s, SPL_END_ERROR, -errno, side);
			return 0;
		}
		if (n == 0) {
			spl_finish(e, s, SPL_END_PEER_CLOSED, 0, side);
			return 0;
		}
		if ((s->job.flags & SPL_JOB_SKIP_EMPTY) && s->hgot == 0 && (buf[0] == '\r' || buf[0] == '\n')) {
			/* empty lines before a request line are no part of it (RFC 9112 section 2.2) */
			for (k = 0; k < (size_t)n && (buf[k] == '\r' || buf[k] == '\n'); k++)
				;
			do
				got = spl_recv(e, fd, buf, k, 0);
			while (got == -1 && errno == EINTR);
			spl_saw_read(e, fd, k, got, 0);
			if (got <= 0) {
				spl_finish(e, s, SPL_END_ERROR, got == 0 ? -EPIPE : -errno, side);
				return 0;
			}
			/* one skip per turn: a peer streaming empty lines cannot hold the thread
			 * (the first-byte timeout still runs: no head has started) */
			e->hfree[e->nhfree++] = s->hbuf;
			s->hbuf = -1;
			spl_make_ready(e, s);
			return 0;
		}
		if (!s->hstarted) {
			s->hstarted = 1;
			s->phase_ms = e->now_ms; /* from now on head_ms bounds the whole head */
			spl_timer_set(e, s);
		}
		end = spl_head_end(buf, s->hgot + (size_t)n, s->hgot > 3 ? s->hgot - 3 : 0);
		k = end >= 0 ? (size_t)end - s->hgot : (size_t)n;
		extra = 0;
		if (end >= 0) { /* what the peek saw behind the head (a body, a pipelined request) */
			s->hmore = (uint32_t)(s->hgot + (size_t)n - (size_t)end);
			/* a response the engine relays with its body copied: the body bytes the peek
			 * saw are read with the head, in one recv, once nothing can make the relay fail
			 * (spl_relay_plan); a body to splice stays in the kernel, the pipe takes it */
			if (s->hmore > 0 && (s->job.flags & SPL_JOB_RELAY) && fd == s->job.dst_fd &&
			    s->planned == 0 && spl_relay_plan(e, s, buf, (uint32_t)end) &&
			    !(s->rflags & SPL_RELAY_SPLICED)) {
				extra = s->hmore;
				if (extra > s->rbody)
					extra = (size_t)s->rbody;
				if (extra > e->cfg.bufsize - s->relayed) /* room behind the client's head */
					extra = e->cfg.bufsize - s->relayed;
				k += extra;
			}
		}
		if (end < 0 && s->hgot + (size_t)n > limit) {
			s->hinfo = memchr(buf, '\n', s->hgot + (size_t)n) == NULL;
			spl_finish(e, s, SPL_END_TOO_LARGE, -EMSGSIZE, side);
			return 0;
		}
		do
			got = spl_recv(e, fd, buf + s->hgot, k, 0);
		while (got == -1 && errno == EINTR);
		spl_saw_read(e, fd, k, got, 0);
		if (got != (ssize_t)k) { /* the peek saw these bytes: only a failing socket loses them */
			if (got > 0)
				s->hgot += (uint32_t)got;
			if (end >= 0 && s->hgot > (uint32_t)end)
				s->hgot = (uint32_t)end; /* the head alone goes with the completion */
			spl_finish(e, s, SPL_END_ERROR, got == -1 ? -errno : -EIO, side);
			return 0;
		}
		s->hgot += (uint32_t)(got - (ssize_t)extra); /* the body bytes lie behind it in buf */
		s->rextra = (uint32_t)extra;
		s->hmore -= (uint32_t)extra;
		if (end >= 0)
			return 1;
	}
}

/* Moves the job to its next phase (skipping those it does not ask for). */
static void spl_advance(struct spl_engine *e, struct spl_slot *s)
{
	if (s->xconnecting && s->phase == SPL_PHASE_SEND) { /* the request went: it was connected */
		s->xconnecting = 0;
		s->job.dst_idle_ms = s->x_srv_ms;
		spl_timer_set(e, s);
	}
	if (s->phase == SPL_PHASE_SEND && spl_has_body(&s->job)) {
		s->phase = SPL_PHASE_BODY;
		return;
	}
	if (s->phase == SPL_PHASE_BODY && s->dir[0].pipe != NULL) {
		spl_pipe_put(e->pool, s->dir[0].pipe); /* empty: the body is through */
		s->dir[0].pipe = NULL;
	}
	if (s->phase < SPL_PHASE_HEAD && s->job.head_fd >= 0) {
		s->phase = SPL_PHASE_HEAD;
		s->phase_ms = e->now_ms;
		spl_timer_set(e, s);
		return;
	}
	s->phase = SPL_PHASE_END;
}

/* Forgets the head phase's progress (its buffer aside) before slot s reads a new head. */
static void spl_head_reset(struct spl_slot *s)
{
	s->hgot = 0;
	s->hstarted = 0;
	s->hindexed = 0;
	s->hinfo = 0;
	s->hmore = 0;
	s->planned = 0;
	s->rextra = 0;
	s->rbody = 0;
}

/* SPL_JOB_THEN_HEAD: every phase of the job in slot s completed. Posts its completion, lets
 * go of src_fd, and turns the slot into the head job next_id on dst_fd (no new message, no
 * epoll_ctl: the client socket stays attached). */
static void spl_chain(struct spl_engine *e, struct spl_slot *s)
{
	struct spl_job *job = &s->job;
	struct spl_done d;
	uint32_t i;
	int fd = job->dst_fd;

	if (s->reg[0] != -1) /* first: once posted, the caller may close src */
		spl_detach(e, s, s->reg[0]);
	memset(&d, 0, sizeof(d));
	d.id = job->id;
	d.bytes_fwd = s->dir[0].moved;
	d.how = SPL_END_DONE;
	d.side = SPL_SIDE_SRC;
	d.phase = SPL_PHASE_END;
	d.head_buf = -1;
	if (s->rbuf != -1)
		spl_relay_done(e, s, &d);
	if (s->xbusy)
		spl_xdone(e, s, &d); /* the credit's completion, not the head job's */
	spl_post(e, &d);
	if (s->ready) {
		for (i = 0; i < e->nready; i++) {
			if (&e->slots[e->ready[i]] == s) {
				e->ready[i] = e->ready[--e->nready];
				break;
			}
		}
		s->ready = 0;
	}
	job->id = job->next_id;
	job->next_id = 0;
	job->flags = SPL_JOB_SKIP_EMPTY;
	job->src_fd = fd;
	job->src_gen = job->dst_gen;
	job->dst_fd = -1;
	job->dst_gen = 0;
	job->head_fd = fd;
	job->max_bytes = 0;
	job->out_len = 0;
	job->out_buf = -1;
	job->src_idle_ms = job->dst_idle_ms = 0;
	s->reg[0] = s->reg[1];
	s->reg[1] = -1;
	memset(s->dir, 0, sizeof(s->dir));
	s->dir[0].src = fd;
	s->dir[0].dst = -1;
	s->dir[1].done = 1;
	s->hbuf = -1;
	spl_head_reset(s);
	s->progress = 0;
	s->last_ms = e->now_ms;
	s->phase = SPL_PHASE_HEAD;
	s->phase_ms = e->now_ms;
	spl_timer_set(e, s);
}

/* SPL_JOB_RELAY: the response head buf[0..len) is whole (read, or seen by a peek). Decides
 * whether the engine relays it: spl_h1_relay() takes it (its head for the client written to
 * the out buffer), a pipe is free for a body to splice, the client socket is attached. On
 * success the slot holds what the relay needs (relayed, rbody, rflags, the pipe in
 * dir[0].pipe, the client in a reg) and planned = 1: nothing can fail after it, so the
 * caller may read body bytes behind the head with it. Returns 1, or 0 (planned = 2) when
 * the head needs the caller. */
static int spl_relay_plan(struct spl_engine *e, struct spl_slot *s, const char *buf, uint32_t len)
{
	struct spl_job *job = &s->job;
	uint32_t *idx = spl_hidx(e, s->hbuf);
	struct spl_pipe *pipe = NULL;
	uint64_t body = 0;
	ssize_t n;
	int splice_it;

	s->planned = 2;
	spl_h1_parse(buf, len, idx); /* the index the completion carries, relayed or not */
	s->hindexed = 1; /* (if the job ends with this head, spl_finish need not tokenize it again) */
	n = spl_h1_relay(buf, len, idx, job->relay_status_max, job->relay_flags, spl_obuf_of(e, s),
			 e->cfg.bufsize, &body);
	if (n <= 0)
		return 0;
	splice_it = body > 0 && body >= job->splice_min && spl_tls_of(e, job->cli_fd, job->cli_gen) == NULL;
	if (splice_it && spl_pipe_get(e->pool, &pipe) != 0) {
		atomic_fetch_add_explicit(&e->st_nopipe, 1, memory_order_relaxed);
		return 0; /* the caller moves it (its own job finds a pipe, or the loop copies) */
	}
	if (s->reg[0] == -1 && spl_attach(e, s, 0, job->cli_fd, job->cli_gen) != 0) {
		if (pipe != NULL)
			spl_pipe_put(e->pool, pipe);
		return 0;
	}
	s->dir[0].pipe = pipe; /* (none in the head phase: spl_finish gives it back if the read fails) */
	s->relayed = (uint32_t)n;
	s->rbody = body;
	s->rflags = splice_it ? SPL_RELAY_SPLICED : 0;
	s->planned = 1;
	return 1;
}

/* SPL_JOB_RELAY: the job in slot s read the response head, whole. When spl_relay_plan()
 * takes it (it may have in the head phase already), turns the slot into the job that sends
 * it on to the client with its body, chained to the client's next request head (as a
 * SPL_JOB_THEN_HEAD job the caller would submit), the response head's buffer kept for the
 * completion. Body bytes read with the head (rextra, a copied body's) leave with the head in
 * one send.
 * Returns 1 when the slot goes on so, 0 when the head needs the caller (the job then ends
 * with it). */
static int spl_relay(struct spl_engine *e, struct spl_slot *s)
{
	struct spl_job *job = &s->job;
	struct spl_pipe *pipe;
	uint64_t body;
	uint32_t extra = s->rextra;
	int server = job->dst_fd, tmp;

	if (s->hbuf == -1 || s->hgot == 0 || s->planned == 2)
		return 0;
	if (s->planned == 0 && !spl_relay_plan(e, s, spl_hdata(e, s->hbuf), s->hgot))
		return 0;
	pipe = s->dir[0].pipe;
	body = s->rbody;
	if (extra > 0) /* behind the head for the client, as a prefetch would have put them */
		memcpy(spl_obuf_of(e, s) + s->relayed, spl_hdata(e, s->hbuf) + s->hgot, extra);
	s->hindexed = 0; /* the next head this slot reads (the client's) is a new one */
	/* reg[0] the server (src from now on, let go first by spl_chain), reg[1] the client */
	tmp = s->reg[0];
	s->reg[0] = s->reg[1];
	s->reg[1] = tmp;
	s->rbuf = s->hbuf;
	s->rlen = s->hgot;
	s->rhead_ms = e->now_ms;
	s->hbuf = -1;
	s->hgot = 0;
	s->hstarted = 0;
	s->hmore = 0;
	if (s->xbusy && (job->relay_flags & SPL_RELAY_CLOSE_CLIENT)) {
		/* an express request's: its head job ends after the response (spl_xclosed) */
		job->flags = pipe != NULL ? 0 : SPL_JOB_COPY;
	} else if (job->relay_flags & SPL_RELAY_CLOSE_CLIENT) {
		/* the client connection ends after this response: no next head to read */
		struct spl_done d;

		memset(&d, 0, sizeof(d));
		d.id = job->next_id;
		d.res = -ECANCELED;
		d.how = SPL_END_CANCELLED;
		d.phase = SPL_PHASE_SEND;
		d.head_buf = -1;
		spl_post(e, &d);
		job->flags = pipe != NULL ? 0 : SPL_JOB_COPY;
	} else {
		job->flags = SPL_JOB_THEN_HEAD | (pipe != NULL ? 0 : SPL_JOB_COPY);
	}
	job->src_fd = server;
	job->src_gen = job->dst_gen;
	job->dst_fd = job->cli_fd;
	job->dst_gen = job->cli_gen;
	job->src_idle_ms = job->dst_idle_ms;
	job->dst_idle_ms = job->cli_idle_ms;
	job->max_bytes = body;
	job->out_len = s->relayed;
	job->head_fd = -1;
	job->head_first_ms = job->next_first_ms;
	job->head_ms = job->next_ms;
	memset(s->dir, 0, sizeof(s->dir));
	s->dir[0].src = server;
	s->dir[0].dst = job->cli_fd;
	s->dir[0].left = body - extra;
	s->dir[0].pipe = pipe;
	s->dir[1].src = job->cli_fd;
	s->dir[1].dst = server;
	s->dir[1].done = 1;
	s->prefetched = 0;
	s->out_off = s->out_total = 0;
	s->pre = extra; /* counted as moved once sent (spl_run_send) */
	s->copy_have = s->copy_off = 0;
	s->progress = 0;
	s->last_ms = e->now_ms;
	s->phase = SPL_PHASE_SEND;
	spl_timer_set(e, s);
	if (s->xbusy)
		s->xstatus = spl_hidx(e, s->rbuf)[5]; /* (for its credit's SPL_X_DONE) */
	return 1;
}

/* ---- the express lane (engine.h) -------------------------------------------------------
 * An express request is the client's head job turned, in place, into the RELAY job the
 * caller would have submitted for it (send the head on a server connection, read the
 * response head, relay it, read the next head), on the connection the caller lent that head
 * job as its credit when it asked (SPL_X_WANT). Python keeps every decision: it picks the
 * server and takes the connection from its idle pool, counts each request from its
 * credit's completion, and takes back any request the engine cannot finish
 * (SPL_X_HANDOVER). Nothing here allocates: a credit lives in its head job's slot, buffers
 * come from the head buffers beyond one a job (nbufs - maxjobs).
 */

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
	s->xc = (struct spl_xcredit){m->id, m->dst_fd, m->dst_gen, m->dst_idle_ms};
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
	int no_body, close;
	uint64_t body;
	int32_t out;
	struct spl_xcredit c;
	const struct spl_xrules *rules = &e->xrules[s->xbe];

	if (s->xwant)
		return 2;
	if (s->hbuf == -1 || s->hgot == 0 || job->head_fd != job->src_fd || e->xheld + 2 > extras)
		return 0;
	buf = spl_hdata(e, s->hbuf);
	idx = spl_hidx(e, s->hbuf);
	spl_h1_parse(buf, s->hgot, idx);
	s->hindexed = 1; /* (handed to the caller, it needs no second pass) */
	if (!spl_xhead_ok(buf, idx, s->xmaxhdr, &no_body, &body, &close))
		return 0;
	n = spl_xhead_write(buf, s->hgot, idx, rules->prog, rules->len, (s->xflags & SPL_RELAY_XFF) != 0, s->xaddr,
			    NULL, e->cfg.bufsize);
	if (n == 0 || n + body > e->cfg.bufsize)
		return 0; /* (the forwarded head and its body are sent from one buffer) */
	/* a body goes only when it is all there, read behind the head and sent with it in one
	 * send (a copied body, as the Python path's small body that came with its head); a
	 * request that closes the connection, only when nothing follows it (the caller drains
	 * what a client sends behind its last request before it closes) */
	if (body > s->hmore || (close && body != s->hmore))
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
		d.bytes_rev = body; /* (a new connection carries no body: see below) */
		spl_post(e, &d);
		s->xwant = 1;
		return 2;
	}
	c = s->xc;
	if (c.connect_ms != 0 && body > 0)
		return 0; /* its body, read from the client, would be lost if the connect failed
			   * (the credit goes back with the head job's end) */
	if (c.connect_ms == 0 && !spl_credit_alive(e, &c)) { /* the server closed it meanwhile: the caller takes the head */
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
	n = spl_xhead_write(buf, s->hgot, idx, rules->prog, rules->len, (s->xflags & SPL_RELAY_XFF) != 0, s->xaddr,
			    spl_hdata(e, out), e->cfg.bufsize);
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
	/* a new connection has connect_ms to carry the request (spl_advance) */
	job->dst_idle_ms = c.connect_ms ? c.connect_ms : s->x_srv_ms;
	s->xconnecting = c.connect_ms != 0;
	s->xclose = (uint8_t)close;
	job->relay_flags = (no_body ? SPL_RELAY_NO_BODY : 0) | (close ? SPL_RELAY_CLOSE_CLIENT : 0);
	memset(s->dir, 0, sizeof(s->dir));
	s->dir[0].src = job->src_fd;
	s->dir[0].dst = c.fd;
	s->dir[0].left = body;
	s->dir[1].src = c.fd;
	s->dir[1].dst = -1;
	s->dir[1].left = UINT64_MAX;
	s->dir[1].done = 1;
	spl_head_reset(s);
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
 * its credit's SPL_X_DONE): the response head's buffer goes back (Python needs only the
 * status and sizes), and the request head's too, unless the access log wants it
 * (SPL_RELAY_XLOG: the completion carries it); the server connection goes back with the
 * completion. */
static void spl_xdone(struct spl_engine *e, struct spl_slot *s, struct spl_done *d)
{
	int32_t req = s->qbuf;

	if (req != -1) {
		s->qbuf = -1;
		e->xheld--;
		if (!(s->xflags & SPL_RELAY_XLOG)) {
			e->hfree[e->nhfree++] = req;
			req = -1;
		}
	}
	d->id = s->xc.id;
	d->xkind = SPL_X_DONE;
	d->bytes_rev = s->xbody; /* the request's body, sent whole with its head */
	d->xother = s->xnext;
	d->xstatus = s->xstatus;
	d->xreq = s->xreq;
	if (d->head_buf != -1) {
		if (spl_hidx(e, d->head_buf)[3] & SPL_H1_F_CONN_CLOSE) /* (indexed by spl_relay_plan) */
			d->relay_flags |= SPL_RELAY_SERVER_CLOSE;
		e->hfree[e->nhfree++] = d->head_buf;
	}
	d->head_buf = req; /* (the caller gives it back: spl_hbuf_release; a credit counts as a
			    * job until its completion is reaped, and a job may hold one buffer) */
	d->head_len = req != -1 ? s->qlen : 0;
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
	if (s->rbuf != -1) /* relaying: the client saw the response begin */
		spl_relay_done(e, s, &d);
	else if (s->hbuf != -1) /* the response head, or what came of it */
		spl_lend_head(e, s, &d, how);
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

/* The express request of slot s, which closes the client connection, was relayed whole:
 * its credit ends SPL_X_DONE, then the head job with xkind SPL_X_CLOSED (spl_finish). */
static void spl_xclosed(struct spl_engine *e, struct spl_slot *s)
{
	struct spl_done d;

	memset(&d, 0, sizeof(d));
	d.id = s->job.id;
	d.bytes_fwd = s->dir[0].moved;
	d.how = SPL_END_DONE;
	d.side = SPL_SIDE_SRC;
	d.phase = SPL_PHASE_END;
	d.head_buf = -1;
	if (s->rbuf != -1)
		spl_relay_done(e, s, &d);
	spl_xdone(e, s, &d);
	spl_post(e, &d);
	s->xarmed = 0;
	spl_finish(e, s, SPL_END_DONE, 0, SPL_SIDE_SRC);
}

/* Runs the job until it waits, uses its turn or ends. */
static void spl_run(struct spl_engine *e, struct spl_slot *s)
{
	int through;

	if (s->job.flags & SPL_JOB_TUNNEL) {
		spl_run_tunnel(e, s);
		return;
	}
	for (;;) {
		switch (s->phase) {
		case SPL_PHASE_SEND:
			through = spl_run_send(e, s);
			break;
		case SPL_PHASE_BODY:
			if (s->job.flags & SPL_JOB_CHUNKED)
				through = spl_run_chunked(e, s);
			else if (s->job.flags & SPL_JOB_DISCARD)
				through = spl_run_discard(e, s);
			else if (s->job.flags & SPL_JOB_COPY)
				through = spl_run_copy(e, s);
			else
				through = spl_run_splice(e, s);
			break;
		case SPL_PHASE_HEAD:
			through = spl_run_head(e, s);
			break;
		default:
			if (s->xclose && s->xbusy && !(s->job.flags & SPL_JOB_RELAY)) {
				spl_xclosed(e, s);
				return;
			}
			if (s->job.flags & SPL_JOB_THEN_HEAD) {
				spl_chain(e, s);
				continue;
			}
			if ((s->job.flags & SPL_JOB_RELAY) && spl_relay(e, s))
				continue;
			if (s->xarmed && !(s->job.flags & SPL_JOB_RELAY)) {
				int x = spl_express(e, s);

				if (x == 1)
					continue;
				if (x == 2)
					return; /* (until its credit comes) */
			}
			spl_finish(e, s, SPL_END_DONE, 0, SPL_SIDE_SRC);
			return;
		}
		if (!through)
			return;
		spl_advance(e, s);
	}
}

/* Makes the TLS session of job's head_fd (tls_ctx) unless its registration has one. Returns
 * 0 or -errno (-EINVAL: no such context, or a socket named without a generation). */
static int spl_tls_start(struct spl_engine *e, const struct spl_job *job)
{
	int fd = job->head_fd;
	uint32_t gen = fd == job->src_fd ? job->src_gen : job->dst_gen;
	uint32_t idx = job->tls_ctx - 1;
	int rc;

	if (fd < 0 || gen == 0 || idx >= SPL_TLS_CTXS || e->tls_ctxs[idx] == NULL)
		return -EINVAL;
	if (e->fds[fd].tls != NULL)
		return 0;
	rc = spl_tls_new(e->tls_ctxs[idx], fd, &e->fds[fd].tls);
	if (rc == 0)
		e->ntls++;
	return rc;
}

/* Whether job may use its sockets as their TLS state stands: 0, -ESHUTDOWN when a socket's
 * session was ended (SPL_JOB_TLS_CLOSE: it is only to be closed, never read or written
 * plain), -EPROTONOSUPPORT when a pipe would carry a session's records (a spliced or chunked
 * body, a spliced tunnel). */
static int spl_tls_check(const struct spl_engine *e, const struct spl_job *job, int needs_pipe)
{
	int fds[2] = {job->src_fd, job->dst_fd};
	int i;

	for (i = 0; i < 2; i++) {
		const struct spl_fdreg *r;

		if (fds[i] < 0)
			continue;
		r = &e->fds[fds[i]];
		if (r->tls_ended)
			return -ESHUTDOWN;
		if (r->tls != NULL && (needs_pipe || (job->flags & SPL_JOB_CHUNKED)))
			return -EPROTONOSUPPORT;
	}
	return 0;
}

/* Starts a submitted job in a free slot (one exists: see spl_post). */
static void spl_start(struct spl_engine *e, const struct spl_job *job)
{
	struct spl_slot *s = &e->slots[e->free_head];
	int tunnel = (job->flags & SPL_JOB_TUNNEL) != 0;
	int needs_pipe = !(job->flags & (SPL_JOB_COPY | SPL_JOB_DISCARD)) && (tunnel || spl_has_body(job));
	/* a TLS client takes no express lane (yet): its requests come to the caller */
	int tls_cli = job->tls_ctx != 0 || spl_tls_of(e, job->cli_fd, job->cli_gen) != NULL ||
		      spl_tls_of(e, job->src_fd, job->src_gen) != NULL;
	int rc = 0;

	e->free_head = s->next_free;
	memset(s, 0, sizeof(*s));
	s->job = *job;
	s->reg[0] = s->reg[1] = -1;
	s->hbuf = -1;
	s->rbuf = -1;
	s->qbuf = -1;
	s->xout = -1;
	if ((job->flags & SPL_JOB_RELAY) && (job->relay_flags & SPL_RELAY_EXPRESS) && job->xbe < SPL_X_BACKENDS &&
	    !(job->relay_flags & SPL_RELAY_CLOSE_CLIENT) && !tls_cli) {
		s->xarmed = 1;
		s->xbe = job->xbe;
		s->xaddr = job->xaddr;
		s->xflags = job->relay_flags;
		s->xmaxhdr = job->xmaxhdr;
		s->x_first_ms = job->head_first_ms;
		s->x_ms = job->head_ms;
		s->x_limit = job->head_limit;
		s->x_srv_ms = job->dst_idle_ms;
		s->xnext = job->next_id;
	} else if (!(job->flags & (SPL_JOB_RELAY | SPL_JOB_THEN_HEAD | SPL_JOB_TUNNEL)) &&
		   (job->relay_flags & SPL_RELAY_EXPRESS) && job->xbe < SPL_X_BACKENDS && job->dst_fd < 0 && !tls_cli &&
		   job->head_fd >= 0 && job->head_fd == job->src_fd && job->cli_fd == job->src_fd &&
		   !(job->relay_flags & SPL_RELAY_CLOSE_CLIENT)) {
		/* a head-only job armed from its own head on (engine.h "the express lane") */
		s->xarmed = 1;
		s->xbe = job->xbe;
		s->xaddr = job->xaddr;
		s->xflags = job->relay_flags;
		s->xmaxhdr = job->xmaxhdr;
		s->x_first_ms = s->x_ms = s->x_srv_ms = job->dst_idle_ms;
		s->x_limit = job->head_limit;
		s->xnext = job->id;
	}
	s->active = 1;
	s->last_ms = e->now_ms;
	s->phase_ms = e->now_ms; /* (SPL_JOB_DISCARD: the start of its whole limit) */
	e->active++;
	s->dir[0].src = job->src_fd;
	s->dir[0].dst = job->dst_fd;
	s->dir[0].left = tunnel ? UINT64_MAX : (job->flags & SPL_JOB_CHUNKED) ? 0 : job->max_bytes;
	s->dir[1].src = job->dst_fd;
	s->dir[1].dst = job->src_fd;
	s->dir[1].left = UINT64_MAX;
	s->dir[1].done = !tunnel;
	s->phase = SPL_PHASE_SEND;
	if (job->flags & SPL_JOB_TLS_CLOSE) {
		struct spl_tls *t = spl_tls_of(e, job->src_fd, job->src_gen);
		int k, busy = 0;

		for (k = 0; t != NULL && k < SPL_FD_USERS; k++)
			busy |= e->fds[job->src_fd].users[k] != 0;
		if (busy) { /* a job still uses the session: the caller ends it first */
			spl_finish(e, s, SPL_END_ERROR, -EBUSY, SPL_SIDE_SRC);
			return;
		}
		if (t != NULL) {
			spl_tls_free(t, 1);
			e->fds[job->src_fd].tls = NULL;
			e->fds[job->src_fd].tls_ended = 1;
			e->ntls--;
		}
		s->phase = SPL_PHASE_END;
		spl_finish(e, s, SPL_END_DONE, 0, SPL_SIDE_SRC);
		return;
	}
	if (job->out_len == 0 && !tunnel)
		spl_advance(e, s);
	spl_timer_set(e, s);
	if (needs_pipe && (spl_pipe_get(e->pool, &s->dir[0].pipe) != 0 ||
			   (tunnel && spl_pipe_get(e->pool, &s->dir[1].pipe) != 0))) {
		atomic_fetch_add_explicit(&e->st_nopipe, 1, memory_order_relaxed);
		s->phase = SPL_PHASE_SEND; /* nothing was done */
		spl_finish(e, s, SPL_END_NOPIPE, -ENOBUFS, SPL_SIDE_SRC);
		return;
	}
	if (job->src_fd >= 0)
		rc = spl_attach(e, s, 0, job->src_fd, job->src_gen);
	if (rc == 0 && job->dst_fd >= 0)
		rc = spl_attach(e, s, 1, job->dst_fd, job->dst_gen);
	if (rc == 0 && job->tls_ctx != 0)
		rc = spl_tls_start(e, job);
	if (rc == 0)
		rc = spl_tls_check(e, job, needs_pipe);
	if (rc != 0) {
		spl_finish(e, s, SPL_END_ERROR, rc, s->reg[0] == -1 && job->src_fd >= 0 ? SPL_SIDE_SRC : SPL_SIDE_DST);
		return;
	}
	spl_run(e, s);
}

static void spl_cancel_job(struct spl_engine *e, uint64_t id)
{
	uint32_t i;

	for (i = 0; i < e->cfg.maxjobs; i++) {
		struct spl_slot *s = &e->slots[i];

		if (!s->active)
			continue;
		if (s->job.id == id) { /* (one running an express request hands it over, cancelled) */
			spl_finish(e, s, SPL_END_CANCELLED, -ECANCELED, SPL_SIDE_SRC);
			return;
		}
		if ((s->job.flags & (SPL_JOB_THEN_HEAD | SPL_JOB_RELAY)) && s->job.next_id == id) {
			/* the head job that was to follow is cancelled before it started: the job
			 * goes on, and ends without becoming it (nor relaying a response) */
			struct spl_done d;

			s->job.flags &= ~(uint32_t)(SPL_JOB_THEN_HEAD | SPL_JOB_RELAY);
			memset(&d, 0, sizeof(d));
			d.id = id;
			d.res = -ECANCELED;
			d.how = SPL_END_CANCELLED;
			d.phase = SPL_PHASE_SEND;
			d.head_buf = -1;
			spl_post(e, &d);
			return;
		}
	}
	/* not found: it already ended and its completion is on its way */
}

static void spl_take_messages(struct spl_engine *e)
{
	uint32_t head = atomic_load_explicit(&e->sq_head, memory_order_relaxed);
	uint32_t tail = atomic_load_explicit(&e->sq_tail, memory_order_acquire);

	while (head != tail) {
		struct spl_msg m = e->sq[head & e->sq_mask];

		head++;
		atomic_store_explicit(&e->sq_head, head, memory_order_release);
		if (m.op == SPL_OP_SUBMIT)
			spl_start(e, &m.job);
		else if (m.op == SPL_OP_CANCEL)
			spl_cancel_job(e, m.job.id);
		else
			spl_credit_take(e, &m.job);
		tail = atomic_load_explicit(&e->sq_tail, memory_order_acquire);
	}
}

/* Ends the job in slot s with a timeout if one has expired, as its phase and what it waits
 * on say (the engine's timeout rules, one place). Returns 1 when it ended the job. */
static int spl_expire(struct spl_engine *e, struct spl_slot *s)
{
	uint64_t idle;

	if (s->phase == SPL_PHASE_HEAD) {
		uint32_t limit = s->hstarted ? s->job.head_ms : s->job.head_first_ms;

		if (limit && e->now_ms - s->phase_ms >= limit) {
			spl_finish(e, s, SPL_END_TIMEOUT, -ETIMEDOUT,
				   s->job.head_fd == s->job.src_fd ? SPL_SIDE_SRC : SPL_SIDE_DST);
			return 1;
		}
		return 0;
	}
	idle = e->now_ms - s->last_ms;
	if ((s->job.flags & SPL_JOB_DISCARD) && s->job.dst_idle_ms && e->now_ms - s->phase_ms >= s->job.dst_idle_ms) {
		spl_finish(e, s, SPL_END_TIMEOUT, -ETIMEDOUT, SPL_SIDE_SRC); /* the whole discard's limit */
		return 1;
	}
	if (s->job.flags & SPL_JOB_TUNNEL) {
		if (s->job.src_idle_ms && idle >= s->job.src_idle_ms) {
			spl_finish(e, s, SPL_END_TIMEOUT, -ETIMEDOUT, SPL_SIDE_SRC);
			return 1;
		}
	} else if (s->dir[0].wait == SPL_WAIT_SRC && s->job.src_idle_ms && idle >= s->job.src_idle_ms) {
		spl_finish(e, s, SPL_END_TIMEOUT, -ETIMEDOUT, SPL_SIDE_SRC);
		return 1;
	} else if (s->dir[0].wait == SPL_WAIT_DST && s->job.dst_idle_ms && idle >= s->job.dst_idle_ms) {
		spl_finish(e, s, SPL_END_TIMEOUT, -ETIMEDOUT, SPL_SIDE_DST);
		return 1;
	}
	return 0;
}

/* Turns the timer wheel to now: checks the bucket of every tick since the last one checked
 * (a round at most: after a longer stall every bucket once). A timer due by now whose job has
 * not expired (progress pushed its deadline later, or it is not waiting) moves to its new
 * deadline; one not due yet (a later round) stays. Costs the timers in the buckets passed,
 * not the jobs running. */
static void spl_check_timeouts(struct spl_engine *e)
{
	struct spl_wheel *w = &e->wheel;
	uint64_t cur = e->now_ms / SPL_TICK_MS;
	uint64_t t;

	if (cur - w->tick > SPL_WHEEL_SIZE)
		w->tick = cur - SPL_WHEEL_SIZE;
	for (t = w->tick + 1; t <= cur; t++) {
		int32_t i = w->head[t & (SPL_WHEEL_SIZE - 1)];

		w->tick = t;
		while (i != -1) {
			int32_t next = w->link[i].next; /* i may leave the bucket */

			if (w->link[i].due <= cur && !spl_expire(e, &e->slots[i]))
				spl_timer_set(e, &e->slots[i]);
			i = next;
		}
	}
	w->tick = cur;
}

/* One turn of the engine: handles the socket events that are ready within `timeout` ms
 * (-1: waits for one; 0: those ready now) and the queued messages, gives the jobs that used
 * their budget one more turn, turns the timer wheel and publishes the completions (in thread
 * mode also signalling done_fd). Returns 0, or -1 when the epoll failed (EBADF/EINVAL: the
 * engine cannot run any more). Thread: the engine's (thread mode), or the caller's
 * (inline mode, through spl_engine_poll). */
static int spl_turn(struct spl_engine *e, int timeout)
{
	struct epoll_event evs[SPL_MAX_EVENTS];
	int owed = (int)e->nready; /* jobs owed a turn before this one began */
	int n, i;

	if (timeout != 0) {
		/* Announce the sleep, then look at the queue once more: a message pushed
		 * before the announcement is seen here, one pushed after it finds the flag
		 * set and wakes us (spl_wake; both sides fence, as in Dekker's algorithm). */
		atomic_store_explicit(&e->sleeping, 1, memory_order_relaxed);
		atomic_thread_fence(memory_order_seq_cst);
		if (atomic_load_explicit(&e->sq_head, memory_order_relaxed) !=
		    atomic_load_explicit(&e->sq_tail, memory_order_acquire))
			timeout = 0;
	}
	n = epoll_wait(e->ep, evs, SPL_MAX_EVENTS, timeout);
	atomic_store_explicit(&e->sleeping, 0, memory_order_relaxed);
	if (n == -1 && errno != EINTR)
		return -1; /* EBADF/EINVAL: the epoll is gone, nothing more can run */
	e->now_ms = spl_now_ms();
	if (timeout == 0 && atomic_load_explicit(&e->sq_head, memory_order_relaxed) !=
	    atomic_load_explicit(&e->sq_tail, memory_order_acquire))
		spl_take_messages(e); /* queued without a wake-up while we were busy */
	if (n == -1)
		n = 0; /* EINTR: a signal (blocked here, but a debugger may stop us); go on */
	e->turn_moved = 0;
	for (i = 0; i < n; i++) {
		uint64_t tag = evs[i].data.u64;

		if (tag == SPL_WAKE_TAG) {
			spl_drain(e->wake_fd);
			spl_take_messages(e);
			continue;
		}
		if (tag < e->nfds) {
			struct spl_fdreg *r = &e->fds[tag];
			int k;

			/* something arrived (bytes, an end, an error): whatever was known of
			 * the socket's emptiness is void */
			if (evs[i].events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR))
				r->ended = 1;
			if (evs[i].events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR))
				spl_set_quiet(r, 0);

			/* every job using the fd tries its I/O (each waits on EAGAIN again);
			 * inline, once the turn has moved its budget, the next turn does (the
			 * bytes stay in the socket, so edge-triggered events lose nothing) */
			for (k = 0; k < SPL_FD_USERS; k++) {
				struct spl_slot *u;

				if (r->users[k] == 0)
					continue;
				u = &e->slots[r->users[k] - 1];
				if (!u->active || (e->inline_mode && u->ready))
					continue; /* inline: a job that used its budget waits for the next turn */
				if (e->inline_mode && e->turn_moved >= SPL_TURN_BUDGET)
					spl_make_ready(e, u);
				else
					spl_run(e, u);
			}
		}
	}
	/* jobs that used their budget: one more turn each, in the order they stopped (inline,
	 * only those that stopped in an earlier turn, so that a turn runs a job once) */
	n = e->inline_mode ? owed : (int)e->nready;
	for (i = 0; i < n && i < (int)e->nready; i++) {
		struct spl_slot *s = &e->slots[e->ready[i]];

		if (e->inline_mode && e->turn_moved >= SPL_TURN_BUDGET)
			break; /* the rest keep their place for the next turn */
		s->ready = 0;
		e->ready[i] = UINT32_MAX;
		if (s->active)
			spl_run(e, s);
	}
	/* compact: drop the entries just served, keep those re-added meanwhile */
	{
		uint32_t w = 0, r;

		for (r = 0; r < e->nready; r++)
			if (e->ready[r] != UINT32_MAX)
				e->ready[w++] = e->ready[r];
		e->nready = w;
	}
	if (e->wheel.count && e->now_ms / SPL_TICK_MS > e->wheel.tick)
		spl_check_timeouts(e);
	if (e->hbufs != NULL && e->now_ms - e->trim_ms >= SPL_TRIM_MS)
		spl_trim_hbufs(e);
	spl_publish(e);
	if (e->posted && !e->inline_mode) { /* inline: spl_engine_poll() reports it */
		e->posted = 0;
		spl_signal(e->done_fd);
	}
	return 0;
}

static void *spl_engine_main(void *arg)
{
	struct spl_engine *e = arg;
	struct sched_param sp;

	/* SCHED_BATCH: a wake-up of this thread (a socket event) never preempts the event loop
	 * sharing its CPU; each runs until it waits, so work comes in batches and the CPU
	 * switches between the two once per batch rather than once per event. Failing to set it
	 * (a restricted container) costs speed only. */
	memset(&sp, 0, sizeof(sp));
	(void)pthread_setschedparam(pthread_self(), SCHED_BATCH, &sp);

	while (!atomic_load_explicit(&e->stop, memory_order_acquire))
		if (spl_turn(e, e->nready ? 0 : (e->wheel.count ? SPL_TICK_MS : -1)) != 0)
			break;
	return NULL;
}

/* ---- Python thread: lifecycle, submit, reap ------------------------------------------ */

/* Closes the engine's own fds and frees its memory (its thread is not running). */
/* Buffers in whole pages (each can be given back with spl_pages_drop), zero-filled and
 * touched only when used. Returns NULL when the memory cannot be had. */
static char *spl_pages_alloc(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

static void spl_pages_free(char *p, size_t len)
{
	if (p != NULL)
		(void)munmap(p, len); /* EINVAL only for a range that was never mapped */
}

static void spl_engine_release(struct spl_engine *e)
{
	if (e->ep != -1)
		close(e->ep);
	if (e->wake_fd != -1)
		close(e->wake_fd);
	if (e->done_fd != -1)
		close(e->done_fd);
	spl_pool_free(e->pool);
	for (uint32_t i = 0; e->fds != NULL && e->ntls > 0 && i < e->nfds; i++)
		if (e->fds[i].tls != NULL) { /* sessions whose sockets the caller still holds */
			spl_tls_free(e->fds[i].tls, 0);
			e->ntls--;
		}
	free(e->sq);
	free(e->cq);
	free(e->slots);
	free(e->ready);
	free(e->lines);
	spl_pages_free(e->obufs, (size_t)e->cfg.nbufs * e->cfg.bufsize);
	spl_pages_free(e->hbufs, (size_t)e->cfg.nbufs * e->hbuf_size);
	free(e->hfree);
	free(e->rel);
	free(e->fds);
	free(e->tlinks);
	free(e->xrules);
	free(e);
}

int spl_engine_new(const struct spl_cfg *cfg, struct spl_engine **out)
{
	struct spl_engine *e;
	struct epoll_event ev;
	sigset_t all, old;
	uint32_t i;
	int rc;

	if (cfg == NULL || out == NULL || cfg->maxjobs == 0 || cfg->maxpipes == 0 || cfg->maxjobs > (1u << 24) ||
	    cfg->nbufs > (1u << 24) || cfg->bufsize > (1u << 24) || (cfg->nbufs > 0 && cfg->bufsize == 0))
		return -EINVAL;
	e = calloc(1, sizeof(*e));
	if (e == NULL)
		return -ENOMEM;
	e->cfg = *cfg;
	e->ep = e->wake_fd = e->done_fd = -1;
	e->sq_mask = spl_pow2(2 * cfg->maxjobs) - 1;
	e->cq_mask = spl_pow2(cfg->maxjobs) - 1;
	e->sq = calloc((size_t)e->sq_mask + 1, sizeof(*e->sq));
	e->cq = calloc((size_t)e->cq_mask + 1, sizeof(*e->cq));
	e->slots = calloc(cfg->maxjobs, sizeof(*e->slots));
	e->ready = calloc(cfg->maxjobs, sizeof(*e->ready));
	/* one line buffer per slot; pages are touched only by chunked jobs holding a line */
	e->lines = calloc(cfg->maxjobs, SPL_CHUNK_MAX_LINE);
	rc = -ENOMEM;
	if (e->sq == NULL || e->cq == NULL || e->slots == NULL || e->ready == NULL || e->lines == NULL)
		goto fail;
	if (cfg->nbufs > 0) {
		/* pages are touched only by buffers in use: the free stack hands out the most
		 * recently used first, so the resident set follows the busy connections, not the
		 * idle ones (which hold no head buffer) */
		e->hbuf_size = ((size_t)cfg->bufsize + SPL_HBUF_PAD + SPL_HIDX_BYTES + SPL_PAGE - 1) &
			       ~(size_t)(SPL_PAGE - 1); /* whole pages: each can be given back */
		e->obufs = spl_pages_alloc((size_t)cfg->nbufs * cfg->bufsize);
		e->hbufs = spl_pages_alloc((size_t)cfg->nbufs * e->hbuf_size);
		e->hfree = calloc(cfg->nbufs, sizeof(*e->hfree));
		e->rel_mask = spl_pow2(cfg->nbufs) - 1;
		e->rel = calloc((size_t)e->rel_mask + 1, sizeof(*e->rel));
		if (e->obufs == NULL || e->hbufs == NULL || e->hfree == NULL || e->rel == NULL)
			goto fail;
		for (i = 0; i < cfg->nbufs; i++)
			e->hfree[i] = (int32_t)(cfg->nbufs - 1 - i);
		e->nhfree = cfg->nbufs;
		e->hlow = e->htrim = cfg->nbufs; /* none touched yet: nothing to give back */
	}
	{
		struct rlimit rl;

		/* every fd the process may open (the master raised the limit before forking) */
		if (getrlimit(RLIMIT_NOFILE, &rl) == -1 || rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur > SPL_MAX_FDS)
			rl.rlim_cur = SPL_MAX_FDS;
		e->nfds = rl.rlim_cur < 1024 ? 1024 : (uint32_t)rl.rlim_cur;
		e->fds = calloc(e->nfds, sizeof(*e->fds));
		if (e->fds == NULL)
			goto fail;
	}
	e->tlinks = calloc(cfg->maxjobs, sizeof(*e->tlinks));
	e->xrules = calloc(SPL_X_BACKENDS, sizeof(*e->xrules));
	if (e->tlinks == NULL || e->xrules == NULL)
		goto fail;
	spl_wheel_init(&e->wheel, e->tlinks);
	for (i = 0; i < cfg->maxjobs; i++)
		e->slots[i].next_free = (i + 1 < cfg->maxjobs) ? (int32_t)(i + 1) : -1;
	e->free_head = 0;
	rc = spl_pool_new(cfg->pipesize, cfg->maxpipes, &e->pool);
	if (rc != 0)
		goto fail;
	e->ep = epoll_create1(EPOLL_CLOEXEC);
	e->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	e->done_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (e->ep == -1 || e->wake_fd == -1 || e->done_fd == -1) {
		rc = -errno;
		goto fail;
	}
	memset(&ev, 0, sizeof(ev));
	ev.events = EPOLLIN;
	ev.data.u64 = SPL_WAKE_TAG;
	if (epoll_ctl(e->ep, EPOLL_CTL_ADD, e->wake_fd, &ev) == -1) {
		rc = -errno;
		goto fail;
	}
	e->now_ms = spl_now_ms();
	e->budget = SPL_BUDGET;
	if (cfg->flags & SPL_ENGINE_INLINE) {
		e->inline_mode = 1;
		e->budget = SPL_INLINE_BUDGET; /* no thread: the caller turns the engine (spl_engine_poll) */
		*out = e;
		return 0;
	}
	/* the thread starts with every signal blocked: they belong to Python's main thread */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rc = -pthread_create(&e->thread, NULL, spl_engine_main, e);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc != 0)
		goto fail;
	if (cfg->cpu >= 0) {
		cpu_set_t set;

		CPU_ZERO(&set);
		CPU_SET(cfg->cpu, &set);
		rc = -pthread_setaffinity_np(e->thread, sizeof(set), &set);
		if (rc != 0) {
			spl_engine_free(e);
			return rc;
		}
	}
	*out = e;
	return 0;
fail:
	spl_engine_release(e);
	return rc;
}

int spl_engine_eventfd(const struct spl_engine *e)
{
	return e == NULL ? -EINVAL : e->done_fd;
}

int spl_engine_pollfd(const struct spl_engine *e)
{
	return e->ep;
}

int spl_engine_poll(struct spl_engine *e)
{
	int more = 0;

	if (e == NULL || !e->inline_mode)
		return -EINVAL;
	if (spl_turn(e, 0) != 0)
		return -errno;
	if (e->nready > 0 || atomic_load_explicit(&e->sq_head, memory_order_relaxed) !=
			     atomic_load_explicit(&e->sq_tail, memory_order_acquire))
		more |= SPL_POLL_AGAIN;
	if (e->wheel.count > 0)
		more |= SPL_POLL_TIMERS;
	if (e->posted) {
		e->posted = 0;
		more |= SPL_POLL_DONE;
	}
	return more;
}

/* Queues a message; -EAGAIN when the ring is full. */
static int spl_queue(struct spl_engine *e, uint32_t op, const struct spl_job *job)
{
	uint32_t tail = atomic_load_explicit(&e->sq_tail, memory_order_relaxed);
	uint32_t head = atomic_load_explicit(&e->sq_head, memory_order_acquire);
	struct spl_msg *m;

	if (tail - head > e->sq_mask)
		return -EAGAIN;
	m = &e->sq[tail & e->sq_mask];
	m->op = op;
	m->job = *job;
	atomic_store_explicit(&e->sq_tail, tail + 1, memory_order_release);
	e->pushed = 1;
	return 0;
}

void spl_wake(struct spl_engine *e)
{
	if (e == NULL || e->inline_mode || !e->pushed)
		return; /* inline: the caller turns the engine, nobody to wake */
	e->pushed = 0;
	atomic_thread_fence(memory_order_seq_cst); /* pairs with the engine's, before its sleep */
	if (atomic_load_explicit(&e->sleeping, memory_order_relaxed))
		spl_signal(e->wake_fd);
}

/* Is `job` one the engine can run? (see struct spl_job and enum spl_phase) */
static int spl_job_valid(const struct spl_engine *e, const struct spl_job *job)
{
	int body = spl_has_body(job);

	if (job->flags & SPL_JOB_DISCARD) /* alone: a body read from src and dropped */
		return job->flags == SPL_JOB_DISCARD && job->src_fd >= 0 && job->dst_fd < 0 && job->head_fd < 0 &&
		       job->out_len == 0 && job->max_bytes > 0 && job->tls_ctx == 0;
	if (job->flags & SPL_JOB_TLS_CLOSE) /* alone: no phase, no other flag */
		return job->flags == SPL_JOB_TLS_CLOSE && job->src_fd >= 0 && job->src_gen != 0 &&
		       job->dst_fd < 0 && job->head_fd < 0 && job->out_len == 0 && job->max_bytes == 0;
	if (job->tls_ctx > SPL_TLS_CTXS || (job->tls_ctx != 0 && job->head_fd < 0))
		return 0;
	if ((job->flags & SPL_JOB_CHUNKED) && (job->flags & (SPL_JOB_TUNNEL | SPL_JOB_SHUT_WR_ON_EOF | SPL_JOB_COPY)))
		return 0;
	if (job->flags & SPL_JOB_TUNNEL) /* copied: through the out buffer, half a way */
		return job->src_fd >= 0 && job->dst_fd >= 0 && job->src_fd != job->dst_fd &&
		       job->out_len == 0 && job->head_fd < 0 &&
		       (!(job->flags & SPL_JOB_COPY) ||
			(job->out_buf >= 0 && (uint32_t)job->out_buf < e->cfg.nbufs && e->cfg.bufsize >= 2));
	if (!body && job->out_len == 0 && job->head_fd < 0)
		return 0; /* nothing to do */
	if (body && (job->src_fd < 0 || job->dst_fd < 0 || job->src_fd == job->dst_fd))
		return 0;
	if ((job->out_len > 0 || (job->flags & SPL_JOB_COPY)) &&
	    (job->out_buf < 0 || (uint32_t)job->out_buf >= e->cfg.nbufs || job->out_len > e->cfg.bufsize ||
	     job->dst_fd < 0))
		return 0;
	if (job->head_fd >= 0 && (e->cfg.nbufs == 0 || job->head_limit == 0 || job->head_limit > e->cfg.bufsize ||
				  (job->head_fd != job->src_fd && job->head_fd != job->dst_fd)))
		return 0;
	if (job->src_fd < 0 && job->dst_fd < 0)
		return 0;
	if ((job->flags & SPL_JOB_THEN_HEAD) &&
	    (job->dst_fd < 0 || job->head_fd >= 0 || job->next_id == 0 || job->next_id == job->id ||
	     e->cfg.nbufs == 0 || job->head_limit == 0 || job->head_limit > e->cfg.bufsize))
		return 0;
	if ((job->flags & SPL_JOB_RELAY) &&
	    ((job->flags & (SPL_JOB_THEN_HEAD | SPL_JOB_TUNNEL | SPL_JOB_CHUNKED)) || job->dst_fd < 0 ||
	     job->head_fd != job->dst_fd || job->out_buf < 0 || job->cli_fd < 0 || job->cli_fd == job->dst_fd ||
	     (job->src_fd >= 0 && job->src_fd != job->cli_fd) || job->next_id == 0 || job->next_id == job->id))
		return 0;
	return job->src_fd != job->dst_fd;
}

int spl_submit(struct spl_engine *e, const struct spl_job *job)
{
	int rc = spl_push(e, job);

	if (rc == 0)
		spl_wake(e);
	return rc;
}

int spl_push(struct spl_engine *e, const struct spl_job *job)
{
	int rc;

	if (e == NULL || job == NULL || !spl_job_valid(e, job))
		return -EINVAL;
	{
		/* a chained job posts two completions: the completion ring has room for maxjobs */
		unsigned n = (job->flags & (SPL_JOB_THEN_HEAD | SPL_JOB_RELAY)) ? 2 : 1;

		if (atomic_load_explicit(&e->inflight, memory_order_relaxed) + n > e->cfg.maxjobs)
			return -EAGAIN;
		rc = spl_queue(e, SPL_OP_SUBMIT, job);
		if (rc == 0)
			atomic_fetch_add_explicit(&e->inflight, n, memory_order_relaxed);
	}
	return rc;
}

int spl_credit(struct spl_engine *e, uint64_t head_id, int cli_fd, uint64_t id, int fd, uint32_t gen,
	       uint32_t connect_ms)
{
	struct spl_job job;
	int rc;

	if (e == NULL || head_id == 0 || cli_fd < 0 || (fd >= 0 && (id == 0 || fd == cli_fd)))
		return -EINVAL;
	if (fd >= 0 && atomic_load_explicit(&e->inflight, memory_order_relaxed) + 1 > e->cfg.maxjobs)
		return -EAGAIN; /* its completion needs room in the ring, as a job's */
	memset(&job, 0, sizeof(job));
	job.id = id;
	job.dst_fd = fd;
	job.dst_gen = gen;
	job.dst_idle_ms = fd >= 0 ? connect_ms : 0;
	job.src_fd = cli_fd;
	job.next_id = head_id;
	rc = spl_queue(e, SPL_OP_CREDIT, &job);
	if (rc == 0 && fd >= 0)
		atomic_fetch_add_explicit(&e->inflight, 1, memory_order_relaxed);
	return rc;
}

int spl_tls_info(const struct spl_engine *e, int fd, uint32_t gen, struct spl_tls_info *out)
{
	struct spl_tls *t;

	if (e == NULL || out == NULL)
		return -EINVAL;
	t = spl_tls_of(e, fd, gen);
	return t == NULL ? -ENOENT : spl_tls_info_of(t, out);
}

int spl_engine_tls_ctx(struct spl_engine *e, uint32_t idx, struct spl_tls_ctx *c)
{
	if (e == NULL || c == NULL || idx >= SPL_TLS_CTXS)
		return -EINVAL;
	if (e->tls_ctxs[idx] != NULL)
		return -EBUSY;
	e->tls_ctxs[idx] = c; /* seen by the engine thread through the submit ring's ordering */
	return 0;
}

int spl_xrules(struct spl_engine *e, uint32_t xbe, const uint8_t *prog, uint32_t len)
{
	if (e == NULL || xbe >= SPL_X_BACKENDS || spl_xrules_check(prog, len) != 0)
		return -EINVAL;
	if (len != 0)
		memcpy(e->xrules[xbe].prog, prog, len);
	e->xrules[xbe].len = len;
	return 0;
}

int spl_cancel(struct spl_engine *e, uint64_t id)
{
	struct spl_job job;
	int rc;

	if (e == NULL)
		return -EINVAL;
	memset(&job, 0, sizeof(job));
	job.id = id;
	rc = spl_queue(e, SPL_OP_CANCEL, &job);
	if (rc == 0)
		spl_wake(e);
	return rc;
}

int spl_reap(struct spl_engine *e, struct spl_done *out, int max)
{
	uint32_t head, tail;
	int n = 0;

	if (e == NULL || out == NULL || max < 0)
		return -EINVAL;
	if (!e->inline_mode)
		spl_drain(e->done_fd); /* inline: never signalled */
	head = atomic_load_explicit(&e->cq_head, memory_order_relaxed);
	tail = atomic_load_explicit(&e->cq_tail, memory_order_acquire);
	while (head != tail && n < max) {
		out[n++] = e->cq[head & e->cq_mask];
		head++;
	}
	atomic_store_explicit(&e->cq_head, head, memory_order_release);
	atomic_fetch_sub_explicit(&e->inflight, (unsigned)n, memory_order_relaxed);
	/* more left than `max`: keep the eventfd readable so the caller comes back */
	if (head != tail && !e->inline_mode)
		spl_signal(e->done_fd);
	return n;
}

char *spl_engine_obuf(struct spl_engine *e, int32_t idx)
{
	if (e == NULL || idx < 0 || (uint32_t)idx >= e->cfg.nbufs)
		return NULL;
	return e->obufs + (size_t)idx * e->cfg.bufsize;
}

const char *spl_engine_hbuf(const struct spl_engine *e, int32_t idx)
{
	if (e == NULL || idx < 0 || (uint32_t)idx >= e->cfg.nbufs)
		return NULL;
	return spl_hdata(e, idx);
}

void spl_engine_obuf_drop(struct spl_engine *e, int32_t idx)
{
	if (e != NULL && idx >= 0 && (uint32_t)idx < e->cfg.nbufs)
		spl_pages_drop(e->obufs + (size_t)idx * e->cfg.bufsize, e->cfg.bufsize);
}

const uint32_t *spl_engine_hidx(const struct spl_engine *e, int32_t idx)
{
	if (e == NULL || idx < 0 || (uint32_t)idx >= e->cfg.nbufs)
		return NULL;
	return spl_hidx(e, idx);
}

int spl_job_relaying(const struct spl_engine *e, uint64_t id)
{
	uint32_t i;

	if (e == NULL)
		return 0;
	for (i = 0; i < e->cfg.maxjobs; i++) {
		const struct spl_slot *s = &e->slots[i];

		if (s->active && s->job.id == id)
			return s->rbuf != -1;
	}
	return 0;
}

int spl_fd_quiet(const struct spl_engine *e, int fd, uint32_t gen)
{
	const struct spl_fdreg *r;
	int k;

	if (e == NULL || fd < 0 || (uint32_t)fd >= e->nfds || gen == 0)
		return 0;
	r = &e->fds[fd];
	/* gen and users were last written by the engine before it posted the completion that
	 * the caller reaped (the completion ring orders them); quiet may change at any time */
	if (r->gen != gen)
		return 0;
	for (k = 0; k < SPL_FD_USERS; k++)
		if (r->users[k] != 0)
			return 0;
	return atomic_load_explicit(&r->quiet, memory_order_relaxed);
}

int spl_hbuf_release(struct spl_engine *e, int32_t idx)
{
	uint32_t tail;

	if (e == NULL || idx < 0 || (uint32_t)idx >= e->cfg.nbufs)
		return -EINVAL;
	tail = atomic_load_explicit(&e->rel_tail, memory_order_relaxed);
	e->rel[tail & e->rel_mask] = (uint32_t)idx;
	atomic_store_explicit(&e->rel_tail, tail + 1, memory_order_release);
	return 0;
}

void spl_engine_stats(const struct spl_engine *e, struct spl_engine_stats *out)
{
	if (e == NULL || out == NULL)
		return;
	memset(out, 0, sizeof(*out));
	out->spliced_bytes = atomic_load_explicit(&e->st_spliced, memory_order_relaxed);
	out->splice_calls = atomic_load_explicit(&e->st_calls, memory_order_relaxed);
	out->eagain_waits = atomic_load_explicit(&e->st_eagain, memory_order_relaxed);
	out->jobs_done = atomic_load_explicit(&e->st_done, memory_order_relaxed);
	out->jobs_nopipe = atomic_load_explicit(&e->st_nopipe, memory_order_relaxed);
	out->timeouts = atomic_load_explicit(&e->st_timeouts, memory_order_relaxed);
	out->jobs_active = atomic_load_explicit(&e->st_active, memory_order_relaxed);
	out->pipes_used = atomic_load_explicit(&e->st_pipes_used, memory_order_relaxed);
	out->pipes_free = atomic_load_explicit(&e->st_pipes_free, memory_order_relaxed);
	out->pipes_max = e->cfg.maxpipes;
	out->pipe_size = atomic_load_explicit(&e->st_pipe_size, memory_order_relaxed);
	out->pipes_killed = atomic_load_explicit(&e->st_killed, memory_order_relaxed);
}

void spl_engine_free(struct spl_engine *e)
{
	if (e == NULL)
		return;
	if (!e->inline_mode) {
		atomic_store_explicit(&e->stop, 1, memory_order_release);
		spl_signal(e->wake_fd);
		pthread_join(e->thread, NULL);
	}
	spl_engine_release(e);
}
