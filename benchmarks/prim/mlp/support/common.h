/* MLP: shared definitions of the host driver and the DPU kernel.
 *
 * One fully connected layer per launch: y = ReLU(W x) over int32 with wrap-around (the
 * products and sums are computed modulo 2^32). BL is log2 of the MRAM->WRAM block in bytes. */
#ifndef CNMTUNE_MLP_COMMON_H
#define CNMTUNE_MLP_COMMON_H

#include <stdint.h>

typedef int32_t elem_t;

#ifndef BL
#define BL 10
#endif
#define BLOCK_BYTES (1u << BL)

#define NUM_LAYERS 3

/* Written by the host before each launch, one per DPU (16 bytes). */
typedef struct {
    uint32_t n_size;     /* columns of W, elements of x */
    uint32_t n_size_pad; /* n_size rounded up to even: the row stride in MRAM */
    uint32_t nr_rows;    /* rows on this DPU, rounded up to even (the extra row is zeros) */
    uint32_t max_rows;   /* the largest nr_rows over all DPUs: fixes the MRAM layout */
} mlp_arguments_t;

#endif
