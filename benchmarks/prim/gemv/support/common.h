/* GEMV: shared definitions of the host driver and the DPU kernel.
 *
 * y = A x over uint32 with wrap-around. BL is log2 of the MRAM->WRAM block in bytes. */
#ifndef CNMTUNE_GEMV_COMMON_H
#define CNMTUNE_GEMV_COMMON_H

#include <stdint.h>

typedef uint32_t elem_t;

#ifndef BL
#define BL 10
#endif
#define BLOCK_BYTES (1u << BL)

/* Written by the host before each launch, one per DPU (16 bytes). */
typedef struct {
    uint32_t n_size;     /* columns of A, elements of x */
    uint32_t n_size_pad; /* n_size rounded up to even: the row stride in MRAM */
    uint32_t nr_rows;    /* rows on this DPU, rounded up to even (the extra row is zeros) */
    uint32_t max_rows;   /* the largest nr_rows over all DPUs: fixes the MRAM layout */
} gemv_arguments_t;

#endif
