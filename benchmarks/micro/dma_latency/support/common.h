/* DMA_LATENCY microbenchmark: shared definitions of the host driver and the DPU kernel.
 *
 * TRANSFER is the bytes of every DMA (a multiple of 8 in 8..2048). The direction is a bare
 * define: READ (default, mram_read) or WRITE (mram_write). CALIBRATION is how many empty
 * counter brackets each tasklet times to measure the cost of the bracket itself. */
#ifndef CNMTUNE_MICRO_DMA_LATENCY_COMMON_H
#define CNMTUNE_MICRO_DMA_LATENCY_COMMON_H

#include <stdint.h>

#ifndef TRANSFER
#define TRANSFER 8
#endif
#if TRANSFER < 8 || TRANSFER > 2048 || (TRANSFER % 8) != 0
#error "dma_latency: TRANSFER must be a multiple of 8 in 8..2048"
#endif
#if defined(READ) && defined(WRITE)
#error "dma_latency: define READ or WRITE, not both"
#endif
#define TRANSFER_WORDS (TRANSFER / 8)

#ifndef CALIBRATION
#define CALIBRATION 32
#endif

/* Written by the host before the launch (16 bytes). Transfer k (0 <= k < transfers) covers
 * MRAM heap bytes [k * TRANSFER, (k + 1) * TRANSFER); tasklet t does k = t, t + NR_TASKLETS, ... */
typedef struct {
    uint32_t transfers;
    uint32_t words; /* TRANSFER / 8, at run time so the per-transfer code is the same for every size */
    uint64_t seed;  /* WRITE: the per-transfer values written (see task.c) */
} dma_arguments_t;

/* One per tasklet, read by the host after the launch (40 bytes). */
typedef struct {
    uint64_t cycles;      /* perfcounter cycles of all timed transfers (each bracketed alone) */
    uint64_t overhead;    /* perfcounter cycles of CALIBRATION empty brackets */
    uint64_t checksum;    /* READ: XOR of words sampled from every transfer's WRAM copy */
    uint32_t transfers;   /* transfers this tasklet made */
    uint32_t calibration; /* CALIBRATION */
    uint64_t reserved;
} dma_result_t;

#endif
