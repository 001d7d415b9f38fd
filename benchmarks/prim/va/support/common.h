/* VA: shared definitions of the host driver and the DPU kernel.
 *
 * The element type is chosen PrIM-style by a bare define (-DINT32, -DUINT64, -DFLOAT, ...);
 * INT32 when none is given. BL is log2 of the MRAM<->WRAM block in bytes. */
#ifndef CNMTUNE_VA_COMMON_H
#define CNMTUNE_VA_COMMON_H

#include <stdint.h>

#define PRIM_DEFAULT_ELEM int32_t
#include "elem_type.h"

#ifndef BL
#define BL 10
#endif
#define BLOCK_BYTES (1u << BL)

enum va_kernel { VA_KERNEL_ADD = 0, VA_NR_KERNELS = 1 };

/* Written by the host before each launch; 8-byte fields keep the 64-bit host and the 32-bit
 * DPU layouts identical. */
typedef struct {
    uint32_t size_bytes;     /* valid bytes of A (and of B) on this DPU */
    uint32_t transfer_bytes; /* bytes reserved per array in MRAM (a multiple of 8) */
    uint32_t kernel;         /* entry selected in the kernel table */
    uint32_t reserved;
} va_arguments_t;

#endif
