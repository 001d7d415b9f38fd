/* PIM-ML batch gradient descent on a DPU: one launch = this DPU's partial gradient for the
 * current weights. The same file serves LiRQ, LiRnQ, LoRQ and LoRnQ; support/common.h picks
 * the model (PIMML_LOGISTIC), the fixed-point scheme (PIMML_QUANTIZED, SHIFT_AMOUNT) and the
 * element type (INT32 fixed point by default, FLOAT as a bare define).
 *
 * MRAM heap layout (byte offsets):
 *   0                          X: max_rows rows of n_size_pad elements (row stride n_size_pad)
 *   max_rows*n_size_pad*4      Y: max_rows elements
 *   that + max_rows*4          W: n_size_pad elements (pushed by the host before every launch)
 * DPU_RESULTS (MRAM) receives the DPU's gradient, n_size_pad elements.
 *
 * Per tasklet: zero its slice of gradient_tmp, read W, then walk its rows
 * (start_row[t] .. + rows_per_tasklet[t], cut at nr_rows) in caches of rows_per_cache rows:
 * one 2^BL-byte read of X and one of Y per cache, then per row a dot product with W and the
 * gradient update. Barrier; tasklet 0 adds the tasklets' slices and writes DPU_RESULTS.
 * Logistic models keep a 40 KB int16 sigmoid table in WRAM: the first launch copies it from
 * SIGMOID_LUT (MRAM) in 2 KB pieces shared by the tasklets, a barrier follows, and the flag
 * lut_loaded (a WRAM global, which survives launches) skips the copy afterwards. */
#include <alloc.h>
#include <barrier.h>
#include <defs.h>
#include <mram.h>
#include <stdint.h>

#include "common.h"

__host pimml_arguments_t DPU_INPUT_ARGUMENTS;
__mram_noinit T DPU_RESULTS[MAX_ROWS];

/* tasklet t's partial gradient at [t * n_size_pad, (t + 1) * n_size_pad) */
__dma_aligned T gradient_tmp[MAX_ROWS * NR_TASKLETS];

BARRIER_INIT(pimml_barrier, NR_TASKLETS);

#if PIMML_LOGISTIC
__mram_noinit int16_t SIGMOID_LUT[LUT_SIZE];
__dma_aligned int16_t LUT_buffer[LUT_SIZE];
static uint32_t lut_loaded; /* 0 until the first launch has copied the table */
#endif

#ifdef FLOAT
static T dot_product(const T *x, const T *w, uint32_t n) {
    T sum = 0;
    for (uint32_t i = 0; i < n; i++)
        sum += x[i] * w[i];
    return sum;
}
#else
/* int32 arithmetic with wrap-around: products and sums go through uint32 */
#define WRAP_MUL(a, b) ((int32_t)((uint32_t)(a) * (uint32_t)(b)))
#define WRAP_SUB(a, b) ((int32_t)((uint32_t)(a) - (uint32_t)(b)))
#define WRAP_ADD(a, b) ((int32_t)((uint32_t)(a) + (uint32_t)(b)))
#define WRAP_SHL(a, s) ((int32_t)((uint32_t)(a) << (s)))

static T dot_product(const T *x, const T *w, uint32_t n) {
    T sum = 0;
    for (uint32_t i = 0; i < n; i++)
        sum = WRAP_ADD(sum, WRAP_MUL(x[i], w[i]));
    return sum;
}
#endif

#if PIMML_LOGISTIC
#ifdef FLOAT
/* sigma(x) = 1 / (1 + e^-x), e^-x by a 100-term Taylor series in float */
static T sigmoid(T x) {
    if (x >= 15.0f)
        return 1.0f;
    if (x <= -15.0f)
        return 0.0f;
    if (x == 0.0f)
        return 0.5f;
    float sum = 1.0f, term = 1.0f;
    for (uint32_t i = 1; i <= 100; i++) {
        term = term * (-x) / i;
        sum = sum + term;
    }
    return 1.0f / (1.0f + sum);
}
#else
/* sigma in fixed point (scale 2^SHIFT_AMOUNT) of x in fixed point: the table holds
 * sigma(i / 2^SHIFT_AMOUNT) for i = 1..LUT_SIZE; sigma(-x) = 1 - sigma(x). */
static T sigmoid(T x) {
    if (x > LUT_SIZE)
        return 1 << SHIFT_AMOUNT;
    if (x < -LUT_SIZE)
        return 0;
    if (x == 0)
        return 1 << (SHIFT_AMOUNT - 1);
    if (x < 0)
        return (1 << SHIFT_AMOUNT) - LUT_buffer[-x - 1];
    return LUT_buffer[x - 1];
}
#endif
#endif

/* gradient[l] for one row: x the row, y its target, w the weights */
static void row_gradient(T *gradient, const T *x, T y, const T *w, uint32_t n) {
    const T dot = dot_product(x, w, n);
#ifdef FLOAT
#if PIMML_LOGISTIC
    const T err = sigmoid(dot) - y;
    for (uint32_t l = 0; l < n; l++)
        gradient[l] += x[l] * err;
#else
    const T err = y - dot;
    for (uint32_t l = 0; l < n; l++)
        gradient[l] -= x[l] * err;
#endif
#else /* INT32 fixed point */
#if PIMML_LOGISTIC
#if PIMML_QUANTIZED
    const T err = WRAP_SUB(sigmoid(dot >> SHIFT_AMOUNT), WRAP_SHL(y, SHIFT_AMOUNT));
    for (uint32_t l = 0; l < n; l++)
        gradient[l] = WRAP_ADD(gradient[l], WRAP_MUL(x[l], err) >> (2 * SHIFT_AMOUNT));
#else
    const T err = WRAP_SUB(sigmoid(dot), WRAP_SHL(y, SHIFT_AMOUNT));
    for (uint32_t l = 0; l < n; l++)
        gradient[l] = WRAP_ADD(gradient[l], WRAP_MUL(x[l], err) >> SHIFT_AMOUNT);
#endif
#else /* linear */
#if PIMML_QUANTIZED
    const T err = WRAP_SUB(y, dot >> SHIFT_AMOUNT);
    for (uint32_t l = 0; l < n; l++)
        gradient[l] = WRAP_SUB(gradient[l], WRAP_MUL(x[l], err) >> (2 * SHIFT_AMOUNT));
#else
    const T err = WRAP_SUB(WRAP_SHL(y, SHIFT_AMOUNT), dot);
    for (uint32_t l = 0; l < n; l++)
        gradient[l] = WRAP_SUB(gradient[l], WRAP_MUL(x[l], err) >> SHIFT_AMOUNT);
#endif
#endif
#endif
}

int main(void) {
    const unsigned int tasklet = me();
    if (tasklet == 0)
        mem_reset(); /* WRAM heap survives launches: start each one from empty */
    barrier_wait(&pimml_barrier);

    const uint32_t n = DPU_INPUT_ARGUMENTS.n_size;
    const uint32_t n_pad = DPU_INPUT_ARGUMENTS.n_size_pad;
    const uint32_t nr_rows = DPU_INPUT_ARGUMENTS.nr_rows;
    const uint32_t max_rows = DPU_INPUT_ARGUMENTS.max_rows;
    const uint32_t start_row = DPU_INPUT_ARGUMENTS.start_row[tasklet];
    const uint32_t my_rows = DPU_INPUT_ARGUMENTS.rows_per_tasklet[tasklet];

#if PIMML_LOGISTIC
    if (!lut_loaded) { /* first launch only: the table stays in WRAM afterwards */
        for (uint32_t piece = tasklet; piece < LUT_BYTES / 2048; piece += NR_TASKLETS)
            mram_read((__mram_ptr void const *)((uint32_t)SIGMOID_LUT + (piece << 11)),
                      (void *)((uint32_t)LUT_buffer + (piece << 11)), 2048);
        barrier_wait(&pimml_barrier);
        if (tasklet == 0)
            lut_loaded = 1;
    }
#endif

    T *gradient = gradient_tmp + tasklet * n_pad;
    for (uint32_t l = 0; l < n_pad; l++)
        gradient[l] = 0;

    const uint32_t row_bytes = n_pad * sizeof(T);
    const uint32_t mram_x = (uint32_t)DPU_MRAM_HEAP_POINTER;
    const uint32_t mram_y = mram_x + max_rows * row_bytes;
    const uint32_t mram_w = mram_y + max_rows * sizeof(T);

    T *cache_x = (T *)mem_alloc(BLOCK_BYTES);
    T *cache_y = (T *)mem_alloc(BLOCK_BYTES);
    T *cache_w = (T *)mem_alloc(row_bytes);
    mram_read((__mram_ptr void const *)mram_w, cache_w, row_bytes);

    /* even, so that every Y read starts 8-aligned (the host checks it is at least 2) */
    const uint32_t rows_per_cache = (BLOCK_BYTES / row_bytes) & ~1u;

    for (uint32_t row = 0; row < my_rows;) {
        const uint32_t first = start_row + row;
        mram_read((__mram_ptr void const *)(mram_x + first * row_bytes), cache_x, BLOCK_BYTES);
        mram_read((__mram_ptr void const *)(mram_y + first * sizeof(T)), cache_y, BLOCK_BYTES);
        const T *x = cache_x;
        for (uint32_t c = 0; c < rows_per_cache && row < my_rows; c++, row++, x += n_pad) {
            if (start_row + row >= nr_rows) { /* the DPU's padding row */
                row = my_rows;
                break;
            }
            row_gradient(gradient, x, cache_y[c], cache_w, n);
        }
    }

    barrier_wait(&pimml_barrier);
    if (tasklet == 0) {
        for (uint32_t t = 1; t < NR_TASKLETS; t++)
            for (uint32_t l = 0; l < n; l++)
#ifdef FLOAT
                gradient_tmp[l] += gradient_tmp[t * n_pad + l];
#else
                gradient_tmp[l] = WRAP_ADD(gradient_tmp[l], gradient_tmp[t * n_pad + l]);
#endif
        mram_write(gradient_tmp, (__mram_ptr void *)DPU_RESULTS, row_bytes);
    }
    return 0;
}
