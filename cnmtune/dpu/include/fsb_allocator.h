/*
 * fsb_allocator.h - fixed-size-block allocator (UPMEM-compatible subset).
 *
 * fsb_alloc carves nb_of_blocks blocks of block_size bytes (rounded up to a
 * multiple of 8) out of the mem_alloc heap; fsb_get/fsb_free take and return
 * blocks under an atomic-bit lock.
 */
#ifndef _DPUSYSCORE_FSB_ALLOCATOR_H_
#define _DPUSYSCORE_FSB_ALLOCATOR_H_

/* A fixed-size-block allocator (pointer to its free-list head in WRAM). */
typedef void **fsb_allocator_t;

/* Creates an allocator of nb_of_blocks blocks of block_size bytes from the heap. */
fsb_allocator_t fsb_alloc(unsigned int block_size, unsigned int nb_of_blocks);

/* Returns a free block (8-aligned), or NULL when none is left. */
void *fsb_get(fsb_allocator_t allocator);

/* Returns block ptr to the allocator. */
void fsb_free(fsb_allocator_t allocator, void *ptr);

#endif /* _DPUSYSCORE_FSB_ALLOCATOR_H_ */
