/*
 * dpu_characteristics.h - hardware constants of the modelled DPU (UPMEM v1A).
 */
#ifndef _DPUSYSCORE_DPU_CHARACTERISTICS_H_
#define _DPUSYSCORE_DPU_CHARACTERISTICS_H_

#define DPU_NR_THREADS 24          /* hardware threads (tasklets) */
#define DPU_NR_ATOMIC_BITS 256     /* atomic bits */
#define DPU_NR_WORK_REGS 24        /* general-purpose registers per thread on the DPU */
#define DPU_WRAM_SIZE 65536        /* bytes of WRAM */
#define DPU_MRAM_SIZE_LOG2 26      /* log2 of the MRAM size */
#define DPU_MRAM_SIZE (1u << 26)   /* bytes of MRAM (64 MiB) */
#define DPU_IRAM_NR_INSTRUCTIONS 4096 /* instructions that fit in IRAM */

#endif /* _DPUSYSCORE_DPU_CHARACTERISTICS_H_ */
