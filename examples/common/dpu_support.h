/* Shared by the examples' DPU kernels: the DPU runtime headers they use, the WRAM block size and
 * the start of a launch. */
#ifndef EXAMPLES_DPU_SUPPORT_H
#define EXAMPLES_DPU_SUPPORT_H

#include <alloc.h>
#include <barrier.h>
#include <defs.h>
#include <mram.h>
#include <stdint.h>

#ifndef BL
#define BL 10 /* log2 of the WRAM block a tasklet moves per DMA, in bytes */
#endif
#define BLOCK_BYTES (1u << BL)

/* The calling tasklet's id, once tasklet 0 has rewound the WRAM heap (it is not rewound between
 * launches) and every tasklet has reached `ready` (a barrier of NR_TASKLETS). Always inlined, so
 * that the kernel is the same code as with these lines written in main, at any optimization level. */
static inline __attribute__((always_inline)) uint32_t start_tasklet(barrier_t *ready) {
    const uint32_t id = me();
    if (id == 0)
        mem_reset();
    barrier_wait(ready);
    return id;
}

#endif
