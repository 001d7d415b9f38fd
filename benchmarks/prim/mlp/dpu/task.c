/* MLP on a DPU: one layer, y = W x over int32, for this DPU's rows of the layer's weights; the
 * program is PrIM's GEMV loop, in the suite's common/gemv_rows.h (PrIM's MLP DPU code is its
 * GEMV code with int32 elements: no ReLU on the DPU). The host rewrites W and x before each
 * of the three launches. */
#include "common.h"
#include "gemv_rows.h"

int main(void) {
    return gemv_rows();
}
