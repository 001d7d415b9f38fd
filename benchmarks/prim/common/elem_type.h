/* PrIM's element type, chosen by a bare define: -DINT32, -DUINT32, -DINT64, -DUINT64, -DFLOAT,
 * -DDOUBLE, -DCHAR or -DSHORT (the workloads pass exactly one: their "element type" flag
 * group). Without any, the including kernel's PRIM_DEFAULT_ELEM applies. Defines elem_t. */
#ifndef CNMTUNE_PRIM_ELEM_TYPE_H
#define CNMTUNE_PRIM_ELEM_TYPE_H

#include <stdint.h>

#if defined(INT32)
typedef int32_t elem_t;
#elif defined(UINT32)
typedef uint32_t elem_t;
#elif defined(INT64)
typedef int64_t elem_t;
#elif defined(UINT64)
typedef uint64_t elem_t;
#elif defined(FLOAT)
typedef float elem_t;
#elif defined(DOUBLE)
typedef double elem_t;
#elif defined(CHAR)
typedef int8_t elem_t;
#elif defined(SHORT)
typedef int16_t elem_t;
#elif defined(PRIM_DEFAULT_ELEM)
typedef PRIM_DEFAULT_ELEM elem_t;
#else
#error "define one element type: INT32, UINT32, INT64, UINT64, FLOAT, DOUBLE, CHAR or SHORT"
#endif

#endif
