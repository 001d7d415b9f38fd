/*
 * cnm_sys.h - internals shared by the cnmtune DPU runtime sources
 * (cnmtune/dpu/runtime/ *.c).  Kernels do not need this header.
 *
 * The runtime is compiled once, independently of NR_TASKLETS and
 * STACK_SIZE_DEFAULT, so everything that depends on them is read from
 * symbols defined by cnmtune/dpu/dpu.ld at link time.
 */
#ifndef _CNM_SYS_H_
#define _CNM_SYS_H_

#include <stdint.h>
#include <cnm_ecall.h>

/* Puts a runtime function in its own section .text.__sys.<name>: dpu.ld
 * gathers .text.__sys* between __cnm_text_runtime_start/_end and
 * --gc-sections drops the unused ones. */
#define __CNM_SYS_TEXT(name) __attribute__((section(".text.__sys." #name)))

/* ---- ecall wrappers: only the runtime (compiled by zig's clang) issues ecalls;
 * kernels call the runtime functions, so their IR needs no inline assembly. */
#define __CNM_ECALL_INLINE static inline __attribute__((always_inline, unused))

/* Service call without argument; returns a0. */
__CNM_ECALL_INLINE uint32_t __cnm_ecall0(uint32_t service)
{
    register uint32_t a7 __asm__("a7") = service;
    register uint32_t a0 __asm__("a0");
    __asm__ volatile("ecall" : "=r"(a0) : "r"(a7) : "memory");
    return a0;
}

/* Service call with one argument in a0; returns a0. */
__CNM_ECALL_INLINE uint32_t __cnm_ecall1(uint32_t service, uint32_t arg0)
{
    register uint32_t a7 __asm__("a7") = service;
    register uint32_t a0 __asm__("a0") = arg0;
    __asm__ volatile("ecall" : "+r"(a0) : "r"(a7) : "memory");
    return a0;
}

/* Service call with arguments in a0, a1; returns a0. */
__CNM_ECALL_INLINE uint32_t __cnm_ecall2(uint32_t service, uint32_t arg0, uint32_t arg1)
{
    register uint32_t a7 __asm__("a7") = service;
    register uint32_t a0 __asm__("a0") = arg0;
    register uint32_t a1 __asm__("a1") = arg1;
    __asm__ volatile("ecall" : "+r"(a0) : "r"(a7), "r"(a1) : "memory");
    return a0;
}

/* Service call with arguments in a0, a1, a2; returns a0. */
__CNM_ECALL_INLINE uint32_t __cnm_ecall3(uint32_t service, uint32_t arg0, uint32_t arg1, uint32_t arg2)
{
    register uint32_t a7 __asm__("a7") = service;
    register uint32_t a0 __asm__("a0") = arg0;
    register uint32_t a1 __asm__("a1") = arg1;
    register uint32_t a2 __asm__("a2") = arg2;
    __asm__ volatile("ecall" : "+r"(a0) : "r"(a7), "r"(a1), "r"(a2) : "memory");
    return a0;
}

/* Service call with arguments in a0..a3; returns a0. */
__CNM_ECALL_INLINE uint32_t __cnm_ecall4(uint32_t service, uint32_t arg0, uint32_t arg1, uint32_t arg2,
                                         uint32_t arg3)
{
    register uint32_t a7 __asm__("a7") = service;
    register uint32_t a0 __asm__("a0") = arg0;
    register uint32_t a1 __asm__("a1") = arg1;
    register uint32_t a2 __asm__("a2") = arg2;
    register uint32_t a3 __asm__("a3") = arg3;
    __asm__ volatile("ecall" : "+r"(a0) : "r"(a7), "r"(a1), "r"(a2), "r"(a3) : "memory");
    return a0;
}

/* Service call with arguments in a0, a1 returning a 64-bit value in a0 (low) / a1 (high). */
__CNM_ECALL_INLINE uint64_t __cnm_ecall2_u64(uint32_t service, uint32_t arg0, uint32_t arg1)
{
    register uint32_t a7 __asm__("a7") = service;
    register uint32_t a0 __asm__("a0") = arg0;
    register uint32_t a1 __asm__("a1") = arg1;
    __asm__ volatile("ecall" : "+r"(a0), "+r"(a1) : "r"(a7) : "memory");
    return ((uint64_t)a1 << 32) | a0;
}

/* Raises a DPU fault (CNM_FAULT_*); the whole DPU stops. */
__CNM_ECALL_INLINE __attribute__((noreturn)) void __cnm_fault(uint32_t code)
{
    for (;;)
        (void)__cnm_ecall1(CNM_ECALL_FAULT, code);
}

/* Linker-script symbols (dpu.ld). */
extern const uint32_t __sys_thread_stack_table[24]; /* top of tasklet t's stack, 0 if t >= NR_TASKLETS */
extern uint8_t __sys_stacks_start[];                /* lowest stack byte */
extern uint8_t __sys_stacks_end[];                  /* one past the highest stack byte */
extern uint8_t __sys_heap_pointer_reset[];          /* start of the mem_alloc heap (8-aligned) */
extern uint8_t __cnm_wram_size[];                   /* absolute: end of WRAM (65536 by default) */
extern uint8_t __cnm_stack_size[];                  /* absolute: STACK_SIZE_DEFAULT, bytes per tasklet stack */
extern uint8_t __cnm_nr_tasklets[];                 /* absolute: NR_TASKLETS */

/* Spins until the atomic bit at address bit is acquired. */
static inline __attribute__((always_inline)) void __cnm_sys_lock(volatile uint8_t *bit)
{
    while (__cnm_ecall1(CNM_ECALL_LOCK, (uint32_t)(uintptr_t)bit) != 0) {
    }
}

/* Releases the atomic bit at address bit. */
static inline __attribute__((always_inline)) void __cnm_sys_unlock(volatile uint8_t *bit)
{
    (void)__cnm_ecall1(CNM_ECALL_RELEASE, (uint32_t)(uintptr_t)bit);
}

#endif /* _CNM_SYS_H_ */
