/*
 * attributes.h - variable and function attributes of the UPMEM DPU runtime.
 *
 * Placement (see cnmtune/dpu/dpu.ld and README.md):
 *   WRAM  0x00000000  ordinary globals, __host variables, stacks, heap
 *   MRAM  0x08000000  __mram / __mram_noinit variables, then DPU_MRAM_HEAP_POINTER
 *   atomic bits 0xF0000000  __atomic_bit variables (one byte each)
 *
 * Difference from the UPMEM SDK: on the RISC-V proxy MRAM is plain memory at
 * 0x08000000, so __mram_ptr is EMPTY.  The SDK's address_space(255) checks
 * (no implicit MRAM<->WRAM pointer conversions, no direct MRAM loads/stores)
 * are NOT enforced by the compiler; the cnmtune simulator checks address
 * ranges of DMA services and memory accesses at run time instead.
 */
#ifndef _DPUSYSCORE_ATTRIBUTES_H_
#define _DPUSYSCORE_ATTRIBUTES_H_

#include <macro_utils.h>

/*
 * Section names get a unique numeric suffix (__COUNTER__): clang rejects a
 * const and a non-const variable in one named section ("section type
 * conflict"), e.g. `__mram const T table[]` next to `__mram T buffer[]`.
 * dpu.ld matches the suffixed names (.mram.*, .dpu_host.*, ...).
 */
#define __CNM_SECTION(prefix) __attribute__((section(prefix "." __STR(__COUNTER__))))

/* Marks a pointer to MRAM.  Empty on the proxy (see above). */
#define __mram_ptr

/* MRAM variable, loaded with the program (section .mram.<n>, 8-aligned). */
#define __mram __CNM_SECTION(".mram") __attribute__((aligned(8), used))

/* MRAM variable that is not loaded (section .mram.noinit.<n>, 8-aligned). */
#define __mram_noinit __CNM_SECTION(".mram.noinit") __attribute__((aligned(8), used))

/* Like __mram; the linker never discards it (section .mram.keep.<n>). */
#define __mram_keep __CNM_SECTION(".mram.keep") __attribute__((aligned(8), used))

/* Like __mram_noinit; the linker never discards it (section .mram.noinit.keep.<n>). */
#define __mram_noinit_keep __CNM_SECTION(".mram.noinit.keep") __attribute__((aligned(8), used))

/* 8-byte alignment, as required for DMA buffers. */
#define __dma_aligned __attribute__((aligned(8)))

/* WRAM variable visible to the host by name (section .dpu_host.<n>, 8-aligned, kept). */
#define __host __CNM_SECTION(".dpu_host") __attribute__((aligned(8), used))

/* WRAM variable the linker must keep even if unreferenced. */
#define __keep __CNM_SECTION(".data.__sys_keep") __attribute__((used))

/* One-byte variable in the atomic-bit space; its bit index is (address - 0xF0000000). */
#define __atomic_bit __attribute__((section(".atomic"), used))

/* WRAM variable placed at the start of .data (the SDK puts these in the first
 * 2 KiB of WRAM, reachable with immediate addressing).  name is an identifier. */
#define __lower_data(name) __attribute__((section(".data.__sys_lower." #name), used))

#ifndef __weak
/* Weak symbol. */
#define __weak __attribute__((weak))
#endif
#ifndef __section
/* Places the object in section s. */
#define __section(s) __attribute__((section(s)))
#endif
#ifndef __aligned
/* Aligns the object on n bytes. */
#define __aligned(n) __attribute__((aligned(n)))
#endif
#ifndef __used
/* Keeps the object even if the compiler sees no use. */
#define __used __attribute__((used))
#endif
#ifndef __noinline
/* Never inline this function. */
#define __noinline __attribute__((noinline))
#endif
#ifndef DEPRECATED
/* Marks an API as deprecated. */
#define DEPRECATED __attribute__((deprecated))
#endif

#endif /* _DPUSYSCORE_ATTRIBUTES_H_ */
