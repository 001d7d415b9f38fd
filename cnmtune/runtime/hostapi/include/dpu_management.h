/*
 * cnmtune's UPMEM host API (see dpu.h): allocating DPUs and walking a set.
 */
#ifndef DPU_MANAGEMENT_H
#define DPU_MANAGEMENT_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>

#include <dpu_error.h>
#include <dpu_types.h>

/* dpu_alloc / dpu_alloc_ranks: as many as there are (on cnmtune's simulator: CNMTUNE_NR_DPUS, one rank by default). */
#define DPU_ALLOCATE_ALL (UINT_MAX)

/* Allocate `nr_dpus` DPUs (a profile is "key=value,..." or NULL). */
dpu_error_t dpu_alloc(uint32_t nr_dpus, const char *profile, struct dpu_set_t *dpu_set);
/* Allocate `nr_ranks` whole ranks. */
dpu_error_t dpu_alloc_ranks(uint32_t nr_ranks, const char *profile, struct dpu_set_t *dpu_set);
/* Free a set dpu_alloc or dpu_alloc_ranks returned. */
dpu_error_t dpu_free(struct dpu_set_t dpu_set);
dpu_error_t dpu_get_nr_ranks(struct dpu_set_t dpu_set, uint32_t *nr_ranks);
dpu_error_t dpu_get_nr_dpus(struct dpu_set_t dpu_set, uint32_t *nr_dpus);

/* Iterators behind DPU_FOREACH and DPU_RANK_FOREACH (dpu.h); not for direct use. */
struct dpu_set_rank_iterator_t {
    struct dpu_set_t *set;
    uint32_t count;
    uint32_t next_idx;
    bool has_next;
    struct dpu_set_t next;
};

struct dpu_set_dpu_iterator_t {
    struct dpu_set_rank_iterator_t rank_iterator;
    uint32_t count;
    uint32_t next_idx;
    bool has_next;
    struct dpu_set_t next;
};

struct dpu_set_rank_iterator_t dpu_set_rank_iterator_from(struct dpu_set_t *set);
void dpu_set_rank_iterator_next(struct dpu_set_rank_iterator_t *iterator);
struct dpu_set_dpu_iterator_t dpu_set_dpu_iterator_from(struct dpu_set_t *set);
void dpu_set_dpu_iterator_next(struct dpu_set_dpu_iterator_t *iterator);

/* DPU_FOREACH(set, dpu) or DPU_FOREACH(set, dpu, index): every DPU of `set` as a one-DPU set. */
#define DPU_FOREACH(...) _DPU_PICK_3(__VA_ARGS__, _DPU_FOREACH_I, _DPU_FOREACH_X, _DPU_FOREACH_NEEDS_A_VARIABLE)(__VA_ARGS__)
/* DPU_RANK_FOREACH(set, rank) or DPU_RANK_FOREACH(set, rank, index): every rank of `set`. */
#define DPU_RANK_FOREACH(...) _DPU_PICK_3(__VA_ARGS__, _DPU_RANK_FOREACH_I, _DPU_RANK_FOREACH_X, _DPU_FOREACH_NEEDS_A_VARIABLE)(__VA_ARGS__)

#define _DPU_PICK_3(_1, _2, _3, chosen, ...) chosen
#define _DPU_FOREACH_X(set, dpu)                                                                                 \
    for (struct dpu_set_dpu_iterator_t _dpu_it = dpu_set_dpu_iterator_from(&(set));                            \
         (dpu) = _dpu_it.next, _dpu_it.has_next; dpu_set_dpu_iterator_next(&_dpu_it))
#define _DPU_FOREACH_I(set, dpu, i)                                                                              \
    for (struct dpu_set_dpu_iterator_t _dpu_it = dpu_set_dpu_iterator_from(&(set));                            \
         (i) = _dpu_it.count, (dpu) = _dpu_it.next, _dpu_it.has_next; dpu_set_dpu_iterator_next(&_dpu_it))
#define _DPU_RANK_FOREACH_X(set, rank)                                                                           \
    for (struct dpu_set_rank_iterator_t _rank_it = dpu_set_rank_iterator_from(&(set));                         \
         (rank) = _rank_it.next, _rank_it.has_next; dpu_set_rank_iterator_next(&_rank_it))
#define _DPU_RANK_FOREACH_I(set, rank, i)                                                                        \
    for (struct dpu_set_rank_iterator_t _rank_it = dpu_set_rank_iterator_from(&(set));                         \
         (i) = _rank_it.count, (rank) = _rank_it.next, _rank_it.has_next; dpu_set_rank_iterator_next(&_rank_it))

#endif /* DPU_MANAGEMENT_H */
