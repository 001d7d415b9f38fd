/* BS on a DPU: look up this DPU's queries in a sorted int64 array that lives in MRAM, with
 * PrIM's block bisection.
 *
 * MRAM heap layout (byte offsets):
 *   0                      the sorted array, input_size elements (the whole array, on every DPU)
 *   input_size*8           this DPU's queries, slice_per_dpu elements
 *   (input_size+slice)*8   the found indices, one int64 per query (-1: not in the array)
 * Tasklet t takes slice/NR_TASKLETS consecutive queries. For each, as PrIM: read the 8-byte
 * query; read the array's first block and the block 2^BL elements before its end (PrIM reads
 * them and never uses them); then bisect the byte range [start, end): the midpoint, masked to
 * 8 bytes, names a block that is read and scanned whole for the query (a first element above
 * the query sends the search left, otherwise a miss sends it right). Once the midpoint falls
 * within one block of start, the block at start is scanned, then the bytes left after it; a
 * query found in neither prints PrIM's "NOT found" line. The found indices are gathered in
 * WRAM and written back FOUND_BATCH (32) at a time; as PrIM, each tasklet also keeps the last
 * found index in its DPU_RESULTS entry, the only result PrIM's host reads back. */
#include <alloc.h>
#include <barrier.h>
#include <defs.h>
#include <mram.h>
#include <stdint.h>
#include <stdio.h>

#include "common.h"

__host bs_arguments_t DPU_INPUT_ARGUMENTS;
__host bs_results_t DPU_RESULTS[NR_TASKLETS];

BARRIER_INIT(start_barrier, NR_TASKLETS);

#define FOUND_BATCH 32 /* found indices per MRAM write (256 bytes) */
#define WORD_MASK 0xfffffff8u

/* PrIM's block test over `bytes` bytes: -2 if the block starts above the query, else the
 * query's index in the block, or -1 when it is not there (the whole block is scanned). */
static int64_t search(const elem_t *block, elem_t query, uint32_t bytes) {
    int64_t found = -2;
    if (block[0] <= query) {
        found = -1;
        for (uint32_t i = 0; i < bytes / sizeof(elem_t); i++) {
            if (block[i] == query) {
                found = i;
                break;
            }
        }
    }
    return found;
}

static int binary_search(void) {
    const unsigned int tasklet = me();
    if (tasklet == 0)
        mem_reset(); /* WRAM heap survives launches: start each one from empty */
    DPU_RESULTS[tasklet].found = BS_NOT_FOUND; /* WRAM survives launches too (PrIM never resets it) */
    barrier_wait(&start_barrier);

    const uint64_t input_size = DPU_INPUT_ARGUMENTS.input_size;
    const uint32_t mram_array = (uint32_t)DPU_MRAM_HEAP_POINTER;
    const uint32_t mram_array_end = mram_array + sizeof(elem_t) * input_size;
    const uint32_t mram_found = mram_array_end + (DPU_INPUT_ARGUMENTS.slice_per_dpu << 3);
    const uint32_t first = tasklet * (DPU_INPUT_ARGUMENTS.slice_per_dpu / NR_TASKLETS);
    uint32_t mram_query = mram_array_end + first * sizeof(elem_t);

    elem_t *cache = (elem_t *)mem_alloc(BLOCK_BYTES);
    elem_t *cache_first = (elem_t *)mem_alloc(BLOCK_BYTES);
    elem_t *cache_last = (elem_t *)mem_alloc(BLOCK_BYTES);
    elem_t *query = (elem_t *)mem_alloc(sizeof(elem_t));
    int64_t *found = (int64_t *)mem_alloc(FOUND_BATCH * sizeof(int64_t));

    uint32_t pending = 0; /* results in `found` not yet written */
    for (uint64_t q = 0; q < DPU_INPUT_ARGUMENTS.slice_per_dpu / NR_TASKLETS; q++) {
        mram_read((__mram_ptr void const *)mram_query, query, sizeof(elem_t));
        mram_query += sizeof(elem_t);

        uint32_t start = mram_array;
        uint32_t end = mram_array_end;
        mram_read((__mram_ptr void const *)start, cache_first, BLOCK_BYTES);
        mram_read((__mram_ptr void const *)(end - BLOCK_BYTES * sizeof(elem_t)), cache_last, BLOCK_BYTES);

        int64_t index = BS_NOT_FOUND;
        while (1) {
            const uint32_t mid = ((start + end) / 2) & WORD_MASK;
            if (mid < start + BLOCK_BYTES) { /* the range holds less than two blocks */
                mram_read((__mram_ptr void const *)start, cache, BLOCK_BYTES);
                int64_t hit = search(cache, *query, BLOCK_BYTES);
                if (hit > -1) {
                    index = hit + (start - mram_array) / sizeof(elem_t);
                } else {
                    const uint32_t rest = end - (start + BLOCK_BYTES); /* 0..BLOCK_BYTES-8 */
                    if (rest > 0) { /* PrIM issues a 0-byte read here, which a DMA refuses */
                        mram_read((__mram_ptr void const *)(start + BLOCK_BYTES), cache, rest);
                        hit = search(cache, *query, rest);
                    }
                    if (hit > -1)
                        index = hit + (start + BLOCK_BYTES - mram_array) / sizeof(elem_t);
                    else
                        printf("%lld NOT found\n", (long long)*query);
                }
                break;
            }
            mram_read((__mram_ptr void const *)mid, cache, BLOCK_BYTES);
            const int64_t hit = search(cache, *query, BLOCK_BYTES);
            if (hit > -1) {
                index = hit + (mid - mram_array) / sizeof(elem_t);
                break;
            }
            if (hit == -2)
                end = mid; /* the block starts above the query: go left */
            else
                start = mid; /* go right */
        }

        if (index != BS_NOT_FOUND)
            DPU_RESULTS[tasklet].found = index;
        found[pending++] = index;
        if (pending == FOUND_BATCH || q + 1 == DPU_INPUT_ARGUMENTS.slice_per_dpu / NR_TASKLETS) {
            const uint32_t done = first + (uint32_t)q + 1 - pending;
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
