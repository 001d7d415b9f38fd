/* GEMV: the DPU kernel's element type and block size (the program is common/gemv_rows.h).
 *
 * y = A x over uint32 with wrap-around. BL is log2 of the MRAM->WRAM block in bytes. */
#ifndef CNMTUNE_GEMV_COMMON_H
#define CNMTUNE_GEMV_COMMON_H

#include <stdint.h>

typedef uint32_t elem_t;

#ifndef BL
#define BL 10
#endif

#endif
