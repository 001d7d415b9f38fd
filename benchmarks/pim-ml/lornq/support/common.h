/* LoRnQ: shared definitions of the host driver and the DPU kernel (logistic regression, integer inputs, sigmoid table).
 *
 * Element type: INT32 fixed point (default; the workload always passes -DINT32) or FLOAT, as
 * PIM-ML's TYPE. BL is log2 of the MRAM->WRAM block in bytes (default 8). */
#ifndef CNMTUNE_PIMML_COMMON_H
#define CNMTUNE_PIMML_COMMON_H

#include <stdint.h>

#define PIMML_LOGISTIC 1 /* 0: linear regression, 1: logistic regression */
#define PIMML_QUANTIZED 0 /* 1: X (and Y) hold real values in fixed point; 0: integer inputs */
#define SHIFT_AMOUNT 10  /* fixed-point fraction bits */
#define OFFSET 0         /* the host shifts each DPU's gradient right by OFFSET */
#define MAX_ROWS 16      /* the largest number of features (n_size_pad) */

#ifdef FLOAT
typedef float T;
#else
typedef int32_t T;
#endif

#ifndef BL
#define BL 8
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
