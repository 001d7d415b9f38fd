/* ARITH microbenchmark: shared definitions of the host driver and the DPU kernel.
 *
 * The element type and the operation are PrIM-style bare defines: one of INT32 (default),
 * UINT32, INT64, UINT64, FLOAT, DOUBLE and one of ADD (default), SUB, MUL, DIV. Giving two
 * types or two operations is an error. BL is log2 of the MRAM<->WRAM block in bytes. */
#ifndef CNMTUNE_MICRO_ARITH_COMMON_H
#define CNMTUNE_MICRO_ARITH_COMMON_H

#include <stdint.h>

#if (defined(INT32) + defined(UINT32) + defined(INT64) + defined(UINT64) + defined(FLOAT) + defined(DOUBLE)) > 1
#error "arith: define at most one element type (INT32, UINT32, INT64, UINT64, FLOAT, DOUBLE)"
#endif
#if (defined(ADD) + defined(SUB) + defined(MUL) + defined(DIV)) > 1
#error "arith: define at most one operation (ADD, SUB, MUL, DIV)"
#endif

#if defined(UINT32)
typedef uint32_t elem_t;
#define SCALAR_FIELD u32
#elif defined(INT64)
typedef int64_t elem_t;
#define SCALAR_FIELD i64
#elif defined(UINT64)
typedef uint64_t elem_t;
#define SCALAR_FIELD u64
#elif defined(FLOAT)
typedef float elem_t;
#define SCALAR_FIELD f32
#elif defined(DOUBLE)
typedef double elem_t;
#define SCALAR_FIELD f64
#else
typedef int32_t elem_t;
#define SCALAR_FIELD i32
#endif

#if defined(SUB)
#define ARITH_APPLY(x, s) ((x) - (s))
#elif defined(MUL)
#define ARITH_APPLY(x, s) ((x) * (s))
#elif defined(DIV)
#define ARITH_APPLY(x, s) ((x) / (s))
#else
#define ARITH_APPLY(x, s) ((x) + (s))
#endif

#ifndef BL
#define BL 10
#endif
#define BLOCK_BYTES (1u << BL)

/* Written by the host before the launch (32 bytes, same layout on the 64-bit host and the
 * 32-bit DPU). The scalar's first sizeof(elem_t) bytes hold it in the element type. */
typedef struct {
    uint32_t size_bytes;     /* valid bytes of the vector on this DPU (a multiple of 8) */
    uint32_t transfer_bytes; /* bytes reserved for the vector in MRAM */
    uint32_t reserved[2];
    union {
        int32_t i32;
        uint32_t u32;
        int64_t i64;
        uint64_t u64;
        float f32;
        double f64;
    } scalar;
    uint64_t reserved2;
} arith_arguments_t;

/* One per tasklet, read by the host after the launch (16 bytes). */
typedef struct {
    uint64_t cycles;   /* perfcounter cycles spent in the timed compute loops (summed over blocks) */
    uint32_t elements; /* elements this tasklet processed */
    uint32_t blocks;   /* blocks this tasklet processed */
} arith_result_t;

#endif
