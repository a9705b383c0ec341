/*
 * Pipe pool - get/put/kill of the kernel pipes the splice pump moves bytes through.
 *
 * Follows haproxy's src/pipe.c: pipes are created lazily up to maxpipes, sized with
 * F_SETPIPE_SZ, recycled when empty and closed ("killed") when handed back still holding
 * data. The slot table is allocated once in spl_pool_new(); get/put never allocate.
 * A pool belongs to one thread (the event loop's); it takes no lock.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "splicer/engine.h"
#include "pool.h"

int spl_pool_new(uint32_t pipesize, uint32_t maxpipes, struct spl_pool **out)
{
	struct spl_pool *pool;
	uint32_t i;

	if (out == NULL || maxpipes == 0)
		return -EINVAL;
	pool = calloc(1, sizeof(*pool));
	if (pool == NULL)
		return -ENOMEM;
	pool->slots = calloc(maxpipes, sizeof(*pool->slots));
	if (pool->slots == NULL) {
		free(pool);
		return -ENOMEM;
	}
	pool->max = maxpipes;
	pool->want_size = pipesize;
	/* every slot starts uncreated and on the free list, lowest index on top */
	for (i = 0; i < maxpipes; i++) {
		pool->slots[i].prod = -1;
		pool->slots[i].cons = -1;
		pool->slots[i].index = (int32_t)i;
		pool->slots[i].next = (i + 1 < maxpipes) ? (int32_t)(i + 1) : -1;
	}
	pool->free_head = 0;
	*out = pool;
	return 0;
}

/* Closes both ends of a pipe and marks its slot uncreated. */
static void spl_pipe_close(struct spl_pool *pool, struct spl_pipe *p)
{
	if (p->prod != -1) {
		close(p->prod);
		close(p->cons);
		pool->created--;
	}
	p->prod = -1;
	p->cons = -1;
	p->data = 0;
	p->size = 0;
}

void spl_pool_free(struct spl_pool *pool)
{
	uint32_t i;

	if (pool == NULL)
		return;
	for (i = 0; i < pool->max; i++)
		spl_pipe_close(pool, &pool->slots[i]);
	free(pool->slots);
	free(pool);
}

/* Creates the kernel pipe of an uncreated slot. Returns 0 or -errno. */
static int spl_pipe_create(struct spl_pool *pool, struct spl_pipe *p)
{
	int fds[2];
	int size;

	if (pipe2(fds, O_NONBLOCK | O_CLOEXEC) == -1) {
		pool->pipe_failures++;
		return -errno;
	}
	size = -1;
	if (pool->want_size > 0)
		size = fcntl(fds[0], F_SETPIPE_SZ, (int)pool->want_size);
	/* EPERM/EBUSY above /proc/sys/fs/pipe-max-size: keep the default size, as haproxy does */
	if (size == -1)
		size = fcntl(fds[0], F_GETPIPE_SZ);
	if (size == -1) {
		int err = errno;

		close(fds[0]);
		close(fds[1]);
		pool->pipe_failures++;
		return -err;
	}
	p->cons = fds[0];
	p->prod = fds[1];
	p->size = (uint32_t)size;
	p->data = 0;
	pool->created++;
	pool->last_size = (uint32_t)size;
	return 0;
}

int spl_pipe_get(struct spl_pool *pool, struct spl_pipe **out)
{
	struct spl_pipe *p;
	int rc;

	if (pool == NULL || out == NULL)
		return -EINVAL;
	if (pool->free_head == -1)
		return -EAGAIN; /* all maxpipes handed out: the caller copies instead */
	p = &pool->slots[pool->free_head];
	if (p->prod == -1) {
		rc = spl_pipe_create(pool, p);
		if (rc != 0)
			return rc;
	}
	pool->free_head = p->next;
	p->next = -1;
	pool->used++;
	*out = p;
	return 0;
}

void spl_pipe_put(struct spl_pool *pool, struct spl_pipe *p)
{
	if (pool == NULL || p == NULL)
		return;
	if (p->data > 0) {
		/* its bytes belong to a stream that is gone: never hand them to another one */
		spl_pipe_close(pool, p);
		pool->killed++;
	}
	p->next = pool->free_head;
	pool->free_head = p->index;
	pool->used--;
}

void spl_pool_stats(const struct spl_pool *pool, struct spl_stats *out)
{
	if (pool == NULL || out == NULL)
		return;
	memset(out, 0, sizeof(*out));
	out->spliced_bytes = pool->spliced_bytes;
	out->splice_calls = pool->splice_calls;
	out->eagain_waits = pool->eagain_waits;
	out->pipes_used = pool->used;
	out->pipes_free = pool->created - pool->used;
	out->pipes_max = pool->max;
	out->pipe_size = pool->last_size;
	out->pipes_killed = pool->killed;
	out->pipe_failures = pool->pipe_failures;
}
