/*
 * cnmtune's UPMEM host API (see dpu.h): the types a host program handles. `struct dpu_set_t` has
 * the SDK's shape (a kind, then a list of ranks or one DPU); what its pointers point to is
 * cnmtune's own and opaque.
 */
#ifndef DPU_TYPES_H
#define DPU_TYPES_H

#include <stdint.h>

/* Name of the symbol at the start of the MRAM a program leaves free (the MRAM heap). */
#define DPU_MRAM_HEAP_POINTER_NAME "__sys_used_mram_end"

typedef uint32_t dpu_id_t;
typedef uint16_t dpu_rank_id_t;
typedef uint32_t wram_addr_t;
typedef uint32_t mram_addr_t;
typedef uint32_t wram_size_t;
typedef uint32_t mram_size_t;
typedef mram_addr_t dpu_mem_max_addr_t;
typedef mram_size_t dpu_mem_max_size_t;

struct dpu_rank_t;
struct dpu_t;
struct dpu_program_t;

typedef enum _dpu_set_kind_t {
    DPU_SET_RANKS, /* a set of ranks (what dpu_alloc returns, and one rank in DPU_RANK_FOREACH) */
    DPU_SET_DPU,   /* one DPU (DPU_FOREACH) */
} dpu_set_kind_t;

struct dpu_set_t {
    dpu_set_kind_t kind;
    union {
        struct {
            uint32_t nr_ranks;
            struct dpu_rank_t **ranks;
        } list;
        struct dpu_t *dpu;
    };
};

#endif /* DPU_TYPES_H */
