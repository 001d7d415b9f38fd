/* {{name}}: what the host (workload.py) and the DPU program (dpu/task.c) agree on.
 *
 * support/ is on the DPU compiler's include path. workload.py cannot include this header: it
 * writes the same bytes (see execute()), so keep the two in step when you change a field. */
#ifndef KERNEL_COMMON_H
#define KERNEL_COMMON_H

#include <stdint.h>

/* log2 of the block (in bytes) each tasklet moves per mram_read / mram_write. A DMA moves
 * 8..2048 bytes, so BL is 3..11 (workload.py's define_choices); cnmtune passes -DBL=<value>,
 * and this default only serves a build without it. */
#ifndef BL
#define BL 10
#endif
#define BLOCK_BYTES (1u << BL)

/* Written by the host before the launch (WRAM variable DPU_INPUT_ARGUMENTS). The same layout
 * on the 64-bit host and the 32-bit DPU: two 4-byte fields, 8 bytes in all. */
typedef struct {
    uint32_t size_bytes; /* bytes of X (and of Y) on this DPU: a multiple of 8 */
    int32_t alpha;       /* the scale factor */
} arguments_t;

#endif
