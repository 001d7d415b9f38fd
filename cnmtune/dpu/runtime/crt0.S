/*
 * crt0.S - tasklet bootstrap of the cnmtune DPU proxy (entry point __bootstrap).
 *
 * The simulator starts tasklet 0 here; every tasklet then runs:
 *   tid = ME
 *   if __sys_thread_stack_table[tid] == 0: STOP      (tid >= NR_TASKLETS)
 *   if tid + 1 < NR_TASKLETS: BOOT(tid + 1)          (boot chain, as on the DPU)
 *   sp = __sys_thread_stack_table[tid]; main(); STOP(main's return value)
 * rv32i only (no multiply).  NR_TASKLETS is read from the absolute symbol
 * __cnm_nr_tasklets that dpu.ld derives from --defsym=NR_TASKLETS (default 1).
 * Absolute %hi/%lo addressing: WRAM (0x0) is not reachable pc-relative from
 * IRAM (0x80000000) on rv32.
 */
#include <cnm_ecall.h>

    .option norelax
    .section .text.__sys_crt0, "ax", @progbits
    .globl __bootstrap
    .type __bootstrap, @function
    .p2align 2
__bootstrap:
    li      a7, CNM_ECALL_ME
    ecall                                   /* a0 = tid */
    slli    t0, a0, 2
    lui     t1, %hi(__sys_thread_stack_table)
    addi    t1, t1, %lo(__sys_thread_stack_table)
    add     t1, t1, t0
    lw      t2, 0(t1)                       /* t2 = top of this tasklet's stack */
    beqz    t2, .Lstop_now                  /* no stack: not an active tasklet */
    addi    t3, a0, 1                       /* next tasklet */
    lui     t4, %hi(__cnm_nr_tasklets)
    addi    t4, t4, %lo(__cnm_nr_tasklets)
    bgeu    t3, t4, .Lrun
    mv      a0, t3
    li      a7, CNM_ECALL_BOOT
    ecall                                   /* boot tasklet tid + 1 */
.Lrun:
    mv      sp, t2
    li      s0, 0                           /* no caller frame */
    call    main
    j       .Lstop                          /* a0 = main's return value */
.Lstop_now:
    li      a0, 0
.Lstop:
    li      a7, CNM_ECALL_STOP
    ecall
    j       .Lstop                          /* STOP never returns */
    .size __bootstrap, . - __bootstrap
