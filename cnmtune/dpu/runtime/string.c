/*
 * string.c - memory and string functions of the DPU runtime.
 * memcpy/memset/memmove/memcmp are also called by compiler-generated code.
 * Word-at-a-time paths when the pointers allow it; no multiply/divide.
 */
#pragma clang section text = ".text.__sys"

#include <string.h>
#include <stdint.h>
#include <cnm_sys.h>

__CNM_SYS_TEXT(memcpy) void *memcpy(void *dest, const void *src, size_t n)
{
    uint8_t *d = dest;
    const uint8_t *s = src;
    if ((((uintptr_t)d | (uintptr_t)s) & 3) == 0) {
        while (n >= 4) {
            *(uint32_t *)d = *(const uint32_t *)s;
            d += 4;
            s += 4;
            n -= 4;
        }
    }
    while (n != 0) {
        *d++ = *s++;
        n--;
    }
    return dest;
}

__CNM_SYS_TEXT(memmove) void *memmove(void *dest, const void *src, size_t n)
{
    uint8_t *d = dest;
    const uint8_t *s = src;
    if (d == s || n == 0)
        return dest;
    if ((uintptr_t)d - (uintptr_t)s >= n) {
        /* d before s, or no overlap: copy forwards */
        return memcpy(dest, src, n);
    }
    /* d inside [s, s + n): copy backwards */
    d += n;
    s += n;
    if ((((uintptr_t)d | (uintptr_t)s) & 3) == 0) {
        while (n >= 4) {
            d -= 4;
            s -= 4;
            *(uint32_t *)d = *(const uint32_t *)s;
            n -= 4;
        }
    }
    while (n != 0) {
        *--d = *--s;
        n--;
    }
    return dest;
}

__CNM_SYS_TEXT(memset) void *memset(void *s, int c, size_t n)
{
    uint8_t *d = s;
    uint8_t byte = (uint8_t)c;
    while (n != 0 && ((uintptr_t)d & 3) != 0) {
        *d++ = byte;
        n--;
    }
    uint32_t word = byte;
    word |= word << 8;
    word |= word << 16;
    while (n >= 4) {
        *(uint32_t *)d = word;
        d += 4;
        n -= 4;
    }
    while (n != 0) {
        *d++ = byte;
        n--;
    }
    return s;
}

__CNM_SYS_TEXT(memcmp) int memcmp(const void *s1, const void *s2, size_t n)
{
    const uint8_t *a = s1, *b = s2;
    for (; n != 0; n--, a++, b++) {
        if (*a != *b)
            return (int)*a - (int)*b;
    }
    return 0;
}

__CNM_SYS_TEXT(memchr) void *memchr(const void *s, int c, size_t n)
{
    const uint8_t *p = s;
    for (; n != 0; n--, p++) {
        if (*p == (uint8_t)c)
            return (void *)p;
    }
    return 0;
}

__CNM_SYS_TEXT(strlen) size_t strlen(const char *s)
{
    const char *p = s;
    while (*p != 0)
        p++;
    return (size_t)(p - s);
}

__CNM_SYS_TEXT(strnlen) size_t strnlen(const char *s, size_t maxlen)
{
    size_t n = 0;
    while (n < maxlen && s[n] != 0)
        n++;
    return n;
}

__CNM_SYS_TEXT(strcmp) int strcmp(const char *s1, const char *s2)
{
    const uint8_t *a = (const uint8_t *)s1, *b = (const uint8_t *)s2;
    while (*a != 0 && *a == *b) {
        a++;
        b++;
    }
    return (int)*a - (int)*b;
}

__CNM_SYS_TEXT(strncmp) int strncmp(const char *s1, const char *s2, size_t n)
{
    const uint8_t *a = (const uint8_t *)s1, *b = (const uint8_t *)s2;
    for (; n != 0; n--, a++, b++) {
        if (*a != *b)
            return (int)*a - (int)*b;
        if (*a == 0)
            return 0;
    }
    return 0;
}

__CNM_SYS_TEXT(strcpy) char *strcpy(char *dest, const char *src)
{
    char *d = dest;
    while ((*d++ = *src++) != 0) {
    }
    return dest;
}

__CNM_SYS_TEXT(strncpy) char *strncpy(char *dest, const char *src, size_t n)
{
    size_t i = 0;
    for (; i < n && src[i] != 0; i++)
        dest[i] = src[i];
    for (; i < n; i++)
        dest[i] = 0;
    return dest;
}

__CNM_SYS_TEXT(strcat) char *strcat(char *dest, const char *src)
{
    strcpy(dest + strlen(dest), src);
    return dest;
}

__CNM_SYS_TEXT(strncat) char *strncat(char *dest, const char *src, size_t n)
{
    char *d = dest + strlen(dest);
    for (; n != 0 && *src != 0; n--)
        *d++ = *src++;
    *d = 0;
    return dest;
}

__CNM_SYS_TEXT(strchr) char *strchr(const char *s, int c)
{
    for (;; s++) {
        if (*s == (char)c)
            return (char *)s;
        if (*s == 0)
            return 0;
    }
}

__CNM_SYS_TEXT(strrchr) char *strrchr(const char *s, int c)
{
    const char *last = 0;
    for (;; s++) {
        if (*s == (char)c)
            last = s;
        if (*s == 0)
            return (char *)last;
    }
}

__CNM_SYS_TEXT(strstr) char *strstr(const char *haystack, const char *needle)
{
    if (*needle == 0)
        return (char *)haystack;
    for (; *haystack != 0; haystack++) {
        const char *h = haystack, *n = needle;
        while (*n != 0 && *h == *n) {
            h++;
            n++;
        }
        if (*n == 0)
            return (char *)haystack;
    }
    return 0;
}
