/* bitonic on a DPU: sort every run of RUN_ELEMS int32 of this DPU's part, in place, with a
 * bitonic sorting network in WRAM.
 *
 * MRAM heap layout: the part at offset 0 (whole runs), sorted in place. Tasklet t takes runs
 * t, t + NR_TASKLETS, ... (run-cyclic): it loads the run into WRAM in 2^BL-byte DMAs, runs the
 * network's log2(RUN) (log2(RUN) + 1) / 2 compare-exchange stages over it and stores it back. */
#include <alloc.h>
#include <barrier.h>
#include <defs.h>
#include <mram.h>
#include <stdint.h>

#include "common.h"

__host bitonic_arguments_t DPU_INPUT_ARGUMENTS;

BARRIER_INIT(start_barrier, NR_TASKLETS);

/* One stage of the network: every element i with bit `distance` clear is compared with
 * i + distance; the pair ends ascending where bit `merge` of i is clear, descending where set. */
static void compare_exchange_stage(int32_t *run, uint32_t merge, uint32_t distance) {
    const uint32_t low = distance - 1;
    for (uint32_t pair = 0; pair < RUN_ELEMS / 2; pair++) {
        const uint32_t i = ((pair & ~low) << 1) | (pair & low);
        const int32_t a = run[i];
        const int32_t b = run[i + distance];
        if ((a > b) == ((i & merge) == 0)) {
            run[i] = b;
            run[i + distance] = a;
        }
    }
}

static void bitonic_sort(int32_t *run) {
    for (uint32_t merge = 2; merge <= RUN_ELEMS; merge <<= 1)
        for (uint32_t distance = merge >> 1; distance > 0; distance >>= 1)
            compare_exchange_stage(run, merge, distance);
}

int main(void) {
    const unsigned int tasklet = me();
    if (tasklet == 0)
        mem_reset(); /* the WRAM heap survives launches: empty it before anyone allocates */
    barrier_wait(&start_barrier);

    const uint32_t size = DPU_INPUT_ARGUMENTS.size_bytes;
    const uint32_t mram_part = (uint32_t)DPU_MRAM_HEAP_POINTER;
    int32_t *run = (int32_t *)mem_alloc(RUN_BYTES);

    for (uint32_t first = tasklet * RUN_BYTES; first < size; first += NR_TASKLETS * RUN_BYTES) {
        for (uint32_t offset = 0; offset < RUN_BYTES; offset += BLOCK_BYTES)
            mram_read((__mram_ptr void const *)(mram_part + first + offset), (uint8_t *)run + offset, BLOCK_BYTES);
        bitonic_sort(run);
        for (uint32_t offset = 0; offset < RUN_BYTES; offset += BLOCK_BYTES)
            mram_write((uint8_t *)run + offset, (__mram_ptr void *)(mram_part + first + offset), BLOCK_BYTES);
    }
    return 0;
}
