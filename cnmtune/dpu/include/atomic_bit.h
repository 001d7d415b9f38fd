/*
 * atomic_bit.h - hardware atomic bits (UPMEM-compatible).
 *
 * The DPU has 256 one-bit locks.  A bit is named by a one-byte variable in
 * section .atomic (linked at 0xF0000000): its index is the low 8 bits of its
 * address.  All bits are cleared when the DPU is launched.
 * ACQUIRE returns 0 when the bit was free (and sets it), 1 when it was set.
 *
 *   ATOMIC_BIT_INIT(lock);            // one bit
 *   ATOMIC_BIT_INIT(locks)[8];        // eight bits (the macro is a declarator prefix)
 */
#ifndef _DPUSYSCORE_ATOMIC_BIT_H_
#define _DPUSYSCORE_ATOMIC_BIT_H_

#include <stdint.h>
#include <attributes.h>

/* The variable that names atomic bit `name`. */
#define ATOMIC_BIT_GET(name) __atomic_bit_##name

/* Defines atomic bit `name` (may be followed by [n] to define an array of bits). */
#define ATOMIC_BIT_INIT(name) __atomic_bit uint8_t ATOMIC_BIT_GET(name)

/* Declares atomic bit `name` defined in another file. */
#define ATOMIC_BIT_EXTERN(name) extern __atomic_bit uint8_t ATOMIC_BIT_GET(name)

/* Index (0..255) of atomic bit `name`. */
#define ATOMIC_BIT_INDEX(name) ((uint8_t)(uintptr_t)&ATOMIC_BIT_GET(name))

/* Spins until atomic bit `name` is acquired. */
#define ATOMIC_BIT_ACQUIRE(name) __cnm_atomic_bit_acquire((uint8_t *)&ATOMIC_BIT_GET(name))

/* Releases atomic bit `name`. */
#define ATOMIC_BIT_RELEASE(name) __cnm_atomic_bit_release((uint8_t *)&ATOMIC_BIT_GET(name))

/* Tries once to acquire the atomic bit at address bit; returns 1 if acquired. */
int __cnm_atomic_bit_try_acquire(uint8_t *bit);

/* Spins until the atomic bit at address bit is acquired. */
void __cnm_atomic_bit_acquire(uint8_t *bit);

/* Releases the atomic bit at address bit. */
void __cnm_atomic_bit_release(uint8_t *bit);

#endif /* _DPUSYSCORE_ATOMIC_BIT_H_ */
