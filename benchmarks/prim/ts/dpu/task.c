/* TS on a DPU: distance of every subsequence of this DPU's slice of a time series to one query,
 * keeping the minimum (a matrix profile against a single query).
 *
 * MRAM heap layout (int32 elements, byte offsets):
 *   0                        the query, m elements
 *   4m                       the series from this DPU's first start position, slice + m elements
 *   4(2m + slice)            the mean of each subsequence, slice elements
 *   4(2m + 2 slice)          the standard deviation of each subsequence, slice elements
 * Tasklet t owns start positions [t P, (t+1) P), P = slice / NR_TASKLETS, cut at `valid`. It
 * walks them in groups of DOTPIP: for every DOTPIP-element step k of the query it reads series
 * blocks k and k+1 of the group and query block k, and accumulates DOTPIP sliding dot products;
 * then it reads DOTPIP means and deviations and computes, per position,
 *   dist = 2 (m - (dot - m mean_s mean_q) / (std_s std_q))   (signed 32-bit division),
 * keeping the smallest distance and its first position in DPU_RESULTS[t]. */
#include <alloc.h>
#include <barrier.h>
#include <defs.h>
#include <mram.h>
#include <stdint.h>

#include "common.h"

__host ts_arguments_t DPU_INPUT_ARGUMENTS;
__host ts_result_t DPU_RESULTS[NR_TASKLETS];

BARRIER_INIT(start_barrier, NR_TASKLETS);

/* dots[j] += sum over l of series[j + l] * query[l], for j < count (series holds 2 DOTPIP). */
static void sliding_dots(int32_t *restrict dots, const elem_t *restrict series, const elem_t *restrict query,
                         uint32_t count) {
    for (uint32_t j = 0; j < count; j++) {
        int32_t acc = dots[j];
        for (uint32_t l = 0; l < DOTPIP; l++)
            acc += series[j + l] * query[l];
        dots[j] = acc;
    }
}

static int profile(void) {
    const unsigned int tasklet = me();
    if (tasklet == 0)
        mem_reset(); /* WRAM heap survives launches: start each one from empty */
    barrier_wait(&start_barrier);

    const uint32_t slice = DPU_INPUT_ARGUMENTS.slice;
    const uint32_t valid = DPU_INPUT_ARGUMENTS.valid;
    const int32_t m = (int32_t)DPU_INPUT_ARGUMENTS.query_len;
    const int32_t mean_q = DPU_INPUT_ARGUMENTS.query_mean;
    const int32_t std_q = DPU_INPUT_ARGUMENTS.query_std;
    const uint32_t mram_query = (uint32_t)DPU_MRAM_HEAP_POINTER;
    const uint32_t mram_series = mram_query + ((uint32_t)m << 2);
    const uint32_t mram_means = mram_series + ((slice + (uint32_t)m) << 2);
    const uint32_t mram_stds = mram_means + (slice << 2);

    elem_t *series = (elem_t *)mem_alloc(2 * BLOCK_BYTES);
    elem_t *query = (elem_t *)mem_alloc(BLOCK_BYTES);
    int32_t *dots = (int32_t *)mem_alloc(BLOCK_BYTES);
    elem_t *means = (elem_t *)mem_alloc(BLOCK_BYTES);
    elem_t *stds = (elem_t *)mem_alloc(BLOCK_BYTES);

    const uint32_t per_tasklet = slice / NR_TASKLETS;
    const uint32_t first = tasklet * per_tasklet;
    uint32_t end = first + per_tasklet;
    if (end > valid)
        end = valid;

    int32_t best = INT32_MAX;
    uint32_t best_index = UINT32_MAX;
    for (uint32_t group = first; group < end; group += DOTPIP) {
        const uint32_t count = (end - group < DOTPIP) ? end - group : DOTPIP;
        for (uint32_t j = 0; j < DOTPIP; j++)
            dots[j] = 0;
        for (uint32_t k = 0; k < (uint32_t)m; k += DOTPIP) {
            const uint32_t at = mram_series + ((group + k) << 2);
            mram_read((__mram_ptr void const *)at, series, BLOCK_BYTES);
            mram_read((__mram_ptr void const *)(at + BLOCK_BYTES), series + DOTPIP, BLOCK_BYTES);
            mram_read((__mram_ptr void const *)(mram_query + (k << 2)), query, BLOCK_BYTES);
            sliding_dots(dots, series, query, count);
        }
        mram_read((__mram_ptr void const *)(mram_means + (group << 2)), means, BLOCK_BYTES);
        mram_read((__mram_ptr void const *)(mram_stds + (group << 2)), stds, BLOCK_BYTES);
        for (uint32_t j = 0; j < count; j++) {
            const int32_t dist = 2 * (m - (dots[j] - m * means[j] * mean_q) / (stds[j] * std_q));
            if (dist < best) {
                best = dist;
                best_index = group + j;
            }
        }
    }
    DPU_RESULTS[tasklet].min_dist = best;
    DPU_RESULTS[tasklet].min_index = best_index;
    return 0;
}

static int (*const kernels[TS_NR_KERNELS])(void) = {profile};

int main(void) {
    return kernels[DPU_INPUT_ARGUMENTS.kernel]();
}
