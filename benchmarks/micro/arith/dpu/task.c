/* ARITH microbenchmark: arithmetic throughput of one operation on one element type in WRAM.
 *
 * The vector sits at the start of the MRAM heap. It is cut into 2^BL-byte blocks; in round r
 * tasklet t owns block r * NR_TASKLETS + t. Each round: read the block into WRAM, barrier,
 * time (perfcounter) the loop x[i] = x[i] OP scalar over the block, barrier, write the block
 * back. Every tasklet runs the same number of rounds (with an empty block when the vector is
 * exhausted) so that the barriers always have all participants. Only the loop is timed, as in
 * PrIM's arithmetic-throughput microbenchmark; the host converts cycles into operations/s.
 * At the end tasklet 0 prints the slowest tasklet's timed cycles and the element count. */
#include <alloc.h>
#include <barrier.h>
#include <defs.h>
#include <mram.h>
#include <perfcounter.h>
#include <stdint.h>
#include <stdio.h>

#include "common.h"

__host arith_arguments_t DPU_INPUT_ARGUMENTS;
__host arith_result_t DPU_RESULTS[NR_TASKLETS];

BARRIER_INIT(round_barrier, NR_TASKLETS);

static void apply_block(elem_t *restrict x, elem_t scalar, uint32_t count) {
    for (uint32_t i = 0; i < count; i++)
        x[i] = ARITH_APPLY(x[i], scalar);
}

int main(void) {
    const unsigned int tasklet = me();
    if (tasklet == 0) {
        mem_reset(); /* the WRAM heap survives launches */
        perfcounter_config(COUNT_CYCLES, true);
    }
    barrier_wait(&round_barrier);

    const uint32_t size = DPU_INPUT_ARGUMENTS.size_bytes;
    const uint32_t mram_x = (uint32_t)DPU_MRAM_HEAP_POINTER;
    const elem_t scalar = DPU_INPUT_ARGUMENTS.scalar.SCALAR_FIELD;
    const uint32_t blocks = (size + BLOCK_BYTES - 1) >> BL;
    const uint32_t rounds = (blocks + NR_TASKLETS - 1) / NR_TASKLETS;

    elem_t *block = (elem_t *)mem_alloc(BLOCK_BYTES);
    perfcounter_t cycles = 0;
    uint32_t elements = 0, done = 0;

    for (uint32_t round = 0; round < rounds; round++) {
        const uint32_t offset = (round * NR_TASKLETS + tasklet) << BL;
        const uint32_t bytes = offset >= size ? 0 : (size - offset < BLOCK_BYTES ? size - offset : BLOCK_BYTES);
        if (bytes)
            mram_read((__mram_ptr void const *)(mram_x + offset), block, bytes);
        barrier_wait(&round_barrier);
        const perfcounter_t start = perfcounter_get();
        apply_block(block, scalar, bytes / sizeof(elem_t));
        cycles += perfcounter_get() - start;
        barrier_wait(&round_barrier);
        if (bytes) {
            mram_write(block, (__mram_ptr void *)(mram_x + offset), bytes);
            elements += bytes / sizeof(elem_t);
            done++;
        }
    }
    DPU_RESULTS[tasklet].cycles = cycles;
    DPU_RESULTS[tasklet].elements = elements;
    DPU_RESULTS[tasklet].blocks = done;

    /* PrIM's report: the slowest tasklet's timed cycles (the host parses this line) */
    barrier_wait(&round_barrier);
    if (tasklet == 0) {
        perfcounter_t slowest = 0;
        uint32_t total = 0;
        for (uint32_t t = 0; t < NR_TASKLETS; t++) {
            if (DPU_RESULTS[t].cycles > slowest)
                slowest = DPU_RESULTS[t].cycles;
            total += DPU_RESULTS[t].elements;
        }
        printf("arith: cycles=%llu elements=%u\n", (unsigned long long)slowest, total);
    }
    return 0;
}
