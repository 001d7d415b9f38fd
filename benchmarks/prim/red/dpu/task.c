/* RED on a DPU: the sum of this DPU's slice of a vector, streamed through WRAM in 2^BL-byte
 * blocks.
 *
 * MRAM heap layout: the slice at offset 0 (size_bytes valid bytes, zero-padded to 8).
 * Tasklet t sums blocks t, t + NR_TASKLETS, ... (block-cyclic) into a private counter and
 * publishes it in partial[t]. The partial sums are then combined:
 *   VERSION=SINGLE: one barrier, then tasklet 0 adds all of them;
 *   VERSION=TREE:   log2(NR_TASKLETS) rounds; in the round of stride s, tasklet t with
 *                   t mod 2s = 0 adds partial[t + s]. SYNC=HAND pairs t with t + s by a
 *                   handshake (t + s notifies once its subtree is complete, t waits for it);
 *                   SYNC=BARRIER puts every tasklet through one barrier per round.
 * Tasklet 0 stores the DPU's total in DPU_RESULTS[0]. */
#include <alloc.h>
#include <barrier.h>
#include <defs.h>
#include <handshake.h>
#include <mram.h>
#include <perfcounter.h>
#include <stdint.h>

#include "common.h"

__host red_arguments_t DPU_INPUT_ARGUMENTS;
__host red_result_t DPU_RESULTS[NR_TASKLETS];

BARRIER_INIT(red_barrier, NR_TASKLETS);

/* Each tasklet's partial sum (WRAM, read by the other tasklets during the combine). */
static elem_t partial[NR_TASKLETS];

static elem_t sum_block(const elem_t *block, uint32_t count) {
    elem_t sum = 0;
    for (uint32_t i = 0; i < count; i++)
        sum += block[i];
    return sum;
}

/* Combines partial[] into partial[0]; every tasklet calls it. */
static void combine(const unsigned int tasklet) {
#if RED_VERSION == RED_VERSION_SINGLE
    barrier_wait(&red_barrier);
    if (tasklet == 0) {
        elem_t total = 0;
        for (unsigned int t = 0; t < NR_TASKLETS; t++)
            total += partial[t];
        partial[0] = total;
    }
#elif RED_SYNC == RED_SYNC_HAND
    for (unsigned int stride = 1; stride < NR_TASKLETS; stride <<= 1) {
        if (tasklet & stride) { /* right child of this round: hand the subtree sum up, done */
            handshake_notify();
            break;
        }
        if (tasklet + stride < NR_TASKLETS) {
            handshake_wait_for(tasklet + stride);
            partial[tasklet] += partial[tasklet + stride];
        }
    }
#else /* TREE with a barrier per round */
    for (unsigned int stride = 1; stride < NR_TASKLETS; stride <<= 1) {
        barrier_wait(&red_barrier);
        if ((tasklet & ((stride << 1) - 1)) == 0 && tasklet + stride < NR_TASKLETS)
            partial[tasklet] += partial[tasklet + stride];
    }
#endif
}

static int reduce(void) {
    const unsigned int tasklet = me();
    if (tasklet == 0) {
        mem_reset(); /* WRAM heap survives launches: start each one from empty */
#if PERF
        perfcounter_config(COUNT_CYCLES, true);
#endif
    }
    barrier_wait(&red_barrier);

    const uint32_t size = DPU_INPUT_ARGUMENTS.size_bytes;
    const uint32_t mram_base = (uint32_t)DPU_MRAM_HEAP_POINTER;
    elem_t *block = (elem_t *)mem_alloc(BLOCK_BYTES);

    elem_t sum = 0;
    for (uint32_t offset = tasklet << BL; offset < size; offset += NR_TASKLETS << BL) {
        /* the last block is cut to the bytes left; the host pads sizes to 8 bytes */
        const uint32_t bytes = (offset + BLOCK_BYTES >= size) ? (size - offset) : BLOCK_BYTES;
        mram_read((__mram_ptr void const *)(mram_base + offset), block, bytes);
        sum += sum_block(block, bytes / sizeof(elem_t));
    }
    partial[tasklet] = sum;
    DPU_RESULTS[tasklet].total.bits = 0;
    DPU_RESULTS[tasklet].total.value = sum;

    combine(tasklet);

    if (tasklet == 0)
        DPU_RESULTS[0].total.value = partial[0];
#if PERF
    DPU_RESULTS[tasklet].cycles = perfcounter_get();
#else
    DPU_RESULTS[tasklet].cycles = 0;
#endif
    return 0;
}

static int (*const kernels[RED_NR_KERNELS])(void) = {reduce};

int main(void) {
    return kernels[DPU_INPUT_ARGUMENTS.kernel]();
}
