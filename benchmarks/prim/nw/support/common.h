/* NW: shared definitions of the host driver and the DPU kernel.
 *
 * Needleman-Wunsch global alignment score matrix, int32. BL is the edge of a block in cells
 * (NOT a log2, as in PrIM's NW); BL_IN the edge of the sub-blocks the tasklets compute. Both
 * are even so that every MRAM row and sub-row starts 8-aligned. */
#ifndef CNMTUNE_NW_COMMON_H
#define CNMTUNE_NW_COMMON_H

#include <stdint.h>

#ifndef BL
#define BL 32
#endif
#ifndef BL_IN
#define BL_IN 2
#endif
#if (BL % 2) != 0 || (BL_IN % 2) != 0 || (BL % BL_IN) != 0
#error "NW: BL and BL_IN must be even and BL a multiple of BL_IN"
#endif

#define NW_REP (BL / BL_IN)         /* sub-blocks per block edge */
#define NW_ROW_INTS (BL + 2)        /* one block row in MRAM: left boundary, BL cells, 1 spare */
#define NW_BLOCK_INTS ((BL + 1) * NW_ROW_INTS) /* top boundary row + BL rows */
#define NW_REF_INTS (BL * BL)       /* the block's substitution scores, BL rows of BL */

/* Written by the host before each launch, one per DPU (16 bytes). */
typedef struct {
    uint32_t nblocks;       /* blocks of this diagonal given to this DPU (0: idle) */
    uint32_t active_blocks; /* the largest nblocks over all DPUs: fixes the MRAM layout */
    int32_t penalty;        /* gap penalty */
    uint32_t reserved;
} nw_arguments_t;

#endif
