/* SpMV: shared definitions of the host driver and the DPU kernel.
 *
 * CSR with uint32 row pointers and column indices and float values; a nonzero is stored as
 * one 8-byte (column, value) pair. No BL: the x and y tiles are 64 floats (256 bytes) and the
 * sequential readers use seqread's default 256-byte cache. */
#ifndef CNMTUNE_SPMV_COMMON_H
#define CNMTUNE_SPMV_COMMON_H

#include <stdint.h>

#define TILE_ELEMS 64 /* floats per x or y tile (256 bytes) */

typedef struct {
    uint32_t col;
    float value;
} nonzero_t;

/* The per-DPU parameters, at offset 0 of the MRAM heap (not __host), written by the host;
 * 32 bytes on both sides. Offsets are relative to the MRAM heap (DPU_MRAM_HEAP_POINTER). */
typedef struct {
    uint32_t nr_rows;        /* rows on this DPU (even) */
    uint32_t first_rowptr;   /* row pointer of the DPU's first row: rebases the row pointers */
    uint32_t rowptr_offset;  /* nr_rows + 1 uint32 row pointers (global nonzero indices) */
    uint32_t nonzero_offset; /* the DPU's nonzeros, nonzero_t */
    uint32_t x_offset;       /* the whole x vector, padded to whole tiles */
    uint32_t y_offset;       /* nr_rows floats of output */
    uint32_t reserved[2];
} spmv_params_t;

#endif
