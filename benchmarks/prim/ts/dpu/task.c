/* TS on a DPU: distance of subsequences of this DPU's slice of a time series to one query,
 * keeping the minimum (a matrix profile against a single query), with PrIM's loops.
 *
 * MRAM heap layout (int32 elements, byte offsets):
 *   0                        the query, m elements
 *   4m                       the series from this DPU's first start position, slice + m elements
 *   4(2m + slice)            the mean of each subsequence, slice + m elements
 *   4(3m + 2 slice)          the standard deviation of each subsequence, slice + m elements
 * Tasklet t owns start positions [t P, (t+1) P - 1), P = slice / NR_TASKLETS, cut at
 * slice - m as PrIM does (so every DPU leaves its last m positions out). It walks them in
 * groups of DOTPIP: for every DOTPIP-element step of the query it reads the series block of
 * the group, the next block and the query block, and adds every product into the group's
 * DOTPIP dot products in WRAM (query element outer, position inner, each product taken from
 * the first or the second series block); then it reads DOTPIP means and deviations and
 * computes, for all DOTPIP positions of the group,
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

/* PrIM's dot_product: dots[j] += series[j + i] * query[i], series = block then aux. */
static void dot_product(const elem_t *series, const elem_t *aux, const elem_t *query, int32_t *dots) {
    for (uint32_t i = 0; i < DOTPIP; i++) {
        for (uint32_t j = 0; j < DOTPIP; j++) {
            if ((j + i) > DOTPIP - 1)
                dots[j] += aux[(j + i) - DOTPIP] * query[i];
            else
                dots[j] += series[j + i] * query[i];
        }
    }
}

static int profile(void) {
    const unsigned int tasklet = me();
    if (tasklet == 0)
        mem_reset(); /* WRAM heap survives launches: start each one from empty */
    barrier_wait(&start_barrier);

    const uint32_t m = DPU_INPUT_ARGUMENTS.query_length;
    const int32_t mean_q = DPU_INPUT_ARGUMENTS.query_mean;
    const int32_t std_q = DPU_INPUT_ARGUMENTS.query_std;
    const uint32_t slice = DPU_INPUT_ARGUMENTS.slice_per_dpu;

    const uint32_t first = tasklet * (slice / NR_TASKLETS);
    uint32_t last = first + (slice / NR_TASKLETS) - 1;
    if (last > slice - m)
        last = slice - m;

    const uint32_t mram_query = (uint32_t)DPU_MRAM_HEAP_POINTER;
    const uint32_t mram_series = mram_query + (m << 2) + (first << 2);
    uint32_t mram_means = mram_series + ((slice + m) << 2);
    uint32_t mram_stds = mram_means + ((slice + m) << 2);

    elem_t *series = (elem_t *)mem_alloc(BLOCK_BYTES);
    elem_t *aux = (elem_t *)mem_alloc(BLOCK_BYTES);
    elem_t *query = (elem_t *)mem_alloc(BLOCK_BYTES);
    elem_t *means = (elem_t *)mem_alloc(BLOCK_BYTES);
    elem_t *stds = (elem_t *)mem_alloc(BLOCK_BYTES);
    int32_t *dots = (int32_t *)mem_alloc(BLOCK_BYTES);

    int32_t best = INT32_MAX;
    uint32_t best_index = 0;
    for (uint32_t group = first; group < last; group += DOTPIP) {
        for (uint32_t d = 0; d < DOTPIP; d++)
            dots[d] = 0;
        uint32_t at = mram_series + ((group - first) << 2);
        uint32_t at_query = mram_query;
        for (uint32_t k = 0; k < m / DOTPIP; k++) {
            mram_read((__mram_ptr void const *)at, series, BLOCK_BYTES);
            mram_read((__mram_ptr void const *)(at + BLOCK_BYTES), aux, BLOCK_BYTES);
            mram_read((__mram_ptr void const *)at_query, query, BLOCK_BYTES);
            at += BLOCK_BYTES;
            at_query += BLOCK_BYTES;
            dot_product(series, aux, query, dots);
        }
        mram_read((__mram_ptr void const *)mram_means, means, BLOCK_BYTES);
        mram_read((__mram_ptr void const *)mram_stds, stds, BLOCK_BYTES);
        mram_means += BLOCK_BYTES;
        mram_stds += BLOCK_BYTES;
        for (uint32_t j = 0; j < DOTPIP; j++) {
            const int32_t dist = 2 * ((int32_t)m - (dots[j] - (int32_t)m * means[j] * mean_q) / (stds[j] * std_q));
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
