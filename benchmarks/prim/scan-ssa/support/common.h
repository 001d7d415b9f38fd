/* SCAN-SSA: shared definitions of the host driver and the DPU kernel.
 *
 * Element type: a PrIM-style bare define (-DINT32, -DUINT64, -DFLOAT, ...); INT64 when none
 * of the others is given (the workload always passes -DINT64, which has the lowest priority).
 * BL is log2 of the MRAM->WRAM block in bytes; REGS elements fit in one block. */
#ifndef CNMTUNE_SCAN_SSA_COMMON_H
#define CNMTUNE_SCAN_SSA_COMMON_H

#include <stdint.h>

#if defined(UINT32)
typedef uint32_t elem_t;
#elif defined(INT32)
typedef int32_t elem_t;
#elif defined(UINT64)
typedef uint64_t elem_t;
#elif defined(FLOAT)
typedef float elem_t;
#elif defined(DOUBLE)
typedef double elem_t;
#elif defined(CHAR)
typedef int8_t elem_t;
#elif defined(SHORT)
typedef int16_t elem_t;
#else
typedef int64_t elem_t;
#endif

#ifndef BL
#define BL 10
#endif
#define BLOCK_BYTES (1u << BL)
#define REGS (BLOCK_BYTES / sizeof(elem_t))

enum scan_ssa_kernel { SCAN_SSA_KERNEL_SCAN = 0, SCAN_SSA_KERNEL_ADD = 1, SCAN_SSA_NR_KERNELS = 2 };

/* An element in the low bytes of an 8-byte slot (little-endian), so the layout is the same on
 * the 64-bit host and the DPU whatever the element type. */
typedef union {
    elem_t value;
    uint64_t bits;
} scan_slot_t;

/* Written by the host before each launch (16 bytes on both sides). */
typedef struct {
    uint32_t size_bytes; /* bytes of this DPU's (zero-padded) part: a multiple of NR_TASKLETS blocks */
    uint32_t kernel;     /* entry selected in the kernel table */
    scan_slot_t t_count; /* scan: seed of the running total (0); add: this DPU's offset */
} scan_arguments_t;

/* One per tasklet, read by the host: entry NR_TASKLETS-1 holds the DPU's total after the scan. */
typedef struct {
    scan_slot_t t_count;
} scan_result_t;

#endif
