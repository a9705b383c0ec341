/*
 * splicer native engine - public API.
 *
 * The splice pump moves bytes from one socket to another through a kernel pipe with
 * splice(2), so the payload never enters user space. Python drives it from its event loop:
 * it calls spl_pump() when the source is readable or the destination writable, and the pump
 * says on which side it would block. Every function returns 0 or -errno unless stated.
 * No function allocates memory after spl_pool_new(); none calls back into Python.
 */
#ifndef SPLICER_ENGINE_H
#define SPLICER_ENGINE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define SPL_ENGINE_ABI 16

#define SPL_TLS_CTXS 64 /* TLS contexts an engine holds (spl_engine_tls_ctx) */

/* Why spl_pump() returned (struct spl_move.how). */
enum spl_stop {
	SPL_STOP_DONE = 0,      /* max_in bytes were read from src and all of them written to dst */
	SPL_STOP_SRC_AGAIN = 1, /* src has nothing to read now (EAGAIN), pipe is empty: wait readable */
	SPL_STOP_DST_AGAIN = 2, /* dst cannot take more now (EAGAIN), pipe holds data: wait writable */
	SPL_STOP_EOF = 3,       /* src reached end of stream and the pipe is empty (all written) */
	SPL_STOP_BUDGET = 4,    /* moved `budget` bytes this call: call again soon (fairness) */
	SPL_STOP_SRC_ERROR = 5, /* splice from src failed: err holds the errno */
	SPL_STOP_DST_ERROR = 6, /* splice to dst failed: err holds the errno */
};

/* One kernel pipe of the pool (haproxy's struct pipe). */
struct spl_pipe {
	int prod;      /* write end: splice(src -> prod) */
	int cons;      /* read end: splice(cons -> dst) */
	uint32_t data; /* bytes currently held in the pipe */
	uint32_t size; /* capacity in bytes as granted by F_SETPIPE_SZ (or the default) */
	int32_t next;  /* index of the next free pipe in the pool, -1 at the end (pool-private) */
	int32_t index; /* this pipe's slot in the pool (pool-private) */
};

/* Result of one spl_pump() call. */
struct spl_move {
	uint64_t bytes_in;  /* bytes spliced from src into the pipe during this call */
	uint64_t bytes_out; /* bytes spliced from the pipe into dst during this call (the only "sent" bytes) */
	int32_t err;  /* positive errno when how is SPL_STOP_*_ERROR, else 0 */
	uint32_t how; /* enum spl_stop */
};

/* Pool counters, readable at any time. */
struct spl_stats {
	uint64_t spliced_bytes; /* bytes written to a destination through a pipe */
	uint64_t splice_calls;  /* splice(2) calls made, both halves */
	uint64_t eagain_waits;  /* pumps that stopped on EAGAIN of either side */
	uint32_t pipes_used;    /* pipes currently handed out */
	uint32_t pipes_free;    /* pipes created and sitting in the free list */
	uint32_t pipes_max;     /* the pool's limit (tune.maxpipes) */
	uint32_t pipe_size;     /* bytes per pipe actually granted by the kernel */
	uint64_t pipes_killed;  /* pipes closed because they were returned still holding data */
	uint64_t pipe_failures; /* pipe creation failures (EMFILE, ENFILE...) */
};

struct spl_pool;

/* Creates a pool of at most `maxpipes` pipes of `pipesize` bytes each (0 = kernel default).
 * Pipes are created lazily, the slot table is allocated here once. Returns 0 and sets *out,
 * or -ENOMEM / -EINVAL. The caller owns the pool and frees it with spl_pool_free(). */
int spl_pool_new(uint32_t pipesize, uint32_t maxpipes, struct spl_pool **out);

/* Closes every pipe and frees the pool. Pipes still handed out are closed too. */
void spl_pool_free(struct spl_pool *pool);

/* Hands out an empty pipe. Returns 0 and sets *out, -EAGAIN when the pool is at maxpipes
 * (the caller copies in user space instead), or -errno when pipe2() failed. */
int spl_pipe_get(struct spl_pool *pool, struct spl_pipe **out);

/* Returns a pipe to the pool. A pipe that still holds data is closed, never recycled, as its
 * bytes belong to a stream that is gone (haproxy put_pipe()). */
void spl_pipe_put(struct spl_pool *pool, struct spl_pipe *pipe);

/* Moves up to `max_in` bytes from `src` to `dst` (both non-blocking sockets) through `pipe`
 * (max_in == UINT64_MAX: until EOF), first flushing what the pipe already holds. Stops after
 * `budget` bytes written (0 = no budget) so one stream cannot hold the event loop. Bytes count
 * as sent only once spliced into dst; a FIN from src is reported (SPL_STOP_EOF) only once the
 * pipe is empty, never while it still holds data (haproxy #2505). Returns 0 and fills *mv;
 * -EINVAL on bad arguments. EINTR is retried; EAGAIN is reported in mv->how. */
int spl_pump(struct spl_pool *pool, struct spl_pipe *pipe, int src, int dst,
	     uint64_t max_in, uint64_t budget, struct spl_move *mv);

/* Copies the pool's counters into *out. */
void spl_pool_stats(const struct spl_pool *pool, struct spl_stats *out);

/* ---- chunked framing (RFC 9112 section 7.1) --------------------------------------------- */

#define SPL_CHUNK_MAX_LINE 4096      /* longest chunk-size or trailer line, with its CRLF */
#define SPL_CHUNK_MAX_TRAILERS 16384 /* largest trailer section, bytes */

/* Where a chunked body's reader is (struct spl_chunk.state). */
enum spl_chunk_state {
	SPL_CHUNK_SIZE = 0,    /* a chunk-size line comes next */
	SPL_CHUNK_DATA = 1,    /* `data` bytes of chunk data come next (then SPL_CHUNK_CRLF) */
	SPL_CHUNK_CRLF = 2,    /* the CRLF that ends a chunk's data comes next */
	SPL_CHUNK_TRAILER = 3, /* trailer field lines, up to an empty line, come next */
	SPL_CHUNK_END = 4,     /* the message is complete */
};

/* A chunked body's reader: the same rules as splicer/http/chunked.py's ChunkedReader. */
struct spl_chunk {
	uint64_t data;          /* SPL_CHUNK_DATA: the chunk's size in bytes */
	uint32_t state;         /* enum spl_chunk_state */
	uint32_t trailer_bytes; /* trailer section bytes so far */
};

/* Feeds one whole line (through its first LF) in state SIZE, CRLF or TRAILER; the caller
 * moves the chunk data itself and then sets state to SPL_CHUNK_CRLF. Strict: CRLF line
 * endings, no control character but HTAB, hex sizes of at most 16 digits and 2^63-1, lines
 * of at most SPL_CHUNK_MAX_LINE bytes, trailer lines that are field lines (a token, then a
 * colon), a trailer section of at most SPL_CHUNK_MAX_TRAILERS bytes. Returns 0, -EPROTO for a framing
 * error (the message must be abandoned), -EINVAL when called in state DATA or END. */
int spl_chunk_line(struct spl_chunk *c, const char *line, size_t len);

/* ---- log lines as datagrams (datagram.c) ------------------------------------------------ */

/* spl_send_lines() flags. */
enum spl_lines_flag {
	SPL_LINES_SKIP_REFUSED = 1, /* ECONNREFUSED (UDP: an ICMP unreachable for an earlier
	                             * datagram) drops one datagram, as EAGAIN does */
};

/* What spl_send_lines() did. */
struct spl_lines {
	uint32_t sent; /* datagrams the kernel took */
	uint32_t lost; /* datagrams dropped: the socket could not take them now (EAGAIN, ENOBUFS),
	                * or one was too large for a datagram (EMSGSIZE) */
	int32_t err;   /* 0, or the errno that stopped it: the datagrams after sent + lost were not sent */
};

/* Sends buf[0..len) on the connected datagram socket fd as one datagram per line (each
 * through its LF; a last piece without one is a datagram too), a line longer than maxlen
 * bytes cut to maxlen - 1 bytes and its LF (maxlen 0: no limit). Never waits (MSG_DONTWAIT):
 * up to 64 datagrams per sendmmsg(2) call; EINTR is retried. Returns 0 (out says what
 * happened) or -EINVAL (fd < 0, out NULL, buf NULL with len > 0, maxlen 1). */
int spl_send_lines(int fd, const char *buf, size_t len, uint32_t maxlen, uint32_t flags,
		   struct spl_lines *out);

/* ---- accepting connections (accept.c) --------------------------------------------------- */

/* spl_accept() flags. */
enum spl_accept_flag {
	SPL_ACCEPT_NODELAY = 1, /* set TCP_NODELAY on each TCP connection accepted */
};

/* One connection spl_accept() took. */
struct spl_accepted {
	int32_t fd;      /* the connection, non-blocking and close-on-exec; the caller owns it */
	uint16_t family; /* the peer's address family (AF_INET, AF_INET6, AF_UNIX) */
	uint16_t port;   /* AF_INET: the peer's port (host order); otherwise 0 */
	uint32_t addr;   /* AF_INET: the peer's IPv4 address (host order); otherwise 0 */
};

/* Accepts up to max connections waiting on the non-blocking listening socket lfd into
 * out[0..max) (accept4(2) with SOCK_NONBLOCK | SOCK_CLOEXEC; flags: enum spl_accept_flag).
 * EINTR is retried and ECONNABORTED (a connection reset while it waited) skipped. Returns
 * how many were accepted (0: none waits), or -errno when the first accept failed (EMFILE,
 * ENFILE, ENOBUFS, ENOMEM, ...); a failure after some were taken ends the batch and comes
 * again on the next call. -EINVAL for lfd < 0 or out NULL with max > 0. */
int spl_accept(int lfd, struct spl_accepted *out, uint32_t max, uint32_t flags);

/* ---- TLS contexts (tls.c) ---------------------------------------------------------------- */

struct spl_tls_ctx;

/* 1 when the engine was built with OpenSSL, else 0 (every TLS call then fails -ENOTSUP). */
int spl_tls_available(void);

/* A server-side TLS context from PEM files: the certificate chain (leaf first) in cert_file,
 * the private key in key_file (NULL or "": in cert_file too, as haproxy's `crt` reads one
 * PEM), checked to match. TLS 1.2 at least, no renegotiation. Returns 0 and *out, or -errno
 * with a line of text in err[0..errlen) naming the file and OpenSSL's reason (-EINVAL: a
 * file missing, unreadable or not PEM, or a key that does not match; -ENOTSUP: no OpenSSL).
 * Free it with spl_tls_ctx_free() once no engine uses it. */
int spl_tls_ctx_new(const char *cert_file, const char *key_file, char *err, size_t errlen,
		    struct spl_tls_ctx **out);
void spl_tls_ctx_free(struct spl_tls_ctx *c);

/* Makes the bind whose default context is `dflt` answer server name `name` (SNI, RFC 6066
 * section 3) with context c: an exact name ("www.example.com", any case), or a wildcard for
 * one first label ("*.example.com"); an exact name wins over a wildcard, and a name that
 * none matches, or no name, gets dflt (haproxy's certificate selection). Done at start,
 * before any session; c must outlive dflt. -EINVAL for an empty, too long or bad name. */
int spl_tls_ctx_sni(struct spl_tls_ctx *dflt, const char *name, struct spl_tls_ctx *c);

/* The protocols the context offers in ALPN (RFC 7301), in the protocol's wire format
 * (length-prefixed names, "\x08http/1.1"), for the whole bind it is the default context of
 * (the contexts spl_tls_ctx_sni() hands names on to offer the same); the first of them the
 * client offers is selected; none in common, or len 0 (no `alpn`): the answer has no ALPN. -EINVAL for a
 * malformed list or one over 255 bytes. */
int spl_tls_ctx_alpn(struct spl_tls_ctx *c, const uint8_t *protos, uint32_t len);

/* The server names of the context's certificate, one per line, into out[0..outlen): its
 * subjectAltName DNS names, or its subject's CN when it has none (what haproxy's `crt`
 * answers to without a crt-list filter). Returns how many, or -errno. */
int spl_tls_ctx_names(const struct spl_tls_ctx *c, char *out, size_t outlen);

/* Client certificates (haproxy's bind `verify none|optional|required`, `ca-file`,
 * `crl-file`): none asks for none; optional asks and verifies one the client sends;
 * required refuses a handshake without one. The CAs of ca_file are trusted and named in
 * the request; crl_file's revocations are checked for the whole chain. A certificate that
 * fails verification fails the handshake (EPROTO). Returns 0, or -EINVAL with the reason in
 * err[0..errlen) (a mode without a ca-file, a file that cannot be loaded). */
enum spl_tls_verify {
	SPL_TLS_VERIFY_NONE = 0,
	SPL_TLS_VERIFY_OPTIONAL = 1,
	SPL_TLS_VERIFY_REQUIRED = 2,
};
int spl_tls_ctx_verify(struct spl_tls_ctx *c, uint32_t mode, const char *ca_file, const char *crl_file,
		       char *err, size_t errlen);

/* What a session's handshake settled, for the ssl_fc_* and ssl_c_* fetches and the log. */
struct spl_tls_info {
	uint32_t version;    /* 0x0303 TLS 1.2, 0x0304 TLS 1.3 (ssl_fc_protocol) */
	uint32_t reused;     /* 1: a resumed session (ssl_fc_session_reused) */
	uint32_t cert_used;  /* 1: the client sent a certificate (ssl_c_used) */
	int32_t verify;      /* its verification's X509_V_* result, 0 = OK (ssl_c_verify) */
	char cipher[64];     /* ssl_fc_cipher */
	char sni[256];       /* ssl_fc_sni ("" = none) */
	char alpn[32];       /* ssl_fc_alpn ("" = none) */
	char c_s_dn[256];    /* ssl_c_s_dn, ssl_c_i_dn: one line, "" without a certificate */
	char c_i_dn[256];
	uint8_t c_sha1[20];  /* ssl_c_sha1 */
};

/* TLS versions (SSL_CTX_set_{min,max}_proto_version values: 0x0303 TLS 1.2, 0x0304 TLS 1.3;
 * 0 = leave: TLS 1.2 floor, no ceiling; haproxy's ssl-min-ver / ssl-max-ver), the TLS 1.2
 * cipher list (OpenSSL's syntax; haproxy's `ciphers`), the TLS 1.3 cipher suites
 * (`ciphersuites`), the key exchange groups (`curves`) (NULL or "" = OpenSSL's defaults),
 * the session cache's entries (`tune.ssl.cachesize`; 0 = OpenSSL's 20,480) and a session's
 * lifetime in seconds (`tune.ssl.lifetime`; 0 = OpenSSL's 300). Returns 0, or -EINVAL with
 * the reason in err[0..errlen) (an unknown version, cipher, suite or curve). */
int spl_tls_ctx_tune(struct spl_tls_ctx *c, uint32_t min_ver, uint32_t max_ver, const char *ciphers,
		     const char *suites, const char *curves, uint32_t cache_size, uint32_t lifetime_s,
		     char *err, size_t errlen);

/* ---- the engine ------------------------------------------------------------------------ */

/* Job flags (struct spl_job.flags). */
enum spl_job_flag {
	SPL_JOB_TUNNEL = 1,         /* two-way: src<->dst until both directions reached EOF;
	                             * with SPL_JOB_COPY, copied through the out buffer (half a
	                             * way: a TLS side, whose records a pipe cannot carry) */
	SPL_JOB_SHUT_WR_ON_EOF = 2, /* one-way until EOF: shutdown(dst, SHUT_WR) at EOF */
	SPL_JOB_CHUNKED = 4,        /* one chunked body, forwarded verbatim: the engine reads the
	                             * framing lines (spl_chunk_line) and splices lines and data;
	                             * max_bytes is ignored */
	SPL_JOB_COPY = 8,           /* move the body by copying it through the job's out buffer
	                             * (recv/send) rather than through a pipe: cheaper for small
	                             * bodies; needs out_buf; not with CHUNKED */
	SPL_JOB_SKIP_EMPTY = 16,    /* head phase: drop empty lines before the head (a request:
	                             * RFC 9112 section 2.2) */
	SPL_JOB_THEN_HEAD = 32,     /* once every phase completed, post this job's completion and
	                             * go on as job `next_id`: a head-only job reading the next
	                             * request head from dst_fd (head_first_ms, head_ms, head_limit,
	                             * empty lines skipped); src_fd is let go with the first
	                             * completion. Ended otherwise, next_id's completion follows at
	                             * once as SPL_END_CANCELLED. Counts as two jobs in flight. */
	SPL_JOB_RELAY = 64,         /* a request job (its head phase reads the response head from
	                             * dst_fd, the server): when that head is one spl_h1_relay()
	                             * forwards (plain, framing known, status <= relay_status_max),
	                             * the engine sends it on to cli_fd, moves its body server ->
	                             * client (spliced from splice_min bytes, else copied) and goes
	                             * on as head job next_id on cli_fd (SPL_JOB_THEN_HEAD with
	                             * next_first_ms, next_ms, head_limit; not with
	                             * SPL_RELAY_CLOSE_CLIENT), with no completion in
	                             * between: struct spl_done.relayed says it did. Otherwise the
	                             * job ends with the head as without the flag, and next_id's
	                             * completion follows as SPL_END_CANCELLED. Counts as two jobs. */
	SPL_JOB_DISCARD = 256,      /* alone (dst_fd -1): reads src and drops up to max_bytes
	                             * (UINT64_MAX: until its end of stream), in the kernel (recv
	                             * MSG_TRUNC) or through its TLS session; bytes_fwd counts
	                             * them; src_idle_ms bounds each wait, dst_idle_ms the whole
	                             * discard (a lingering close, RFC 9112 section 9.6; a body
	                             * answered without being read) */
	SPL_JOB_TLS_CLOSE = 128,    /* no phase: src_fd's TLS session (src_gen) sends close_notify
	                             * (one try) and is freed; the caller closes the socket after
	                             * the completion, and a job naming it meanwhile (the same
	                             * generation) moves nothing (-ESHUTDOWN: no plain byte where
	                             * records are expected). -EBUSY while a job uses the socket.
	                             * DONE also when the socket had no session. */
};

/* The phases of a job, in order; each is skipped when the job does not ask for it:
 * SEND writes out_len bytes of the out buffer (a head) to dst_fd, BODY moves the body
 * src_fd -> dst_fd (max_bytes, chunked or until EOF; none when max_bytes is 0), HEAD reads
 * one HTTP head from head_fd into a head buffer of the engine. struct spl_done.phase tells
 * where a job ended (SPL_PHASE_END: every phase completed). */
enum spl_phase {
	SPL_PHASE_SEND = 0,
	SPL_PHASE_BODY = 1,
	SPL_PHASE_HEAD = 2,
	SPL_PHASE_END = 3,
};

/* How a job ended (struct spl_done.how). */
enum spl_end {
	SPL_END_DONE = 0,        /* every byte moved (count reached, or EOF of an until-EOF job) */
	SPL_END_PEER_CLOSED = 1, /* src reached EOF before max_bytes: the peer closed early */
	SPL_END_ERROR = 2,       /* a splice failed; res = -errno, side tells which fd */
	SPL_END_TIMEOUT = 3,     /* the side in `side` was idle past its idle_ms */
	SPL_END_CANCELLED = 4,   /* spl_cancel() */
	SPL_END_NOPIPE = 5,      /* no pipe free (tune.maxpipes): nothing moved, copy instead */
	SPL_END_BAD_FRAMING = 6, /* SPL_JOB_CHUNKED: invalid chunked framing from src (-EPROTO) */
	SPL_END_TOO_LARGE = 7,   /* head phase: no end of head within head_limit bytes (-EMSGSIZE) */
};

/* Which fd an end refers to (struct spl_done.side). */
enum spl_side {
	SPL_SIDE_SRC = 0,
	SPL_SIDE_DST = 1,
};

/* A job: move bytes from src_fd to dst_fd (or both ways for a tunnel). The fds stay owned by
 * the caller, who must neither use nor close them until the job's completion is reaped. */
struct spl_job {
	uint64_t id;          /* caller's tag, echoed in the completion (liburing's user_data) */
	int32_t src_fd;       /* non-blocking socket to read from (tunnel: side A) */
	int32_t dst_fd;       /* non-blocking socket to write to (tunnel: side B) */
	uint64_t max_bytes;   /* bytes to move src->dst; UINT64_MAX = until EOF; ignored for tunnels */
	uint32_t flags;       /* enum spl_job_flag */
	uint32_t src_idle_ms; /* max wait on src for data, ms (0 = none); tunnel: idle of both ways.
	                       * A body's wait restarts only once 1 KiB moved (a minimum rate). */
	uint32_t dst_idle_ms; /* max wait on dst for room, ms (0 = none); unused for tunnels */
	uint32_t out_len;     /* SEND phase: bytes of out_buf to write to dst first (0 = none) */
	int32_t out_buf;      /* index of the caller's out buffer (spl_engine_obuf), -1 = none */
	int32_t head_fd;      /* HEAD phase: read one head from this fd (src_fd or dst_fd, or
	                       * the only fd of a head-only job), -1 = no head phase */
	uint32_t head_first_ms; /* HEAD: max wait for the head's first byte, ms (0 = none) */
	uint32_t head_ms;     /* HEAD: max time for the whole head from its first byte, ms */
	uint32_t head_limit;  /* HEAD: largest head accepted, bytes (<= spl_cfg.bufsize) */
	uint32_t src_gen;     /* the caller's generation of the socket src_fd names: the same
	                       * non-zero value for every job on one socket keeps it registered
	                       * in the engine's epoll between jobs; a new value for a new socket
	                       * under a reused fd number; 0 = register for this job only */
	uint32_t dst_gen;     /* the same for dst_fd */
	uint32_t relay_status_max; /* SPL_JOB_RELAY: the highest status relayed (a status the
	                             * caller may retry on is left to it) */
	uint64_t next_id;     /* SPL_JOB_THEN_HEAD, SPL_JOB_RELAY: the id of the head job that follows */
	int32_t cli_fd;       /* SPL_JOB_RELAY: the client socket a relayed response goes to */
	uint32_t cli_gen;     /* its generation (as src_gen) */
	uint32_t cli_idle_ms; /* its idle timeout while the response goes out, ms (0 = none);
	                       * the server side's is dst_idle_ms */
	uint32_t next_first_ms; /* the next request head's first byte, ms (head_first_ms after) */
	uint32_t next_ms;     /* the next request head, whole, ms (head_ms after) */
	uint32_t relay_flags; /* enum spl_relay_flag */
	uint64_t splice_min;  /* a relayed body of at least this many bytes is spliced, a
	                       * smaller one copied; UINT64_MAX = always copied */
	uint32_t xbe;         /* SPL_RELAY_EXPRESS: the express backend whose credits the
	                       * client's next requests use (< SPL_X_BACKENDS) */
	uint32_t xaddr;       /* SPL_RELAY_EXPRESS: the client's IPv4 address (host order), for
	                       * SPL_RELAY_XFF and the request rules' src (spl_xrules) */
	uint32_t xmaxhdr;     /* SPL_RELAY_EXPRESS: most fields an express request may have
	                       * (tune.http.maxhdr); one with more goes to the caller */
	uint32_t tls_ctx;     /* 0, or 1 + the index of a context set with spl_engine_tls_ctx():
	                       * head_fd is the server side of a TLS session with it (made on the
	                       * first job naming it, kept while its generation lasts, so head_fd
	                       * needs a non-zero generation, and every later job must name the
	                       * socket with it: another generation, 0 included, means another
	                       * socket, and ends the session); every read and write of a socket
	                       * with a session goes through it, and a body on it is copied
	                       * (SPL_JOB_COPY; a spliced or chunked one ends -EPROTONOSUPPORT) */
};

/* struct spl_job.relay_flags and struct spl_done.relay_flags. */
enum spl_relay_flag {
	SPL_RELAY_NO_BODY = 1, /* job: the request was HEAD: no response has a body */
	SPL_RELAY_SPLICED = 2, /* completion: the relayed body went through a pipe */
	SPL_RELAY_CLOSE_CLIENT = 8, /* job: the client connection ends after this response: the
	                        * head gets `Connection: close` and no next head is read (next_id's
	                        * completion comes as SPL_END_CANCELLED when the relay starts) */
	SPL_RELAY_KEEP_ALIVE = 16, /* job: an HTTP/1.0 client that keeps its connection: the head
	                        * gets `Connection: keep-alive` */
	SPL_RELAY_EXPRESS = 32, /* job: the client's next requests take the express lane while
	                        * they qualify (see "the express lane" below), on backend xbe;
	                        * on a head-only job, its own head may already */
	SPL_RELAY_XFF = 64,     /* job, with EXPRESS: express requests get `X-Forwarded-For: xaddr` */
	SPL_RELAY_SERVER_CLOSE = 128, /* completion, a credit's SPL_X_DONE: the response said
	                        * `Connection: close`: its server connection is not to be reused */
	SPL_RELAY_XLOG = 256,   /* job, with EXPRESS: each express request's SPL_X_DONE carries
	                        * its request head (head_buf, head_len), for the access log */
};

/* A completion, one per submitted job. */
struct spl_done {
	uint64_t id;        /* the job's id */
	uint64_t bytes_fwd; /* bytes written to dst (src->dst) */
	uint64_t bytes_rev; /* tunnel: bytes written to src (dst->src) */
	int32_t res;        /* 0 or -errno */
	uint32_t how;       /* enum spl_end */
	uint32_t side;      /* enum spl_side: which fd failed or timed out */
	uint32_t phase;     /* enum spl_phase: the phase the job ended in (END: all completed) */
	int32_t head_buf;   /* head buffer holding the head's bytes (spl_engine_hbuf), -1 = none;
	                     * the caller owns it now and gives it back with spl_hbuf_release() */
	uint32_t head_len;  /* head bytes read: the whole head (DONE), or those read before an
	                     * end of stream or timeout (empty lines skipped are not counted) */
	uint32_t head_info; /* SPL_END_TOO_LARGE: 1 when not even the first line ended */
	uint32_t head_more; /* DONE: bytes the socket already held behind the head (a body, a
	                     * pipelined request) when the head was read, as far as the head
	                     * buffer saw (at most head_limit + 1 - head_len) */
	uint32_t relayed;   /* SPL_JOB_RELAY: bytes of the response head as forwarded, 0 when
	                     * the engine did not relay it. Relayed, head_buf holds the response
	                     * head as the server sent it (indexed), phase SEND or BODY tell
	                     * where the relay failed (END: all went), bytes_fwd the body's bytes */
	uint32_t relay_flags; /* enum spl_relay_flag */
	uint32_t relay_ms;  /* relayed: ms from the response head's end to this completion */
	uint32_t xkind;     /* enum spl_xkind: 0 for a job's completion, else what the express
	                     * lane says of a credit (id: the credit's) or of the head job whose
	                     * request it handed over (SPL_X_HANDOVER, id: the head job's) */
	uint32_t xstatus;   /* SPL_X_DONE: the response's status */
	uint32_t xreq;      /* SPL_X_DONE: bytes of the request head as the client sent it */
	uint64_t xother;    /* a credit's SPL_X_DONE / SPL_X_HANDOVER: the client's head job id */
};

/* ---- the express lane ---------------------------------------------------------------------
 * A client connection whose relayed response was submitted with SPL_RELAY_EXPRESS has its
 * next requests routed by the engine itself while they qualify: a whole head (SPL_H1_OK,
 * HTTP/1.1, Host, plain field lines, at most xmaxhdr of them, no Transfer-Encoding, Expect,
 * Upgrade or hop-by-hop field but `Connection: keep-alive`) of a GET or HEAD without a body,
 * or of a POST, PUT, PATCH or DELETE whose Content-Length body (digits, no leading zero)
 * came whole with it and fits the buffer behind it (copied, sent with the head in one
 * send), whose target is plain: origin-form, without `%`, `;`, `#`, `\` or a "/."
 * (splicer/http/normalize.py ambiguity() then has nothing to say of it). For such a head
 * the head job posts SPL_X_WANT (id: the head job's; not its end; bytes_rev: the request
 * body's length, which a new connection's credit may not carry) and waits for its credit:
 * the server connection the caller picks for the request and lends it (spl_credit), or a
 * refusal (spl_credit with fd -1: the head then ends the head job as usual). With it, the
 * engine sends the head (without its Connection field, with its express backend's request
 * rules made on it (spl_xrules) and X-Forwarded-For under SPL_RELAY_XFF: spl_xhead_write;
 * a head whose edited form does not fit the buffer goes to the caller), reads and relays the response as SPL_JOB_RELAY does, and reads the
 * client's next head as the same head job. A credit ends in one completion (id: the
 * credit's, xkind): SPL_X_DONE, the request it served (xstatus, xreq, bytes_rev: its body,
 * relayed, bytes_fwd: the response's body, relay_ms, relay_flags: SPL_RELAY_SPLICED, and
 * SPL_RELAY_SERVER_CLOSE when the response said `Connection: close`; under SPL_RELAY_XLOG,
 * head_buf and head_len: the request head as the client sent it, else no head); SPL_X_UNUSED, given back unused
 * (its head job was over); SPL_X_DEAD, found closed or out of step (the head goes to the
 * caller); SPL_X_HANDOVER, the request went out on it but its response needs the caller
 * (not relayable, a timeout, an error before or during the relay, a cancel of the head job
 * under way: how SPL_END_CANCELLED): the completion says
 * what a RELAY job's would (how, res, side, phase, head_buf, relayed), and the client's
 * head job ends with xkind SPL_X_HANDOVER and the request head (head_more: its body's
 * bytes, which went with it), as if it had just read it.
 *
 * A head-only job (no dst_fd, head_fd = src_fd) submitted with SPL_RELAY_EXPRESS in
 * relay_flags and the relay fields a RELAY job has (cli_fd = src_fd, cli_gen, cli_idle_ms,
 * next_first_ms and next_ms for the heads after, relay_status_max, splice_min, xbe, xaddr,
 * xmaxhdr) is armed the same way from its own head on (a connection's first request); the
 * server's timeouts of its express requests are then its dst_idle_ms. A request with
 * `Connection: close` (and no byte behind it) qualifies too: its response goes out with
 * `Connection: close`, then the credit ends SPL_X_DONE and the head job ends with xkind
 * SPL_X_CLOSED (no head): the caller closes the client connection. */
struct spl_engine;

#define SPL_X_BACKENDS 64 /* express backends (struct spl_job.xbe) */

enum spl_xkind {
	SPL_X_NONE = 0,
	SPL_X_DONE = 1,
	SPL_X_UNUSED = 2,
	SPL_X_DEAD = 3,
	SPL_X_HANDOVER = 4,
	SPL_X_WANT = 5, /* a head job's: its request waits for its credit (not its end) */
	SPL_X_CLOSED = 6, /* a head job's end: its express request's response closed the client
	                   * connection (the client asked it): the caller closes the socket */
};

/* Lends the engine server connection `fd` (generation `gen`, as a job's) for the express
 * request head job `head_id` (reading client socket `cli_fd`) asked a credit for
 * (SPL_X_WANT), as credit `id` (non-zero, unique among those in flight); it counts as a job
 * in flight until its completion is reaped. fd -1 (id and gen 0) refuses: the head goes to
 * the caller. `connect_ms` > 0: `fd` is a new connection whose non-blocking connect() may
 * still be under way; the request is sent once it is established, within connect_ms
 * (`timeout connect`; else the credit ends SPL_X_HANDOVER in phase SEND with nothing
 * written: how SPL_END_TIMEOUT, or SPL_END_ERROR with res -errno of the failed connect);
 * 0: an established (idle) connection, checked before use (SPL_X_DEAD).
 * Returns 0, -EAGAIN (queue or jobs full), -EINVAL. Thread: the submitting thread; call
 * spl_wake() after a batch. */
int spl_credit(struct spl_engine *e, uint64_t head_id, int cli_fd, uint64_t id, int fd, uint32_t gen,
	       uint32_t connect_ms);

/* The request rules of express backend `xbe`: header edits made on each of its express
 * requests before it is sent, after its Connection field is gone and before
 * X-Forwarded-For (haproxy's `http-request set-header|add-header|del-header` without a
 * condition, as splicer/http/rules.py apply() makes them: splicer/engine/binding.py
 * xrules_program() writes the program from them). `prog[0..len)` is a sequence of ops:
 *   SPL_XOP_DEL, n, name[n]: every field named name (lower case; case-insensitive) goes,
 *       of the request's and of those earlier ops added;
 *   SPL_XOP_ADD, n, name[n], parts, then `parts` parts: the field `name: value` is added
 *       last, its value the parts joined:
 *     SPL_XPART_LIT, len (2 bytes, little endian), bytes[len]: literal text;
 *     SPL_XPART_HDR, occ (int8), n, name[n]: occurrence occ (1 the first, -1 the last) of
 *         the comma-separated values of the request's fields named name (lower case), each
 *         without its blanks, or nothing (haproxy's `req.hdr(name,occ)`); the request's
 *         fields as received: no op before it may have touched that name;
 *     SPL_XPART_SRC: the client's IPv4 address (xaddr), dotted (haproxy's `src`).
 * At most SPL_XRULES_MAX bytes and SPL_XRULES_ADDS ADD ops; len 0: no rules. A request
 * whose edited head would not fit the buffer goes to the caller. Call it before the first
 * job that names xbe; the program is then fixed. Returns 0 or -EINVAL (a bad program or
 * xbe). Thread: the submitting thread. */
#define SPL_XRULES_MAX 1024
#define SPL_XRULES_ADDS 64

enum spl_xop {
	SPL_XOP_DEL = 1,
	SPL_XOP_ADD = 2,
};

enum spl_xpart {
	SPL_XPART_LIT = 1,
	SPL_XPART_HDR = 2,
	SPL_XPART_SRC = 3,
};

int spl_xrules(struct spl_engine *e, uint32_t xbe, const uint8_t *prog, uint32_t len);

/* Sets context `idx` (< SPL_TLS_CTXS) of the engine, which jobs name with tls_ctx = idx + 1,
 * before any job names it; the caller keeps it alive while the engine lives. -EINVAL for a
 * bad index or a NULL context, -EBUSY when the index is set already. */
int spl_engine_tls_ctx(struct spl_engine *e, uint32_t idx, struct spl_tls_ctx *c);

/* The TLS session on `fd` (named with generation gen): what its handshake settled, once
 * the job whose read completed it has posted its completion. Read from the caller's thread
 * after reaping that completion. -ENOENT: no session, or no handshake through yet. */
int spl_tls_info(const struct spl_engine *e, int fd, uint32_t gen, struct spl_tls_info *out);

/* Whether the program prog[0..len) is a whole one spl_xrules() takes: 0, else -EINVAL.
 * Any thread (xhead.c). */
int spl_xrules_check(const uint8_t *prog, uint32_t len);

/* Whether the request head buf (indexed by spl_h1_parse() in idx) may take the express lane
 * with at most `maxhdr` fields (see "the express lane" above): sets *no_body for HEAD,
 * *body to its body's bytes and *close when it says `Connection: close`. Any thread. */
int spl_xhead_ok(const char *buf, const uint32_t *idx, uint32_t maxhdr, int *no_body, uint64_t *body,
		 int *close);

/* The request head buf[0..len) (indexed in idx; one spl_xhead_ok() takes) as the express
 * lane sends it, the same bytes as splicer/http/h1.py forwarded_request(), or
 * forward_request_head() with request rules: its request line and field lines as received
 * (SPL_H1_F_PLAIN: as splicer writes them), without the Connection field and those the
 * request rules prog[0..plen) (spl_xrules_check() took them) delete, then the fields they
 * add, then `X-Forwarded-For: addr` (addr: IPv4, host order) when xff. Writes it to
 * out[0..cap) (out NULL: nothing); returns its length, or 0 when it does not fit cap.
 * Any thread. */
uint32_t spl_xhead_write(const char *buf, uint32_t len, const uint32_t *idx, const uint8_t *prog, uint32_t plen,
			 int xff, uint32_t addr, char *out, uint32_t cap);

/* Engine settings. */
#define SPL_ENGINE_INLINE 1u /* struct spl_cfg.flags: no thread, the caller turns the engine */

struct spl_cfg {
	int32_t cpu;       /* CPU to pin the engine thread to, -1 = not pinned */
	uint32_t pipesize; /* tune.pipesize, bytes (0 = kernel default) */
	uint32_t maxpipes; /* tune.maxpipes */
	uint32_t maxjobs;  /* jobs in flight at most (submitted and not yet reaped) */
	uint32_t bufsize;  /* bytes of each head and out buffer (tune.bufsize), 0 = no buffers */
	uint32_t nbufs;    /* out buffers (the caller's) and head buffers (the engine's), each */
	uint32_t flags;    /* SPL_ENGINE_INLINE, or 0 for an engine thread */
};

/* Engine counters (read without locks; each value is updated atomically). */
struct spl_engine_stats {
	uint64_t spliced_bytes; /* bytes written to destinations through pipes */
	uint64_t splice_calls;  /* splice(2) calls */
	uint64_t eagain_waits;  /* pumps that stopped on EAGAIN */
	uint64_t jobs_done;     /* completions posted */
	uint64_t jobs_nopipe;   /* jobs refused for lack of a pipe */
	uint64_t timeouts;      /* jobs ended by an idle timeout */
	uint32_t jobs_active;   /* jobs running now */
	uint32_t pipes_used;    /* pipes lent to jobs now */
	uint32_t pipes_free;    /* created pipes in the free list */
	uint32_t pipes_max;     /* tune.maxpipes */
	uint32_t pipe_size;     /* bytes per pipe granted by the kernel */
	uint32_t pad;
	uint64_t pipes_killed;  /* pipes closed because a job ended with data in them */
};

struct spl_engine;

/* Starts an engine: its thread (pinned to cfg->cpu), epoll, eventfds, rings and pipe pool.
 * Returns 0 and sets *out, or -errno (-EINVAL for a bad cfg). Free with spl_engine_free(). */
int spl_engine_new(const struct spl_cfg *cfg, struct spl_engine **out);

/* The eventfd that becomes readable when completions are ready (for loop.add_reader).
 * Returns the fd (>= 0); it stays owned by the engine. */
int spl_engine_eventfd(const struct spl_engine *e);

/* Queues a job. Returns 0, -EAGAIN when maxjobs are in flight (the caller moves the bytes
 * itself), -EINVAL for a bad job. Thread: the single submitting thread only. Never blocks. */
int spl_submit(struct spl_engine *e, const struct spl_job *job);

/* Queues a job like spl_submit() but does not wake the engine: call spl_wake() once after a
 * batch of pushes (one wake-up, so the engine thread does not preempt the caller at every
 * job when both share a CPU). Same returns as spl_submit(). Thread: the submitting thread. */
int spl_push(struct spl_engine *e, const struct spl_job *job);

/* Wakes the engine when messages were queued since the last call and the engine sleeps
 * (one eventfd write at most; none while it is busy: it looks at its queue before sleeping).
 * Thread: the submitting thread. */
void spl_wake(struct spl_engine *e);

/* Asks the engine to stop job `id`; its completion (SPL_END_CANCELLED, or how it ended if it
 * ended first) still arrives and must be reaped before the fds are reused. Returns 0 or -EAGAIN
 * (queue full: try again after reaping). Thread: the submitting thread. */
int spl_cancel(struct spl_engine *e, uint64_t id);

/* Copies up to `max` completions into out[] and clears the eventfd. Returns how many (>= 0).
 * Thread: the submitting thread. */
int spl_reap(struct spl_engine *e, struct spl_done *out, int max);

/* The out buffer `idx` (0 <= idx < nbufs, bufsize bytes): the caller writes a head into it
 * before submitting a job that names it, and may reuse it once that job is reaped. NULL for
 * a bad index. Thread: the submitting thread. */
char *spl_engine_obuf(struct spl_engine *e, int32_t idx);

/* Gives the pages of out buffer `idx` back to the kernel (madvise MADV_DONTNEED): it reads
 * as zeros when next written. Only for a buffer no job names now (the caller's free list).
 * A bad index does nothing. Thread: the submitting thread. */
void spl_engine_obuf_drop(struct spl_engine *e, int32_t idx);

/* The head buffer `idx` named by a completion (struct spl_done.head_buf). NULL for a bad
 * index. Thread: the submitting thread, between the reap and spl_hbuf_release(). */
const char *spl_engine_hbuf(const struct spl_engine *e, int32_t idx);

/* The index of head buffer `idx` (SPL_H1_INDEX_WORDS words, see spl_h1_parse()): the engine
 * tokenizes every whole head it reads before posting its completion (a head cut short is
 * SPL_H1_UNSURE). NULL for a bad index. Thread: the submitting thread, between the reap and
 * spl_hbuf_release(). */
const uint32_t *spl_engine_hidx(const struct spl_engine *e, int32_t idx);

/* Gives head buffer `idx` back to the engine. Thread: the submitting thread. Never blocks:
 * the release ring has room for every buffer. Returns 0 or -EINVAL. */
int spl_hbuf_release(struct spl_engine *e, int32_t idx);

/* Inline mode (SPL_ENGINE_INLINE): the engine has no thread; the caller's event loop turns
 * it. spl_engine_pollfd() is the engine's epoll fd, readable while a socket event waits: the
 * loop watches it and calls spl_engine_poll(), which handles what is ready now (the queued
 * jobs, socket events, jobs owed a turn, timeouts due) without blocking and publishes the
 * completions for spl_reap(). It returns SPL_POLL_AGAIN when work is left that no event
 * will announce (jobs that used their budget: poll again soon), plus SPL_POLL_TIMERS while
 * a job has a timeout (poll at least every SPL_POLL_TICK_MS), plus SPL_POLL_DONE when it
 * published completions (reap them), or -EINVAL in thread mode.
 * When the engine shares one CPU with the loop, this saves the wake-ups and thread switches
 * of thread mode. Thread: the submitting thread. */
#define SPL_POLL_AGAIN 1
#define SPL_POLL_TIMERS 2
#define SPL_POLL_DONE 4
#define SPL_POLL_TICK_MS 50
int spl_engine_pollfd(const struct spl_engine *e);
int spl_engine_poll(struct spl_engine *e);

/* 1 when job `id` (a SPL_JOB_RELAY job) is relaying its response now (the response head
 * went or goes to the client: the stream is in its data phase), else 0. Scans the jobs: for
 * the runtime API, not the request path. Thread: the engine's (inline mode: the caller's). */
int spl_job_relaying(const struct spl_engine *e, uint64_t id);

/* 1 when the engine knows that socket `fd`, registered with generation `gen` (non-zero) by
 * an earlier job and used by no job now, holds nothing to read: no byte and no end of stream
 * arrived since a read found it empty (the readiness cache); else 0 (unknown, or something
 * waits). An idle keep-alive server connection it reports quiet needs no peek before reuse.
 * It lags the kernel by the time the engine takes to see an event, as a peek just before
 * the event would. Thread: the submitting thread. */
int spl_fd_quiet(const struct spl_engine *e, int fd, uint32_t gen);

/* Where the head at the start of buf[0..len) ends: its length through the empty line that
 * ends it (CRLF or bare LF line ends), or -1 when it does not end within len bytes. The
 * search starts at `start` (a few bytes before the previous end, when called again on a
 * longer buffer). Same result as splicer/http/h1.py find_head_end(). */
ssize_t spl_head_end(const char *buf, size_t len, size_t start);

/* ---- head tokenizer (h1.c) ------------------------------------------------------------- */

/* What spl_h1_parse() says of a head (index word 0). */
#define SPL_H1_OK 0     /* h11 and splicer's strict rules accept it, with exactly these parts */
#define SPL_H1_REFUSE 1 /* a strict rule refuses it (control character, bare CR or LF, obs-fold) */
#define SPL_H1_UNSURE 2 /* not classified here: h11 decides (an error, or a rare form) */

/* Index word 1: which start line the head has. */
#define SPL_H1_REQUEST 1
#define SPL_H1_RESPONSE 2

/* Index word 3: the fields present among those framing and forwarding look at (names
 * compared case-insensitively). */
#define SPL_H1_F_HOST 1
#define SPL_H1_F_CONTENT_LENGTH 2
#define SPL_H1_F_TRANSFER_ENCODING 4
#define SPL_H1_F_CONNECTION 8
#define SPL_H1_F_EXPECT 16
#define SPL_H1_F_UPGRADE 32
#define SPL_H1_F_HOP 64 /* another hop-by-hop name: Keep-Alive, Proxy-Connection, TE, Trailer,
                          * Proxy-Authenticate, Proxy-Authorization (splicer/http/headers.py) */
#define SPL_H1_F_PLAIN 128 /* every field line is written as splicer writes one: "name: value"
                           * CRLF, one SP after the colon, no SP or HTAB after the value */
#define SPL_H1_F_HOST_OK 256 /* the Host value is one h1.py's Host grammar (_HOST) takes: Python
                             * skips its check (unset: Python checks it) */
#define SPL_H1_F_CONN_KEEP_ALIVE 512 /* the one Connection field is just "keep-alive" (any case) */
#define SPL_H1_F_CONN_CLOSE 1024 /* the one Connection field is just "close" (any case) */

/* Index word 4 of a field: which name it has, of those the index knows (case-insensitive). */
#define SPL_H1_ID_OTHER 0
#define SPL_H1_ID_HOST 1
#define SPL_H1_ID_CONTENT_LENGTH 2
#define SPL_H1_ID_TRANSFER_ENCODING 3
#define SPL_H1_ID_CONNECTION 4
#define SPL_H1_ID_EXPECT 5
#define SPL_H1_ID_UPGRADE 6
#define SPL_H1_ID_KEEP_ALIVE 7
#define SPL_H1_ID_PROXY_CONNECTION 8
#define SPL_H1_ID_TE 9
#define SPL_H1_ID_TRAILER 10
#define SPL_H1_ID_PROXY_AUTHENTICATE 11
#define SPL_H1_ID_PROXY_AUTHORIZATION 12

#define SPL_H1_MAX_FIELDS 128 /* fields indexed at most; a head with more is UNSURE */
#define SPL_H1_HDR_WORDS 8
#define SPL_H1_FIELD_WORDS 5
#define SPL_H1_INDEX_WORDS 648 /* SPL_H1_HDR_WORDS + SPL_H1_FIELD_WORDS * SPL_H1_MAX_FIELDS */

/* Tokenizes the whole head buf[0..len) (through the empty line that ends it, nothing after)
 * into idx[0..SPL_H1_INDEX_WORDS), offsets into buf:
 *   [0] SPL_H1_OK/REFUSE/UNSURE  [1] SPL_H1_REQUEST/RESPONSE  [2] fields  [3] SPL_H1_F_* bits
 *   request:  [4] end of method (it starts at 0)  [5] start, [6] end of the request-target
 *             [7] start of the version's three bytes ("1.1" or "1.0")
 *   response: [4] start of the version's three bytes  [5] status code
 *             [6] start, [7] end of the reason phrase
 *   [8 + 5i ...] field i: name start, name end, value start, value end (value without its
 *             leading and trailing SP/HTAB; a Content-Length is a plain number, a
 *             Transfer-Encoding exactly "chunked", as h11 normalizes them), SPL_H1_ID_*
 * Words 1-3 and the fields are only meaningful with SPL_H1_OK. One pass, no allocation.
 * Returns idx[0], or -EINVAL (buf or idx NULL). Any thread. */
int spl_h1_parse(const char *buf, size_t len, uint32_t *idx);

/* The response head buf[0..len), indexed by spl_h1_parse() into idx, as splicer forwards it
 * to its client, when the engine may relay it without Python (splicer/http/h1.py
 * forwarded_response() writes the same bytes): an HTTP/1.1 status from 200 to max_status;
 * plain field lines (SPL_H1_F_PLAIN); no Transfer-Encoding or Upgrade; framed by one
 * Content-Length without leading zeros, or without a body (204, 304, or SPL_RELAY_NO_BODY in
 * `flags`: the request was HEAD); no hop-by-hop field but Keep-Alive and one Connection of
 * just "keep-alive" or "close" (SPL_H1_F_CONN_*), which are left out; `Connection: close` added with
 * SPL_RELAY_CLOSE_CLIENT, `Connection: keep-alive` with SPL_RELAY_KEEP_ALIVE. Writes the
 * head into out[0..cap) and the body's bytes into *body. Returns its length, 0 when the
 * head needs Python, -EINVAL. */
ssize_t spl_h1_relay(const char *buf, size_t len, const uint32_t *idx, uint32_t max_status,
		     uint32_t flags, char *out, size_t cap, uint64_t *body);

/* Copies the engine's counters into *out. Any thread. */
void spl_engine_stats(const struct spl_engine *e, struct spl_engine_stats *out);

/* Stops and joins the engine thread, closes its pipes, epoll and eventfds, frees it. Jobs in
 * flight are dropped (their fds stay the caller's). */
void spl_engine_free(struct spl_engine *e);

#endif /* SPLICER_ENGINE_H */
