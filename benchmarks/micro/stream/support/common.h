/* STREAM microbenchmark: shared definitions of the host driver and the DPU kernel.
 *
 * The operation is a bare define: COPY (default: C = A, DMA only), SCALE (C = s * A),
 * ADD (C = A + B) or TRIAD (C = A + s * B), over uint64 elements. BL is log2 of the
 * MRAM<->WRAM block in bytes. */
#ifndef CNMTUNE_MICRO_STREAM_COMMON_H
#define CNMTUNE_MICRO_STREAM_COMMON_H

#include <stdint.h>

#if (defined(COPY) + defined(SCALE) + defined(ADD) + defined(TRIAD)) > 1
#error "stream: define at most one operation (COPY, SCALE, ADD, TRIAD)"
#endif
#if defined(ADD) || defined(TRIAD)
#define STREAM_TWO_INPUTS 1
#else
#define STREAM_TWO_INPUTS 0
#endif

typedef uint64_t elem_t;

#ifndef BL
#define BL 10
#endif
#define BLOCK_BYTES (1u << BL)

/* Written by the host before the launch (16 bytes). MRAM heap layout: A at 0, B at
 * transfer_bytes, C at 2 * transfer_bytes. */
typedef struct {
    uint32_t size_bytes;     /* valid bytes of each array on this DPU (a multiple of 8) */
    uint32_t transfer_bytes; /* bytes reserved per array in MRAM */
    uint64_t scalar;         /* s of SCALE and TRIAD */
} stream_arguments_t;

/* One per tasklet, read by the host after the launch (16 bytes). */
typedef struct {
    uint64_t cycles; /* perfcounter cycles of this tasklet's whole streaming loop */
    uint32_t bytes;  /* bytes of each array this tasklet streamed */
    uint32_t blocks; /* blocks it streamed */
} stream_result_t;

#endif
