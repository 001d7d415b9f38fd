/* VA example, DPU kernel: C = A + B over this DPU's chunk of the vectors.
 * Each tasklet moves blocks of BLOCK_BYTES between MRAM and WRAM; block k of the chunk belongs
 * to tasklet k % NR_TASKLETS (block-cyclic). */
#include "dpu_support.h"

#include "common.h"

__host va_args_t DPU_INPUT_ARGUMENTS;

BARRIER_INIT(heap_ready, NR_TASKLETS);

int main(void) {
    const uint32_t id = start_tasklet(&heap_ready);

    const uint32_t valid = DPU_INPUT_ARGUMENTS.valid_bytes;
    const uint32_t chunk = DPU_INPUT_ARGUMENTS.chunk_bytes;
    __mram_ptr uint8_t *a_mram = (__mram_ptr uint8_t *)DPU_MRAM_HEAP_POINTER;
    __mram_ptr uint8_t *b_mram = a_mram + chunk;
    __mram_ptr uint8_t *c_mram = b_mram + chunk;

    elem_t *a = (elem_t *)mem_alloc(BLOCK_BYTES);
    elem_t *b = (elem_t *)mem_alloc(BLOCK_BYTES);

    for (uint32_t pos = id * BLOCK_BYTES; pos < valid; pos += NR_TASKLETS * BLOCK_BYTES) {
        const uint32_t bytes = valid - pos < BLOCK_BYTES ? valid - pos : BLOCK_BYTES; /* a multiple of 8 */
        mram_read(a_mram + pos, a, bytes);
        mram_read(b_mram + pos, b, bytes);
        for (uint32_t k = 0; k < bytes / sizeof(elem_t); k++)
            b[k] += a[k];
        mram_write(b, c_mram + pos, bytes);
    }
    return 0;
}
