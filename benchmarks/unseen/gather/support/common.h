/* gather: what the host (workload.py) and the DPU program (dpu/task.c) agree on. */
#ifndef UNSEEN_GATHER_COMMON_H
#define UNSEEN_GATHER_COMMON_H

#include <stdint.h>

/* log2 of the block (bytes) of indices (and of outputs) a tasklet streams per DMA: 3..11 keeps
 * every DMA in 8..2048 B. cnmtune passes -DBL; this default only serves a build without it. */
#ifndef BL
#define BL 10
#endif
#define BLOCK_BYTES (1u << BL)

/* Written by the host before the launch: 8 bytes on both sides. */
typedef struct {
    uint32_t table_bytes; /* bytes reserved for the table at heap offset 0: a multiple of 8 */
    uint32_t size_bytes;  /* bytes of this DPU's indices (and of its outputs): a multiple of 8 */
} gather_arguments_t;

#endif
