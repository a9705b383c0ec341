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

#include <stdint.h>

#define SPL_ENGINE_ABI 1

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

#endif /* SPLICER_ENGINE_H */
