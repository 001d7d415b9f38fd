/*
 * defs.h - tasklet identity and basic control (UPMEM-compatible).
 *
 * NR_TASKLETS comes from the command line (-DNR_TASKLETS=n, 1..24); it
 * defaults to 1 like the UPMEM driver.  The linker receives the same value
 * as --defsym=NR_TASKLETS=n and sizes the stacks from it.
 */
#ifndef _DPUSYSCORE_DEFS_H_
#define _DPUSYSCORE_DEFS_H_

#include <sysdef.h>
#include <attributes.h>
#include <macro_utils.h>
#include <dpufault.h>

#ifndef NR_TASKLETS
#define NR_TASKLETS 1
#endif
#if NR_TASKLETS > 24
#error "NR_TASKLETS must not exceed 24 (DPU_NR_THREADS)"
#endif
#if NR_TASKLETS < 1
#error "NR_TASKLETS must be at least 1"
#endif

/* Returns the id of the calling tasklet (0..NR_TASKLETS-1). */
sysname_t me(void);

/* Deprecated alias of me(). */
sysname_t whoami(void);

/* Stops the whole DPU with a HALT fault. */
__attribute__((noreturn)) void halt(void);

/* Returns the number of 32-bit words left in the caller's stack; negative after an overflow. */
int check_stack(void);

#endif /* _DPUSYSCORE_DEFS_H_ */
