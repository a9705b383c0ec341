/*
 * Timer wheel - the engine's one timer structure (types and inline operations).
 *
 * A hashed timing wheel: SPL_WHEEL_SIZE buckets of one tick each, holding job slots by index
 * in intrusive doubly-linked lists, so adding, moving and removing a timer is O(1) and
 * allocates nothing (the links are allocated with the slots). A slot is in the bucket of the
 * tick its timeout falls due (due & mask); a due tick more than a round ahead shares a bucket
 * with nearer ones and is skipped until its round comes. Timers are lazy, as haproxy's task
 * expiry dates are: progress that pushes a deadline later does not move the timer; when its
 * bucket comes round, the engine checks the slot's real deadline and moves it on (or ends the
 * job). Only a change that brings a deadline earlier moves the timer at once.
 */
#ifndef SPL_WHEEL_H
#define SPL_WHEEL_H

#include <stdint.h>

#define SPL_WHEEL_SIZE 1024u /* buckets (a power of two): one round is 1024 ticks */

struct spl_tlink {
	int32_t prev;   /* slot index of the previous timer in the bucket, -1 = first */
	int32_t next;   /* slot index of the next one, -1 = last */
	uint64_t due;   /* tick at which the timer falls due */
	uint8_t on;     /* in the wheel */
};

struct spl_wheel {
	int32_t head[SPL_WHEEL_SIZE]; /* first slot index of each bucket, -1 = empty */
	struct spl_tlink *link;       /* one per job slot */
	uint32_t count;               /* timers in the wheel */
	uint64_t tick;                /* last tick whose bucket was checked */
};

/* Empties the wheel; `link` holds one entry per slot. */
static inline void spl_wheel_init(struct spl_wheel *w, struct spl_tlink *link)
{
	uint32_t b;

	for (b = 0; b < SPL_WHEEL_SIZE; b++)
		w->head[b] = -1;
	w->link = link;
	w->count = 0;
	w->tick = 0;
}

/* Takes slot i's timer out of the wheel (nothing when it is not in). */
static inline void spl_wheel_del(struct spl_wheel *w, int32_t i)
{
	struct spl_tlink *l = &w->link[i];

	if (!l->on)
		return;
	if (l->prev != -1)
		w->link[l->prev].next = l->next;
	else
		w->head[l->due & (SPL_WHEEL_SIZE - 1)] = l->next;
	if (l->next != -1)
		w->link[l->next].prev = l->prev;
	l->on = 0;
	w->count--;
}

/* Puts slot i's timer (not in the wheel) in the bucket of tick `due`. */
static inline void spl_wheel_add(struct spl_wheel *w, int32_t i, uint64_t due)
{
	struct spl_tlink *l = &w->link[i];
	int32_t *head = &w->head[due & (SPL_WHEEL_SIZE - 1)];

	l->due = due;
	l->prev = -1;
	l->next = *head;
	if (*head != -1)
		w->link[*head].prev = i;
	*head = i;
	l->on = 1;
	w->count++;
}

#endif
