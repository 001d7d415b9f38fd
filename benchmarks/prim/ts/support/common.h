/* TS: shared definitions of the host driver and the DPU kernel.
 *
 * The series, the query, the subsequence means and deviations are int32. BL is log2 of the
 * MRAM->WRAM block in bytes; PrIM never passes BL to TS, which therefore always works on
 * 256-byte blocks of 64 elements (DOTPIP = 64): BL = 8 by default. The query length must be
 * a multiple of DOTPIP. */
#ifndef CNMTUNE_TS_COMMON_H
#define CNMTUNE_TS_COMMON_H

#include <stdint.h>

typedef int32_t elem_t;

#ifndef BL
#define BL 8
#endif
#define BLOCK_BYTES (1u << BL)
#define DOTPIP (BLOCK_BYTES / sizeof(elem_t)) /* start positions per group, elements per block */

enum ts_kernel { TS_KERNEL_PROFILE = 0, TS_NR_KERNELS = 1 };

/* Written by the host before each launch, the same on every DPU (PrIM's fields; 32 bytes). */
typedef struct {
    uint32_t ts_length;      /* the padded series length (unused on the DPU, as in PrIM) */
    uint32_t query_length;   /* m, a multiple of DOTPIP */
    int32_t query_mean;      /* the query's mean, truncated */
    int32_t query_std;       /* the query's standard deviation, truncated */
    uint32_t slice_per_dpu;  /* start positions owned by each DPU (a multiple of NR_TASKLETS x m) */
    int32_t exclusion_zone;  /* 0 (unused, as in PrIM) */
    uint32_t kernel;         /* entry selected in the kernel table */
    uint32_t reserved;
} ts_arguments_t;

/* One per tasklet (8 bytes): the smallest distance over its start positions and the first
 * position (DPU-local) where it occurs; INT32_MAX and 0 when the tasklet had no position. */
typedef struct {
    int32_t min_dist;
    uint32_t min_index;
} ts_result_t;

#endif
