/* VA on a DPU: B[i] += A[i] over this DPU's slice, streamed through WRAM in 2^BL-byte blocks.
 *
 * MRAM heap layout: A at offset 0, B at offset transfer_bytes; the sum overwrites B.
 * Tasklet t handles blocks t, t + NR_TASKLETS, t + 2*NR_TASKLETS, ... (block-cyclic). */
#include <alloc.h>
#include <barrier.h>
#include <defs.h>
#include <mram.h>
#include <perfcounter.h>
#include <stdint.h>
#include <stdio.h>

#include "common.h"

__host va_arguments_t DPU_INPUT_ARGUMENTS;

BARRIER_INIT(start_barrier, NR_TASKLETS);

static void add_block(elem_t *restrict sum, const elem_t *restrict addend, uint32_t count) {
    for (uint32_t i = 0; i < count; i++)
        sum[i] += addend[i];
}

static int vector_add(void) {
    const unsigned int tasklet = me();
    if (tasklet == 0)
        mem_reset(); /* WRAM heap survives launches: start each one from empty */
    barrier_wait(&start_barrier);

    const uint32_t size = DPU_INPUT_ARGUMENTS.size_bytes;
    const uint32_t mram_a = (uint32_t)DPU_MRAM_HEAP_POINTER;
    const uint32_t mram_b = mram_a + DPU_INPUT_ARGUMENTS.transfer_bytes;

    elem_t *block_a = (elem_t *)mem_alloc(BLOCK_BYTES);
    elem_t *block_b = (elem_t *)mem_alloc(BLOCK_BYTES);

    for (uint32_t offset = tasklet << BL; offset < size; offset += NR_TASKLETS << BL) {
        /* the last block is cut to the bytes left; the host pads sizes to 8 bytes */
        const uint32_t bytes = (offset + BLOCK_BYTES >= size) ? (size - offset) : BLOCK_BYTES;
        mram_read((__mram_ptr void const *)(mram_a + offset), block_a, bytes);
        mram_read((__mram_ptr void const *)(mram_b + offset), block_b, bytes);
        add_block(block_b, block_a, bytes / sizeof(elem_t));
        mram_write(block_b, (__mram_ptr void *)(mram_b + offset), bytes);
    }
    return 0;
}

static int (*const kernels[VA_NR_KERNELS])(void) = {vector_add};

int main(void) {
    return kernels[DPU_INPUT_ARGUMENTS.kernel]();
}
