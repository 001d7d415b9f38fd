/*
 * dpufault.h - DPU fault codes.
 *
 * A fault stops the whole DPU (all tasklets); the host sees the launch fail.
 * On the proxy a fault is the CNM_ECALL_FAULT service with one of the
 * CNM_FAULT_* codes from cnm_ecall.h; the UPMEM-style names map onto them.
 */
#ifndef _DPUSYSCORE_DPUFAULT_H_
#define _DPUSYSCORE_DPUFAULT_H_

#include <cnm_ecall.h>

#define __FAULT_HALT__ CNM_FAULT_HALT
#define __FAULT_ALLOC_HEAP_FULL__ CNM_FAULT_HEAP_EXHAUSTED
#define __FAULT_ASSERT_FAILED__ CNM_FAULT_ASSERT

#endif /* _DPUSYSCORE_DPUFAULT_H_ */
