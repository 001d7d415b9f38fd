/* SEL: shared definitions of the host driver and the DPU kernel.
 *
 * Elements are uint64; the predicate removes even values. BL is log2 of the MRAM->WRAM
 * block in bytes (default 10, so one block holds 128 elements). */
#ifndef CNMTUNE_SEL_COMMON_H
#define CNMTUNE_SEL_COMMON_H

#include <stdint.h>

typedef uint64_t elem_t;

#ifndef BL
#define BL 10
#endif
#define BLOCK_BYTES (1u << BL)
#define BLOCK_ELEMS (BLOCK_BYTES / sizeof(elem_t))

enum sel_kernel { SEL_KERNEL_SELECT = 0, SEL_NR_KERNELS = 1 };

/* Written by the host before each launch (8 bytes on both sides). */
typedef struct {
    uint32_t size_bytes; /* input bytes on this DPU: a multiple of NR_TASKLETS blocks */
    uint32_t kernel;     /* entry selected in the kernel table */
} sel_arguments_t;

/* One per tasklet; entry NR_TASKLETS-1 holds the DPU's number of kept elements. */
typedef struct {
    uint64_t t_count;
} sel_result_t;

#endif
