/* HST-L: shared definitions of the host driver and the DPU kernel.
 *
 * Histogram of 12-bit pixels stored as uint32: bin = (pixel * bins) >> DEPTH. NR_HISTO
 * shared WRAM histograms (a power of two, at most NR_TASKLETS); tasklet t updates histogram
 * t & (NR_HISTO - 1) under that histogram's mutex. BL is log2 of the MRAM->WRAM block. */
#ifndef CNMTUNE_HST_L_COMMON_H
#define CNMTUNE_HST_L_COMMON_H

#include <stdint.h>

typedef uint32_t pixel_t;

#ifndef BL
#define BL 8
#endif
#define BLOCK_BYTES (1u << BL)

#ifndef NR_HISTO
#define NR_HISTO 1
#endif
#if NR_HISTO < 1 || (NR_HISTO & (NR_HISTO - 1)) != 0
#error "HST-L: NR_HISTO must be a power of two"
#endif

#define DEPTH 12 /* bits per pixel */
#define HISTO_WRITE_BYTES 2048 /* the histogram goes to MRAM in pieces of at most this size */

enum hst_kernel { HST_KERNEL_HISTOGRAM = 0, HST_NR_KERNELS = 1 };

/* Written by the host before each launch, one per DPU (16 bytes). */
typedef struct {
    uint32_t size;          /* valid pixel bytes on this DPU (a multiple of 4) */
    uint32_t transfer_size; /* bytes of the pixel area (a multiple of 8): the histogram follows */
    uint32_t bins;          /* number of bins (even, so the histogram is whole 8-byte words) */
    uint32_t kernel;        /* entry selected in the kernel table */
} hst_arguments_t;

#endif
