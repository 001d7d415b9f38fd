/*
 * Field codecs of cnmtune's length-prefixed frames (little endian u32/u64, u32-length blobs), shared
 * by the C ends of its two pipes: the UPMEM host harness (host_harness.c, protocol.py) and the
 * simulator-backed host library (../hostapi/libdpu.c, ../hostapi/protocol.py).
 */
#ifndef CNMTUNE_WIRE_H
#define CNMTUNE_WIRE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A payload being read: fields are taken from the front; `bad` once one ran past the end. */
struct cursor {
    const uint8_t *p;
    size_t left;
    int bad;
};

static inline const uint8_t *take(struct cursor *c, size_t n)
{
    if (c->bad || n > c->left) {
        c->bad = 1;
        return NULL;
    }
    const uint8_t *at = c->p;
    c->p += n;
    c->left -= n;
    return at;
}

static inline uint32_t get_u32(struct cursor *c)
{
    const uint8_t *b = take(c, 4);
    return b ? (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24 : 0;
}

static inline uint64_t get_u64(struct cursor *c)
{
    uint64_t low = get_u32(c);
    return low | (uint64_t)get_u32(c) << 32;
}

static inline const uint8_t *get_blob(struct cursor *c, uint32_t *len)
{
    *len = get_u32(c);
    return take(c, *len);
}

/* A NUL-terminated copy of a str field (symbol names, paths, profiles); free() it. */
static inline char *get_text(struct cursor *c)
{
    uint32_t len;
    const uint8_t *b = get_blob(c, &len);
    char *text = malloc((size_t)len + 1);
    if (!text) {
        c->bad = 1;
        return NULL;
    }
    if (b)
        memcpy(text, b, len);
    text[b ? len : 0] = '\0';
    return text;
}

/* A payload being built. */
struct out {
    uint8_t *buf;
    size_t len, cap;
};

static inline void put(struct out *o, const void *data, size_t n)
{
    if (o->len + n > o->cap) {
        size_t cap = o->cap ? o->cap : 64;
        while (cap < o->len + n)
            cap *= 2;
        uint8_t *grown = realloc(o->buf, cap);
        if (!grown) {
            fprintf(stderr, "cnmtune: out of memory (%zu bytes for a message)\n", cap);
            exit(3);
        }
        o->buf = grown;
        o->cap = cap;
    }
    if (n)
        memcpy(o->buf + o->len, data, n);
    o->len += n;
}

static inline void put_u32(struct out *o, uint32_t v)
{
    uint8_t b[4] = { (uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24) };
    put(o, b, 4);
}

static inline void put_u64(struct out *o, uint64_t v)
{
    put_u32(o, (uint32_t)v);
    put_u32(o, (uint32_t)(v >> 32));
}

static inline void put_text(struct out *o, const char *text)
{
    size_t n = text ? strlen(text) : 0;
    put_u32(o, (uint32_t)n);
    put(o, text, n);
}

#endif /* CNMTUNE_WIRE_H */
