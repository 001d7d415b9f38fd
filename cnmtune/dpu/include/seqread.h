/*
 * seqread.h - sequential reader: streams MRAM through a WRAM cache
 * (UPMEM-compatible).
 *
 * A reader caches a window of 2*SEQREAD_CACHE_SIZE bytes of MRAM, read with
 * one mram_read.  The pointer handed to the kernel always lies in the first
 * half of the window, so an element of up to SEQREAD_CACHE_SIZE bytes is
 * always entirely cached; when seqread_get moves the pointer into the second
 * half, the window advances by SEQREAD_CACHE_SIZE bytes and is read again.
 *
 *   seqreader_t sr;
 *   uint32_t *p = seqread_init(seqread_alloc(), mram_address, &sr);
 *   p = seqread_get(p, sizeof(*p), &sr);
 *
 * Define SEQREAD_CACHE_SIZE (32, 64, 128, 256, 512 or 1024; default 256)
 * before including this header.  Implemented inline here so that the
 * kernel's value is honoured.
 */
#ifndef _DPUSYSCORE_SEQREAD_H_
#define _DPUSYSCORE_SEQREAD_H_

#include <stdint.h>
#include <attributes.h>
#include <alloc.h>
#include <mram.h>

#ifndef SEQREAD_CACHE_SIZE
#define SEQREAD_CACHE_SIZE 256
#endif
#if SEQREAD_CACHE_SIZE != 32 && SEQREAD_CACHE_SIZE != 64 && SEQREAD_CACHE_SIZE != 128 &&                  \
    SEQREAD_CACHE_SIZE != 256 && SEQREAD_CACHE_SIZE != 512 && SEQREAD_CACHE_SIZE != 1024
#error "SEQREAD_CACHE_SIZE must be one of 32, 64, 128, 256, 512, 1024"
#endif

/* WRAM address of a reader's cache (2 * SEQREAD_CACHE_SIZE bytes, 8-aligned). */
typedef uintptr_t seqreader_buffer_t;

/* State of one sequential reader. */
typedef struct {
    uintptr_t wram_cache; /* the cache (seqreader_buffer_t) */
    uintptr_t mram_addr;  /* MRAM address of the first cached byte (8-aligned) */
} seqreader_t;

/* Allocates a reader cache of 2 * SEQREAD_CACHE_SIZE bytes on the WRAM heap (mem_alloc). */
static inline seqreader_buffer_t seqread_alloc(void)
{
    return (seqreader_buffer_t)mem_alloc(2 * SEQREAD_CACHE_SIZE);
}

/* Points reader at mram_addr (any alignment), fills the cache; returns the WRAM pointer of mram_addr's byte. */
static inline void *seqread_seek(__mram_ptr void *mram_addr, seqreader_t *reader)
{
    uintptr_t target = (uintptr_t)mram_addr;
    uintptr_t window = target & ~(uintptr_t)7;
    reader->mram_addr = window;
    mram_read((__mram_ptr void *)window, (void *)reader->wram_cache, 2 * SEQREAD_CACHE_SIZE);
    return (void *)(reader->wram_cache + (target - window));
}

/* Attaches cache to reader, positions it at mram_addr; returns the WRAM pointer of mram_addr's byte. */
static inline void *seqread_init(seqreader_buffer_t cache, __mram_ptr void *mram_addr, seqreader_t *reader)
{
    reader->wram_cache = cache;
    return seqread_seek(mram_addr, reader);
}

/* Advances ptr by inc bytes (inc < SEQREAD_CACHE_SIZE), refilling the cache if needed; returns the new pointer. */
static inline void *seqread_get(void *ptr, uint32_t inc, seqreader_t *reader)
{
    uintptr_t p = (uintptr_t)ptr + inc;
    if (p >= reader->wram_cache + SEQREAD_CACHE_SIZE) {
        reader->mram_addr += SEQREAD_CACHE_SIZE;
        p -= SEQREAD_CACHE_SIZE;
        mram_read((__mram_ptr void *)reader->mram_addr, (void *)reader->wram_cache, 2 * SEQREAD_CACHE_SIZE);
    }
    return (void *)p;
}

/* Returns the MRAM address corresponding to the reader's WRAM pointer ptr. */
static inline __mram_ptr void *seqread_tell(void *ptr, seqreader_t *reader)
{
    return (__mram_ptr void *)(reader->mram_addr + ((uintptr_t)ptr - reader->wram_cache));
}

#endif /* _DPUSYSCORE_SEQREAD_H_ */
