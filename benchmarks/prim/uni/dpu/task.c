/* UNI on a DPU: removes consecutive duplicates from this DPU's slice.
 *
 * MRAM heap layout: the input (size_bytes) at offset 0, the output right after it (offset
 * size_bytes); kept elements are packed in order from the start of the output.
 * Rounds: in round r, tasklet t takes block r * NR_TASKLETS + t (the host pads the slice to
 * a whole number of rounds by repeating the last element). Per round every tasklet
 *   1. reads its block and keeps, into a second WRAM buffer, every element that differs
 *      from the previous one in the block (the block's first element always: l_count >= 1);
 *   2. handshake chain: tasklet t waits for t-1 and takes from it the prefix count and the
 *      last input element before its block; tasklet 0 takes the last element of the previous
 *      round instead (in round 0 there is none). If the block's first element equals that
 *      predecessor it is dropped (z = 1). Tasklet t hands prefix + l_count - z and its own
 *      last element on to t+1; the last tasklet publishes the round's total and last element;
 *   3. writes its l_count - z kept elements (from buffer index z) at element base + prefix of
 *      the output, base being the private count of the earlier rounds;
 *   4. barrier (after the write, as PrIM), then adds the round's total to base.
 * Tasklet 0 records the DPU's first element; the last tasklet its last element and count. */
#include <alloc.h>
#include <barrier.h>
#include <defs.h>
#include <handshake.h>
#include <mram.h>
#include <stdint.h>

#include "common.h"

__host uni_arguments_t DPU_INPUT_ARGUMENTS;
__host uni_result_t DPU_RESULTS[NR_TASKLETS];

BARRIER_INIT(uni_barrier, NR_TASKLETS);

/* Handed from tasklet t-1 to t (index t) along the chain; index 0 from the previous round. */
static uint32_t prefix[NR_TASKLETS];
static elem_t predecessor[NR_TASKLETS];
static uint32_t round_total;

/* PrIM unrolls this loop fully (#pragma unroll over its constant trip count) */
static uint32_t unique(elem_t *restrict out, const elem_t *restrict in) {
    uint32_t kept = 1;
    out[0] = in[0];
#pragma unroll
    for (uint32_t i = 1; i < BLOCK_ELEMS; i++)
        if (in[i] != in[i - 1])
            out[kept++] = in[i];
    return kept;
}

static int unique_kernel(void) {
    const unsigned int tasklet = me();
    if (tasklet == 0)
        mem_reset(); /* WRAM heap survives launches: start each one from empty */
    barrier_wait(&uni_barrier);

    const uint32_t size = DPU_INPUT_ARGUMENTS.size_bytes;
    const uint32_t mram_in = (uint32_t)DPU_MRAM_HEAP_POINTER;
    const uint32_t mram_out = mram_in + size;

    elem_t *block_in = (elem_t *)mem_alloc(BLOCK_BYTES);
    elem_t *block_out = (elem_t *)mem_alloc(BLOCK_BYTES);

    uint32_t base = 0; /* elements kept in the earlier rounds */
    for (uint32_t offset = tasklet << BL; offset < size; offset += NR_TASKLETS << BL) {
        mram_read((__mram_ptr void const *)(mram_in + offset), block_in, BLOCK_BYTES);
        const uint32_t l_count = unique(block_out, block_in);
        const elem_t my_last = block_in[BLOCK_ELEMS - 1];

        uint32_t my_prefix = 0, z = 0;
        if (tasklet > 0)
            handshake_wait_for(tasklet - 1);
        if (tasklet > 0 || offset > 0) { /* a predecessor exists */
            my_prefix = prefix[tasklet];
            z = block_out[0] == predecessor[tasklet];
        } else {
            DPU_RESULTS[0].first = block_out[0];
        }
        const uint32_t handed = my_prefix + l_count - z;
        if (tasklet < NR_TASKLETS - 1) {
            prefix[tasklet + 1] = handed;
            predecessor[tasklet + 1] = my_last;
            handshake_notify();
        } else {
            round_total = handed;
            prefix[0] = 0;
            predecessor[0] = my_last; /* tasklet 0's predecessor in the next round */
        }
        if (l_count > z)
            mram_write(block_out + z, (__mram_ptr void *)(mram_out + ((base + my_prefix) << 3)),
                       (l_count - z) << 3);
        if (tasklet == NR_TASKLETS - 1)
            DPU_RESULTS[tasklet].last = my_last;
        barrier_wait(&uni_barrier);
        base += round_total; /* rewritten only after every tasklet joins the next round's chain */
    }
    DPU_RESULTS[tasklet].t_count = base;
    return 0;
}

static int (*const kernels[UNI_NR_KERNELS])(void) = {unique_kernel};

int main(void) {
    return kernels[DPU_INPUT_ARGUMENTS.kernel]();
}
