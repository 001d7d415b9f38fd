/* BFS on a DPU: one level of a level-synchronous top-down BFS over frontier bitmaps per launch.
 *
 * MRAM heap layout: a bfs_params_t at offset 0, then (offsets in it) the DPU's node pointers,
 * neighbour lists, node levels, and the visited, current-frontier and next-frontier bitmaps.
 * On entry the next-frontier bitmap holds the union (made by the host) of every DPU's new
 * frontier, i.e. the nodes of level `level`.
 *   Phase 1: tasklets take the 64-node tiles of all nodes round-robin. A tile's next-frontier
 *     word is ORed into visited and cleared; if the tile is this DPU's, it becomes the
 *     current-frontier word and every node in it gets level `level`.
 *   Barrier.
 *   Phase 2: every tasklet takes a contiguous range of this DPU's nodes; for each node in the
 *     current frontier it walks the neighbour list and sets, under one mutex (read-modify-write
 *     of a bitmap word), the next-frontier bit of every neighbour not visited yet.
 * Every tasklet reads the parameters (as PrIM); a DPU without nodes does nothing. Every MRAM
 * access is its own 8-byte DMA (the load/store helpers below). */
#include <alloc.h>
#include <barrier.h>
#include <defs.h>
#include <mram.h>
#include <mutex.h>
#include <stdint.h>

#include "common.h"

BARRIER_INIT(bfs_barrier, NR_TASKLETS);
MUTEX_INIT(next_mutex);

static inline void lock_next(void) {
    mutex_lock(next_mutex);
}

/* 8-byte DMA helpers; buf is the caller's 8-byte WRAM word. */
static uint32_t load4(uint32_t addr, uint64_t *buf) {
    mram_read((__mram_ptr void const *)(addr & ~7u), buf, 8);
    return ((uint32_t *)buf)[(addr >> 2) & 1];
}

static uint64_t load8(uint32_t addr, uint64_t *buf) {
    mram_read((__mram_ptr void const *)addr, buf, 8);
    return *buf;
}

static void store4(uint32_t addr, uint32_t value, uint64_t *buf) {
    mram_read((__mram_ptr void const *)(addr & ~7u), buf, 8);
    ((uint32_t *)buf)[(addr >> 2) & 1] = value;
    mram_write(buf, (__mram_ptr void *)(addr & ~7u), 8);
}

static void store8(uint32_t addr, uint64_t value, uint64_t *buf) {
    *buf = value;
    mram_write(buf, (__mram_ptr void *)addr, 8);
}

int main(void) {
    const unsigned int tasklet = me();
    const uint32_t heap = (uint32_t)DPU_MRAM_HEAP_POINTER;
    if (tasklet == 0)
        mem_reset(); /* WRAM heap survives launches: start each one from empty */
    barrier_wait(&bfs_barrier);

    /* as PrIM: every tasklet reads the parameters into its own WRAM copy */
    bfs_params_t *params = (bfs_params_t *)mem_alloc(sizeof(bfs_params_t));
    mram_read((__mram_ptr void const *)heap, params, sizeof(bfs_params_t));
    const uint32_t local_nodes = params->num_local_nodes;
    if (local_nodes == 0)
        return 0; /* a DPU without nodes does nothing, as PrIM */
    uint64_t *word = (uint64_t *)mem_alloc(sizeof(uint64_t));

    const uint32_t level = params->level;
    const uint32_t start_tile = params->start_node >> 6;
    const uint32_t local_tiles = local_nodes >> 6;
    const uint32_t node_ptrs = heap + params->node_ptrs_offset;
    const uint32_t edges = heap + params->edges_offset;
    const uint32_t levels = heap + params->levels_offset;
    const uint32_t visited = heap + params->visited_offset;
    const uint32_t current = heap + params->current_offset;
    const uint32_t next = heap + params->next_offset;

    /* phase 1: next -> visited and current frontier, levels */
    for (uint32_t tile = tasklet; tile < (params->num_nodes >> 6); tile += NR_TASKLETS) {
        const uint64_t frontier = load8(next + (tile << 3), word);
        if (frontier) {
            store8(visited + (tile << 3), load8(visited + (tile << 3), word) | frontier, word);
            store8(next + (tile << 3), 0, word);
        }
        if (tile - start_tile < local_tiles) { /* this DPU's tile */
            const uint32_t local = tile - start_tile;
            store8(current + (local << 3), frontier, word);
            for (uint32_t bit = 0; bit < 64; bit++)
                if ((frontier >> bit) & 1)
                    store4(levels + (((local << 6) + bit) << 2), level, word);
        }
    }
    barrier_wait(&bfs_barrier);

    /* phase 2: expand this tasklet's part of the current frontier */
    const uint32_t per_tasklet = (local_nodes + NR_TASKLETS - 1) / NR_TASKLETS;
    const uint32_t first = tasklet * per_tasklet;
    const uint32_t last = (first + per_tasklet < local_nodes) ? first + per_tasklet : local_nodes;
    for (uint32_t node = first; node < last; node++) {
        if (!((load8(current + ((node >> 6) << 3), word) >> (node & 63)) & 1))
            continue;
        const uint32_t begin = load4(node_ptrs + (node << 2), word);
        const uint32_t end = load4(node_ptrs + ((node + 1) << 2), word);
        for (uint32_t e = begin; e < end; e++) {
            const uint32_t neighbour = load4(edges + (e << 2), word);
            const uint32_t at = (neighbour >> 6) << 3;
            const uint64_t bit = (uint64_t)1 << (neighbour & 63);
            if (!(load8(visited + at, word) & bit)) {
                lock_next();
                store8(next + at, load8(next + at, word) | bit, word);
                mutex_unlock(next_mutex);
            }
        }
    }
    return 0;
}
