/* RED example, host program (UPMEM SDK host API): the 64-bit sum of a vector of int64 (or, built
 * with -DINT32, int32) elements split over NR_DPUS DPUs; the host adds the DPUs' sums.
 * Usage: ./bin/host_code [-i elements] [-w warmup reps] [-e timed reps] */
#include "host_support.h"

#include <inttypes.h>

#include "common.h"

int main(int argc, char **argv) {
    unsigned long n = 2621440;
    host_t host;
    if (host_start(&host, argc, argv, (count_option_t[]){{'i', "elements", &n}}, 1)) return 1;

    const unsigned long per_dpu = share_size(n, host.nr_dpus, 8 / sizeof(elem_t));
    if (per_dpu * sizeof(elem_t) > (64ul << 20)) { /* one DPU's 64 MB of MRAM */
        fprintf(stderr, "-i %lu does not fit in the MRAM of %u DPU(s)\n", n, (unsigned)host.nr_dpus);
        return 1;
    }
    const uint32_t chunk_bytes = (uint32_t)(per_dpu * sizeof(elem_t));
    elem_t *X = calloc(per_dpu * host.nr_dpus, sizeof(elem_t));
    red_args_t *args = calloc(host.nr_dpus, sizeof(red_args_t));
    int64_t *sums = calloc(host.nr_dpus, sizeof(int64_t));
    if (!X || !args || !sums) { fprintf(stderr, "out of memory\n"); return 1; }
    for (unsigned long k = 0; k < n; k++)
        X[k] = (elem_t)((k * 37 + 11) % 1000) - 500;
    for (uint32_t i = 0; i < host.nr_dpus; i++)
        args[i].nr_elems = (uint32_t)share_count(i, per_dpu, n);

    int64_t total = 0;
    while (next_rep(&host)) {
        phase_start(&host, CPU_DPU);
        push_args(host.set, args, sizeof(red_args_t));
        xfer_each(host.set, DPU_XFER_TO_DPU, DPU_MRAM_HEAP_POINTER_NAME, 0, X, chunk_bytes, chunk_bytes);
        phase_stop(&host, CPU_DPU);

        launch(&host);

        phase_start(&host, DPU_CPU);
        xfer_each(host.set, DPU_XFER_FROM_DPU, "DPU_RESULT", 0, sums, sizeof(int64_t), sizeof(int64_t));
        phase_stop(&host, DPU_CPU);

        phase_start(&host, INTER_DPU);
        total = 0;
        for (uint32_t i = 0; i < host.nr_dpus; i++)
            total += sums[i];
        phase_stop(&host, INTER_DPU);
    }
    print_times(&host);

    int64_t expected = 0;
    for (unsigned long k = 0; k < n; k++)
        expected += X[k];
    int status = total != expected;
    if (status)
        printf("[ERROR] sum of %lu %s elements = %" PRId64 ", expected %" PRId64 "\n", n, ELEM_NAME, total, expected);
    else
        printf("[OK] results match\n");

    DPU_ASSERT(dpu_free(host.set));
    free(X), free(args), free(sums);
    return status;
}
