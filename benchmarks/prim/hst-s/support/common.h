/* HST-S: shared definitions of the host driver and the DPU kernel.
 *
 * Histogram of 12-bit pixels stored as uint32: bin = (pixel * bins) >> DEPTH. Every tasklet
 * fills a private histogram in WRAM; the tasklets then merge them. BL is log2 of the
 * MRAM->WRAM block in bytes. */
#ifndef CNMTUNE_HST_S_COMMON_H
#define CNMTUNE_HST_S_COMMON_H

#include <stdint.h>

typedef uint32_t pixel_t;

#ifndef BL
#define BL 10
#endif
#define BLOCK_BYTES (1u << BL)

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
