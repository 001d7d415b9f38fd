/*
 * cnm_ecall.h - the service-call ABI between DPU code and the cnmtune simulator.
 *
 * cnmtune runs UPMEM-style kernels on a 32-bit RISC-V proxy of the DPU (rv32i,
 * ilp32).  Everything the DPU does with dedicated instructions (thread id, boot,
 * stop, DMA, atomic bits, performance counter, ...) is an `ecall` here:
 *
 *   service number in a7, arguments in a0..a3, result in a0
 *   (64-bit results: a0 = low word, a1 = high word).
 *   The simulator modifies only a0 (and a1 for 64-bit results); every other
 *   register is preserved.  Blocking services (barrier, semaphore, handshake)
 *   block the calling tasklet inside the simulator.
 *
 * cnmtune's Python side parses the `#define CNM_ECALL_<NAME> <n>` and
 * `#define CNM_FAULT_<NAME> <n>` lines below: keep exactly one define per line,
 * a decimal number, and a trailing comment.
 *
 * The header holds only #defines: crt0.S includes it, and so do kernel headers.
 * The ecall wrappers live in cnm_sys.h, which only the runtime includes:
 * kernels call runtime functions (services.c), never inline assembly.
 */
#ifndef _CNM_ECALL_H_
#define _CNM_ECALL_H_

/* ---- service numbers (a7) ------------------------------------------------ */
#define CNM_ECALL_STOP 0                /* tasklet finished; a0 = main's return value (informational); never returns */
#define CNM_ECALL_ME 1                  /* -> a0 = id of the calling tasklet (0..NR_TASKLETS-1) */
#define CNM_ECALL_BOOT 2                /* a0 = tasklet id to start at the ELF entry point (__bootstrap) */
#define CNM_ECALL_FAULT 3               /* a0 = fault code (CNM_FAULT_*); stops the whole DPU; never returns */
#define CNM_ECALL_MRAM_READ 4           /* a0 = MRAM source, a1 = WRAM destination, a2 = bytes (DMA MRAM->WRAM, ldma) */
#define CNM_ECALL_MRAM_WRITE 5          /* a0 = WRAM source, a1 = MRAM destination, a2 = bytes (DMA WRAM->MRAM, sdma) */
#define CNM_ECALL_ACQUIRE 6             /* a0 = atomic-bit address (bit index = a0 & 0xff) -> a0 = 0 acquired, 1 busy */
#define CNM_ECALL_RELEASE 7             /* a0 = atomic-bit address (bit index = a0 & 0xff); clears the bit */
#define CNM_ECALL_BARRIER_WAIT 8        /* a0 = barrier_t *; blocks until initial_count tasklets have arrived */
#define CNM_ECALL_SEM_TAKE 9            /* a0 = sem_t *; decrements count, blocks while it is negative */
#define CNM_ECALL_SEM_GIVE 10           /* a0 = sem_t *; increments count, wakes one waiter if any */
#define CNM_ECALL_HANDSHAKE_NOTIFY 11   /* blocks the caller until some tasklet waits for it (handshake_wait_for(me())) */
#define CNM_ECALL_HANDSHAKE_WAIT_FOR 12 /* a0 = notifier tasklet id -> a0 = 0, or CNM_ERR_EALREADY if another tasklet already waits for it */
#define CNM_ECALL_PERFCOUNTER_CONFIG 13 /* a0 = perfcounter_config_t, a1 = reset (0/1) -> a0/a1 = previous 64-bit counter value */
#define CNM_ECALL_PERFCOUNTER_GET 14    /* -> a0/a1 = 64-bit counter value (cycles or instructions, per the last config) */
#define CNM_ECALL_PRINTF 15             /* a0 = format string, a1 = va_list (riscv32 ilp32 va_start pointer to the variadic save area) */
#define CNM_ECALL_PUTS 16               /* a0 = NUL-terminated string; prints it followed by a newline (C puts) */
#define CNM_ECALL_PUTCHAR 17            /* a0 = character (low 8 bits) */
#define CNM_ECALL_LOCK 18               /* a0 = atomic-bit address; a spinning acquire: returns (a0 = 0) once this tasklet holds the bit */

/* ---- fault codes (argument of CNM_ECALL_FAULT; also used by the simulator) */
#define CNM_FAULT_HALT 1                /* halt() was called */
#define CNM_FAULT_HEAP_EXHAUSTED 2      /* mem_alloc (or seqread_alloc/fsb_alloc) ran past the end of WRAM */
#define CNM_FAULT_ASSERT 4              /* assert() failed (the message was printed with PUTS first) */
#define CNM_FAULT_ABORT 5               /* abort() was called */
#define CNM_FAULT_DMA 6                 /* invalid DMA: size, alignment or address range (runtime helpers or simulator) */
#define CNM_FAULT_MEMORY 7              /* load/store/fetch outside the mapped memories (simulator) */
#define CNM_FAULT_ILLEGAL 8             /* illegal instruction or unknown service number (simulator) */

/* ---- values returned by services ---------------------------------------- */
#define CNM_ERR_EALREADY 114            /* HANDSHAKE_WAIT_FOR: another tasklet already waits for this notifier (== EALREADY in errno.h) */


#endif /* _CNM_ECALL_H_ */
