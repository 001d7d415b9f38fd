/* TRNS on a DPU: steps 2 and 3 of the in-place transposition of this DPU's strip.
 *
 * MRAM heap layout: the strip at offset 0, M_*m rows of n int64 (row-major, so tile k =
 * rows k*m .. k*m+m-1 is m*n contiguous elements); the done array (one byte per m-element
 * chunk, M_*n bytes, zeroed by the host) at offset M_*m*n*8.
 *
 * Step 2 (kernel 0): tasklet t transposes tiles t, t + NR_TASKLETS, ...: it reads the tile
 *   (in DMAs of at most 2048 bytes), moves element i to i*m - (m*n - 1)*(i / n) in a second
 *   buffer and writes it back. Tile k is then n chunks of m elements; chunk k*n + c holds
 *   column c of the tile.
 * Step 3 (kernel 1): chunk p must move to p*M_ - (M_*n - 1)*(p / n) (the transposition of an
 *   M_ x n matrix of chunks). The tasklets take start chunks from a shared counter under
 *   tile_mutex. From a start that is not a fixed point, a tasklet reads the chunk, then its
 *   done byte (under done_mutex; set means another tasklet already carries this data: skip),
 *   and follows the cycle: read the destination chunk, test-and-set its done byte under
 *   done_mutex, and if it was clear write the carried chunk there; then copy the chunk read
 *   into the carried one; a set byte ends the walk. Only the tasklet that sets a done byte
 *   writes that chunk, so every chunk read before its byte was seen clear is still the
 *   original. */
#include <alloc.h>
#include <barrier.h>
#include <defs.h>
#include <mram.h>
#include <mutex.h>
#include <stdint.h>

#include "common.h"

__host trns_arguments_t DPU_INPUT_ARGUMENTS;

BARRIER_INIT(trns_barrier, NR_TASKLETS);
MUTEX_INIT(tile_mutex);
MUTEX_INIT(done_mutex);

static uint32_t next_start; /* the shared counter of step 3 */

static void read_big(uint32_t from, void *to, uint32_t bytes) {
    for (uint32_t off = 0; off < bytes; off += TRNS_DMA_MAX) {
        const uint32_t size = bytes - off < TRNS_DMA_MAX ? bytes - off : TRNS_DMA_MAX;
        mram_read((__mram_ptr void const *)(from + off), (uint8_t *)to + off, size);
    }
}

static void write_big(const void *from, uint32_t to, uint32_t bytes) {
    for (uint32_t off = 0; off < bytes; off += TRNS_DMA_MAX) {
        const uint32_t size = bytes - off < TRNS_DMA_MAX ? bytes - off : TRNS_DMA_MAX;
        mram_write((const uint8_t *)from + off, (__mram_ptr void *)(to + off), size);
    }
}

static int step2(void) {
    const unsigned int tasklet = me();
    if (tasklet == 0)
        mem_reset(); /* the WRAM heap pointer survives launches */
    barrier_wait(&trns_barrier);

    const uint32_t m = DPU_INPUT_ARGUMENTS.m;
    const uint32_t n = DPU_INPUT_ARGUMENTS.n;
    const uint32_t tiles = DPU_INPUT_ARGUMENTS.M_;
    const uint32_t elems = m * n;
    const uint32_t tile_bytes = elems * sizeof(elem_t);
    const uint32_t heap = (uint32_t)DPU_MRAM_HEAP_POINTER;

    elem_t *src = (elem_t *)mem_alloc(tile_bytes);
    elem_t *dst = (elem_t *)mem_alloc(tile_bytes);

    for (uint32_t k = tasklet; k < tiles; k += NR_TASKLETS) {
        const uint32_t addr = heap + k * tile_bytes;
        read_big(addr, src, tile_bytes);
        for (uint32_t i = 0; i < elems; i++)
            dst[i * m - (elems - 1) * (i / n)] = src[i];
        write_big(dst, addr, tile_bytes);
    }
    return 0;
}

/* Reads (and with set, sets and writes back, as PrIM) the done byte of chunk p; returns its
 * previous value. */
static uint8_t done_test(uint32_t done_base, uint32_t p, uint8_t *word, int set) {
    const uint32_t addr = done_base + (p & ~7u);
    mutex_lock(done_mutex);
    mram_read((__mram_ptr void const *)addr, word, 8);
    const uint8_t was = word[p & 7];
    if (set) {
        word[p & 7] = 1;
        mram_write(word, (__mram_ptr void *)addr, 8);
    }
    mutex_unlock(done_mutex);
    return was;
}

static int step3(void) {
    const unsigned int tasklet = me();
    if (tasklet == 0) {
        mem_reset(); /* the WRAM heap pointer survives launches */
        next_start = 0;
    }
    barrier_wait(&trns_barrier);

    const uint32_t m = DPU_INPUT_ARGUMENTS.m;
    const uint32_t n = DPU_INPUT_ARGUMENTS.n;
    const uint32_t tiles = DPU_INPUT_ARGUMENTS.M_;
    const uint32_t chunks = tiles * n;
    const uint32_t chunk_bytes = m * sizeof(elem_t);
    const uint32_t heap = (uint32_t)DPU_MRAM_HEAP_POINTER;
    const uint32_t done_base = heap + chunks * chunk_bytes;

    elem_t *const carry = (elem_t *)mem_alloc(chunk_bytes);
    elem_t *const other = (elem_t *)mem_alloc(chunk_bytes);
    uint8_t *word = (uint8_t *)mem_alloc(8);

    for (;;) {
        mutex_lock(tile_mutex);
        const uint32_t start = next_start++;
        mutex_unlock(tile_mutex);
        if (start >= chunks)
            break;
        uint32_t next = start * tiles - (chunks - 1) * (start / n);
        if (next == start)
            continue; /* a fixed point */
        mram_read((__mram_ptr void const *)(heap + start * chunk_bytes), carry, chunk_bytes);
        uint8_t done = done_test(done_base, start, word, 0);
        while (!done) {
            mram_read((__mram_ptr void const *)(heap + next * chunk_bytes), other, chunk_bytes);
            done = done_test(done_base, next, word, 1);
            if (!done)
                mram_write(carry, (__mram_ptr void *)(heap + next * chunk_bytes), chunk_bytes);
            for (uint32_t i = 0; i < m; i++) /* carry the chunk just read (a copy, as PrIM) */
                carry[i] = other[i];
            next = next * tiles - (chunks - 1) * (next / n);
        }
    }
    return 0;
}

static int (*const kernels[TRNS_NR_KERNELS])(void) = {step2, step3};

int main(void) {
    return kernels[DPU_INPUT_ARGUMENTS.kernel]();
}
