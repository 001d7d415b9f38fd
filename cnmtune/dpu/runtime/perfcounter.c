/*
 * perfcounter.c - CLOCKS_PER_SEC.  The counter services themselves are inline
 * in perfcounter.h.
 */
#pragma clang section text = ".text.__sys"

#include <perfcounter.h>

/* DPU clock in Hz.  350 MHz here; the simulator overwrites this WRAM word with
 * its configured frequency when it loads the program. */
const volatile uint32_t CLOCKS_PER_SEC = 350000000;
