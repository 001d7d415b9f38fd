/*
 * cnmtune's UPMEM host API (see dpu.h): the SDK's probes (dpu_probe.h), which on UPMEM hardware
 * measure a rank's energy and the time between dpu_probe_start and dpu_probe_stop. The names,
 * types and call signatures are the ones SDK host programs use (PrIM's ENERGY=1 builds:
 * `struct dpu_probe_t probe; dpu_probe_init("energy_probe", &probe); ... dpu_probe_get(&probe,
 * DPU_ENERGY, DPU_AVERAGE, &energy)`), so such programs build and run unmodified.
 *
 * What cnmtune's simulator returns:
 *   DPU_TIME    seconds between each dpu_probe_start and the next dpu_probe_stop on the library's
 *               simulated clock (real host time, with every DPU call counted at its simulated
 *               duration: what CNMTUNE_HOST_CLOCK=simulated shows), whatever the host clock mode;
 *               DPU_ACCUMULATE sums the measured intervals, DPU_AVERAGE is the sum over their
 *               number (0 before the first interval).
 *   DPU_ENERGY  0 joules, with DPU_OK: the simulator has no energy model. The first energy read
 *               prints a one-line note on stderr saying so. DPU_OK rather than an error code, so
 *               a program that DPU_ASSERTs its reads goes on to its own output check.
 * Misuse (a NULL probe or value, dpu_probe_start on a running probe, dpu_probe_stop on a stopped
 * one, an unknown option) returns DPU_ERR_INTERNAL, and dpu_error_to_string names the cause.
 */
#ifndef DPU_PROBE_H
#define DPU_PROBE_H

#include <stdbool.h>
#include <stdint.h>

#include <dpu_error.h>

/* What dpu_probe_get reads. */
typedef enum _dpu_probe_option_t {
    DPU_ENERGY, /* joules (0 on cnmtune's simulator) */
    DPU_TIME,   /* seconds */
} dpu_probe_option_t;

/* How dpu_probe_get combines the start..stop intervals measured so far. */
typedef enum _dpu_probe_statistics_t {
    DPU_AVERAGE,    /* per interval */
    DPU_ACCUMULATE, /* over every interval */
} dpu_probe_statistics_t;

/* A probe. The fields are cnmtune's own: a program declares one and passes its address. */
struct dpu_probe_t {
    const char *name;
    bool running;
    int64_t started_ns;  /* simulated clock at dpu_probe_start */
    uint64_t intervals;  /* start..stop intervals measured */
    int64_t measured_ns; /* their total length */
};
typedef struct dpu_probe_t dpu_probe_t;

/* Make `probe` ready to measure (`name` labels it; it is not copied). */
dpu_error_t dpu_probe_init(const char *name, struct dpu_probe_t *probe);
/* Release `probe` (nothing to release on the simulator: it is reset). */
dpu_error_t dpu_probe_deinit(struct dpu_probe_t *probe);
/* Begin an interval. */
dpu_error_t dpu_probe_start(struct dpu_probe_t *probe);
/* End the interval dpu_probe_start began. */
dpu_error_t dpu_probe_stop(struct dpu_probe_t *probe);
/* Read `option` over the measured intervals, combined as `statistics`, into `value`. */
dpu_error_t dpu_probe_get(struct dpu_probe_t *probe, dpu_probe_option_t option, dpu_probe_statistics_t statistics,
                          double *value);

#endif /* DPU_PROBE_H */
