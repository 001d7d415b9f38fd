/*
 * stdlib.h - DPU C library subset (no malloc: use mem_alloc from alloc.h).
 */
#ifndef _DPUSYSCORE_STDLIB_H_
#define _DPUSYSCORE_STDLIB_H_

#include <stddef.h>

#define EXIT_SUCCESS 0
#define EXIT_FAILURE 1

/* Absolute value of an int. */
static inline int abs(int x)
{
    return x < 0 ? -x : x;
}

/* Absolute value of a long. */
static inline long labs(long x)
{
    return x < 0 ? -x : x;
}

/* Absolute value of a long long. */
static inline long long llabs(long long x)
{
    return x < 0 ? -x : x;
}

/* Parses a decimal int (leading spaces, optional sign). */
int atoi(const char *s);

/* Parses a decimal long (leading spaces, optional sign). */
long atol(const char *s);

/* Parses a long in base 2..36 (0 = auto: 0x hex, 0 octal, else decimal); *end (if given) gets the first unparsed character. */
long strtol(const char *s, char **end, int base);

/* Parses an unsigned long like strtol. */
unsigned long strtoul(const char *s, char **end, int base);

/* Stops the whole DPU with an ABORT fault (CNM_FAULT_ABORT). */
void abort(void) __attribute__((noreturn));

#endif /* _DPUSYSCORE_STDLIB_H_ */
