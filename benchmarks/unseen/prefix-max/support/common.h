/* prefix-max: what the host (workload.py) and the DPU program (dpu/task.c) agree on. */
#ifndef UNSEEN_PREFIX_MAX_COMMON_H
#define UNSEEN_PREFIX_MAX_COMMON_H

#include <stdint.h>

/* log2 of the block (bytes) a tasklet moves per DMA: 3..11 keeps every DMA in 8..2048 B.
 * cnmtune passes -DBL; this default only serves a build without it. */
#ifndef BL
#define BL 10
#endif
#define BLOCK_BYTES (1u << BL)
#define BLOCK_ELEMS (BLOCK_BYTES / sizeof(int32_t))

enum prefix_max_kernel { PREFIX_MAX_KERNEL_REDUCE = 0, PREFIX_MAX_KERNEL_SCAN = 1, PREFIX_MAX_NR_KERNELS = 2 };

/* Written by the host before each launch: 8 bytes on both sides. */
typedef struct {
    uint32_t size_bytes; /* bytes of this DPU's part: NR_TASKLETS slices of whole blocks */
    uint32_t kernel;     /* entry selected in the kernel table */
} prefix_max_arguments_t;

/* One int32 in an 8-byte slot, so that a host transfer of any number of them is whole words. */
typedef struct {
    int32_t value;
    int32_t unused;
} prefix_max_slot_t;

#endif
