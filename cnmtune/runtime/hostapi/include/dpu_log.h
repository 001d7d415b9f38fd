/*
 * cnmtune's UPMEM host API (see dpu.h): what DPUs printed.
 */
#ifndef DPU_LOG_H
#define DPU_LOG_H

#include <stdio.h>

#include <dpu_error.h>
#include <dpu_types.h>

/* Write what the DPUs of `set` printed (printf, puts) during the last launch to `stream`. */
dpu_error_t dpu_log_read(struct dpu_set_t set, FILE *stream);

#endif /* DPU_LOG_H */
