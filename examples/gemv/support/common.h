/* GEMV example: definitions shared by the host program (host/app.c) and the DPU kernel (dpu/task.c). */
#ifndef GEMV_COMMON_H
#define GEMV_COMMON_H

#include <stdint.h>

#include "elem_type.h" /* elem_t of A, x and y: TYPE=UINT32 (the default) or INT32 */

/* Kernel arguments, written by the host into each DPU's WRAM variable DPU_INPUT_ARGUMENTS.
 * MRAM heap of a DPU: its band of band_rows matrix rows (row_bytes each) at 0, the vector x
 * (row_bytes) right after, then the band's result y (band_rows elements). */
typedef struct {
    uint32_t nr_rows;   /* rows of the band that belong to the matrix (0 for an idle DPU) */
    uint32_t band_rows; /* rows in every DPU's band (even, so that y is whole 8-byte words) */
    uint32_t row_bytes; /* bytes of a row, columns padded with zeros to a multiple of 8 */
    uint32_t reserved;  /* keeps the size a multiple of 8 */
} gemv_args_t;

_Static_assert(sizeof(gemv_args_t) == 16, "host and DPU must agree on the argument layout");

#endif
