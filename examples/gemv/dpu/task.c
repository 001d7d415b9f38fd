/* GEMV example, DPU kernel: y = A x for this DPU's band of rows of A.
 * Rows go to tasklets in pairs (rows 2p and 2p+1 to tasklet p % NR_TASKLETS), so that each
 * tasklet writes its results as whole 8-byte words; a row and x are streamed in blocks of
 * BLOCK_BYTES. */
#include "dpu_support.h"

#include "common.h"

__host gemv_args_t DPU_INPUT_ARGUMENTS;

BARRIER_INIT(heap_ready, NR_TASKLETS);

static elem_t dot(const elem_t *a, const elem_t *x, uint32_t count) {
    elem_t acc = 0;
    for (uint32_t k = 0; k < count; k++)
        acc += a[k] * x[k];
    return acc;
}

int main(void) {
    const uint32_t id = start_tasklet(&heap_ready);

    const uint32_t rows = DPU_INPUT_ARGUMENTS.nr_rows;
    const uint32_t row_bytes = DPU_INPUT_ARGUMENTS.row_bytes;
    __mram_ptr uint8_t *matrix = (__mram_ptr uint8_t *)DPU_MRAM_HEAP_POINTER;
    __mram_ptr uint8_t *vector = matrix + DPU_INPUT_ARGUMENTS.band_rows * row_bytes;
    __mram_ptr uint8_t *result = vector + row_bytes;

    elem_t *x = (elem_t *)mem_alloc(BLOCK_BYTES);
    elem_t *a = (elem_t *)mem_alloc(BLOCK_BYTES);
    elem_t *y = (elem_t *)mem_alloc(2 * sizeof(elem_t));

    for (uint32_t r = 2 * id; r < rows; r += 2 * NR_TASKLETS) {
        __mram_ptr uint8_t *row = matrix + r * row_bytes;
        const int second = r + 1 < rows;
        y[0] = y[1] = 0;
        for (uint32_t pos = 0; pos < row_bytes; pos += BLOCK_BYTES) {
            const uint32_t bytes = row_bytes - pos < BLOCK_BYTES ? row_bytes - pos : BLOCK_BYTES;
            mram_read(vector + pos, x, bytes);
            mram_read(row + pos, a, bytes);
            y[0] += dot(a, x, bytes / sizeof(elem_t));
            if (second) {
                mram_read(row + row_bytes + pos, a, bytes);
                y[1] += dot(a, x, bytes / sizeof(elem_t));
            }
        }
        mram_write(y, result + r * sizeof(elem_t), 2 * sizeof(elem_t));
    }
    return 0;
}
