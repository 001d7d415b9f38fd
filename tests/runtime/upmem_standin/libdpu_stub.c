/*
 * Stand-in for the UPMEM host library (tests only). Every DPU has named 64 KiB memories
 * created on first use; dpu_launch increments the u64 `launch_count` of every DPU and logs a
 * line; a profile with backend=hw fails to allocate (no hardware here); dpu_load fails for a
 * file that does not exist. Enough to exercise every request of cnmtune's host harness.
 */
#include <dpu.h>

#include <stdlib.h>
#include <string.h>

#define MAX_DPUS 64
#define MAX_SYMBOLS 16
#define MEMORY_BYTES 65536

struct memory {
    char name[64];
    uint8_t bytes[MEMORY_BYTES];
};

struct stub_dpu {
    struct memory *memories[MAX_SYMBOLS];
    void *prepared;
    char log[4096];
};

static struct stub_dpu stub_dpus[MAX_DPUS];
static uint32_t stub_nr;

struct dpu_set_t stub_dpu_of(struct dpu_set_t set, uint32_t i)
{
    struct dpu_set_t one = { set.first + i, 1 };
    return one;
}

static uint8_t *memory_of(uint32_t dpu, const char *name, uint32_t offset, size_t length)
{
    if (offset + length > MEMORY_BYTES)
        return NULL;
    for (int s = 0; s < MAX_SYMBOLS; s++) {
        struct memory *m = stub_dpus[dpu].memories[s];
        if (!m) {
            m = stub_dpus[dpu].memories[s] = calloc(1, sizeof *m);
            strncpy(m->name, name, sizeof m->name - 1);
        }
        if (!strcmp(m->name, name))
            return m->bytes + offset;
    }
    return NULL;
}

dpu_error_t dpu_alloc(uint32_t nr_dpus, const char *profile, struct dpu_set_t *dpu_set)
{
    if (profile && strstr(profile, "backend=hw"))
        return DPU_ERR_ALLOCATION;
    if (nr_dpus == 0 || nr_dpus > MAX_DPUS)
        return DPU_ERR_ALLOCATION;
    stub_nr = nr_dpus;
    dpu_set->first = 0;
    dpu_set->count = nr_dpus;
    return DPU_OK;
}

dpu_error_t dpu_free(struct dpu_set_t dpu_set)
{
    (void)dpu_set;
    stub_nr = 0;
    return DPU_OK;
}

dpu_error_t dpu_get_nr_dpus(struct dpu_set_t dpu_set, uint32_t *nr_dpus)
{
    *nr_dpus = dpu_set.count;
    return DPU_OK;
}

dpu_error_t dpu_load(struct dpu_set_t dpu_set, const char *binary_path, struct dpu_program_t **program)
{
    (void)dpu_set;
    (void)program;
    FILE *f = fopen(binary_path, "rb");
    if (!f)
        return DPU_ERR_ELF_INVALID_FILE;
    fclose(f);
    return DPU_OK;
}

dpu_error_t dpu_launch(struct dpu_set_t dpu_set, dpu_launch_policy_t policy)
{
    if (policy != DPU_SYNCHRONOUS)
        return DPU_ERR_INTERNAL;
    for (uint32_t i = 0; i < dpu_set.count; i++) {
        uint32_t d = dpu_set.first + i;
        uint64_t count;
        uint8_t *at = memory_of(d, "launch_count", 0, 8);
        memcpy(&count, at, 8);
        count++;
        memcpy(at, &count, 8);
        size_t used = strlen(stub_dpus[d].log);
        snprintf(stub_dpus[d].log + used, sizeof stub_dpus[d].log - used, "stub DPU %u: launch %llu\n", d,
                 (unsigned long long)count);
    }
    return DPU_OK;
}

dpu_error_t dpu_copy_to(struct dpu_set_t dpu_set, const char *symbol_name, uint32_t symbol_offset, const void *src,
                        size_t length)
{
    if (dpu_set.count != 1)
        return DPU_ERR_INTERNAL;
    uint8_t *at = memory_of(dpu_set.first, symbol_name, symbol_offset, length);
    if (!at)
        return DPU_ERR_INVALID_MEMORY_TRANSFER;
    memcpy(at, src, length);
    return DPU_OK;
}

dpu_error_t dpu_copy_from(struct dpu_set_t dpu_set, const char *symbol_name, uint32_t symbol_offset, void *dst,
                          size_t length)
{
    if (dpu_set.count != 1)
        return DPU_ERR_INTERNAL;
    uint8_t *at = memory_of(dpu_set.first, symbol_name, symbol_offset, length);
    if (!at)
        return DPU_ERR_INVALID_MEMORY_TRANSFER;
    memcpy(dst, at, length);
    return DPU_OK;
}

dpu_error_t dpu_prepare_xfer(struct dpu_set_t dpu_set, void *buffer)
{
    for (uint32_t i = 0; i < dpu_set.count; i++)
        stub_dpus[dpu_set.first + i].prepared = buffer;
    return DPU_OK;
}

dpu_error_t dpu_push_xfer(struct dpu_set_t dpu_set, dpu_xfer_t xfer, const char *symbol_name, uint32_t symbol_offset,
                          size_t length, dpu_xfer_flags_t flags)
{
    (void)flags;
    for (uint32_t i = 0; i < dpu_set.count; i++) {
        struct stub_dpu *dpu = &stub_dpus[dpu_set.first + i];
        uint8_t *at = memory_of(dpu_set.first + i, symbol_name, symbol_offset, length);
        if (!at || !dpu->prepared)
            return DPU_ERR_INVALID_MEMORY_TRANSFER;
        if (xfer == DPU_XFER_TO_DPU)
            memcpy(at, dpu->prepared, length);
        else
            memcpy(dpu->prepared, at, length);
        dpu->prepared = NULL;
    }
    return DPU_OK;
}

dpu_error_t dpu_broadcast_to(struct dpu_set_t dpu_set, const char *symbol_name, uint32_t symbol_offset,
                             const void *src, size_t length, dpu_xfer_flags_t flags)
{
    (void)flags;
    for (uint32_t i = 0; i < dpu_set.count; i++) {
        uint8_t *at = memory_of(dpu_set.first + i, symbol_name, symbol_offset, length);
        if (!at)
            return DPU_ERR_INVALID_MEMORY_TRANSFER;
        memcpy(at, src, length);
    }
    return DPU_OK;
}

dpu_error_t dpu_log_read(struct dpu_set_t set, FILE *stream)
{
    fputs(stub_dpus[set.first].log, stream);
    return DPU_OK;
}

char *dpu_error_to_string(dpu_error_t status)
{
    static const char *names[] = { "DPU_OK", "DPU_ERR_INTERNAL", "DPU_ERR_ALLOCATION: no DPU available (stub)",
                                   "DPU_ERR_ELF_INVALID_FILE: cannot open the ELF (stub)", "DPU_ERR_UNKNOWN_SYMBOL",
                                   "DPU_ERR_INVALID_MEMORY_TRANSFER: out of bounds (stub)" };
    return strdup(status <= DPU_ERR_INVALID_MEMORY_TRANSFER ? names[status] : "unknown");
}
