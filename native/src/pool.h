/*
 * Pipe pool - private types shared by pipe.c and splice.c.
 */
#ifndef SPLICER_POOL_H
#define SPLICER_POOL_H

#include <stdint.h>

#include "splicer/engine.h"

struct spl_pool {
	struct spl_pipe *slots;  /* maxpipes slots, allocated once */
	int32_t free_head;       /* first free slot (created or not), -1 when all are handed out */
	uint32_t max;            /* tune.maxpipes */
	uint32_t want_size;      /* tune.pipesize asked for, 0 = kernel default */
	uint32_t last_size;      /* size the kernel granted to the last pipe created */
	uint32_t created;        /* pipes that exist (handed out or free) */
	uint32_t used;           /* pipes handed out */
	uint64_t killed;         /* pipes closed on put because they held data */
	uint64_t pipe_failures;  /* pipe2()/fcntl() failures */
	uint64_t spliced_bytes;  /* bytes spliced out of pipes into destinations */
	uint64_t splice_calls;   /* splice(2) calls */
	uint64_t eagain_waits;   /* pumps that returned on EAGAIN */
};

#endif /* SPLICER_POOL_H */
