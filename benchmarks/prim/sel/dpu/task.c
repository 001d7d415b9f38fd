/* SEL on a DPU: stream compaction of this DPU's slice, dropping the even elements.
 *
 * MRAM heap layout: the input (size_bytes) at offset 0, the output right after it
 * (offset size_bytes); kept elements are packed in order from the start of the output.
 * Rounds: in round r, tasklet t takes block r * NR_TASKLETS + t (the host pads the slice to
 * a whole number of rounds). Per round every tasklet
 *   1. reads its block and compacts the kept elements into a second WRAM buffer (l_count);
 *   2. handshake chain: tasklet t waits for t-1, takes its prefix from prefix[t], and hands
 *      prefix + l_count to t+1 (the last tasklet publishes the round's total instead);
 *   3. barrier;
 *   4. writes its l_count kept elements at element (base + prefix) of the output, where
 *      base, a private copy in every tasklet, is the number kept in the earlier rounds, and
 *      adds the round's total to base.
 * The last tasklet stores the DPU's count in DPU_RESULTS[NR_TASKLETS - 1]. */
#include <alloc.h>
#include <barrier.h>
#include <defs.h>
#include <handshake.h>
#include <mram.h>
#include <stdint.h>

#include "common.h"

__host sel_arguments_t DPU_INPUT_ARGUMENTS;
__host sel_result_t DPU_RESULTS[NR_TASKLETS];

BARRIER_INIT(sel_barrier, NR_TASKLETS);

static uint32_t prefix[NR_TASKLETS]; /* prefix[t]: kept by tasklets < t in this round */
static uint32_t round_total;         /* kept by all tasklets in this round */

static inline int predicate(elem_t value) {
    return (value & 1) == 0; /* even: removed */
}

/* PrIM unrolls this loop fully (#pragma unroll over its constant trip count) */
static uint32_t compact(elem_t *restrict out, const elem_t *restrict in) {
    uint32_t kept = 0;
#pragma unroll
    for (uint32_t i = 0; i < BLOCK_ELEMS; i++)
        if (!predicate(in[i]))
            out[kept++] = in[i];
    return kept;
}

static int select_kernel(void) {
    const unsigned int tasklet = me();
    if (tasklet == 0)
        mem_reset(); /* WRAM heap survives launches: start each one from empty */
    barrier_wait(&sel_barrier);

    const uint32_t size = DPU_INPUT_ARGUMENTS.size_bytes;
    const uint32_t mram_in = (uint32_t)DPU_MRAM_HEAP_POINTER;
    const uint32_t mram_out = mram_in + size;

    elem_t *block_in = (elem_t *)mem_alloc(BLOCK_BYTES);
    elem_t *block_out = (elem_t *)mem_alloc(BLOCK_BYTES);

    uint32_t base = 0; /* elements kept in the earlier rounds */
    for (uint32_t offset = tasklet << BL; offset < size; offset += NR_TASKLETS << BL) {
        mram_read((__mram_ptr void const *)(mram_in + offset), block_in, BLOCK_BYTES);
        const uint32_t l_count = compact(block_out, block_in);

        uint32_t my_prefix = 0;
        if (tasklet > 0) {
            handshake_wait_for(tasklet - 1);
            my_prefix = prefix[tasklet];
        }
        if (tasklet < NR_TASKLETS - 1) {
            prefix[tasklet + 1] = my_prefix + l_count;
            handshake_notify();
        } else {
            round_total = my_prefix + l_count;
        }
        barrier_wait(&sel_barrier);

        if (l_count > 0) /* no 0-byte DMA */
            mram_write(block_out, (__mram_ptr void *)(mram_out + ((base + my_prefix) << 3)), l_count << 3);
        base += round_total; /* rewritten only after every tasklet joins the next round's chain */
    }
    DPU_RESULTS[tasklet].t_count = base;
    return 0;
}

static int (*const kernels[SEL_NR_KERNELS])(void) = {select_kernel};

int main(void) {
    return kernels[DPU_INPUT_ARGUMENTS.kernel]();
}
