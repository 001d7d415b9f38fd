/*
 * perfcounter.h - the DPU performance counter (UPMEM-compatible).
 *
 * One counter per DPU counts either cycles or instructions.  As on the DPU
 * the values have 16-cycle granularity (the simulator returns the counter
 * with the low 4 bits cleared).
 */
#ifndef _DPUSYSCORE_PERFCOUNTER_H_
#define _DPUSYSCORE_PERFCOUNTER_H_

#include <stdbool.h>
#include <stdint.h>

/* A counter value. */
typedef uint64_t perfcounter_t;

/* What the counter counts. */
typedef enum _perfcounter_config_t {
    COUNT_SAME = 0,         /* keep the current mode (use with reset) */
    COUNT_CYCLES = 1,       /* count clock cycles */
    COUNT_INSTRUCTIONS = 2, /* count executed instructions */
    COUNT_NOTHING = 3,      /* stop counting */
} perfcounter_config_t;

/* Clock frequency of the DPU in Hz.  Defined in WRAM by the runtime
 * (350000000); the simulator overwrites it with its configured frequency when
 * it loads the program.  Not a compile-time constant. */
extern const volatile uint32_t CLOCKS_PER_SEC;

/* Sets the counting mode, optionally resets the counter; returns the previous value. */
perfcounter_t perfcounter_config(perfcounter_config_t config, bool reset_value);

/* Returns the current counter value. */
perfcounter_t perfcounter_get(void);

#endif /* _DPUSYSCORE_PERFCOUNTER_H_ */
