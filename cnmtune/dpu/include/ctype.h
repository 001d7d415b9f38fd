/*
 * ctype.h - character classification for the "C" locale (ASCII), inline.
 */
#ifndef _DPUSYSCORE_CTYPE_H_
#define _DPUSYSCORE_CTYPE_H_

/* Decimal digit. */
static inline int isdigit(int c) { return (unsigned)c - '0' < 10; }
/* Upper-case letter. */
static inline int isupper(int c) { return (unsigned)c - 'A' < 26; }
/* Lower-case letter. */
static inline int islower(int c) { return (unsigned)c - 'a' < 26; }
/* Letter. */
static inline int isalpha(int c) { return ((unsigned)c | 32) - 'a' < 26; }
/* Letter or digit. */
static inline int isalnum(int c) { return isalpha(c) || isdigit(c); }
/* Hexadecimal digit. */
static inline int isxdigit(int c) { return isdigit(c) || ((unsigned)c | 32) - 'a' < 6; }
/* White space: space, \t \n \v \f \r. */
static inline int isspace(int c) { return c == ' ' || (unsigned)c - '\t' < 5; }
/* Space or tab. */
static inline int isblank(int c) { return c == ' ' || c == '\t'; }
/* Control character. */
static inline int iscntrl(int c) { return (unsigned)c < 0x20 || c == 0x7f; }
/* Printable, including space. */
static inline int isprint(int c) { return (unsigned)c - 0x20 < 0x5f; }
/* Printable, excluding space. */
static inline int isgraph(int c) { return (unsigned)c - 0x21 < 0x5e; }
/* Punctuation. */
static inline int ispunct(int c) { return isgraph(c) && !isalnum(c); }
/* Upper-case version of c. */
static inline int toupper(int c) { return islower(c) ? c - 32 : c; }
/* Lower-case version of c. */
static inline int tolower(int c) { return isupper(c) ? c + 32 : c; }

#endif /* _DPUSYSCORE_CTYPE_H_ */
