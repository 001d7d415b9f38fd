/* RED example, DPU kernel: the 64-bit sum of this DPU's elements.
 * Tasklets stream blocks of BLOCK_BYTES (block k to tasklet k % NR_TASKLETS) and keep a partial
 * sum each; after a barrier tasklet 0 adds the partials into DPU_RESULT for the host. */
#include "dpu_support.h"

#include "common.h"

#define ELEMS_PER_BLOCK (BLOCK_BYTES / sizeof(elem_t))

__host red_args_t DPU_INPUT_ARGUMENTS;
__host int64_t DPU_RESULT;

static int64_t partial[NR_TASKLETS];

BARRIER_INIT(sync_point, NR_TASKLETS);

int main(void) {
    const uint32_t id = start_tasklet(&sync_point);

    const uint32_t n = DPU_INPUT_ARGUMENTS.nr_elems;
    __mram_ptr uint8_t *data = (__mram_ptr uint8_t *)DPU_MRAM_HEAP_POINTER;
    elem_t *block = (elem_t *)mem_alloc(BLOCK_BYTES);

    int64_t sum = 0;
    for (uint32_t first = id * ELEMS_PER_BLOCK; first < n; first += NR_TASKLETS * ELEMS_PER_BLOCK) {
        const uint32_t count = n - first < ELEMS_PER_BLOCK ? n - first : ELEMS_PER_BLOCK;
        const uint32_t bytes = (count * sizeof(elem_t) + 7) & ~7u; /* DMA moves whole 8-byte words */
        mram_read(data + first * sizeof(elem_t), block, bytes);
        for (uint32_t k = 0; k < count; k++)
            sum += block[k];
    }
    partial[id] = sum;
    barrier_wait(&sync_point);

    if (id == 0) {
        int64_t total = 0;
        for (uint32_t t = 0; t < NR_TASKLETS; t++)
            total += partial[t];
        DPU_RESULT = total;
    }
    return 0;
}
