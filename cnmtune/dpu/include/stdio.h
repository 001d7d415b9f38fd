/*
 * stdio.h - DPU console output (UPMEM-compatible subset).
 *
 * On the DPU printf serialises its arguments into an MRAM buffer that the host
 * formats after the launch.  On the proxy printf hands the format string and
 * its va_list to the simulator (CNM_ECALL_PRINTF), which formats and buffers
 * the text; no MRAM buffer is used.
 */
#ifndef _DPUSYSCORE_STDIO_H_
#define _DPUSYSCORE_STDIO_H_

#include <stdarg.h>
#include <stddef.h>

#ifndef EOF
#define EOF (-1)
#endif

/* Prints a formatted message (C printf conversions); returns 0. */
int printf(const char *format, ...) __attribute__((format(printf, 1, 2)));

/* Like printf with an explicit va_list; returns 0. */
int vprintf(const char *format, va_list args) __attribute__((format(printf, 1, 0)));

/* Prints string s and a newline; returns 0. */
int puts(const char *s);

/* Prints character c; returns c as an unsigned char. */
int putchar(int c);

/* Sets the size of the SDK's MRAM stdout buffer.  Accepted for compatibility
 * (size must be a multiple of 8); it has no effect on the proxy. */
#define STDOUT_BUFFER_INIT(size)                                                                           \
    _Static_assert((size) > 0 && ((size) & 7) == 0, "STDOUT_BUFFER_INIT: size must be a positive multiple of 8");

#endif /* _DPUSYSCORE_STDIO_H_ */
