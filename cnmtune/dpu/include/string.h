/*
 * string.h - memory and string functions (implemented in the cnmtune DPU runtime).
 * The compiler also emits calls to memcpy/memset/memmove for struct copies.
 */
#ifndef _DPUSYSCORE_STRING_H_
#define _DPUSYSCORE_STRING_H_

#include <stddef.h>

/* Copies n bytes from src to dest (no overlap); returns dest. */
void *memcpy(void *dest, const void *src, size_t n);
/* Copies n bytes from src to dest (overlap allowed); returns dest. */
void *memmove(void *dest, const void *src, size_t n);
/* Fills n bytes of s with (unsigned char)c; returns s. */
void *memset(void *s, int c, size_t n);
/* Compares n bytes; returns <0, 0 or >0. */
int memcmp(const void *s1, const void *s2, size_t n);
/* Returns the first of n bytes of s equal to (unsigned char)c, or NULL. */
void *memchr(const void *s, int c, size_t n);
/* Returns the length of s. */
size_t strlen(const char *s);
/* Returns the length of s, at most maxlen. */
size_t strnlen(const char *s, size_t maxlen);
/* Compares two strings; returns <0, 0 or >0. */
int strcmp(const char *s1, const char *s2);
/* Compares at most n characters of two strings. */
int strncmp(const char *s1, const char *s2, size_t n);
/* Copies src (with its NUL) to dest; returns dest. */
char *strcpy(char *dest, const char *src);
/* Copies at most n characters of src to dest, padding with NULs; returns dest. */
char *strncpy(char *dest, const char *src, size_t n);
/* Appends src to dest; returns dest. */
char *strcat(char *dest, const char *src);
/* Appends at most n characters of src to dest, then a NUL; returns dest. */
char *strncat(char *dest, const char *src, size_t n);
/* Returns the first occurrence of (char)c in s (the NUL counts), or NULL. */
char *strchr(const char *s, int c);
/* Returns the last occurrence of (char)c in s (the NUL counts), or NULL. */
char *strrchr(const char *s, int c);
/* Returns the first occurrence of needle in haystack, or NULL. */
char *strstr(const char *haystack, const char *needle);

#endif /* _DPUSYSCORE_STRING_H_ */
