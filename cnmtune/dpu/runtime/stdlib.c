/*
 * stdlib.c - errno, atoi/atol/strtol/strtoul, abort, and the assert failure handler.
 * Number parsing multiplies by the base with shifts and adds when the base
 * is 2, 8, 10 or 16; other bases use compiler-rt's __muldi3.
 */
#pragma clang section text = ".text.__sys"

#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <cnm_sys.h>

int errno;

/* value * base, exact in 64 bits; shifts and adds for the common bases (no multiply instruction). */
static inline __attribute__((always_inline)) uint64_t __cnm_mul_base(uint64_t value, unsigned int base)
{
    switch (base) {
    case 10:
        return (value << 3) + (value << 1);
    case 16:
        return value << 4;
    case 8:
        return value << 3;
    case 2:
        return value << 1;
    default:
        return value * base;
    }
}

/* Parses the magnitude at s in base (0 = auto); *negative gets the sign; *overflow is set when it does not fit. */
static __attribute__((noinline)) unsigned long __cnm_parse(const char *s, char **end, int base, int *negative,
                                                           int *overflow)
{
    const char *p = s;
    *negative = 0;
    *overflow = 0;
    while (isspace((unsigned char)*p))
        p++;
    if (*p == '+' || *p == '-')
        *negative = (*p++ == '-');
    if ((base == 0 || base == 16) && p[0] == '0' && (p[1] | 32) == 'x' && isxdigit((unsigned char)p[2])) {
        p += 2;
        base = 16;
    } else if (base == 0) {
        base = (p[0] == '0') ? 8 : 10;
    }
    unsigned long value = 0;
    const char *digits = p;
    if (base >= 2 && base <= 36) {
        for (;; p++) {
            unsigned int c = (unsigned char)*p, d;
            if (isdigit(c))
                d = c - '0';
            else if (isalpha(c))
                d = (c | 32) - 'a' + 10;
            else
                break;
            if (d >= (unsigned int)base)
                break;
            uint64_t next = __cnm_mul_base(value, (unsigned int)base) + d;
            if (next > ULONG_MAX)
                *overflow = 1;
            value = (unsigned long)next;
        }
    }
    if (end != 0)
        *end = (char *)(p == digits ? s : p);
    return value;
}

__CNM_SYS_TEXT(strtoul) __attribute__((noinline)) unsigned long strtoul(const char *s, char **end, int base)
{
    int negative, overflow;
    unsigned long value = __cnm_parse(s, end, base, &negative, &overflow);
    if (overflow) {
        errno = ERANGE;
        return ULONG_MAX;
    }
    return negative ? -value : value;
}

__CNM_SYS_TEXT(strtol) __attribute__((noinline)) long strtol(const char *s, char **end, int base)
{
    int negative, overflow;
    unsigned long value = __cnm_parse(s, end, base, &negative, &overflow);
    unsigned long limit = negative ? (unsigned long)LONG_MAX + 1 : (unsigned long)LONG_MAX;
    if (overflow || value > limit) {
        errno = ERANGE;
        return negative ? LONG_MIN : LONG_MAX;
    }
    return negative ? (long)(0 - value) : (long)value;
}

__CNM_SYS_TEXT(atol) long atol(const char *s)
{
    return strtol(s, 0, 10);
}

__CNM_SYS_TEXT(atoi) int atoi(const char *s)
{
    return (int)strtol(s, 0, 10);
}

__CNM_SYS_TEXT(__cnm_assert_fail) void __cnm_assert_fail(const char *msg)
{
    puts(msg);
    __cnm_fault(CNM_FAULT_ASSERT);
}

__CNM_SYS_TEXT(abort) void abort(void)
{
    __cnm_fault(CNM_FAULT_ABORT);
}
