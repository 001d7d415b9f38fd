/* RED example, host program (UPMEM SDK host API): the 64-bit sum of a vector of int64 (or, built
 * with -DINT32, int32) elements split over NR_DPUS DPUs; the host adds the DPUs' sums.
 * Usage: ./bin/host_code [-i elements] [-w warmup reps] [-e timed reps] */
#define _POSIX_C_SOURCE 200809L
#include <dpu.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/time.h>
#include <unistd.h>

#include "common.h"

#ifndef NR_DPUS
#define NR_DPUS 1
#endif
#define DPU_BINARY "./bin/dpu_code"

static double now_ms(void) {
    struct timeval tv;
    gettimeofday(&tv, NULL);
    return tv.tv_sec * 1e3 + tv.tv_usec / 1e3;
}

int main(int argc, char **argv) {
    unsigned long n = 2621440, warmup = 0, reps = 1;
    int opt;
    while ((opt = getopt(argc, argv, "i:w:e:")) != -1) {
        if (opt == 'i') n = strtoul(optarg, NULL, 10);
        else if (opt == 'w') warmup = strtoul(optarg, NULL, 10);
        else if (opt == 'e') reps = strtoul(optarg, NULL, 10);
        else { fprintf(stderr, "usage: %s [-i elements] [-w warmup] [-e reps]\n", argv[0]); return 1; }
    }
    if (n == 0 || reps == 0) { fprintf(stderr, "-i and -e must be positive\n"); return 1; }

    struct dpu_set_t set, dpu;
    uint32_t nr_dpus, i;
    DPU_ASSERT(dpu_alloc(NR_DPUS, NULL, &set));
    DPU_ASSERT(dpu_load(set, DPU_BINARY, NULL));
    DPU_ASSERT(dpu_get_nr_dpus(set, &nr_dpus));

    /* equal chunks of ceil(n / DPUs) elements, rounded up to whole 8-byte words */
    const unsigned long per_word = 8 / sizeof(elem_t);
    const unsigned long per_dpu = ((n + nr_dpus - 1) / nr_dpus + per_word - 1) / per_word * per_word;
    if (per_dpu * sizeof(elem_t) > (64ul << 20)) { /* one DPU's 64 MB of MRAM */
        fprintf(stderr, "-i %lu does not fit in the MRAM of %u DPU(s)\n", n, (unsigned)nr_dpus);
        return 1;
    }
    const uint32_t chunk_bytes = (uint32_t)(per_dpu * sizeof(elem_t));
    elem_t *X = calloc(per_dpu * nr_dpus, sizeof(elem_t));
    red_args_t *args = calloc(nr_dpus, sizeof(red_args_t));
    int64_t *sums = calloc(nr_dpus, sizeof(int64_t));
    if (!X || !args || !sums) { fprintf(stderr, "out of memory\n"); return 1; }
    for (unsigned long k = 0; k < n; k++)
        X[k] = (elem_t)((k * 37 + 11) % 1000) - 500;
    for (i = 0; i < nr_dpus; i++) {
        unsigned long first = i * per_dpu;
        args[i].nr_elems = (uint32_t)(first >= n ? 0 : (n - first < per_dpu ? n - first : per_dpu));
    }

    double t_in = 0, t_kernel = 0, t_out = 0, t_inter = 0, t0;
    int64_t total = 0;
    for (unsigned long rep = 0; rep < warmup + reps; rep++) {
        const int timed = rep >= warmup;
        t0 = now_ms();
        DPU_FOREACH(set, dpu, i) DPU_ASSERT(dpu_prepare_xfer(dpu, &args[i]));
        DPU_ASSERT(dpu_push_xfer(set, DPU_XFER_TO_DPU, "DPU_INPUT_ARGUMENTS", 0, sizeof(red_args_t), DPU_XFER_DEFAULT));
        DPU_FOREACH(set, dpu, i) DPU_ASSERT(dpu_prepare_xfer(dpu, &X[i * per_dpu]));
        DPU_ASSERT(dpu_push_xfer(set, DPU_XFER_TO_DPU, DPU_MRAM_HEAP_POINTER_NAME, 0, chunk_bytes, DPU_XFER_DEFAULT));
        if (timed) t_in += now_ms() - t0;

        t0 = now_ms();
        DPU_ASSERT(dpu_launch(set, DPU_SYNCHRONOUS));
        if (timed) t_kernel += now_ms() - t0;

        t0 = now_ms();
        DPU_FOREACH(set, dpu, i) DPU_ASSERT(dpu_prepare_xfer(dpu, &sums[i]));
        DPU_ASSERT(dpu_push_xfer(set, DPU_XFER_FROM_DPU, "DPU_RESULT", 0, sizeof(int64_t), DPU_XFER_DEFAULT));
        if (timed) t_out += now_ms() - t0;

        t0 = now_ms();
        total = 0;
        for (i = 0; i < nr_dpus; i++)
            total += sums[i];
        if (timed) t_inter += now_ms() - t0;
    }
    printf("CPU-DPU Time (ms): %.3f\n", t_in / reps);
    printf("DPU Kernel Time (ms): %.3f\n", t_kernel / reps);
    printf("DPU-CPU Time (ms): %.3f\n", t_out / reps);
    printf("Inter-DPU Time (ms): %.3f\n", t_inter / reps);

    int64_t expected = 0;
    for (unsigned long k = 0; k < n; k++)
        expected += X[k];
    int status = total != expected;
    if (status)
        printf("[ERROR] sum of %lu %s elements = %" PRId64 ", expected %" PRId64 "\n", n, ELEM_NAME, total, expected);
    else
        printf("[OK] results match\n");

    DPU_ASSERT(dpu_free(set));
    free(X), free(args), free(sums);
    return status;
}
