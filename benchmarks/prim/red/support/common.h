/* RED: shared definitions of the host driver and the DPU kernel.
 *
 * Element type: a PrIM-style bare define (-DINT32, -DUINT64, -DFLOAT, ...; ../../common/elem_type.h);
 * INT64 when none is given.
 * BL is log2 of the MRAM->WRAM block in bytes.
 *
 * VERSION=SINGLE (default) or VERSION=TREE picks the intra-DPU reduction of the tasklets'
 * partial sums; SYNC=HAND (default) or SYNC=BARRIER picks how TREE pairs tasklets. PERF=1
 * makes every tasklet record its cycle count. */
#ifndef CNMTUNE_RED_COMMON_H
#define CNMTUNE_RED_COMMON_H

#include <stdint.h>

#define PRIM_DEFAULT_ELEM int64_t
#include "elem_type.h"

#ifndef BL
#define BL 10
#endif
#define BLOCK_BYTES (1u << BL)

/* VERSION and SYNC hold a bare word; pasting it onto a prefix gives its number (0 = unknown). */
#define RED_CAT_(a, b) a##b
#define RED_CAT(a, b) RED_CAT_(a, b)
#define RED_VERSION_SINGLE 1
#define RED_VERSION_TREE 2
#define RED_SYNC_HAND 1
#define RED_SYNC_BARRIER 2
#ifndef VERSION
#define VERSION SINGLE
#endif
#ifndef SYNC
#define SYNC HAND
#endif
#define RED_VERSION RED_CAT(RED_VERSION_, VERSION)
#define RED_SYNC RED_CAT(RED_SYNC_, SYNC)
#if RED_VERSION == 0
#error "RED: VERSION must be SINGLE or TREE"
#endif
#if RED_SYNC == 0
#error "RED: SYNC must be HAND or BARRIER"
#endif
#ifndef PERF
#define PERF 0
#endif

enum red_kernel { RED_KERNEL_REDUCE = 0, RED_NR_KERNELS = 1 };

/* Written by the host before each launch (8 bytes on both sides). */
typedef struct {
    uint32_t size_bytes; /* valid bytes of the vector on this DPU (a multiple of 8) */
    uint32_t kernel;     /* entry selected in the kernel table */
} red_arguments_t;

/* One per tasklet, read by the host. Entry 0's total is the DPU's sum; entry t's total is
 * tasklet t's own streaming partial sum. The total sits in the low bytes of an 8-byte slot
 * (little-endian), so the struct is 16 bytes, 8-aligned, on the 64-bit host and the DPU. */
typedef struct {
    union {
        elem_t value;
        uint64_t bits;
    } total;
    uint64_t cycles; /* with PERF=1: cycles from the start barrier to the tasklet's end */
} red_result_t;

#endif
