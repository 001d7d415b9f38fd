/* Shared by the examples' host programs: the headers they use, NR_DPUS and DPU_BINARY, the start
 * of a run (the app's own count options with -w and -e, the DPU set), the split of n items over
 * the DPUs, per-DPU transfers, and the reps with their phase times printed in PrIM's format.
 * Only the UPMEM SDK's host API (dpu.h) and C11/POSIX libc. Include it before any other header
 * (it selects POSIX for getopt and gettimeofday). */
#ifndef EXAMPLES_HOST_SUPPORT_H
#define EXAMPLES_HOST_SUPPORT_H

#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif
#include <dpu.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/time.h>
#include <unistd.h>

#ifndef NR_DPUS
#define NR_DPUS 1
#endif
#define DPU_BINARY "./bin/dpu_code"

static inline double now_ms(void) {
    struct timeval tv;
    gettimeofday(&tv, NULL);
    return tv.tv_sec * 1e3 + tv.tv_usec / 1e3;
}

/* The phases of a rep whose times PrIM prints, in that order. */
enum { CPU_DPU, DPU_KERNEL, DPU_CPU, INTER_DPU, NR_PHASES };

/* A run of an example: its DPUs, its reps and the times of their phases. */
typedef struct {
    struct dpu_set_t set;        /* NR_DPUS DPUs with DPU_BINARY loaded */
    uint32_t nr_dpus;
    unsigned long warmup, reps;  /* -w untimed reps first (default 0), -e timed reps (default 1) */
    unsigned long started;       /* reps started so far (next_rep) */
    int used[NR_PHASES];         /* phases started at least once */
    double start[NR_PHASES];     /* now_ms() at the phase's start */
    double total[NR_PHASES];     /* milliseconds of the phase, summed over the timed reps */
} host_t;

/* An option of the app's own: -<letter> <count>, a positive count, `meta` in the usage line. */
typedef struct {
    char letter;
    const char *meta;
    unsigned long *value; /* holds the default; gets the count given */
} count_option_t;

#define MAX_COUNT_OPTIONS 8

/* Reads the command line (getopt: the app's `nr` count options, then -w and -e) and allocates
 * the DPUs into *host. 0, or 1 after printing the usage (an unknown option) or that the counts
 * and -e must be positive. */
static inline int host_start(host_t *host, int argc, char **argv, const count_option_t *opts, int nr) {
    char optstring[2 * MAX_COUNT_OPTIONS + 5];
    int len = 0, opt, k;
    if (nr > MAX_COUNT_OPTIONS) return 1;
    for (k = 0; k < nr; k++) {
        optstring[len++] = opts[k].letter;
        optstring[len++] = ':';
    }
    snprintf(optstring + len, sizeof(optstring) - len, "w:e:");
    *host = (host_t){.warmup = 0, .reps = 1};

    while ((opt = getopt(argc, argv, optstring)) != -1) {
        for (k = 0; k < nr && opts[k].letter != opt; k++) {}
        if (k < nr) *opts[k].value = strtoul(optarg, NULL, 10);
        else if (opt == 'w') host->warmup = strtoul(optarg, NULL, 10);
        else if (opt == 'e') host->reps = strtoul(optarg, NULL, 10);
        else {
            fprintf(stderr, "usage: %s", argv[0]);
            for (k = 0; k < nr; k++) fprintf(stderr, " [-%c %s]", opts[k].letter, opts[k].meta);
            fprintf(stderr, " [-w warmup] [-e reps]\n");
            return 1;
        }
    }
    int positive = host->reps != 0;
    for (k = 0; k < nr; k++) positive = positive && *opts[k].value != 0;
    if (!positive) { /* "-i and -e must be positive", "-m, -n and -e must be positive" */
        for (k = 0; k < nr; k++) fprintf(stderr, "-%c%s", opts[k].letter, k + 1 < nr ? ", " : " and ");
        fprintf(stderr, "-e must be positive\n");
        return 1;
    }

    DPU_ASSERT(dpu_alloc(NR_DPUS, NULL, &host->set));
    DPU_ASSERT(dpu_load(host->set, DPU_BINARY, NULL));
    DPU_ASSERT(dpu_get_nr_dpus(host->set, &host->nr_dpus));
    return 0;
}

/* ---- n items split over the DPUs ---- */

/* Items per DPU: ceil(n / nr_dpus) rounded up to a multiple of `multiple` (with 8 / item size,
 * whole 8-byte words: a parallel transfer has the same size on every DPU). */
static inline unsigned long share_size(unsigned long n, uint32_t nr_dpus, unsigned long multiple) {
    const unsigned long share = (n + nr_dpus - 1) / nr_dpus;
    return (share + multiple - 1) / multiple * multiple;
}

/* Items that DPU i holds of n in shares of `share`: fewer on the last one, 0 past the end. */
static inline unsigned long share_count(uint32_t i, unsigned long share, unsigned long n) {
    const unsigned long first = i * share;
    return first >= n ? 0 : (n - first < share ? n - first : share);
}

/* ---- transfers ---- */

/* One parallel transfer of `bytes` at `offset` of `symbol` on every DPU, DPU i's to or from the
 * host buffer at `buffer` + i * `stride` bytes. */
static inline void xfer_each(struct dpu_set_t set, dpu_xfer_t direction, const char *symbol, uint32_t offset,
                             void *buffer, size_t stride, size_t bytes) {
    struct dpu_set_t dpu;
    uint32_t i;
    DPU_FOREACH(set, dpu, i) DPU_ASSERT(dpu_prepare_xfer(dpu, (uint8_t *)buffer + i * stride));
    DPU_ASSERT(dpu_push_xfer(set, direction, symbol, offset, bytes, DPU_XFER_DEFAULT));
}

/* Each DPU's kernel arguments (args[i], `size` bytes) into its WRAM variable DPU_INPUT_ARGUMENTS. */
static inline void push_args(struct dpu_set_t set, void *args, size_t size) {
    xfer_each(set, DPU_XFER_TO_DPU, "DPU_INPUT_ARGUMENTS", 0, args, size, size);
}

/* ---- reps and their times ---- */

/* while (next_rep(host)) { ... }: the warmup reps, then the timed ones. */
static inline int next_rep(host_t *host) {
    return host->started++ < host->warmup + host->reps;
}

static inline void phase_start(host_t *host, int phase) {
    host->used[phase] = 1;
    host->start[phase] = now_ms();
}

static inline void phase_stop(host_t *host, int phase) {
    if (host->started > host->warmup) host->total[phase] += now_ms() - host->start[phase];
}

/* One synchronous launch of the DPUs, the DPU_KERNEL phase. */
static inline void launch(host_t *host) {
    phase_start(host, DPU_KERNEL);
    DPU_ASSERT(dpu_launch(host->set, DPU_SYNCHRONOUS));
    phase_stop(host, DPU_KERNEL);
}

/* "CPU-DPU Time (ms): x" and so on: each phase used, averaged over the timed reps. */
static inline void print_times(const host_t *host) {
    static const char *const names[NR_PHASES] = {"CPU-DPU", "DPU Kernel", "DPU-CPU", "Inter-DPU"};
    for (int p = 0; p < NR_PHASES; p++)
        if (host->used[p]) printf("%s Time (ms): %.3f\n", names[p], host->total[p] / host->reps);
}

#endif
