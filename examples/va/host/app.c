/* VA example, host program (UPMEM SDK host API): C = A + B on int32 vectors split over NR_DPUS DPUs.
 * Usage: ./bin/host_code [-i elements] [-w warmup reps] [-e timed reps] */
#include "host_support.h"

#include "common.h"

int main(int argc, char **argv) {
    unsigned long n = 2621440;
    host_t host;
    if (host_start(&host, argc, argv, (count_option_t[]){{'i', "elements", &n}}, 1)) return 1;

    const unsigned long per_dpu = share_size(n, host.nr_dpus, 8 / sizeof(elem_t));
    if (3 * per_dpu * sizeof(elem_t) > (64ul << 20)) { /* A, B and C in one DPU's 64 MB of MRAM */
        fprintf(stderr, "-i %lu does not fit in the MRAM of %u DPU(s)\n", n, (unsigned)host.nr_dpus);
        return 1;
    }
    const uint32_t chunk_bytes = (uint32_t)(per_dpu * sizeof(elem_t));
    elem_t *A = calloc(per_dpu * host.nr_dpus, sizeof(elem_t));
    elem_t *B = calloc(per_dpu * host.nr_dpus, sizeof(elem_t));
    elem_t *C = calloc(per_dpu * host.nr_dpus, sizeof(elem_t));
    va_args_t *args = calloc(host.nr_dpus, sizeof(va_args_t));
    if (!A || !B || !C || !args) { fprintf(stderr, "out of memory\n"); return 1; }
    for (unsigned long k = 0; k < n; k++) {
        A[k] = (elem_t)((k * 7 + 3) % 1024);
        B[k] = (elem_t)((k * 13 + 5) % 1024);
    }
    for (uint32_t i = 0; i < host.nr_dpus; i++) {
        args[i].valid_bytes = (uint32_t)((share_count(i, per_dpu, n) * sizeof(elem_t) + 7) & ~7ul);
        args[i].chunk_bytes = chunk_bytes;
    }

    while (next_rep(&host)) {
        phase_start(&host, CPU_DPU);
        push_args(host.set, args, sizeof(va_args_t));
        xfer_each(host.set, DPU_XFER_TO_DPU, DPU_MRAM_HEAP_POINTER_NAME, 0, A, chunk_bytes, chunk_bytes);
        xfer_each(host.set, DPU_XFER_TO_DPU, DPU_MRAM_HEAP_POINTER_NAME, chunk_bytes, B, chunk_bytes, chunk_bytes);
        phase_stop(&host, CPU_DPU);

        launch(&host);

        phase_start(&host, DPU_CPU);
        xfer_each(host.set, DPU_XFER_FROM_DPU, DPU_MRAM_HEAP_POINTER_NAME, 2 * chunk_bytes, C, chunk_bytes,
                  chunk_bytes);
        phase_stop(&host, DPU_CPU);
    }
    print_times(&host);

    int status = 0;
    for (unsigned long k = 0; k < n; k++) {
        if (C[k] != A[k] + B[k]) {
            printf("[ERROR] C[%lu] = %d, expected %d\n", k, (int)C[k], (int)(A[k] + B[k]));
            status = 1;
            break;
        }
    }
    if (!status) printf("[OK] results match\n");

    DPU_ASSERT(dpu_free(host.set));
    free(A), free(B), free(C), free(args);
    return status;
}
