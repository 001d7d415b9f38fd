/*
 * stdio.c - printf/puts/putchar: hand the text to the simulator (service calls).
 */
#pragma clang section text = ".text.__sys"

#include <stdio.h>
#include <stdarg.h>
#include <stdint.h>
#include <cnm_sys.h>

__CNM_SYS_TEXT(vprintf) int vprintf(const char *format, va_list args)
{
    (void)__cnm_ecall2(CNM_ECALL_PRINTF, (uint32_t)(uintptr_t)format, (uint32_t)(uintptr_t)args);
    return 0;
}

__CNM_SYS_TEXT(printf) int printf(const char *format, ...)
{
    va_list args;
    va_start(args, format);
    (void)__cnm_ecall2(CNM_ECALL_PRINTF, (uint32_t)(uintptr_t)format, (uint32_t)(uintptr_t)args);
    va_end(args);
    return 0;
}

__CNM_SYS_TEXT(puts) int puts(const char *s)
{
    (void)__cnm_ecall1(CNM_ECALL_PUTS, (uint32_t)(uintptr_t)s);
    return 0;
}

__CNM_SYS_TEXT(putchar) int putchar(int c)
{
    (void)__cnm_ecall1(CNM_ECALL_PUTCHAR, (uint32_t)(uint8_t)c);
    return (int)(uint8_t)c;
}
