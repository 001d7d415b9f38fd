/* HST-L on a DPU: histogram of this DPU's pixels in NR_HISTO shared WRAM histograms.
 *
 * MRAM heap layout: the pixels at offset 0 (size valid bytes), the DPU's histogram (bins
 * uint32) at offset transfer_size.
 * Tasklet t belongs to group g = t & (NR_HISTO - 1) and updates shared histogram g. Tasklet 0
 * builds one barrier per group at run time (its fields, and an atomic bit of group_bit as
 * its lock), then all tasklets meet at the global barrier. Tasklet g (< NR_HISTO) allocates
 * histogram g; after a group barrier the group's members zero it (bins m, m + group size,
 * ... for member m) and meet at the group barrier again. Then every tasklet streams the
 * pixel blocks t, t + NR_TASKLETS, ... (2^BL bytes; the last one cut to the valid bytes,
 * read rounded up to 8) and increments bin (pixel * bins) >> DEPTH of its group's histogram,
 * holding that histogram's mutex around every single increment. After a global barrier,
 * tasklet t adds bins t, t + NR_TASKLETS, ... of all NR_HISTO histograms into histogram 0;
 * after another one, tasklet 0 writes it to MRAM in pieces of at most 2048 bytes. */
#include <alloc.h>
#include <atomic_bit.h>
#include <barrier.h>
#include <defs.h>
#include <mram.h>
#include <mutex.h>
#include <stdint.h>

#include "common.h"

#if NR_HISTO > NR_TASKLETS
#error "HST-L: NR_HISTO must not exceed NR_TASKLETS"
#endif

__host hst_arguments_t DPU_INPUT_ARGUMENTS;

BARRIER_INIT(hst_barrier, NR_TASKLETS);

ATOMIC_BIT_INIT(histo_lock)[NR_HISTO]; /* one mutex per shared histogram */
ATOMIC_BIT_INIT(group_bit)[NR_HISTO];  /* the lock bits named in the group barriers */

static barrier_t group_barrier[NR_HISTO];
static uint32_t *histograms[NR_HISTO];
static mutex_id_t histo_mutex[NR_HISTO]; /* read per pixel, as PrIM's mutex array */

/* Tasklets t < NR_TASKLETS with t & (NR_HISTO - 1) == group. */
#define GROUP_SIZE(group) ((NR_TASKLETS - (group) + NR_HISTO - 1) / NR_HISTO)

static void count_block(uint32_t *histo, unsigned int group, const pixel_t *pixels, uint32_t count,
                        uint32_t bins) {
    for (uint32_t i = 0; i < count; i++) {
        const uint32_t bin = (pixels[i] * bins) >> DEPTH;
        mutex_lock(histo_mutex[group]);
        histo[bin]++;
        mutex_unlock(histo_mutex[group]);
    }
}

static int histogram(void) {
    const unsigned int tasklet = me();
    const unsigned int group = tasklet & (NR_HISTO - 1);
    if (tasklet == 0) {
        mem_reset(); /* the WRAM heap pointer survives launches */
        for (unsigned int g = 0; g < NR_HISTO; g++) {
            group_barrier[g].wait_queue = 0xff;
            group_barrier[g].count = GROUP_SIZE(g);
            group_barrier[g].initial_count = GROUP_SIZE(g);
            group_barrier[g].lock = (uint8_t)(uintptr_t)&ATOMIC_BIT_GET(group_bit)[g];
            histo_mutex[g] = &ATOMIC_BIT_GET(histo_lock)[g];
        }
    }
    barrier_wait(&hst_barrier);

    const uint32_t size = DPU_INPUT_ARGUMENTS.size;
    const uint32_t bins = DPU_INPUT_ARGUMENTS.bins;
    const uint32_t mram_pixels = (uint32_t)DPU_MRAM_HEAP_POINTER;
    const uint32_t mram_histo = mram_pixels + DPU_INPUT_ARGUMENTS.transfer_size;

    pixel_t *block = (pixel_t *)mem_alloc(BLOCK_BYTES);
    if (tasklet < NR_HISTO)
        histograms[tasklet] = (uint32_t *)mem_alloc(bins * sizeof(uint32_t));
    barrier_wait(&group_barrier[group]);

    uint32_t *histo = histograms[group];
    const uint32_t members = GROUP_SIZE(group);
    for (uint32_t i = tasklet / NR_HISTO; i < bins; i += members)
        histo[i] = 0;
    barrier_wait(&group_barrier[group]);

    for (uint32_t offset = tasklet << BL; offset < size; offset += NR_TASKLETS << BL) {
        const uint32_t bytes = (offset + BLOCK_BYTES >= size) ? (size - offset) : BLOCK_BYTES;
        mram_read((__mram_ptr void const *)(mram_pixels + offset), block, (bytes + 7) & ~7u);
        count_block(histo, group, block, bytes >> 2, bins);
    }
    barrier_wait(&hst_barrier);

    uint32_t *merged = histograms[0];
    for (uint32_t i = tasklet; i < bins; i += NR_TASKLETS) {
        uint32_t sum = merged[i];
        for (unsigned int h = 1; h < NR_HISTO; h++)
            sum += histograms[h][i];
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
