/*
 * macro_utils.h - small preprocessor helpers (UPMEM-compatible names).
 */
#ifndef _DPUSYSCORE_MACRO_UTILS_H_
#define _DPUSYSCORE_MACRO_UTILS_H_

/* Stringifies x after macro expansion. */
#ifndef __STR
#define __STR_AGAIN(x) #x
#define __STR(x) __STR_AGAIN(x)
#endif

/* Pastes x and y after macro expansion. */
#ifndef __CONCAT
#define __CONCAT_AGAIN(x, y) x##y
#define __CONCAT(x, y) __CONCAT_AGAIN(x, y)
#endif

#endif /* _DPUSYSCORE_MACRO_UTILS_H_ */
