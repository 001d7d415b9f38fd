/* DMA_LATENCY microbenchmark: cycles of one MRAM<->WRAM DMA of TRANSFER bytes.
 *
 * Transfer k covers MRAM heap bytes [k * TRANSFER, (k + 1) * TRANSFER); tasklet t makes
 * transfers k = t, t + NR_TASKLETS, ..., one DMA at a time, each bracketed alone by two
 * perfcounter_get calls (PrIM's MRAM-Latency method; run it with one tasklet for the unloaded
 * latency). Before that every tasklet times CALIBRATION empty brackets, so the host can
 * subtract the cost of the bracket.
 *
 * READ (default): mram_read into a WRAM buffer; the tasklet folds three words of every copy
 * (the first, the last and a rotating one) into an XOR checksum that the host recomputes, so
 * every read must really deliver its bytes, while the work per transfer stays constant and the
 * whole-run cycles keep the DMA's size dependence.
 * WRITE: the source is the tasklet's row of the __host array PATTERN, which the host fills;
 * before transfer k the tasklet sets word 0 to seed + k and then the last word to ~(seed + k);
 * the host checks every byte of MRAM.
 * The word count comes from DPU_INPUT_ARGUMENTS, not from TRANSFER, so the compiler emits the
 * same per-transfer code for every size (only the DMA size differs). */
#include <alloc.h>
#include <barrier.h>
#include <defs.h>
#include <mram.h>
#include <perfcounter.h>
#include <stdint.h>
#include <stdio.h>

#include "common.h"

__host dma_arguments_t DPU_INPUT_ARGUMENTS;
__host dma_result_t DPU_RESULTS[NR_TASKLETS];
#ifdef WRITE
__host uint64_t PATTERN[NR_TASKLETS][TRANSFER_WORDS];
#endif

BARRIER_INIT(sync_barrier, NR_TASKLETS);

int main(void) {
    const unsigned int tasklet = me();
    if (tasklet == 0) {
        mem_reset(); /* the WRAM heap survives launches */
        perfcounter_config(COUNT_CYCLES, true);
    }
    barrier_wait(&sync_barrier);

    const uint32_t transfers = DPU_INPUT_ARGUMENTS.transfers;
    const uint32_t last = DPU_INPUT_ARGUMENTS.words - 1;
    const uint32_t heap = (uint32_t)DPU_MRAM_HEAP_POINTER;

    perfcounter_t overhead = 0;
    for (uint32_t i = 0; i < CALIBRATION; i++) {
        const perfcounter_t start = perfcounter_get();
        overhead += perfcounter_get() - start;
    }

#ifdef WRITE
    uint64_t *buffer = PATTERN[tasklet];
    const uint64_t seed = DPU_INPUT_ARGUMENTS.seed;
#else
    uint64_t *buffer = (uint64_t *)mem_alloc(TRANSFER);
    uint64_t checksum = 0;
    uint32_t rotating = 0;
#endif

    perfcounter_t cycles = 0;
    uint32_t done = 0;
    for (uint32_t k = tasklet; k < transfers; k += NR_TASKLETS) {
        const uint32_t address = heap + k * TRANSFER;
#ifdef WRITE
        const uint64_t value = seed + k;
        buffer[0] = value;
        buffer[last] = ~value;
        const perfcounter_t start = perfcounter_get();
        mram_write(buffer, (__mram_ptr void *)address, TRANSFER);
        cycles += perfcounter_get() - start;
#else
        const perfcounter_t start = perfcounter_get();
        mram_read((__mram_ptr void const *)address, buffer, TRANSFER);
        cycles += perfcounter_get() - start;
        checksum ^= buffer[0] ^ buffer[last] ^ buffer[rotating];
        rotating = rotating == last ? 0 : rotating + 1;
#endif
        done++;
    }

    DPU_RESULTS[tasklet].cycles = cycles;
    DPU_RESULTS[tasklet].overhead = overhead;
#ifdef WRITE
    DPU_RESULTS[tasklet].checksum = 0;
#else
    DPU_RESULTS[tasklet].checksum = checksum;
#endif
    DPU_RESULTS[tasklet].transfers = done;
    DPU_RESULTS[tasklet].calibration = CALIBRATION;

    /* the report the host parses: one line per tasklet */
    barrier_wait(&sync_barrier);
    if (tasklet == 0) {
        for (uint32_t t = 0; t < NR_TASKLETS; t++)
            printf("dma: tasklet=%u cycles=%llu overhead=%llu calibration=%u transfers=%u\n", t,
                   (unsigned long long)DPU_RESULTS[t].cycles, (unsigned long long)DPU_RESULTS[t].overhead,
                   DPU_RESULTS[t].calibration, DPU_RESULTS[t].transfers);
    }
    return 0;
}
