/* GEMV on a DPU: y = A x for this DPU's rows of A, uint32 with wrap-around.
 *
 * MRAM heap layout (byte offsets; every row starts 8-aligned):
 *   0                          A: max_rows rows of n_size_pad elements (row stride n_size_pad)
 *   max_rows*n_size_pad*4      x: n_size_pad elements
 *   that + n_size_pad*4        y: max_rows elements
 * Rows go in pairs, since one 8-byte write holds two uint32 results. The nr_rows/2 pairs are
 * split in consecutive runs: every tasklet gets pairs/NR_TASKLETS of them and the first
 * pairs mod NR_TASKLETS tasklets one more. For each row of a pair, the tasklet walks the
 * columns in 2^BL-byte blocks: it reads a block of the row and the matching block of x and
 * multiply-accumulates into a 2-element WRAM accumulator; a last, partial block covers the
 * remaining columns (it is read whole, as the full blocks are). Then it writes the pair. */
#include <alloc.h>
#include <barrier.h>
#include <defs.h>
#include <mram.h>
#include <stdint.h>

#include "common.h"

__host gemv_arguments_t DPU_INPUT_ARGUMENTS;

BARRIER_INIT(start_barrier, NR_TASKLETS);

#define ELEMS_PER_BLOCK (BLOCK_BYTES / sizeof(elem_t))

static elem_t dot(const elem_t *row, const elem_t *x, uint32_t count) {
    elem_t sum = 0;
    for (uint32_t i = 0; i < count; i++)
        sum += row[i] * x[i];
    return sum;
}

int main(void) {
    const unsigned int tasklet = me();
    if (tasklet == 0)
        mem_reset(); /* WRAM heap survives launches: start each one from empty */
    barrier_wait(&start_barrier);

    const uint32_t n = DPU_INPUT_ARGUMENTS.n_size;
    const uint32_t row_bytes = DPU_INPUT_ARGUMENTS.n_size_pad << 2;
    const uint32_t nr_pairs = DPU_INPUT_ARGUMENTS.nr_rows >> 1;
    const uint32_t mram_a = (uint32_t)DPU_MRAM_HEAP_POINTER;
    const uint32_t mram_x = mram_a + DPU_INPUT_ARGUMENTS.max_rows * row_bytes;
    const uint32_t mram_y = mram_x + row_bytes;

    elem_t *cache_a = (elem_t *)mem_alloc(BLOCK_BYTES);
    elem_t *cache_x = (elem_t *)mem_alloc(BLOCK_BYTES);
    elem_t *acc = (elem_t *)mem_alloc(2 * sizeof(elem_t));

    /* this tasklet's run of pairs */
    const uint32_t chunk = nr_pairs / NR_TASKLETS;
    const uint32_t extra = nr_pairs % NR_TASKLETS;
    const uint32_t first = tasklet * chunk + (tasklet < extra ? tasklet : extra);
    const uint32_t count = chunk + (tasklet < extra ? 1 : 0);

    for (uint32_t pair = first; pair < first + count; pair++) {
        uint32_t row_addr = mram_a + (pair << 1) * row_bytes;
        for (uint32_t half = 0; half < 2; half++, row_addr += row_bytes) {
            acc[half] = 0;
            uint32_t col = 0;
            for (; col + ELEMS_PER_BLOCK <= n; col += ELEMS_PER_BLOCK) {
                mram_read((__mram_ptr void const *)(row_addr + (col << 2)), cache_a, BLOCK_BYTES);
                mram_read((__mram_ptr void const *)(mram_x + (col << 2)), cache_x, BLOCK_BYTES);
                acc[half] += dot(cache_a, cache_x, ELEMS_PER_BLOCK);
            }
            if (col < n) { /* the partial last block */
                mram_read((__mram_ptr void const *)(row_addr + (col << 2)), cache_a, BLOCK_BYTES);
                mram_read((__mram_ptr void const *)(mram_x + (col << 2)), cache_x, BLOCK_BYTES);
                acc[half] += dot(cache_a, cache_x, n - col);
            }
        }
        mram_write(acc, (__mram_ptr void *)(mram_y + (pair << 3)), 2 * sizeof(elem_t));
    }
    return 0;
}
