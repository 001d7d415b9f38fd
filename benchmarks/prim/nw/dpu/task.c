/* NW on a DPU: the score blocks of one block anti-diagonal of the Needleman-Wunsch matrix.
 *
 * MRAM heap layout (int32; every row starts 8-aligned because BL is even):
 *   slot s (0 <= s < active_blocks) at s*NW_BLOCK_INTS*4: BL+1 rows of BL+2 ints. Row 0 is
 *     the top boundary (the corner, the BL cells above the block, one spare); row r >= 1
 *     holds the left boundary in column 0 and the block's row r in columns 1..BL (column
 *     BL+1 is spare). The host fills row 0 and columns 0..1 of the other rows.
 *   reference scores at active_blocks*NW_BLOCK_INTS*4 + s*NW_REF_INTS*4: BL rows of BL ints.
 * A block is a NW_REP x NW_REP grid of BL_IN x BL_IN sub-blocks, computed as a wavefront
 * over its sub-diagonals in PrIM's two phases (top-left steps 0..NW_REP, step 0 empty;
 * bottom-right steps 2..NW_REP) with a barrier after each step. The sub-blocks of a step are
 * dealt in consecutive runs (len/NR_TASKLETS each, one more for the first len mod
 * NR_TASKLETS tasklets). Per sub-block a tasklet reads the row above (BL_IN+2 ints),
 * the left boundary of each row (8 bytes each), BL_IN rows of BL_IN reference scores,
 * fills the tile and writes its BL_IN rows back (BL_IN+2 ints each, from the left boundary;
 * the last int lands in the next, not yet computed, sub-block and is overwritten later). */
#include <alloc.h>
#include <barrier.h>
#include <defs.h>
#include <mram.h>
#include <stdint.h>

#include "common.h"

__host nw_arguments_t DPU_INPUT_ARGUMENTS;

BARRIER_INIT(wave_barrier, NR_TASKLETS);

#define TILE_STRIDE (BL_IN + 2) /* ints per tile row: left boundary, BL_IN cells, spare */
#define TILE_ROW_BYTES (TILE_STRIDE * 4)
#define MRAM_ROW_BYTES (NW_ROW_INTS * 4)

static int32_t max3(int32_t a, int32_t b, int32_t c) {
    int32_t m = a > b ? a : b;
    return m > c ? m : c;
}

/* Sub-block (si, sj) of the block whose scores start at MRAM `score` and reference at `ref`. */
static void sub_block(uint32_t score, uint32_t ref, uint32_t si, uint32_t sj,
                      int32_t *tile, int32_t *ref_tile, int32_t penalty) {
    const uint32_t row0 = si * BL_IN;
    const uint32_t col0 = sj * BL_IN;
    const uint32_t base = score + (row0 * NW_ROW_INTS + col0) * 4;

    mram_read((__mram_ptr void const *)base, tile, TILE_ROW_BYTES);
    for (uint32_t r = 1; r <= BL_IN; r++)
        mram_read((__mram_ptr void const *)(base + r * MRAM_ROW_BYTES), tile + r * TILE_STRIDE, 8);
    for (uint32_t r = 0; r < BL_IN; r++)
        mram_read((__mram_ptr void const *)(ref + ((row0 + r) * BL + col0) * 4),
                  ref_tile + r * BL_IN, BL_IN * 4);

    for (uint32_t r = 1; r <= BL_IN; r++) {
        int32_t *up = tile + (r - 1) * TILE_STRIDE;
        int32_t *cur = tile + r * TILE_STRIDE;
        const int32_t *sc = ref_tile + (r - 1) * BL_IN;
        for (uint32_t c = 1; c <= BL_IN; c++)
            cur[c] = max3(up[c - 1] + sc[c - 1], cur[c - 1] - penalty, up[c] - penalty);
    }

    for (uint32_t r = 1; r <= BL_IN; r++)
        mram_write(tile + r * TILE_STRIDE, (__mram_ptr void *)(base + r * MRAM_ROW_BYTES), TILE_ROW_BYTES);
}

/* PrIM's split of len sub-blocks over the tasklets: consecutive runs, len / NR_TASKLETS each
 * and one more for the first len mod NR_TASKLETS tasklets. */
static void split(uint32_t len, unsigned int tasklet, uint32_t *first, uint32_t *count) {
    const uint32_t per = len / NR_TASKLETS;
    const uint32_t rest = len % NR_TASKLETS;
    *first = tasklet * per + (tasklet < rest ? tasklet : rest);
    *count = per + (tasklet < rest ? 1 : 0);
}

int main(void) {
    const unsigned int tasklet = me();
    if (tasklet == 0)
        mem_reset(); /* the WRAM heap pointer survives launches */
    barrier_wait(&wave_barrier);

    const uint32_t nblocks = DPU_INPUT_ARGUMENTS.nblocks;
    const int32_t penalty = DPU_INPUT_ARGUMENTS.penalty;
    const uint32_t heap = (uint32_t)DPU_MRAM_HEAP_POINTER;
    const uint32_t ref_base = heap + DPU_INPUT_ARGUMENTS.active_blocks * (NW_BLOCK_INTS * 4);

    int32_t *tile = (int32_t *)mem_alloc((BL_IN + 1) * TILE_ROW_BYTES);
    int32_t *ref_tile = (int32_t *)mem_alloc(BL_IN * BL_IN * 4);

    uint32_t first, count;
    for (uint32_t b = 0; b < nblocks; b++) {
        const uint32_t score = heap + b * (NW_BLOCK_INTS * 4);
        const uint32_t ref = ref_base + b * (NW_REF_INTS * 4);
        /* top-left: step s holds the s sub-blocks (x, s - 1 - x) (step 0 none, as in PrIM) */
        for (uint32_t s = 0; s <= NW_REP; s++) {
            split(s, tasklet, &first, &count);
            for (uint32_t x = first; x < first + count; x++)
                sub_block(score, ref, x, s - 1 - x, tile, ref_tile, penalty);
            barrier_wait(&wave_barrier);
        }
        /* bottom-right: step s holds the NW_REP - s + 1 sub-blocks from row s - 1 */
        for (uint32_t s = 2; s <= NW_REP; s++) {
            split(NW_REP - s + 1, tasklet, &first, &count);
            for (uint32_t x = s - 1 + first; x < s - 1 + first + count; x++)
                sub_block(score, ref, x, NW_REP + s - 2 - x, tile, ref_tile, penalty);
            barrier_wait(&wave_barrier);
        }
    }
    return 0;
}
