/* SCAN-RSS: shared definitions of the host driver and the DPU kernel.
 *
 * Element type: a PrIM-style bare define (-DINT32, -DUINT64, -DFLOAT, ...; ../../common/elem_type.h);
 * INT64 when none is given.
 * BL is log2 of the MRAM->WRAM block in bytes; REGS elements fit in one block. */
#ifndef CNMTUNE_SCAN_RSS_COMMON_H
#define CNMTUNE_SCAN_RSS_COMMON_H

#include <stdint.h>

#define PRIM_DEFAULT_ELEM int64_t
#include "elem_type.h"

#ifndef BL
#define BL 10
#endif
#define BLOCK_BYTES (1u << BL)
#define REGS (BLOCK_BYTES / sizeof(elem_t))

enum scan_rss_kernel { SCAN_RSS_KERNEL_REDUCE = 0, SCAN_RSS_KERNEL_SCAN = 1, SCAN_RSS_NR_KERNELS = 2 };

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
    scan_slot_t t_count; /* scan: this DPU's offset, the seed of the running total */
} scan_arguments_t;

/* One per tasklet, read by the host: after the reduction, entry 0 holds the DPU's sum and
 * entry t tasklet t's own partial sum. */
typedef struct {
    scan_slot_t t_count;
} scan_result_t;

#endif
