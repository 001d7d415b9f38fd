/* PrIM's GEMV DPU program, shared by GEMV (uint32) and MLP (int32, one launch per layer):
 * y = A x for this DPU's rows of A. The including kernel's common.h defines elem_t (4 bytes)
 * and BL, log2 of the MRAM->WRAM block in bytes.
 *
 * MRAM heap layout (byte offsets; every row starts 8-aligned):
 *   0                          A: max_rows rows of n_size_pad elements (row stride n_size_pad)
 *   max_rows*n_size_pad*4      x: n_size_pad elements
 *   that + n_size_pad*4        y: max_rows elements
 * As PrIM's loop: rows go in pairs, since one 8-byte write holds two results; the pairs are
 * split in consecutive runs (pairs / NR_TASKLETS each, one more for the first pairs mod
 * NR_TASKLETS tasklets). A row is walked in 2^BL-byte blocks while more than one block of
 * columns is left: read a block of the row and of x, multiply-accumulate into the pair's
 * WRAM result; the last 1..BLOCK_ELEMS columns are read as one whole block of the row and of
 * x and accumulated element by element under PrIM's bound check. Then the pair's 8 bytes are
 * written to y. */
#ifndef CNMTUNE_PRIM_GEMV_ROWS_H
#define CNMTUNE_PRIM_GEMV_ROWS_H

#include <alloc.h>
#include <barrier.h>
#include <defs.h>
#include <mram.h>
#include <stdint.h>

#define BLOCK_BYTES (1u << BL)
#define BLOCK_ELEMS (BLOCK_BYTES / sizeof(elem_t))

/* Written by the host before the launches, one per DPU (16 bytes). */
typedef struct {
    uint32_t n_size;     /* columns of A, elements of x */
    uint32_t n_size_pad; /* n_size rounded up to even: the row stride in MRAM */
    uint32_t nr_rows;    /* rows on this DPU (PrIM's rows_per_dpu, not padded) */
    uint32_t max_rows;   /* the largest even-padded row count over all DPUs: the MRAM layout */
} gemv_arguments_t;

__host gemv_arguments_t DPU_INPUT_ARGUMENTS;

BARRIER_INIT(gemv_barrier, NR_TASKLETS);

/* PrIM's block product: accumulates into the result word itself (in WRAM), not a register. */
static void gemv_block(elem_t *acc, const elem_t *a, const elem_t *x, uint32_t pos) {
    for (uint32_t i = 0; i < BLOCK_ELEMS; i++)
        acc[pos] += a[i] * x[i];
}

static int gemv_rows(void) {
    const unsigned int tasklet = me();
    if (tasklet == 0)
        mem_reset(); /* WRAM heap survives launches: start each one from empty */
    barrier_wait(&gemv_barrier);

    const int32_t n_size = (int32_t)DPU_INPUT_ARGUMENTS.n_size;
    const uint32_t row_bytes = DPU_INPUT_ARGUMENTS.n_size_pad << 2;
    const uint32_t nr_rows = DPU_INPUT_ARGUMENTS.nr_rows;
    const uint32_t mram_a = (uint32_t)DPU_MRAM_HEAP_POINTER;
    const uint32_t mram_x = mram_a + DPU_INPUT_ARGUMENTS.max_rows * row_bytes;

    const uint32_t pairs = (nr_rows + 1) >> 1;
    const uint32_t chunk = pairs / NR_TASKLETS;
    const uint32_t extra = pairs % NR_TASKLETS;
    const uint32_t first = tasklet * chunk + (tasklet < extra ? tasklet : extra);
    const uint32_t count = chunk + (tasklet < extra ? 1 : 0);
    uint32_t mram_y = mram_x + row_bytes + (first << 3);

    elem_t *cache_a = (elem_t *)mem_alloc(BLOCK_BYTES);
    elem_t *cache_x = (elem_t *)mem_alloc(BLOCK_BYTES);
    elem_t *cache_y = (elem_t *)mem_alloc(2 * sizeof(elem_t));

    for (uint32_t row = first << 1; row < (first + count) << 1; row += 2) {
        uint32_t addr_a = mram_a + row * row_bytes;
        cache_y[0] = 0;
        cache_y[1] = 0;
        for (uint32_t pos = 0; pos < 2 && row + pos < nr_rows; pos++) {
            uint32_t addr_x = mram_x;
            int32_t col = 0;
            for (; col < n_size - (int32_t)BLOCK_ELEMS; col += BLOCK_ELEMS) {
                mram_read((__mram_ptr void const *)addr_a, cache_a, BLOCK_BYTES);
                mram_read((__mram_ptr void const *)addr_x, cache_x, BLOCK_BYTES);
                gemv_block(cache_y, cache_a, cache_x, pos);
                addr_a += BLOCK_BYTES;
                addr_x += BLOCK_BYTES;
            }
            mram_read((__mram_ptr void const *)addr_a, cache_a, BLOCK_BYTES);
            mram_read((__mram_ptr void const *)addr_x, cache_x, BLOCK_BYTES);
            for (int32_t j = 0; j < n_size - col; j++) {
                if (j >= (int32_t)BLOCK_ELEMS) /* PrIM's check (never true), kept for its cost */
                    break;
                cache_y[pos] += cache_a[j] * cache_x[j];
            }
            addr_a += row_bytes - ((uint32_t)col << 2); /* the next row */
        }
        mram_write(cache_y, (__mram_ptr void *)mram_y, 2 * sizeof(elem_t));
        mram_y += 2 * sizeof(elem_t);
    }
    return 0;
}

#endif
