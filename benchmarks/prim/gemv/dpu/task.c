/* GEMV on a DPU: y = A x over uint32 with wrap-around for this DPU's rows of A; the program is
 * PrIM's GEMV loop, in the suite's common/gemv_rows.h (shared with MLP). */
#include "common.h"
#include "gemv_rows.h"

int main(void) {
    return gemv_rows();
}
