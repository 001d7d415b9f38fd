/* BS on a DPU: look up this DPU's queries in a sorted int64 array that lives in MRAM.
 *
 * MRAM heap layout (byte offsets):
 *   0                      the sorted array, input_size elements (the whole array, on every DPU)
 *   input_size*8           this DPU's queries, slice_per_dpu elements
 *   (input_size+slice)*8   the found indices, one int64 per query (-1: not in the array)
 * Tasklet t takes slice/NR_TASKLETS consecutive queries. For each it reads the 8-byte query,
 * then bisects the array over MRAM byte offsets: every step reads the 256-byte block that
 * starts at the (8-aligned) midpoint of the candidate range and scans it linearly. A match
 * ends the search; a first element larger than the query sends it left; a block that holds
 * only smaller elements sends it right; otherwise the query falls between two elements of
 * the block and is absent. A candidate range of one block or less is read and scanned once.
 * The found indices are gathered in WRAM and written back FOUND_BATCH (32) at a time. */
#include <alloc.h>
#include <barrier.h>
#include <defs.h>
#include <mram.h>
#include <stdint.h>

#include "common.h"

__host bs_arguments_t DPU_INPUT_ARGUMENTS;

BARRIER_INIT(start_barrier, NR_TASKLETS);

#define ELEMS_PER_BLOCK (BLOCK_BYTES / sizeof(elem_t))
#define FOUND_BATCH 32 /* found indices per MRAM write (256 bytes) */

/* Linear scan of count sorted elements: returns the position of the first element >= query,
 * or count when all are smaller; *hit tells whether that element equals the query. */
static uint32_t scan_block(const elem_t *block, uint32_t count, elem_t query, int *hit) {
    uint32_t i = 0;
    for (; i < count; i++) {
        if (block[i] >= query) {
            *hit = block[i] == query;
            return i;
        }
    }
    *hit = 0;
    return count;
}

/* Index of `query` in the sorted array at MRAM address `array` (`bytes` long), or -1. */
static int64_t search(uint32_t array, uint32_t bytes, elem_t query, elem_t *block) {
    uint32_t lo = 0, hi = bytes; /* candidate byte range [lo, hi) */
    int hit;
    while (hi - lo > BLOCK_BYTES) {
        const uint32_t mid = lo + (((hi - lo) >> 1) & ~7u);
        mram_read((__mram_ptr void const *)(array + mid), block, BLOCK_BYTES);
        /* only the elements still in range count; the block may run past hi */
        const uint32_t count = (hi - mid >= BLOCK_BYTES) ? ELEMS_PER_BLOCK : (hi - mid) >> 3;
        const uint32_t pos = scan_block(block, count, query, &hit);
        if (hit)
            return (int64_t)((mid >> 3) + pos);
        if (pos == 0)
            hi = mid; /* first element larger: go left */
        else if (pos == count)
            lo = mid + (count << 3); /* all smaller: go right */
        else
            return BS_NOT_FOUND; /* between two neighbours of this block */
    }
    if (hi == lo)
        return BS_NOT_FOUND;
    mram_read((__mram_ptr void const *)(array + lo), block, hi - lo);
    const uint32_t pos = scan_block(block, (hi - lo) >> 3, query, &hit);
    return hit ? (int64_t)((lo >> 3) + pos) : BS_NOT_FOUND;
}

static int binary_search(void) {
    const unsigned int tasklet = me();
    if (tasklet == 0)
        mem_reset(); /* WRAM heap survives launches: start each one from empty */
    barrier_wait(&start_barrier);

    const uint32_t array_bytes = (uint32_t)DPU_INPUT_ARGUMENTS.input_size << 3;
    const uint32_t slice = (uint32_t)DPU_INPUT_ARGUMENTS.slice_per_dpu;
    const uint32_t mram_array = (uint32_t)DPU_MRAM_HEAP_POINTER;
    const uint32_t mram_queries = mram_array + array_bytes;
    const uint32_t mram_found = mram_queries + (slice << 3);

    elem_t *block = (elem_t *)mem_alloc(BLOCK_BYTES);
    elem_t *query = (elem_t *)mem_alloc(sizeof(elem_t));
    int64_t *found = (int64_t *)mem_alloc(FOUND_BATCH * sizeof(int64_t));

    const uint32_t per_tasklet = slice / NR_TASKLETS; /* the host makes it exact */
    const uint32_t first = tasklet * per_tasklet;
    uint32_t pending = 0; /* results in `found` not yet written */
    for (uint32_t q = first; q < first + per_tasklet; q++) {
        mram_read((__mram_ptr void const *)(mram_queries + (q << 3)), query, sizeof(elem_t));
        found[pending++] = search(mram_array, array_bytes, *query, block);
        if (pending == FOUND_BATCH || q + 1 == first + per_tasklet) {
            const uint32_t done = q + 1 - pending;
            mram_write(found, (__mram_ptr void *)(mram_found + (done << 3)), pending << 3);
            pending = 0;
        }
    }
    return 0;
}

static int (*const kernels[BS_NR_KERNELS])(void) = {binary_search};

int main(void) {
    return kernels[DPU_INPUT_ARGUMENTS.kernel]();
}
