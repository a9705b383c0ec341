/*
 * Splice pump - socket -> pipe -> socket moves with splice(2) (haproxy's raw_sock_to_pipe /
 * raw_sock_from_pipe pair, in one loop).
 *
 * The pipe is always flushed to the destination before reading more, so EAGAIN on the read
 * side can only mean "the socket is empty" (with data in the pipe it could also mean "the
 * pipe is full", see haproxy src/raw_sock.c). End of stream is reported only once the pipe
 * is empty: a FIN is never forwarded while bytes still sit in the pipe (haproxy #2505), and
 * bytes count as sent only when they were spliced into the destination.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/types.h>

#include "splicer/engine.h"
#include "pool.h"

#define SPL_FLAGS (SPLICE_F_MOVE | SPLICE_F_NONBLOCK)

/* Writes the pipe's content to dst. Returns 1 when the pipe is empty, 0 when dst would block
 * or failed (mv->how set). */
static int spl_flush(struct spl_pool *pool, struct spl_pipe *p, int dst, struct spl_move *mv)
{
	ssize_t ret;

	while (p->data > 0) {
		ret = splice(p->cons, NULL, dst, NULL, p->data, SPL_FLAGS);
		pool->splice_calls++;
		if (ret > 0) {
			p->data -= (uint32_t)ret;
			mv->bytes_out += (uint64_t)ret;
			pool->spliced_bytes += (uint64_t)ret;
			continue;
		}
		if (ret == -1 && errno == EINTR)
			continue; /* a signal interrupted us before anything moved: try again */
		if (ret == -1 && errno == EAGAIN) {
			/* the socket's send buffer is full: wait until dst is writable */
			mv->how = SPL_STOP_DST_AGAIN;
			pool->eagain_waits++;
			return 0;
		}
		/* ret == 0 cannot happen for a non-empty pipe; report it as a broken destination */
		mv->how = SPL_STOP_DST_ERROR;
		mv->err = (ret == 0) ? EPIPE : errno;
		return 0;
	}
	return 1;
}

int spl_pump(struct spl_pool *pool, struct spl_pipe *p, int src, int dst,
	     uint64_t max_in, uint64_t budget, struct spl_move *mv)
{
	uint64_t left = max_in;
	size_t want;
	ssize_t ret;

	if (pool == NULL || p == NULL || mv == NULL || src < 0 || dst < 0 || p->prod == -1)
		return -EINVAL;
	memset(mv, 0, sizeof(*mv));
	for (;;) {
		if (!spl_flush(pool, p, dst, mv))
			return 0;
		if (left == 0) {
			mv->how = SPL_STOP_DONE;
			return 0;
		}
		if (budget != 0 && mv->bytes_out >= budget) {
			mv->how = SPL_STOP_BUDGET;
			return 0;
		}
		want = p->size;
		if (left < (uint64_t)want)
			want = (size_t)left; /* never read past the message end (pipelined requests) */
		ret = splice(src, NULL, p->prod, NULL, want, SPL_FLAGS);
		pool->splice_calls++;
		if (ret > 0) {
			p->data += (uint32_t)ret;
			mv->bytes_in += (uint64_t)ret;
			if (left != UINT64_MAX)
				left -= (uint64_t)ret;
			continue;
		}
		if (ret == 0) {
			/* end of stream, and the pipe was flushed just above */
			mv->how = SPL_STOP_EOF;
			return 0;
		}
		if (errno == EINTR)
			continue; /* interrupted before anything moved: try again */
		if (errno == EAGAIN) {
			/* the pipe is empty, so EAGAIN means the socket has nothing to read */
			mv->how = SPL_STOP_SRC_AGAIN;
			pool->eagain_waits++;
			return 0;
		}
		mv->how = SPL_STOP_SRC_ERROR;
		mv->err = errno;
		return 0;
	}
}
