/* TRNS: shared definitions of the host driver and the DPU kernels.
 *
 * In-place transposition of a DPU's (M_*m) x n strip of int64 in two kernels: step 2
 * transposes every m x n tile, step 3 permutes the resulting m-element chunks (cycle
 * following with one "done" byte per chunk). */
#ifndef CNMTUNE_TRNS_COMMON_H
#define CNMTUNE_TRNS_COMMON_H

#include <stdint.h>

typedef int64_t elem_t;

#define TRNS_DMA_MAX 2048 /* bytes per DMA */

enum trns_kernel { TRNS_KERNEL_STEP2 = 0, TRNS_KERNEL_STEP3 = 1, TRNS_NR_KERNELS = 2 };

/* Written by the host before each launch, one per DPU (16 bytes). */
typedef struct {
    uint32_t m;      /* rows of a tile (elements of a chunk) */
    uint32_t n;      /* columns of the strip (and of a tile) */
    uint32_t M_;     /* tiles in the strip: the strip has M_*m rows (0: this DPU is idle) */
    uint32_t kernel; /* entry selected in the kernel table */
} trns_arguments_t;

#endif
