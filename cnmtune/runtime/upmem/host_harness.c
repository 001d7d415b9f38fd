/*
 * cnmtune's UPMEM host harness: the UPMEM host library (dpu.h) behind a pipe.
 *
 * cnmtune runs this program as a subprocess when the SDK's Python bindings are not importable.
 * It reads request frames on stdin and answers each with one response frame on stdout; the
 * protocol is documented in cnmtune/runtime/upmem/protocol.py (the Python side). Built once by
 * cnmtune with `cc -O2 -o harness host_harness.c $(dpu-pkg-config --cflags --libs dpu)`.
 *
 * Host API calls used (UPMEM SDK dpu.h): dpu_alloc, dpu_get_nr_dpus, DPU_FOREACH, dpu_load,
 * dpu_copy_to, dpu_copy_from, dpu_prepare_xfer, dpu_push_xfer, dpu_broadcast_to,
 * dpu_launch(DPU_SYNCHRONOUS), dpu_log_read, dpu_error_to_string, dpu_free.
 */
#define _POSIX_C_SOURCE 200809L /* open_memstream, clock_gettime */

#include <dpu.h>

#include "wire.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum { OP_ALLOC = 1, OP_LOAD, OP_COPY_TO, OP_COPY_FROM, OP_PUSH_TO, OP_PUSH_FROM, OP_BROADCAST,
       OP_LAUNCH, OP_LOG, OP_QUIT };
enum { STATUS_OK = 0, STATUS_ERROR = 1 };

static FILE *proto_in;
static FILE *proto_out;
static struct dpu_set_t dpu_set;
static struct dpu_set_t *dpus;
static uint32_t nr_dpus;
static int allocated;

static void send_frame(uint8_t status, const struct out *body)
{
    size_t n = 1 + (body ? body->len : 0);
    uint8_t head[5] = { (uint8_t)n, (uint8_t)(n >> 8), (uint8_t)(n >> 16), (uint8_t)(n >> 24), status };
    if (fwrite(head, 1, 5, proto_out) != 5 || (body && body->len && fwrite(body->buf, 1, body->len, proto_out) != body->len)
        || fflush(proto_out) != 0) {
        fprintf(stderr, "cnmtune harness: cannot write a response (the client went away)\n");
        exit(4);
    }
}

static void reply_ok(struct out *body)
{
    send_frame(STATUS_OK, body);
}

static void reply_error(const char *fmt, ...)
{
    char message[1024];
    va_list args;
    va_start(args, fmt);
    vsnprintf(message, sizeof message, fmt, args);
    va_end(args);
    struct out body = { 0 };
    put(&body, message, strlen(message));
    send_frame(STATUS_ERROR, &body);
    free(body.buf);
}

/* An SDK call that failed: the call, the symbol or path, and the SDK's own text. */
static void reply_sdk_error(const char *call, const char *what, dpu_error_t err)
{
    char *text = dpu_error_to_string(err);
    reply_error("%s(%s): %s", call, what ? what : "", text ? text : "unknown DPU error");
    free(text);
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int need_dpus(void)
{
    if (!allocated)
        reply_error("no DPUs allocated (ALLOC must come first)");
    return allocated;
}

static int need_dpu(uint32_t dpu)
{
    if (!need_dpus())
        return 0;
    if (dpu >= nr_dpus) {
        reply_error("DPU %u does not exist (%u allocated)", dpu, nr_dpus);
        return 0;
    }
    return 1;
}

/* ------------------------------------------------------------------ operations */

static void op_alloc(struct cursor *c)
{
    uint32_t n = get_u32(c);
    char *profile = get_text(c);
    if (c->bad) {
        reply_error("malformed ALLOC request");
    } else if (allocated) {
        reply_error("DPUs already allocated");
    } else {
        dpu_error_t err = dpu_alloc(n, profile[0] ? profile : NULL, &dpu_set);
        if (err != DPU_OK) {
            reply_sdk_error("dpu_alloc", profile, err);
        } else if ((err = dpu_get_nr_dpus(dpu_set, &nr_dpus)) != DPU_OK) {
            reply_sdk_error("dpu_get_nr_dpus", profile, err);
        } else {
            struct dpu_set_t dpu;
            uint32_t i;
            dpus = calloc(nr_dpus ? nr_dpus : 1, sizeof *dpus);
            DPU_FOREACH(dpu_set, dpu, i) { dpus[i] = dpu; }
            allocated = 1;
            struct out body = { 0 };
            put_u32(&body, nr_dpus);
            reply_ok(&body);
            free(body.buf);
        }
    }
    free(profile);
}

static void op_load(struct cursor *c)
{
    char *path = get_text(c);
    if (c->bad) {
        reply_error("malformed LOAD request");
    } else if (need_dpus()) {
        dpu_error_t err = dpu_load(dpu_set, path, NULL);
        if (err != DPU_OK)
            reply_sdk_error("dpu_load", path, err);
        else
            reply_ok(NULL);
    }
    free(path);
}

static void reply_ns(uint64_t ns, const uint8_t *data, size_t n)
{
    struct out body = { 0 };
    put_u64(&body, ns);
    if (n)
        put(&body, data, n);
    reply_ok(&body);
    free(body.buf);
}

static void op_copy_to(struct cursor *c)
{
    uint32_t dpu = get_u32(c);
    char *symbol = get_text(c);
    uint32_t offset = get_u32(c), len;
    const uint8_t *data = get_blob(c, &len);
    if (c->bad) {
        reply_error("malformed COPY_TO request");
    } else if (need_dpu(dpu)) {
        uint64_t t0 = now_ns();
        dpu_error_t err = dpu_copy_to(dpus[dpu], symbol, offset, data, len);
        uint64_t t1 = now_ns();
        if (err != DPU_OK)
            reply_sdk_error("dpu_copy_to", symbol, err);
        else
            reply_ns(t1 - t0, NULL, 0);
    }
    free(symbol);
}

static void op_copy_from(struct cursor *c)
{
    uint32_t dpu = get_u32(c);
    char *symbol = get_text(c);
    uint32_t offset = get_u32(c), len = get_u32(c);
    if (c->bad) {
        reply_error("malformed COPY_FROM request");
    } else if (need_dpu(dpu)) {
        uint8_t *buf = malloc(len ? len : 1);
        uint64_t t0 = now_ns();
        dpu_error_t err = dpu_copy_from(dpus[dpu], symbol, offset, buf, len);
        uint64_t t1 = now_ns();
        if (err != DPU_OK)
            reply_sdk_error("dpu_copy_from", symbol, err);
        else
            reply_ns(t1 - t0, buf, len);
        free(buf);
    }
    free(symbol);
}

/* dpu_prepare_xfer per DPU, then one dpu_push_xfer for the whole set. */
static dpu_error_t push(dpu_xfer_t direction, const char *symbol, uint32_t offset, uint8_t *buf, uint32_t size)
{
    struct dpu_set_t dpu;
    uint32_t i;
    dpu_error_t err = DPU_OK;
    DPU_FOREACH(dpu_set, dpu, i)
    {
        if (err == DPU_OK)
            err = dpu_prepare_xfer(dpu, buf + (size_t)i * size);
    }
    if (err != DPU_OK)
        return err;
    return dpu_push_xfer(dpu_set, direction, symbol, offset, size, DPU_XFER_DEFAULT);
}

static void op_push_to(struct cursor *c)
{
    char *symbol = get_text(c);
    uint32_t offset = get_u32(c), size = get_u32(c), count = get_u32(c);
    const uint8_t *data = take(c, (size_t)size * count);
    if (c->bad) {
        reply_error("malformed PUSH_TO request");
    } else if (need_dpus()) {
        if (count != nr_dpus) {
            reply_error("PUSH_TO carries %u buffers for %u DPUs", count, nr_dpus);
        } else {
            uint64_t t0 = now_ns();
            dpu_error_t err = push(DPU_XFER_TO_DPU, symbol, offset, (uint8_t *)data, size);
            uint64_t t1 = now_ns();
            if (err != DPU_OK)
                reply_sdk_error("dpu_push_xfer(DPU_XFER_TO_DPU)", symbol, err);
            else
                reply_ns(t1 - t0, NULL, 0);
        }
    }
    free(symbol);
}

static void op_push_from(struct cursor *c)
{
    char *symbol = get_text(c);
    uint32_t offset = get_u32(c), size = get_u32(c);
    if (c->bad) {
        reply_error("malformed PUSH_FROM request");
    } else if (need_dpus()) {
        size_t total = (size_t)size * nr_dpus;
        uint8_t *buf = malloc(total ? total : 1);
        uint64_t t0 = now_ns();
        dpu_error_t err = push(DPU_XFER_FROM_DPU, symbol, offset, buf, size);
        uint64_t t1 = now_ns();
        if (err != DPU_OK)
            reply_sdk_error("dpu_push_xfer(DPU_XFER_FROM_DPU)", symbol, err);
        else
            reply_ns(t1 - t0, buf, total);
        free(buf);
    }
    free(symbol);
}

static void op_broadcast(struct cursor *c)
{
    char *symbol = get_text(c);
    uint32_t offset = get_u32(c), len;
    const uint8_t *data = get_blob(c, &len);
    if (c->bad) {
        reply_error("malformed BROADCAST request");
    } else if (need_dpus()) {
        uint64_t t0 = now_ns();
        dpu_error_t err = dpu_broadcast_to(dpu_set, symbol, offset, data, len, DPU_XFER_DEFAULT);
        uint64_t t1 = now_ns();
        if (err != DPU_OK)
            reply_sdk_error("dpu_broadcast_to", symbol, err);
        else
            reply_ns(t1 - t0, NULL, 0);
    }
    free(symbol);
}

static void op_launch(struct cursor *c)
{
    char *symbol = get_text(c);
    if (c->bad) {
        reply_error("malformed LAUNCH request");
    } else if (need_dpus()) {
        /* PrIM's kernel time: host wall clock around the synchronous launch */
        uint64_t t0 = now_ns();
        dpu_error_t err = dpu_launch(dpu_set, DPU_SYNCHRONOUS);
        uint64_t t1 = now_ns();
        if (err != DPU_OK) {
            reply_sdk_error("dpu_launch", "DPU_SYNCHRONOUS", err);
        } else {
            uint8_t *counters = NULL;
            uint32_t k = 0;
            if (symbol[0]) {
                counters = calloc(nr_dpus ? nr_dpus : 1, 8);
                err = push(DPU_XFER_FROM_DPU, symbol, 0, counters, 8);
                k = nr_dpus;
            }
            if (err != DPU_OK) {
                reply_sdk_error("dpu_push_xfer(cycle counters)", symbol, err);
            } else {
                struct out body = { 0 };
                put_u64(&body, t1 - t0);
                put_u32(&body, k);
                if (k)
                    put(&body, counters, (size_t)k * 8); /* DPU words are little endian, as the host's */
                reply_ok(&body);
                free(body.buf);
            }
            free(counters);
        }
    }
    free(symbol);
}

static void op_log(struct cursor *c)
{
    uint32_t dpu = get_u32(c);
    if (c->bad) {
        reply_error("malformed LOG request");
        return;
    }
    if (!need_dpu(dpu))
        return;
    char *text = NULL;
    size_t size = 0;
    FILE *stream = open_memstream(&text, &size);
    if (!stream) {
        reply_error("open_memstream failed");
        return;
    }
    dpu_error_t err = dpu_log_read(dpus[dpu], stream);
    fclose(stream);
    if (err != DPU_OK) {
        reply_sdk_error("dpu_log_read", "", err);
    } else {
        struct out body = { 0 };
        put_u32(&body, (uint32_t)size);
        put(&body, text, size);
        reply_ok(&body);
        free(body.buf);
    }
    free(text);
}

static void release(void)
{
    if (allocated) {
        dpu_free(dpu_set);
        allocated = 0;
    }
    free(dpus);
    dpus = NULL;
}

/* ------------------------------------------------------------------ main loop */

int main(void)
{
    /* Keep the protocol stream private: anything the SDK prints to stdout goes to stderr. */
    int proto_fd = dup(STDOUT_FILENO);
    if (proto_fd < 0 || dup2(STDERR_FILENO, STDOUT_FILENO) < 0 || !(proto_out = fdopen(proto_fd, "wb"))) {
        perror("cnmtune harness: cannot set up the protocol stream");
        return 2;
    }
    proto_in = stdin;
    for (;;) {
        uint8_t head[4];
        size_t got = fread(head, 1, 4, proto_in);
        if (got == 0)
            break; /* the client closed the pipe: free the DPUs and leave */
        if (got != 4) {
            fprintf(stderr, "cnmtune harness: truncated frame header\n");
            break;
        }
        uint32_t len = (uint32_t)head[0] | (uint32_t)head[1] << 8 | (uint32_t)head[2] << 16 | (uint32_t)head[3] << 24;
        uint8_t *payload = malloc(len ? len : 1);
        if (!payload || fread(payload, 1, len, proto_in) != len) {
            fprintf(stderr, "cnmtune harness: truncated %u-byte frame\n", len);
            free(payload);
            break;
        }
        struct cursor c = { payload, len, 0 };
        const uint8_t *op = take(&c, 1);
        int quit = 0;
        switch (op ? *op : 0) {
        case OP_ALLOC: op_alloc(&c); break;
        case OP_LOAD: op_load(&c); break;
        case OP_COPY_TO: op_copy_to(&c); break;
        case OP_COPY_FROM: op_copy_from(&c); break;
        case OP_PUSH_TO: op_push_to(&c); break;
        case OP_PUSH_FROM: op_push_from(&c); break;
        case OP_BROADCAST: op_broadcast(&c); break;
        case OP_LAUNCH: op_launch(&c); break;
        case OP_LOG: op_log(&c); break;
        case OP_QUIT:
            release();
            reply_ok(NULL);
            quit = 1;
            break;
        default: reply_error("unknown opcode %u", op ? *op : 0); break;
        }
        free(payload);
        if (quit)
            return 0;
    }
    release();
    return 0;
}
