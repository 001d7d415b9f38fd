/*
 * cnmtune's UPMEM host API: the SDK's dpu.h, as far as PrIM-style and common host programs use
 * it, with the SDK's names, types and signatures. Behind it is cnmtune's DPU simulator (one
 * resident simulator process per DPU set), so a host written for the SDK builds and runs
 * unmodified: `cc app.c $(dpu-pkg-config --cflags --libs dpu)`, with cnmtune's dpu-pkg-config.
 *
 * Times are simulated (see `cnmtune app run --help`): a report per launch and transfer on stderr
 * when a set is freed (CNMTUNE_REPORT=path adds a JSON file), and with CNMTUNE_HOST_CLOCK=simulated
 * the host's clock (gettimeofday, clock_gettime) reads simulated time inside DPU calls.
 */
#ifndef DPU_H
#define DPU_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <dpu_error.h>
#include <dpu_log.h>
#include <dpu_management.h>
#include <dpu_types.h>

typedef enum _dpu_launch_policy_t {
    DPU_ASYNCHRONOUS, /* return once booted; dpu_sync or dpu_status to wait */
    DPU_SYNCHRONOUS,  /* return when every DPU of the set has finished */
} dpu_launch_policy_t;

typedef enum _dpu_xfer_t {
    DPU_XFER_TO_DPU,
    DPU_XFER_FROM_DPU,
} dpu_xfer_t;

typedef enum _dpu_xfer_flags_t {
    DPU_XFER_DEFAULT = 0,        /* transfer, then forget the prepared buffers */
    DPU_XFER_NO_RESET = 1 << 0,  /* transfer, keep the prepared buffers */
    DPU_XFER_ASYNC = 1 << 1,     /* accepted; done at once on the simulator */
    DPU_XFER_PARALLEL = 1 << 2,  /* accepted; done at once on the simulator */
} dpu_xfer_flags_t;

/* Run `statement` (a call returning dpu_error_t); on an error print one line and run `on_error`. */
#define DPU_CHECK(statement, on_error)                                                                          \
    do {                                                                                                        \
        dpu_error_t _dpu_status = (statement);                                                                  \
        if (_dpu_status != DPU_OK) {                                                                            \
            char *_dpu_text = dpu_error_to_string(_dpu_status);                                                 \
            fprintf(stderr, "%s:%d(%s): DPU Error (%s)\n", __FILE__, __LINE__, __func__, _dpu_text);            \
            free(_dpu_text);                                                                                    \
            on_error;                                                                                           \
        }                                                                                                       \
    } while (0)

/* DPU_CHECK that ends the program on an error. */
#define DPU_ASSERT(statement) DPU_CHECK(statement, exit(EXIT_FAILURE))

/* Load the DPU program at `binary_path` into every DPU of the set (`program` may be NULL). */
dpu_error_t dpu_load(struct dpu_set_t dpu_set, const char *binary_path, struct dpu_program_t **program);

/* Boot every DPU of the set. */
dpu_error_t dpu_launch(struct dpu_set_t dpu_set, dpu_launch_policy_t policy);
/* Whether every DPU of the set has finished, and whether one is in fault. */
dpu_error_t dpu_status(struct dpu_set_t dpu_set, bool *done, bool *fault);
/* Wait until every DPU of the set has finished. */
dpu_error_t dpu_sync(struct dpu_set_t dpu_set);

/* Copy `length` bytes to/from `symbol_name + symbol_offset` (to every DPU of the set / from its one DPU). */
dpu_error_t dpu_copy_to(struct dpu_set_t dpu_set, const char *symbol_name, uint32_t symbol_offset, const void *src,
                        size_t length);
dpu_error_t dpu_copy_from(struct dpu_set_t dpu_set, const char *symbol_name, uint32_t symbol_offset, void *dst,
                          size_t length);

/* Give every DPU of the set a host buffer for the next dpu_push_xfer. */
dpu_error_t dpu_prepare_xfer(struct dpu_set_t dpu_set, void *buffer);
/* Parallel transfer of `length` bytes between each DPU's prepared buffer and `symbol_name + symbol_offset`. */
dpu_error_t dpu_push_xfer(struct dpu_set_t dpu_set, dpu_xfer_t xfer, const char *symbol_name, uint32_t symbol_offset,
                          size_t length, dpu_xfer_flags_t flags);
/* The same `length` bytes to every DPU of the set. */
dpu_error_t dpu_broadcast_to(struct dpu_set_t dpu_set, const char *symbol_name, uint32_t symbol_offset, const void *src,
                             size_t length, dpu_xfer_flags_t flags);

#endif /* DPU_H */
