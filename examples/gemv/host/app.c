/* GEMV example, host program (UPMEM SDK host API): y = A x for an m x n uint32 (or, built with
 * -DINT32, int32) matrix whose rows are split in equal bands over NR_DPUS DPUs; x goes to all.
 * Usage: ./bin/host_code [-m rows] [-n columns] [-w warmup reps] [-e timed reps] */
#include "host_support.h"

#include "common.h"

int main(int argc, char **argv) {
    unsigned long m = 4096, n = 1024;
    host_t host;
    if (host_start(&host, argc, argv, (count_option_t[]){{'m', "rows", &m}, {'n', "cols", &n}}, 2)) return 1;

    /* rows: equal bands rounded up to even; columns: n rounded up to even */
    const unsigned long band_rows = share_size(m, host.nr_dpus, 2);
    const unsigned long cols = (n + 1) & ~1ul;
    const unsigned long row_bytes = cols * sizeof(elem_t), band_bytes = band_rows * row_bytes;
    if (band_bytes + row_bytes + band_rows * sizeof(elem_t) > (64ul << 20)) { /* one DPU's 64 MB of MRAM */
        fprintf(stderr, "a %lu x %lu matrix does not fit in the MRAM of %u DPU(s)\n", m, n, (unsigned)host.nr_dpus);
        return 1;
    }
    elem_t *A = calloc(band_rows * host.nr_dpus * cols, sizeof(elem_t));
    elem_t *x = calloc(cols, sizeof(elem_t));
    elem_t *y = calloc(band_rows * host.nr_dpus, sizeof(elem_t));
    gemv_args_t *args = calloc(host.nr_dpus, sizeof(gemv_args_t));
    if (!A || !x || !y || !args) { fprintf(stderr, "out of memory\n"); return 1; }
    for (unsigned long r = 0; r < m; r++)
        for (unsigned long c = 0; c < n; c++)
            A[r * cols + c] = (elem_t)((r * 5 + c * 3) % 17);
    for (unsigned long c = 0; c < n; c++)
        x[c] = (elem_t)((c * 11 + 1) % 13);
    for (uint32_t i = 0; i < host.nr_dpus; i++) {
        args[i].nr_rows = (uint32_t)share_count(i, band_rows, m);
        args[i].band_rows = (uint32_t)band_rows;
        args[i].row_bytes = (uint32_t)row_bytes;
    }

    while (next_rep(&host)) {
        phase_start(&host, CPU_DPU);
        push_args(host.set, args, sizeof(gemv_args_t));
        xfer_each(host.set, DPU_XFER_TO_DPU, DPU_MRAM_HEAP_POINTER_NAME, 0, A, band_bytes, band_bytes);
        DPU_ASSERT(dpu_broadcast_to(host.set, DPU_MRAM_HEAP_POINTER_NAME, (uint32_t)band_bytes, x, row_bytes,
                                    DPU_XFER_DEFAULT));
        phase_stop(&host, CPU_DPU);

        launch(&host);

        phase_start(&host, DPU_CPU);
        xfer_each(host.set, DPU_XFER_FROM_DPU, DPU_MRAM_HEAP_POINTER_NAME, (uint32_t)(band_bytes + row_bytes), y,
                  band_rows * sizeof(elem_t), band_rows * sizeof(elem_t));
        phase_stop(&host, DPU_CPU);
    }
    print_times(&host);

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

    DPU_ASSERT(dpu_free(host.set));
    free(A), free(x), free(y), free(args);
    return status;
}
