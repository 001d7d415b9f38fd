/* prefix-max on a DPU: inclusive running maximum y[i] = max(x[0..i]), in two launches
 * (reduce, then scan), with the combination across tasklets and DPUs done by the host.
 *
 * MRAM heap layout: x at offset 0, y at offset size_bytes. The part is cut in NR_TASKLETS
 * consecutive slices of whole blocks; tasklet t owns slice t in both launches.
 *
 * Kernel 0 (reduce): each tasklet streams its slice and leaves its maximum in
 * DPU_SLICE_MAX[t]. The host then computes, for every tasklet of every DPU, the maximum of all
 * the slices before it (over this DPU's earlier tasklets and every earlier DPU) and writes it
 * to DPU_CARRY[t].
 * Kernel 1 (scan): each tasklet streams its slice again, running the maximum from DPU_CARRY[t]
 * and writing it to y. */
#include <alloc.h>
#include <barrier.h>
#include <defs.h>
#include <mram.h>
#include <stdint.h>

#include "common.h"

__host prefix_max_arguments_t DPU_INPUT_ARGUMENTS;
__host prefix_max_slot_t DPU_SLICE_MAX[NR_TASKLETS]; /* kernel 0's result, read by the host */
__host prefix_max_slot_t DPU_CARRY[NR_TASKLETS];     /* kernel 1's seed, written by the host */

BARRIER_INIT(start_barrier, NR_TASKLETS);

static int32_t block_max(const int32_t *block, int32_t running) {
    for (uint32_t i = 0; i < BLOCK_ELEMS; i++)
        running = block[i] > running ? block[i] : running;
    return running;
}

static int32_t block_scan(int32_t *block, int32_t running) {
    for (uint32_t i = 0; i < BLOCK_ELEMS; i++) {
        running = block[i] > running ? block[i] : running;
        block[i] = running;
    }
    return running;
}

/* the heap start and the bytes of this tasklet's slice, after the start barrier */
static int32_t *start(uint32_t *slice_offset, uint32_t *slice_bytes) {
    const unsigned int tasklet = me();
    if (tasklet == 0)
        mem_reset(); /* the WRAM heap survives launches: empty it before anyone allocates */
    barrier_wait(&start_barrier);
    *slice_bytes = DPU_INPUT_ARGUMENTS.size_bytes / NR_TASKLETS;
    *slice_offset = tasklet * *slice_bytes;
    return (int32_t *)mem_alloc(BLOCK_BYTES);
}

static int reduce(void) {
    uint32_t first, bytes;
    int32_t *block = start(&first, &bytes);
    const uint32_t mram_x = (uint32_t)DPU_MRAM_HEAP_POINTER + first;
    int32_t running = INT32_MIN;
    for (uint32_t offset = 0; offset < bytes; offset += BLOCK_BYTES) {
        mram_read((__mram_ptr void const *)(mram_x + offset), block, BLOCK_BYTES);
        running = block_max(block, running);
    }
    DPU_SLICE_MAX[me()].value = running;
    return 0;
}

static int scan(void) {
    uint32_t first, bytes;
    int32_t *block = start(&first, &bytes);
    const uint32_t mram_x = (uint32_t)DPU_MRAM_HEAP_POINTER + first;
    const uint32_t mram_y = mram_x + DPU_INPUT_ARGUMENTS.size_bytes;
    int32_t running = DPU_CARRY[me()].value;
    for (uint32_t offset = 0; offset < bytes; offset += BLOCK_BYTES) {
        mram_read((__mram_ptr void const *)(mram_x + offset), block, BLOCK_BYTES);
        running = block_scan(block, running);
        mram_write(block, (__mram_ptr void *)(mram_y + offset), BLOCK_BYTES);
    }
    return 0;
}

static int (*const kernels[PREFIX_MAX_NR_KERNELS])(void) = {reduce, scan};

int main(void) {
    return kernels[DPU_INPUT_ARGUMENTS.kernel]();
}
