/* stencil: what the host (workload.py) and the DPU program (dpu/task.c) agree on. */
#ifndef UNSEEN_STENCIL_COMMON_H
#define UNSEEN_STENCIL_COMMON_H

#include <stdint.h>

/* log2 of the output block (bytes) a tasklet computes per round: 3..11 keeps every DMA in
 * 8..2048 B. cnmtune passes -DBL; this default only serves a build without it. */
#ifndef BL
#define BL 10
#endif
#define BLOCK_BYTES (1u << BL)
#define HALO 2                                 /* neighbours on each side: a 5-point stencil */
#define HALO_BYTES (HALO * sizeof(int32_t))    /* one 8-byte DMA word */

/* Written by the host before the launch: 8 bytes on both sides. */
typedef struct {
    uint32_t size_bytes; /* bytes of this DPU's part (its output): a multiple of 8 */
    uint32_t reserved;
} stencil_arguments_t;

#endif
