/* MLP: the DPU kernel's element type and block size (the program is common/gemv_rows.h).
 *
 * One fully connected layer per launch: y = W x over int32 (the host applies ReLU, which
 * PrIM's non-negative inputs never trigger). BL is log2 of the MRAM->WRAM block in bytes. */
#ifndef CNMTUNE_MLP_COMMON_H
#define CNMTUNE_MLP_COMMON_H

#include <stdint.h>

typedef int32_t elem_t;

#ifndef BL
#define BL 10
#endif

#endif
