/*
 * mram.h - MRAM <-> WRAM DMA transfers (UPMEM-compatible).
 *
 * Rules of the DPU DMA engine (ldma/sdma): the size is a multiple of 8,
 * between 8 and 2048 bytes; WRAM and MRAM addresses are 8-byte aligned.
 * Constant sizes are checked at compile time (like newer SDKs); variable sizes
 * and the addresses are checked by the simulator at run time.  As on the DPU,
 * the DMA uses only the low address bits (see README.md).
 */
#ifndef _DPUSYSCORE_MRAM_H_
#define _DPUSYSCORE_MRAM_H_

#include <stdint.h>
#include <attributes.h>

/* End of the MRAM used by the program (8-aligned); defined by dpu.ld.  The
 * host reaches it by the symbol name "__sys_used_mram_end". */
extern __mram_ptr uint8_t __sys_used_mram_end[];

/* First free MRAM address after the program's __mram/__mram_noinit variables. */
#define DPU_MRAM_HEAP_POINTER ((__mram_ptr void *)(&__sys_used_mram_end))

/* Host-side symbol name of DPU_MRAM_HEAP_POINTER. */
#define DPU_MRAM_HEAP_POINTER_NAME "__sys_used_mram_end"

#define __CNM_DMA_SIZE_CHECKS(fn)                                                                              \
    __attribute__((diagnose_if(nb_of_bytes % 8 != 0,                                                          \
                               fn ": nb_of_bytes must be a multiple of 8 (DMA rule: 8 <= size <= 2048, "      \
                                  "size % 8 == 0)",                                                           \
                               "error")))                                                                     \
    __attribute__((diagnose_if(nb_of_bytes < 8,                                                               \
                               fn ": nb_of_bytes must be at least 8 (DMA rule: 8 <= size <= 2048, "           \
                                  "size % 8 == 0)",                                                           \
                               "error")))                                                                     \
    __attribute__((diagnose_if(nb_of_bytes > 2048,                                                            \
                               fn ": nb_of_bytes must be at most 2048 (DMA rule: 8 <= size <= 2048, "         \
                                  "size % 8 == 0)",                                                           \
                               "error")))

/* Copies nb_of_bytes from MRAM (from) to WRAM (to); the tasklet waits for the DMA. */
void mram_read(const __mram_ptr void *from, void *to, unsigned int nb_of_bytes)
    __CNM_DMA_SIZE_CHECKS("mram_read");

/* Copies nb_of_bytes from WRAM (from) to MRAM (to); the tasklet waits for the DMA. */
void mram_write(const void *from, __mram_ptr void *to, unsigned int nb_of_bytes)
    __CNM_DMA_SIZE_CHECKS("mram_write");

#endif /* _DPUSYSCORE_MRAM_H_ */
