/*
 * Stand-in for the UPMEM SDK's dpu.h (tests only): the declarations cnmtune's host harness
 * uses, with the SDK 2025.1 signatures, and a simplified DPU_FOREACH (three-argument form).
 * Lets tests compile and run the real host_harness.c against libdpu_stub.c without an SDK.
 */
#ifndef CNMTUNE_STUB_DPU_H
#define CNMTUNE_STUB_DPU_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef enum {
    DPU_OK = 0,
    DPU_ERR_INTERNAL,
    DPU_ERR_ALLOCATION,
    DPU_ERR_ELF_INVALID_FILE,
    DPU_ERR_UNKNOWN_SYMBOL,
    DPU_ERR_INVALID_MEMORY_TRANSFER,
} dpu_error_t;

typedef enum { DPU_ASYNCHRONOUS, DPU_SYNCHRONOUS } dpu_launch_policy_t;
typedef enum { DPU_XFER_TO_DPU, DPU_XFER_FROM_DPU } dpu_xfer_t;
typedef enum { DPU_XFER_DEFAULT = 0, DPU_XFER_NO_RESET = 1 } dpu_xfer_flags_t;

struct dpu_program_t;
struct dpu_set_t {
    uint32_t first;
    uint32_t count;
};

struct dpu_set_t stub_dpu_of(struct dpu_set_t set, uint32_t i);
#define DPU_FOREACH(set, dpu, i) for ((i) = 0; (i) < (set).count && (((dpu) = stub_dpu_of((set), (i))), 1); (i)++)

dpu_error_t dpu_alloc(uint32_t nr_dpus, const char *profile, struct dpu_set_t *dpu_set);
dpu_error_t dpu_free(struct dpu_set_t dpu_set);
dpu_error_t dpu_get_nr_dpus(struct dpu_set_t dpu_set, uint32_t *nr_dpus);
dpu_error_t dpu_load(struct dpu_set_t dpu_set, const char *binary_path, struct dpu_program_t **program);
dpu_error_t dpu_launch(struct dpu_set_t dpu_set, dpu_launch_policy_t policy);
dpu_error_t dpu_copy_to(struct dpu_set_t dpu_set, const char *symbol_name, uint32_t symbol_offset, const void *src,
                        size_t length);
dpu_error_t dpu_copy_from(struct dpu_set_t dpu_set, const char *symbol_name, uint32_t symbol_offset, void *dst,
                          size_t length);
dpu_error_t dpu_prepare_xfer(struct dpu_set_t dpu_set, void *buffer);
dpu_error_t dpu_push_xfer(struct dpu_set_t dpu_set, dpu_xfer_t xfer, const char *symbol_name, uint32_t symbol_offset,
                          size_t length, dpu_xfer_flags_t flags);
dpu_error_t dpu_broadcast_to(struct dpu_set_t dpu_set, const char *symbol_name, uint32_t symbol_offset,
                             const void *src, size_t length, dpu_xfer_flags_t flags);
dpu_error_t dpu_log_read(struct dpu_set_t set, FILE *stream);
char *dpu_error_to_string(dpu_error_t status);

#endif
