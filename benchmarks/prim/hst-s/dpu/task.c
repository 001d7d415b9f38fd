/* HST-S on a DPU: histogram of this DPU's pixels with one private histogram per tasklet.
 *
 * MRAM heap layout: the pixels at offset 0 (size valid bytes), the DPU's histogram (bins
 * uint32) at offset transfer_size.
 * Tasklet t zeroes its own WRAM histogram, then streams the pixel blocks t, t + NR_TASKLETS,
 * ... (2^BL bytes; the last one cut to the valid bytes, read rounded up to 8) and counts
 * every pixel in bin (pixel * bins) >> DEPTH. After a barrier, tasklet t adds up bins
 * t, t + NR_TASKLETS, ... of all the histograms into tasklet 0's. After a second barrier,
 * tasklet 0 writes the merged histogram to MRAM in pieces of at most 2048 bytes. */
#include <alloc.h>
#include <barrier.h>
#include <defs.h>
#include <mram.h>
#include <stdint.h>

#include "common.h"

__host hst_arguments_t DPU_INPUT_ARGUMENTS;

BARRIER_INIT(hst_barrier, NR_TASKLETS);

/* Every tasklet's private histogram (WRAM), read by the others during the merge. */
static uint32_t *histograms[NR_TASKLETS];

static void count_block(uint32_t *histo, const pixel_t *pixels, uint32_t count, uint32_t bins) {
    for (uint32_t i = 0; i < count; i++)
        histo[(pixels[i] * bins) >> DEPTH]++;
}

static int histogram(void) {
    const unsigned int tasklet = me();
    if (tasklet == 0)
        mem_reset(); /* the WRAM heap pointer survives launches */
    barrier_wait(&hst_barrier);

    const uint32_t size = DPU_INPUT_ARGUMENTS.size;
    const uint32_t bins = DPU_INPUT_ARGUMENTS.bins;
    const uint32_t mram_pixels = (uint32_t)DPU_MRAM_HEAP_POINTER;
    const uint32_t mram_histo = mram_pixels + DPU_INPUT_ARGUMENTS.transfer_size;

    pixel_t *block = (pixel_t *)mem_alloc(BLOCK_BYTES);
    uint32_t *histo = (uint32_t *)mem_alloc(bins * sizeof(uint32_t));
    histograms[tasklet] = histo;
    for (uint32_t i = 0; i < bins; i++)
        histo[i] = 0;

    for (uint32_t offset = tasklet << BL; offset < size; offset += NR_TASKLETS << BL) {
        const uint32_t bytes = (offset + BLOCK_BYTES >= size) ? (size - offset) : BLOCK_BYTES;
        mram_read((__mram_ptr void const *)(mram_pixels + offset), block, (bytes + 7) & ~7u);
        count_block(histo, block, bytes >> 2, bins);
    }
    barrier_wait(&hst_barrier);

    uint32_t *merged = histograms[0];
    for (uint32_t i = tasklet; i < bins; i += NR_TASKLETS) {
        uint32_t sum = merged[i];
        for (unsigned int t = 1; t < NR_TASKLETS; t++)
            sum += histograms[t][i];
        merged[i] = sum;
    }
    barrier_wait(&hst_barrier);

    if (tasklet == 0) {
        const uint32_t total = bins * sizeof(uint32_t);
        for (uint32_t offset = 0; offset < total; offset += HISTO_WRITE_BYTES) {
            const uint32_t bytes = total - offset < HISTO_WRITE_BYTES ? total - offset : HISTO_WRITE_BYTES;
            mram_write((uint8_t *)merged + offset, (__mram_ptr void *)(mram_histo + offset), bytes);
        }
    }
    return 0;
}

static int (*const kernels[HST_NR_KERNELS])(void) = {histogram};

int main(void) {
    return kernels[DPU_INPUT_ARGUMENTS.kernel]();
}
