/* VA example: definitions shared by the host program (host/app.c) and the DPU kernel (dpu/task.c). */
#ifndef VA_COMMON_H
#define VA_COMMON_H

#include <stdint.h>

typedef int32_t elem_t;

/* Kernel arguments, written by the host into each DPU's WRAM variable DPU_INPUT_ARGUMENTS.
 * MRAM heap of a DPU: A at 0, B at chunk_bytes, C = A + B at 2 * chunk_bytes. */
typedef struct {
    uint32_t valid_bytes; /* bytes of this DPU's elements, rounded up to 8 (0 for an idle DPU) */
    uint32_t chunk_bytes; /* bytes reserved for each vector (a multiple of 8, the same on every DPU) */
} va_args_t;

_Static_assert(sizeof(va_args_t) == 8, "host and DPU must agree on the argument layout");

#endif
