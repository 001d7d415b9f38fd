/*
 * sem.h - counting semaphores (UPMEM-compatible).
 *
 * sem_t has the 4-byte layout of barrier_t; count and initial_count are
 * signed bytes.  The simulator implements take/give: take decrements count
 * and blocks while count < 0; give increments count and wakes one waiter.
 */
#ifndef _DPUSYSCORE_SEM_H_
#define _DPUSYSCORE_SEM_H_

#include <stdint.h>

/* A semaphore (4 bytes, fields public). */
typedef struct sem_t {
    uint8_t wait_queue;   /* last waiting tasklet, 0xff when none (SDK bookkeeping) */
    int8_t count;         /* current value; negative = number of blocked takers */
    int8_t initial_count; /* value given to SEMAPHORE_INIT */
    uint8_t lock;         /* atomic bit index (SDK bookkeeping; unused on the proxy) */
} sem_t;

/* Defines semaphore `name` with initial value `value` (-127..127). */
#define SEMAPHORE_INIT(_name, _value)                                                                      \
    _Static_assert((_value) >= -127 && (_value) <= 127, "SEMAPHORE_INIT: value must be in -127..127");     \
    sem_t _name = {.wait_queue = 0xff, .count = (_value), .initial_count = (_value), .lock = 0}

/* Takes one unit; blocks while none is available. */
void sem_take(sem_t *sem);

/* Gives one unit back; wakes one blocked taker if any. */
void sem_give(sem_t *sem);

#endif /* _DPUSYSCORE_SEM_H_ */
