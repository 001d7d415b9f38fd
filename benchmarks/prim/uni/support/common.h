/* UNI: shared definitions of the host driver and the DPU kernel.
 *
 * Elements are int64; an element is kept when it differs from the one before it. BL is
 * log2 of the MRAM->WRAM block in bytes (default 10, so one block holds 128 elements). */
#ifndef CNMTUNE_UNI_COMMON_H
#define CNMTUNE_UNI_COMMON_H

#include <stdint.h>

typedef int64_t elem_t;

#ifndef BL
#define BL 10
#endif
#define BLOCK_BYTES (1u << BL)
#define BLOCK_ELEMS (BLOCK_BYTES / sizeof(elem_t))

enum uni_kernel { UNI_KERNEL_UNIQUE = 0, UNI_NR_KERNELS = 1 };

/* Written by the host before each launch (8 bytes on both sides). */
typedef struct {
    uint32_t size_bytes; /* input bytes on this DPU: a multiple of NR_TASKLETS blocks */
    uint32_t kernel;     /* entry selected in the kernel table */
} uni_arguments_t;

/* One per tasklet (24 bytes, 8-aligned). Entry 0's `first` is the DPU's first element; the
 * last entry holds the DPU's count of kept elements and its last element. */
typedef struct {
    uint64_t t_count;
    int64_t first;
    int64_t last;
} uni_result_t;

#endif
