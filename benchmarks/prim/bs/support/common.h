/* BS: shared definitions of the host driver and the DPU kernel.
 *
 * The sorted array and the queries are int64. BL is log2 of the search block in bytes; PrIM
 * never passes BL to BS, which therefore always reads 256-byte blocks (32 elements): BL = 8. */
#ifndef CNMTUNE_BS_COMMON_H
#define CNMTUNE_BS_COMMON_H

#include <stdint.h>

typedef int64_t elem_t;

#ifndef BL
#define BL 8
#endif
#define BLOCK_BYTES (1u << BL)

enum bs_kernel { BS_KERNEL_SEARCH = 0, BS_NR_KERNELS = 1 };

/* Written by the host before each launch; the same on every DPU (24 bytes, 8-aligned). */
typedef struct {
    uint64_t input_size;    /* elements of the sorted array (at heap offset 0) */
    uint64_t slice_per_dpu; /* queries on this DPU, a multiple of NR_TASKLETS */
    uint32_t kernel;        /* entry selected in the kernel table */
    uint32_t reserved;
} bs_arguments_t;

/* Found index of a query that is not in the array. */
#define BS_NOT_FOUND ((int64_t)-1)

/* PrIM's DPU_RESULTS entry, one per tasklet: the found index of the tasklet's last query that
 * was found (its largest, as the queries ascend), BS_NOT_FOUND if none was. */
typedef struct {
    int64_t found;
} bs_results_t;

#endif
