/* stencil on a DPU: one step of the 5-point binomial smoothing
 *   y[i] = (x[i-2] + 4 x[i-1] + 6 x[i] + 4 x[i+1] + x[i+2]) >> 4
 * over this DPU's part of x.
 *
 * MRAM heap layout (bytes): the DPU's part of x with its halos, HALO_BYTES + size_bytes +
 * HALO_BYTES (the two elements before the part, the part, the two after it: zeros at the ends
 * of the whole vector), then y, size_bytes, at offset size_bytes + 2 * HALO_BYTES.
 * Tasklet t computes output blocks t, t + NR_TASKLETS, ... (block-cyclic); for a block it reads
 * the block's inputs and the 16 bytes after them (its right halo) in two DMAs into one WRAM
 * buffer whose first 8 bytes are the block's left halo. */
#include <alloc.h>
#include <barrier.h>
#include <defs.h>
#include <mram.h>
#include <stdint.h>

#include "common.h"

__host stencil_arguments_t DPU_INPUT_ARGUMENTS;

BARRIER_INIT(start_barrier, NR_TASKLETS);

/* y[k] from window[k .. k+4]: window holds count + 4 elements, the block and its halos */
static void smooth(int32_t *restrict y, const int32_t *restrict window, uint32_t count) {
    for (uint32_t k = 0; k < count; k++) {
        const int32_t outer = window[k] + window[k + 4];
        const int32_t inner = window[k + 1] + window[k + 3];
        const int32_t centre = window[k + 2];
        y[k] = (outer + (inner << 2) + (centre << 2) + (centre << 1)) >> 4;
    }
}

int main(void) {
    const unsigned int tasklet = me();
    if (tasklet == 0)
        mem_reset(); /* the WRAM heap survives launches: empty it before anyone allocates */
    barrier_wait(&start_barrier);

    const uint32_t size = DPU_INPUT_ARGUMENTS.size_bytes;
    const uint32_t mram_x = (uint32_t)DPU_MRAM_HEAP_POINTER; /* the left halo of the part */
    const uint32_t mram_y = mram_x + size + 2 * HALO_BYTES;

    int32_t *window = (int32_t *)mem_alloc(BLOCK_BYTES + 2 * HALO_BYTES);
    int32_t *y = (int32_t *)mem_alloc(BLOCK_BYTES);

    for (uint32_t offset = tasklet << BL; offset < size; offset += NR_TASKLETS << BL) {
        const uint32_t bytes = (size - offset < BLOCK_BYTES) ? size - offset : BLOCK_BYTES;
        /* x from 2 elements before the block to 2 after it: bytes + 16 in two DMAs */
        mram_read((__mram_ptr void const *)(mram_x + offset), window, bytes);
        mram_read((__mram_ptr void const *)(mram_x + offset + bytes), (uint8_t *)window + bytes, 2 * HALO_BYTES);
        smooth(y, window, bytes / sizeof(int32_t));
        mram_write(y, (__mram_ptr void *)(mram_y + offset), bytes);
    }
    return 0;
}
