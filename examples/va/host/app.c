/* VA example, host program (UPMEM SDK host API): C = A + B on int32 vectors split over NR_DPUS DPUs.
 * Usage: ./bin/host_code [-i elements] [-w warmup reps] [-e timed reps] */
#define _POSIX_C_SOURCE 200809L
#include <dpu.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
    const unsigned long per_dpu = ((n + nr_dpus - 1) / nr_dpus + 1) & ~1ul;
    if (3 * per_dpu * sizeof(elem_t) > (64ul << 20)) { /* A, B and C in one DPU's 64 MB of MRAM */
        fprintf(stderr, "-i %lu does not fit in the MRAM of %u DPU(s)\n", n, (unsigned)nr_dpus);
        return 1;
    }
    const uint32_t chunk_bytes = (uint32_t)(per_dpu * sizeof(elem_t));
    elem_t *A = calloc(per_dpu * nr_dpus, sizeof(elem_t));
    elem_t *B = calloc(per_dpu * nr_dpus, sizeof(elem_t));
    elem_t *C = calloc(per_dpu * nr_dpus, sizeof(elem_t));
    va_args_t *args = calloc(nr_dpus, sizeof(va_args_t));
    if (!A || !B || !C || !args) { fprintf(stderr, "out of memory\n"); return 1; }
    for (unsigned long k = 0; k < n; k++) {
        A[k] = (elem_t)((k * 7 + 3) % 1024);
        B[k] = (elem_t)((k * 13 + 5) % 1024);
    }
    for (i = 0; i < nr_dpus; i++) {
        unsigned long first = i * per_dpu;
        unsigned long count = first >= n ? 0 : (n - first < per_dpu ? n - first : per_dpu);
        args[i].valid_bytes = (uint32_t)((count * sizeof(elem_t) + 7) & ~7ul);
        args[i].chunk_bytes = chunk_bytes;
    }

    double t_in = 0, t_kernel = 0, t_out = 0, t0;
    for (unsigned long rep = 0; rep < warmup + reps; rep++) {
        const int timed = rep >= warmup;
        t0 = now_ms();
        DPU_FOREACH(set, dpu, i) DPU_ASSERT(dpu_prepare_xfer(dpu, &args[i]));
        DPU_ASSERT(dpu_push_xfer(set, DPU_XFER_TO_DPU, "DPU_INPUT_ARGUMENTS", 0, sizeof(va_args_t), DPU_XFER_DEFAULT));
        DPU_FOREACH(set, dpu, i) DPU_ASSERT(dpu_prepare_xfer(dpu, &A[i * per_dpu]));
        DPU_ASSERT(dpu_push_xfer(set, DPU_XFER_TO_DPU, DPU_MRAM_HEAP_POINTER_NAME, 0, chunk_bytes, DPU_XFER_DEFAULT));
        DPU_FOREACH(set, dpu, i) DPU_ASSERT(dpu_prepare_xfer(dpu, &B[i * per_dpu]));
        DPU_ASSERT(dpu_push_xfer(set, DPU_XFER_TO_DPU, DPU_MRAM_HEAP_POINTER_NAME, chunk_bytes, chunk_bytes,
                                 DPU_XFER_DEFAULT));
        if (timed) t_in += now_ms() - t0;

        t0 = now_ms();
        DPU_ASSERT(dpu_launch(set, DPU_SYNCHRONOUS));
        if (timed) t_kernel += now_ms() - t0;

        t0 = now_ms();
        DPU_FOREACH(set, dpu, i) DPU_ASSERT(dpu_prepare_xfer(dpu, &C[i * per_dpu]));
        DPU_ASSERT(dpu_push_xfer(set, DPU_XFER_FROM_DPU, DPU_MRAM_HEAP_POINTER_NAME, 2 * chunk_bytes, chunk_bytes,
                                 DPU_XFER_DEFAULT));
        if (timed) t_out += now_ms() - t0;
    }
    printf("CPU-DPU Time (ms): %.3f\n", t_in / reps);
    printf("DPU Kernel Time (ms): %.3f\n", t_kernel / reps);
    printf("DPU-CPU Time (ms): %.3f\n", t_out / reps);

    int status = 0;
    for (unsigned long k = 0; k < n; k++) {
        if (C[k] != A[k] + B[k]) {
            printf("[ERROR] C[%lu] = %d, expected %d\n", k, (int)C[k], (int)(A[k] + B[k]));
            status = 1;
            break;
        }
    }
    if (!status) printf("[OK] results match\n");

    DPU_ASSERT(dpu_free(set));
    free(A), free(B), free(C), free(args);
    return status;
}
