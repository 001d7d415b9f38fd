/* The element type of an example, chosen by its Makefile's TYPE as a bare define on both
 * compiles: -DINT32, -DUINT32 or -DINT64. Defines elem_t and ELEM_NAME (for messages). */
#ifndef EXAMPLES_ELEM_TYPE_H
#define EXAMPLES_ELEM_TYPE_H

#include <stdint.h>

#if defined(INT32)
typedef int32_t elem_t;
#define ELEM_NAME "int32"
#elif defined(UINT32)
typedef uint32_t elem_t;
#define ELEM_NAME "uint32"
#elif defined(INT64)
typedef int64_t elem_t;
#define ELEM_NAME "int64"
#else
#error "define the element type: -DINT32, -DUINT32 or -DINT64 (TYPE= in the Makefile)"
#endif

#endif
