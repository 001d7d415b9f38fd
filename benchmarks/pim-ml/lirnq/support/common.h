/* LiRnQ: shared definitions of the host driver and the DPU kernel (linear regression, integer inputs).
 *
 * Element type: INT32 fixed point (default; the workload always passes -DINT32) or FLOAT, as
 * PIM-ML's TYPE. BL is log2 of the MRAM->WRAM block in bytes (default 10). */
#ifndef CNMTUNE_PIMML_COMMON_H
#define CNMTUNE_PIMML_COMMON_H

#define PIMML_LOGISTIC 0 /* 0: linear regression, 1: logistic regression */
#define PIMML_QUANTIZED 0 /* 1: X (and Y) hold real values in fixed point; 0: integer inputs */
#define OFFSET 6         /* the host shifts each DPU's gradient right by OFFSET */
#define MAX_ROWS 16      /* the largest number of features (n_size_pad) */
#ifndef BL
#define BL 10
#endif

#include "pimml_common.h"

#endif
