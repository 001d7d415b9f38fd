/*
 * barrier.h - tasklet barriers (UPMEM-compatible).
 *
 * barrier_t has the SDK's public 4-byte layout; code may build barriers by
 * hand (PrIM HST-L writes the fields).  The simulator implements
 * barrier_wait: the participant count is initial_count (byte 2); count
 * (byte 1) is the number still expected; the last tasklet to arrive wakes
 * all waiters and re-arms count = initial_count.  wait_queue and lock are
 * kept for layout compatibility (wait_queue 0xff = empty).
 */
#ifndef _DPUSYSCORE_BARRIER_H_
#define _DPUSYSCORE_BARRIER_H_

#include <stdint.h>

/* A barrier (4 bytes, fields public). */
typedef struct barrier_t {
    uint8_t wait_queue;    /* last waiting tasklet, 0xff when none (SDK bookkeeping) */
    uint8_t count;         /* tasklets still expected in the current round */
    uint8_t initial_count; /* number of participating tasklets */
    uint8_t lock;          /* atomic bit index (SDK bookkeeping; unused on the proxy) */
} barrier_t;

/* Defines barrier `name` for `count` tasklets (1..127). */
#define BARRIER_INIT(_name, _count)                                                                        \
    _Static_assert((_count) > 0 && (_count) < 128, "BARRIER_INIT: count must be in 1..127");               \
    barrier_t _name = {.wait_queue = 0xff, .count = (_count), .initial_count = (_count), .lock = 0}

/* Deprecated: a pointer to barrier `name`. */
#define BARRIER_GET(_name) (&(_name))

/* Blocks the calling tasklet until all initial_count tasklets have reached the barrier. */
void barrier_wait(barrier_t *barrier);

#endif /* _DPUSYSCORE_BARRIER_H_ */
