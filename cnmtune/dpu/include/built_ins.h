/*
 * built_ins.h - DPU instruction builtins.
 *
 * The UPMEM SDK generates one __builtin_<opcode>_<form> inline-asm wrapper per
 * DPU instruction form.  They have no meaning on cnmtune's RISC-V proxy, so
 * this header is deliberately empty: `#include <built_ins.h>` compiles, and a
 * kernel that calls a DPU builtin fails to compile with an undeclared-function
 * error naming it.  Use portable C instead (the proxy's multiply, divide and
 * float operations come from compiler-rt, like the DPU's runtime routines).
 */
#ifndef _DPUSYSCORE_BUILT_INS_H_
#define _DPUSYSCORE_BUILT_INS_H_
#endif /* _DPUSYSCORE_BUILT_INS_H_ */
