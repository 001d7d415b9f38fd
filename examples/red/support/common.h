/* RED example: definitions shared by the host program (host/app.c) and the DPU kernel (dpu/task.c). */
#ifndef RED_COMMON_H
#define RED_COMMON_H

#include <stdint.h>

#include "elem_type.h" /* elem_t: TYPE=INT64 (the default) or INT32; sums are 64-bit */

/* Kernel arguments, written by the host into each DPU's WRAM variable DPU_INPUT_ARGUMENTS.
 * The DPU's elements start at the MRAM heap; it writes their sum to DPU_RESULT. */
typedef struct {
    uint32_t nr_elems; /* elements of this DPU (0 for an idle DPU) */
    uint32_t reserved; /* keeps the size a multiple of 8 */
} red_args_t;

_Static_assert(sizeof(red_args_t) == 8, "host and DPU must agree on the argument layout");

#endif
