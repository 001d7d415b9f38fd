/*
 * stack.c - check_stack(): remaining words in the calling tasklet's stack.
 * Stacks grow down; tasklet t's stack is [top_t - STACK_SIZE_DEFAULT, top_t)
 * with top_t = __sys_thread_stack_table[t] (see dpu.ld).
 */
#pragma clang section text = ".text.__sys"

#include <defs.h>
#include <stdint.h>
#include <cnm_sys.h>

__CNM_SYS_TEXT(check_stack) int check_stack(void)
{
    uintptr_t sp;
    __asm__ volatile("mv %0, sp" : "=r"(sp));
    uint32_t tid = __cnm_ecall0(CNM_ECALL_ME);
    uintptr_t bottom = (uintptr_t)__sys_thread_stack_table[tid] - (uintptr_t)__cnm_stack_size;
    return (int32_t)(sp - bottom) >> 2;
}
