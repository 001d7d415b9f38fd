/*
 * mutex.h - mutexes built on atomic bits (UPMEM-compatible).
 *
 * A mutex_id_t is the address of an atomic bit; lock spins on ACQUIRE.
 * A zero-initialised mutex_id_t (never set with MUTEX_INIT) names atomic
 * bit 0, as on the DPU (PrIM HST-L relies on this).
 *
 *   MUTEX_INIT(my_mutex);
 *   mutex_lock(my_mutex); ... mutex_unlock(my_mutex);
 */
#ifndef _DPUSYSCORE_MUTEX_H_
#define _DPUSYSCORE_MUTEX_H_

#include <stdbool.h>
#include <stdint.h>
#include <atomic_bit.h>

/* A mutex: the address of its atomic bit. */
typedef uint8_t *mutex_id_t;

/* Defines mutex `name` (allocates an atomic bit). */
#define MUTEX_INIT(_name)                                                                                  \
    ATOMIC_BIT_INIT(__mutex_##_name);                                                                      \
    const mutex_id_t _name = &ATOMIC_BIT_GET(__mutex_##_name)

/* Deprecated: the mutex `name` itself. */
#define MUTEX_GET(_name) (_name)

/* Spins until the mutex is taken by the calling tasklet. */
void mutex_lock(mutex_id_t mutex);

/* Takes the mutex if it is free; returns true if taken. */
bool mutex_trylock(mutex_id_t mutex);

/* Releases the mutex. */
void mutex_unlock(mutex_id_t mutex);

#endif /* _DPUSYSCORE_MUTEX_H_ */
