/* BFS: shared definitions of the host driver and the DPU kernel.
 *
 * The graph is CSR with uint32 node pointers and neighbour ids; node levels are uint32
 * (1-based, 0 = not reached); frontiers and the visited set are bitmaps of uint64 words, one
 * bit per node (bit n & 63 of word n >> 6). No BL: every MRAM access is one 8-byte DMA. */
#ifndef CNMTUNE_BFS_COMMON_H
#define CNMTUNE_BFS_COMMON_H

#include <stdint.h>

/* The per-DPU parameters, at offset 0 of the MRAM heap (not __host), rewritten by the host
 * before every launch; 48 bytes on both sides. Offsets are relative to the MRAM heap. */
typedef struct {
    uint32_t num_nodes;        /* all nodes, a multiple of 64 (the bitmaps' length in bits) */
    uint32_t start_node;       /* this DPU's first node, a multiple of 64 */
    uint32_t num_local_nodes;  /* this DPU's nodes, a multiple of 64 (may be 0) */
    uint32_t level;            /* the level of the frontier this launch expands (1-based) */
    uint32_t node_ptrs_offset; /* num_local_nodes + 1 uint32 indices into the neighbour lists */
    uint32_t edges_offset;     /* the neighbour ids of this DPU's nodes (uint32) */
    uint32_t levels_offset;    /* num_local_nodes uint32 levels */
    uint32_t visited_offset;   /* bitmap over all nodes */
    uint32_t current_offset;   /* frontier bitmap over this DPU's nodes */
    uint32_t next_offset;      /* next-frontier bitmap over all nodes */
    uint32_t reserved[2];
} bfs_params_t;

#endif
