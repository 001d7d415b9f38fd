/* GEMV example, host program (UPMEM SDK host API): y = A x for an m x n uint32 (or, built with
 * -DINT32, int32) matrix whose rows are split in equal bands over NR_DPUS DPUs; x goes to all.
 * Usage: ./bin/host_code [-m rows] [-n columns] [-w warmup reps] [-e timed reps] */
#define _POSIX_C_SOURCE 200809L
#include <dpu.h>
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
    unsigned long m = 4096, n = 1024, warmup = 0, reps = 1;
    int opt;
    while ((opt = getopt(argc, argv, "m:n:w:e:")) != -1) {
        if (opt == 'm') m = strtoul(optarg, NULL, 10);
        else if (opt == 'n') n = strtoul(optarg, NULL, 10);
        else if (opt == 'w') warmup = strtoul(optarg, NULL, 10);
        else if (opt == 'e') reps = strtoul(optarg, NULL, 10);
        else { fprintf(stderr, "usage: %s [-m rows] [-n cols] [-w warmup] [-e reps]\n", argv[0]); return 1; }
    }
    if (m == 0 || n == 0 || reps == 0) { fprintf(stderr, "-m, -n and -e must be positive\n"); return 1; }

    struct dpu_set_t set, dpu;
    uint32_t nr_dpus, i;
    DPU_ASSERT(dpu_alloc(NR_DPUS, NULL, &set));
    DPU_ASSERT(dpu_load(set, DPU_BINARY, NULL));
    DPU_ASSERT(dpu_get_nr_dpus(set, &nr_dpus));

    /* rows: equal bands of ceil(m / DPUs) rounded up to even; columns: n rounded up to even */
    const unsigned long band_rows = ((m + nr_dpus - 1) / nr_dpus + 1) & ~1ul;
    const unsigned long cols = (n + 1) & ~1ul;
    const unsigned long row_bytes = cols * sizeof(elem_t), band_bytes = band_rows * row_bytes;
    if (band_bytes + row_bytes + band_rows * sizeof(elem_t) > (64ul << 20)) { /* one DPU's 64 MB of MRAM */
        fprintf(stderr, "a %lu x %lu matrix does not fit in the MRAM of %u DPU(s)\n", m, n, (unsigned)nr_dpus);
        return 1;
    }
    elem_t *A = calloc(band_rows * nr_dpus * cols, sizeof(elem_t));
    elem_t *x = calloc(cols, sizeof(elem_t));
    elem_t *y = calloc(band_rows * nr_dpus, sizeof(elem_t));
    gemv_args_t *args = calloc(nr_dpus, sizeof(gemv_args_t));
    if (!A || !x || !y || !args) { fprintf(stderr, "out of memory\n"); return 1; }
    for (unsigned long r = 0; r < m; r++)
        for (unsigned long c = 0; c < n; c++)
            A[r * cols + c] = (elem_t)((r * 5 + c * 3) % 17);
    for (unsigned long c = 0; c < n; c++)
        x[c] = (elem_t)((c * 11 + 1) % 13);
    for (i = 0; i < nr_dpus; i++) {
        unsigned long first = i * band_rows;
        args[i].nr_rows = (uint32_t)(first >= m ? 0 : (m - first < band_rows ? m - first : band_rows));
        args[i].band_rows = (uint32_t)band_rows;
        args[i].row_bytes = (uint32_t)row_bytes;
    }

    double t_in = 0, t_kernel = 0, t_out = 0, t0;
    for (unsigned long rep = 0; rep < warmup + reps; rep++) {
        const int timed = rep >= warmup;
        t0 = now_ms();
        DPU_FOREACH(set, dpu, i) DPU_ASSERT(dpu_prepare_xfer(dpu, &args[i]));
        DPU_ASSERT(dpu_push_xfer(set, DPU_XFER_TO_DPU, "DPU_INPUT_ARGUMENTS", 0, sizeof(gemv_args_t), DPU_XFER_DEFAULT));
        DPU_FOREACH(set, dpu, i) DPU_ASSERT(dpu_prepare_xfer(dpu, &A[i * band_rows * cols]));
        DPU_ASSERT(dpu_push_xfer(set, DPU_XFER_TO_DPU, DPU_MRAM_HEAP_POINTER_NAME, 0, band_bytes, DPU_XFER_DEFAULT));
        DPU_ASSERT(dpu_broadcast_to(set, DPU_MRAM_HEAP_POINTER_NAME, (uint32_t)band_bytes, x, row_bytes,
                                    DPU_XFER_DEFAULT));
        if (timed) t_in += now_ms() - t0;

        t0 = now_ms();
        DPU_ASSERT(dpu_launch(set, DPU_SYNCHRONOUS));
        if (timed) t_kernel += now_ms() - t0;

        t0 = now_ms();
        DPU_FOREACH(set, dpu, i) DPU_ASSERT(dpu_prepare_xfer(dpu, &y[i * band_rows]));
        DPU_ASSERT(dpu_push_xfer(set, DPU_XFER_FROM_DPU, DPU_MRAM_HEAP_POINTER_NAME, (uint32_t)(band_bytes + row_bytes),
                                 band_rows * sizeof(elem_t), DPU_XFER_DEFAULT));
        if (timed) t_out += now_ms() - t0;
    }
    printf("CPU-DPU Time (ms): %.3f\n", t_in / reps);
    printf("DPU Kernel Time (ms): %.3f\n", t_kernel / reps);
    printf("DPU-CPU Time (ms): %.3f\n", t_out / reps);

    int status = 0;
    for (unsigned long r = 0; r < m && !status; r++) {
        elem_t want = 0;
        for (unsigned long c = 0; c < n; c++)
            want += A[r * cols + c] * x[c];
        if (y[r] != want) {
            printf("[ERROR] y[%lu] = %lld, expected %lld\n", r, (long long)y[r], (long long)want);
            status = 1;
        }
    }
    if (!status) printf("[OK] results match\n");

    DPU_ASSERT(dpu_free(set));
    free(A), free(x), free(y), free(args);
    return status;
}
