/* {{name}}: Y = alpha * X + Y on this DPU's slice, streamed through WRAM in 2^BL-byte blocks.
 *
 * MRAM heap layout (written by workload.py): X at offset 0, Y at offset size_bytes; the result
 * overwrites Y. Work split as in PrIM's streaming kernels: tasklet t takes blocks t,
 * t + NR_TASKLETS, t + 2 * NR_TASKLETS, ... (block-cyclic), so neighbouring tasklets read
 * neighbouring blocks and every tasklet gets an equal share. */
#include <alloc.h>
#include <barrier.h>
#include <defs.h>
#include <mram.h>
#include <stdint.h>

#include "common.h"

/* __host: a WRAM variable the host reaches by its name, here with device.broadcast(...). */
__host arguments_t DPU_INPUT_ARGUMENTS;

/* All NR_TASKLETS tasklets meet here before any of them allocates WRAM. */
BARRIER_INIT(start_barrier, NR_TASKLETS);

int main(void) {
    /* Every tasklet runs main; me() tells them apart (0 .. NR_TASKLETS - 1). */
    const unsigned int tasklet = me();
    if (tasklet == 0)
        mem_reset(); /* the WRAM heap survives launches: empty it before anyone allocates */
    barrier_wait(&start_barrier);

    const uint32_t size = DPU_INPUT_ARGUMENTS.size_bytes;
    const int32_t alpha = DPU_INPUT_ARGUMENTS.alpha;
    const uint32_t mram_x = (uint32_t)DPU_MRAM_HEAP_POINTER;
    const uint32_t mram_y = mram_x + size;

    /* This tasklet's two WRAM blocks (mem_alloc returns 8-byte-aligned memory, as DMA needs). */
    int32_t *x = (int32_t *)mem_alloc(BLOCK_BYTES);
    int32_t *y = (int32_t *)mem_alloc(BLOCK_BYTES);

    for (uint32_t offset = tasklet * BLOCK_BYTES; offset < size; offset += NR_TASKLETS * BLOCK_BYTES) {
        /* The last block is cut to the bytes left; size is a multiple of 8, so every DMA stays
         * within the rules: 8..2048 bytes, a multiple of 8, 8-byte-aligned addresses. */
        const uint32_t bytes = (size - offset < BLOCK_BYTES) ? size - offset : BLOCK_BYTES;
        mram_read((__mram_ptr void const *)(mram_x + offset), x, bytes);
        mram_read((__mram_ptr void const *)(mram_y + offset), y, bytes);
        for (uint32_t i = 0; i < bytes / sizeof(int32_t); i++)
            y[i] += alpha * x[i]; /* no 32-bit multiplier on a DPU: a runtime call (__mulsi3) */
        mram_write(y, (__mram_ptr void *)(mram_y + offset), bytes);
    }
    return 0;
}
