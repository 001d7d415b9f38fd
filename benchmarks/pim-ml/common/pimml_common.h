/* PIM-ML: definitions shared by the host drivers and the DPU kernel of LiRQ, LiRnQ, LoRQ and
 * LoRnQ. Each kernel's support/common.h defines the model (PIMML_LOGISTIC, PIMML_QUANTIZED,
 * OFFSET, MAX_ROWS, the default BL) and then includes this file. */
#ifndef CNMTUNE_PIMML_SHARED_H
#define CNMTUNE_PIMML_SHARED_H

#include <stdint.h>

#define SHIFT_AMOUNT 10  /* fixed-point fraction bits */

#ifdef FLOAT
typedef float T;
#else
typedef int32_t T;
#endif

#define BLOCK_BYTES (1u << BL)

#if PIMML_LOGISTIC
#define SIGMOID_BOUNDARY 20
#define LUT_SIZE (SIGMOID_BOUNDARY << SHIFT_AMOUNT) /* int16 entries: sigma(i / 2^10), i = 1..LUT_SIZE */
#define LUT_BYTES (LUT_SIZE * 2)
#endif

/* Written by the host once per run (16 + 8 * NR_TASKLETS bytes on both sides). */
typedef struct {
    uint32_t n_size;     /* features */
    uint32_t n_size_pad; /* features rounded up to even: the row stride in MRAM */
    uint32_t nr_rows;    /* rows on this DPU */
    uint32_t max_rows;   /* the largest row count over all DPUs, rounded up to even: fixes the layout */
    uint32_t start_row[NR_TASKLETS];        /* each tasklet's first row (even) */
    uint32_t rows_per_tasklet[NR_TASKLETS]; /* each tasklet's rows (even; cut at nr_rows) */
} pimml_arguments_t;

#endif
