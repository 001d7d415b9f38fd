/* STREAM microbenchmark: sustained MRAM bandwidth of COPY, SCALE, ADD and TRIAD.
 *
 * The arrays are cut into 2^BL-byte blocks; tasklet t streams blocks t, t + NR_TASKLETS, ...
 * (block-cyclic, no barrier between blocks). For each block: read A (and B for ADD / TRIAD)
 * into WRAM, compute C's block in WRAM (COPY writes A's block back as C, so it is DMA only),
 * write C's block. Each tasklet times its whole loop with the perfcounter, between a start
 * barrier and its own end (PrIM's MRAM mode); the host takes the slowest tasklet. */
#include <alloc.h>
#include <barrier.h>
#include <defs.h>
#include <mram.h>
#include <perfcounter.h>
#include <stdint.h>
#include <stdio.h>

#include "common.h"

__host stream_arguments_t DPU_INPUT_ARGUMENTS;
__host stream_result_t DPU_RESULTS[NR_TASKLETS];

BARRIER_INIT(sync_barrier, NR_TASKLETS);

#if defined(SCALE)
static void scale_block(elem_t *restrict c, const elem_t *restrict a, elem_t s, uint32_t count) {
    for (uint32_t i = 0; i < count; i++)
        c[i] = s * a[i];
}
#elif defined(ADD)
static void add_block(elem_t *restrict a, const elem_t *restrict b, uint32_t count) {
    for (uint32_t i = 0; i < count; i++)
        a[i] = a[i] + b[i];
}
#elif defined(TRIAD)
static void triad_block(elem_t *restrict a, const elem_t *restrict b, elem_t s, uint32_t count) {
    for (uint32_t i = 0; i < count; i++)
        a[i] = a[i] + s * b[i];
}
#endif

int main(void) {
    const unsigned int tasklet = me();
    if (tasklet == 0) {
        mem_reset(); /* the WRAM heap survives launches */
        perfcounter_config(COUNT_CYCLES, true);
    }

    const uint32_t size = DPU_INPUT_ARGUMENTS.size_bytes;
    const uint32_t mram_a = (uint32_t)DPU_MRAM_HEAP_POINTER;
    const uint32_t mram_b = mram_a + DPU_INPUT_ARGUMENTS.transfer_bytes;
    const uint32_t mram_c = mram_b + DPU_INPUT_ARGUMENTS.transfer_bytes;
    const elem_t scalar = DPU_INPUT_ARGUMENTS.scalar;
    (void)mram_b;
    (void)scalar;

    elem_t *block_a = (elem_t *)mem_alloc(BLOCK_BYTES);
#if STREAM_TWO_INPUTS
    elem_t *block_b = (elem_t *)mem_alloc(BLOCK_BYTES);
#elif defined(SCALE)
    elem_t *block_c = (elem_t *)mem_alloc(BLOCK_BYTES);
#endif
    uint32_t streamed = 0, blocks = 0;

    barrier_wait(&sync_barrier);
    const perfcounter_t start = perfcounter_get();
    for (uint32_t offset = tasklet << BL; offset < size; offset += NR_TASKLETS << BL) {
        const uint32_t bytes = (offset + BLOCK_BYTES >= size) ? (size - offset) : BLOCK_BYTES;
        mram_read((__mram_ptr void const *)(mram_a + offset), block_a, bytes);
#if STREAM_TWO_INPUTS
        mram_read((__mram_ptr void const *)(mram_b + offset), block_b, bytes);
#endif
#if defined(SCALE)
        scale_block(block_c, block_a, scalar, bytes / sizeof(elem_t));
        mram_write(block_c, (__mram_ptr void *)(mram_c + offset), bytes);
#else
#if defined(ADD)
        add_block(block_a, block_b, bytes / sizeof(elem_t));
#elif defined(TRIAD)
        triad_block(block_a, block_b, scalar, bytes / sizeof(elem_t));
#endif
        mram_write(block_a, (__mram_ptr void *)(mram_c + offset), bytes);
#endif
        streamed += bytes;
        blocks++;
    }
    DPU_RESULTS[tasklet].cycles = perfcounter_get() - start;
    DPU_RESULTS[tasklet].bytes = streamed;
    DPU_RESULTS[tasklet].blocks = blocks;

    /* the report the host parses: the slowest tasklet's cycles and the bytes of one array */
    barrier_wait(&sync_barrier);
    if (tasklet == 0) {
        perfcounter_t slowest = 0;
        uint32_t total = 0;
        for (uint32_t t = 0; t < NR_TASKLETS; t++) {
            if (DPU_RESULTS[t].cycles > slowest)
                slowest = DPU_RESULTS[t].cycles;
            total += DPU_RESULTS[t].bytes;
        }
        printf("stream: cycles=%llu bytes=%u\n", (unsigned long long)slowest, total);
    }
    return 0;
}
