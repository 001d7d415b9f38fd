/*
 * alloc.h - WRAM heap (UPMEM-compatible incremental allocator).
 *
 * The heap starts after the tasklet stacks (__sys_heap_pointer_reset, see
 * dpu.ld) and ends at the end of WRAM (64 KiB).  It is shared by all
 * tasklets, protected by an atomic bit, and never freed: the heap pointer is
 * a WRAM global that survives across launches, so kernels call mem_reset()
 * (tasklet 0, before a barrier) at the start of every launch.
 * Also provides the fixed-size-block allocator (fsb_allocator.h).
 */
#ifndef _DPUSYSCORE_ALLOC_H_
#define _DPUSYSCORE_ALLOC_H_

#include <stddef.h>
#include <fsb_allocator.h>

/* Returns an 8-byte-aligned WRAM buffer of size bytes; faults (CNM_FAULT_HEAP_EXHAUSTED) when WRAM is full. */
void *mem_alloc(size_t size);

/* Rewinds the heap to its start and returns that start address. */
void *mem_reset(void);

#endif /* _DPUSYSCORE_ALLOC_H_ */
