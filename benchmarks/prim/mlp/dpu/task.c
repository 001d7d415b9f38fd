/* MLP on a DPU: one layer, y = ReLU(W x), for this DPU's rows of the layer's weights.
 *
 * MRAM heap layout (byte offsets; every row starts 8-aligned):
 *   0                          W: max_rows rows of n_size_pad int32 (row stride n_size_pad)
 *   max_rows*n_size_pad*4      x: n_size_pad int32
 *   that + n_size_pad*4        y: max_rows int32
 * The host rewrites W and x before each of the NUM_LAYERS launches.
 *
 * Rows are handled in pairs (one 8-byte MRAM write carries two int32 outputs). The
 * nr_rows/2 pairs are dealt in consecutive runs: pairs/NR_TASKLETS per tasklet and one more
 * for the first pairs mod NR_TASKLETS tasklets. A row is walked in 2^BL-byte blocks: read the
 * block of the row and the block of x at the same columns, multiply-accumulate; the partial
 * last block is read whole and only its valid columns are used. The products are summed in
 * uint32 (wrap-around without signed overflow), then ReLU clamps negatives to zero. */
#include <alloc.h>
#include <barrier.h>
#include <defs.h>
#include <mram.h>
#include <stdint.h>

#include "common.h"

__host mlp_arguments_t DPU_INPUT_ARGUMENTS;

BARRIER_INIT(layer_barrier, NR_TASKLETS);

#define ELEMS_PER_BLOCK (BLOCK_BYTES / sizeof(elem_t))

static uint32_t mac_block(const elem_t *w, const elem_t *x, uint32_t count, uint32_t sum) {
    for (uint32_t i = 0; i < count; i++)
        sum += (uint32_t)w[i] * (uint32_t)x[i];
    return sum;
}

static elem_t relu(uint32_t value) {
    const elem_t v = (elem_t)value;
    return v < 0 ? 0 : v;
}

int main(void) {
    const unsigned int tasklet = me();
    if (tasklet == 0)
        mem_reset(); /* the WRAM heap pointer survives launches */
    barrier_wait(&layer_barrier);

    const uint32_t n = DPU_INPUT_ARGUMENTS.n_size;
    const uint32_t stride = DPU_INPUT_ARGUMENTS.n_size_pad * sizeof(elem_t);
    const uint32_t pairs = DPU_INPUT_ARGUMENTS.nr_rows >> 1;
    const uint32_t w_base = (uint32_t)DPU_MRAM_HEAP_POINTER;
    const uint32_t x_base = w_base + DPU_INPUT_ARGUMENTS.max_rows * stride;
    const uint32_t y_base = x_base + stride;

    elem_t *w_buf = (elem_t *)mem_alloc(BLOCK_BYTES);
    elem_t *x_buf = (elem_t *)mem_alloc(BLOCK_BYTES);
    elem_t *out = (elem_t *)mem_alloc(2 * sizeof(elem_t));

    const uint32_t per = pairs / NR_TASKLETS;
    const uint32_t rest = pairs % NR_TASKLETS;
    const uint32_t begin = tasklet * per + (tasklet < rest ? tasklet : rest);
    const uint32_t end = begin + per + (tasklet < rest ? 1 : 0);

    for (uint32_t pair = begin; pair < end; pair++) {
        for (uint32_t k = 0; k < 2; k++) {
            const uint32_t row = w_base + ((pair << 1) + k) * stride;
            uint32_t sum = 0;
            for (uint32_t col = 0; col < n; col += ELEMS_PER_BLOCK) {
                const uint32_t left = n - col;
                const uint32_t offset = col * sizeof(elem_t);
                mram_read((__mram_ptr void const *)(row + offset), w_buf, BLOCK_BYTES);
                mram_read((__mram_ptr void const *)(x_base + offset), x_buf, BLOCK_BYTES);
                sum = mac_block(w_buf, x_buf, left < ELEMS_PER_BLOCK ? left : ELEMS_PER_BLOCK, sum);
            }
            out[k] = relu(sum);
        }
        mram_write(out, (__mram_ptr void *)(y_base + (pair << 3)), 2 * sizeof(elem_t));
    }
    return 0;
}
