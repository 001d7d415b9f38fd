/* bitonic: what the host (workload.py) and the DPU program (dpu/task.c) agree on. */
#ifndef UNSEEN_BITONIC_COMMON_H
#define UNSEEN_BITONIC_COMMON_H

#include <stdint.h>

/* log2 of the block (bytes) a tasklet moves per DMA when it loads or stores a run: 3..11 keeps
 * every DMA in 8..2048 B. cnmtune passes -DBL; this default only serves a build without it. */
#ifndef BL
#define BL 10
#endif
#define BLOCK_BYTES (1u << BL)

/* A run, the unit one tasklet sorts in WRAM, is fixed (workload.py's RUN): the output does not
 * depend on BL. */
#define RUN_ELEMS 512u
#define RUN_BYTES (RUN_ELEMS * sizeof(int32_t))

/* Written by the host before the launch: 8 bytes on both sides. */
typedef struct {
    uint32_t size_bytes; /* bytes of this DPU's part: whole runs */
    uint32_t reserved;
} bitonic_arguments_t;

#endif
