/* SpMV on a DPU: y = A x for this DPU's rows of a CSR matrix, in float.
 *
 * MRAM heap layout: an spmv_params_t at offset 0, then (offsets in it) the DPU's row pointers,
 * its nonzeros, the whole x and its y. Every tasklet reads the parameters, then takes
 * ceil(nr_rows / NR_TASKLETS) rounded up to even consecutive rows (so every y write is a
 * multiple of 8 bytes). Two sequential readers stream the row pointers and the nonzeros;
 * x is cached one 64-float tile at a time (tile 0 read first) and re-read whenever a column
 * falls in another tile; results are gathered in a 64-float tile, written when it fills, and
 * at the last row the partial tile is written with (rows mod 64) x 4 bytes, as PrIM. */
#include <alloc.h>
#include <barrier.h>
#include <defs.h>
#include <mram.h>
#include <seqread.h>
#include <stdint.h>

#include "common.h"

BARRIER_INIT(start_barrier, NR_TASKLETS);

int main(void) {
    const unsigned int tasklet = me();
    if (tasklet == 0)
        mem_reset(); /* WRAM heap survives launches: start each one from empty */
    barrier_wait(&start_barrier);

    const uint32_t heap = (uint32_t)DPU_MRAM_HEAP_POINTER;
    spmv_params_t *params = (spmv_params_t *)mem_alloc(sizeof(spmv_params_t));
    mram_read((__mram_ptr void const *)heap, params, sizeof(spmv_params_t));
    const uint32_t nr_rows = params->nr_rows;

    uint32_t per_tasklet = (nr_rows + NR_TASKLETS - 1) / NR_TASKLETS;
    per_tasklet += per_tasklet & 1;
    const uint32_t first = tasklet * per_tasklet;
    if (first >= nr_rows)
        return 0;
    const uint32_t count = (nr_rows - first < per_tasklet) ? nr_rows - first : per_tasklet;

    const uint32_t mram_rowptr = heap + params->rowptr_offset;
    const uint32_t mram_nonzeros = heap + params->nonzero_offset;
    const uint32_t mram_x = heap + params->x_offset;
    const uint32_t mram_y = heap + params->y_offset + (first << 2);

    float *x_tile = (float *)mem_alloc(TILE_ELEMS * sizeof(float));
    float *y_tile = (float *)mem_alloc(TILE_ELEMS * sizeof(float));
    seqreader_buffer_t rowptr_cache = seqread_alloc();
    seqreader_buffer_t nonzero_cache = seqread_alloc();
    seqreader_t rowptr_reader, nonzero_reader;

    uint32_t *rowptr = (uint32_t *)seqread_init(rowptr_cache, (__mram_ptr void *)(mram_rowptr + (first << 2)),
                                                &rowptr_reader);
    uint32_t row_begin = *rowptr;
    nonzero_t *nz = (nonzero_t *)seqread_init(
        nonzero_cache, (__mram_ptr void *)(mram_nonzeros + ((row_begin - params->first_rowptr) << 3)),
        &nonzero_reader);

    mram_read((__mram_ptr void const *)mram_x, x_tile, TILE_ELEMS * sizeof(float)); /* as PrIM: tile 0 first */
    uint32_t x_tile_index = 0;
    for (uint32_t row = 0; row < count; row++) {
        rowptr = (uint32_t *)seqread_get(rowptr, sizeof(uint32_t), &rowptr_reader);
        const uint32_t row_end = *rowptr;
        float acc = 0.0f;
        for (uint32_t k = row_begin; k < row_end; k++) {
            const uint32_t col = nz->col;
            if ((col >> 6) != x_tile_index) {
                x_tile_index = col >> 6;
                mram_read((__mram_ptr void const *)(mram_x + (x_tile_index << 8)), x_tile,
                          TILE_ELEMS * sizeof(float));
            }
            acc += nz->value * x_tile[col & (TILE_ELEMS - 1)];
            nz = (nonzero_t *)seqread_get(nz, sizeof(nonzero_t), &nonzero_reader);
        }
        row_begin = row_end;
        y_tile[row & (TILE_ELEMS - 1)] = acc;
        if ((row & (TILE_ELEMS - 1)) == TILE_ELEMS - 1)
            mram_write(y_tile, (__mram_ptr void *)(mram_y + ((row - (TILE_ELEMS - 1)) << 2)),
                       TILE_ELEMS * sizeof(float));
        else if (row == count - 1) /* the last, partial tile: an even count, 8-byte multiple */
            mram_write(y_tile, (__mram_ptr void *)(mram_y + ((row & ~(TILE_ELEMS - 1)) << 2)),
                       (count & (TILE_ELEMS - 1)) << 2);
    }
    return 0;
}
