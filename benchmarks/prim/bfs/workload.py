"""BFS: level-synchronous top-down breadth-first search from node 0 (PrIM), own implementation.

Output: the level of every node, 1-based (the source has level 1), 0 when unreachable.
Size = number of nodes. Parameters (constructor keywords, also in `params`):
- `graph`: path of an edge list: lines of 0-based "src dst" pairs (directed, as listed), with
  optional '#' or '%' comment lines and an optional PrIM header line "nodes cols edges". The
  graph is the subgraph induced by nodes 0..size-1 (nodes the file lacks are isolated).
  Default None: a seeded generator.
- `avg_degree` (default 10, about loc-gowalla's): the generated graph is an undirected
  power-law (Chung-Lu) graph, node weights (i+1)^(-2/3) (degree exponent 2.5), avg_degree x
  size / 2 sampled edges stored in both directions, self-loops and duplicates dropped, node
  ids shuffled except that the heaviest node is node 0 (the BFS source).

Compile time: no defines (PrIM has none; every access is an 8-byte DMA). The next-frontier
mutex is taken with mutex_lock, as PrIM. Every tasklet allocates and reads its copy of the
parameters and allocates its 8-byte DMA word, as PrIM.

Host side as PrIM: the node count is padded to a multiple of 64; every DPU owns an equal,
multiple-of-64 range of nodes (the last DPUs may own fewer or none). A host-side bump
allocator (8-byte rounding) places per DPU on the MRAM heap: the parameter struct (in MRAM,
48 bytes) at 0; its node pointers (rebased to its first edge); its neighbour lists; its node
levels; a visited bitmap over all nodes; a current-frontier bitmap over its own nodes; a
next-frontier bitmap over all nodes (initially node 0). All copies are serial copy_to /
copy_from. One launch per level: after each, the host pulls every DPU's next frontier, ORs
them, stops if the union is empty, else writes the union into every DPU's next-frontier
bitmap and rewrites every parameter struct with level + 1; finally it pulls the levels.

Inputs: PrIM reads an edge list (loc-gowalla in L2P, roadNet-CA upstream; not shipped): give
one with `graph`; the generated graph stands in for it. The DPU work is PrIM's: every tasklet
reads the parameters; a DPU without nodes does nothing; phase 1 touches visited and next only
for non-empty next-frontier words; every MRAM access is an 8-byte DMA; one global mutex.

Remaining differences from PrIM:
- the generated power-law graph replaces PrIM's file (degree ~10 as loc-gowalla, but another
  structure): the frontier sizes per level, so DPU time, differ from PrIM's runs on the file;
- bitmap bits use a true 64-bit shift (PrIM shifts a 32-bit int by up to 63, which is
  undefined and makes nodes of one tile alias), so the levels are exact BFS levels: PrIM's
  aliasing marks extra bits, which changes which nodes are expanded at which level (DPU time
  effect unknown, likely small);
- MRAM offsets are added to DPU_MRAM_HEAP_POINTER (PrIM uses heap offsets as raw MRAM
  addresses, relying on the DMA ignoring the high address bits): one add per address, none;
- node pointers are rebased on the host (each DPU's start at 0; PrIM subtracts an offset on
  the DPU): two subtractions per frontier node less, negligible.
- the host leaves DPUs without nodes out of the frontier union (PrIM ORs every DPU's bitmap,
  which re-adds the old frontier when a DPU has no nodes): host side only.
"""

from pathlib import Path
from typing import ClassVar

import numpy as np

from cnmtune.dpu.memory_map import MRAM_SIZE
from cnmtune.errors import KernelError
from cnmtune.runtime.device import DPU_MRAM_HEAP_POINTER_NAME
from cnmtune.runtime.workload import Workload

PARAMS_BYTES = 48
MAX_LEVELS = 1 << 20


def _round8(n: int) -> int:
    return n + (-n % 8)


def _bytes8(a: np.ndarray) -> bytes:
    raw = np.ascontiguousarray(a).tobytes()
    return raw + bytes(-len(raw) % 8)


def read_edge_list(path: str | Path) -> np.ndarray:
    """The (src, dst) pairs of an edge-list file, as an (E, 2) int64 array."""
    pairs, header_seen = [], False
    for line in Path(path).read_text().splitlines():
        fields = line.split()
        if not fields or fields[0].startswith(("#", "%")):
            continue
        if not header_seen and not pairs and len(fields) >= 3:
            header_seen = True  # PrIM's "nodes cols edges" line
            continue
        pairs.append((int(fields[0]), int(fields[1])))
    return np.array(pairs, np.int64).reshape(-1, 2)


#: BFS levels of a generated or read graph, by (size, seed, graph file, average degree)
_LEVELS: dict[tuple, int] = {}


class BreadthFirstSearch(Workload):
    name = "bfs"
    nr_tasklets = 16
    sizes = {"small": 128, "default": 65_536, "large": 196_608}
    params: ClassVar[dict[str, object]] = {"graph": None, "avg_degree": 10}

    def __init__(self, size, nr_dpus, nr_tasklets, defines=None, seed=0, graph=None, avg_degree=None):
        super().__init__(size, nr_dpus, nr_tasklets, defines, seed)
        self.graph = graph if graph is not None else self.params["graph"]
        self.avg_degree = float(self.params["avg_degree"] if avg_degree is None else avg_degree)
        if self.avg_degree <= 0:
            raise KernelError(f"{self.name}: avg_degree must be positive")

    # ------------------------------------------------------------ inputs
    def _edges(self) -> np.ndarray:
        n = self.size
        if self.graph is not None:
            e = read_edge_list(self.graph)
            return e[(e[:, 0] < n) & (e[:, 1] < n) & (e >= 0).all(axis=1)]
        rng = np.random.default_rng(self.seed)
        weights = np.arange(1, n + 1, dtype=np.float64) ** (-2.0 / 3.0)
        m = int(round(self.avg_degree * n / 2))
        ends = rng.choice(n, size=(m, 2), p=weights / weights.sum())
        perm = np.concatenate([[0], 1 + rng.permutation(n - 1)])  # node 0 (the heaviest) stays the source
        ends = perm[ends]
        ends = ends[ends[:, 0] != ends[:, 1]]
        return np.concatenate([ends, ends[:, ::-1]])

    def inputs(self):
        e = self._edges()
        keys = np.unique(e[:, 0] * self.size + e[:, 1])  # sorted by source, then destination
        src, dst = keys // self.size, keys % self.size
        node_ptrs = np.concatenate([[0], np.cumsum(np.bincount(src, minlength=self.size))]).astype(np.uint32)
        return {"node_ptrs": node_ptrs, "edges": dst.astype(np.uint32)}

    def reference(self, inputs):
        ptrs, edges = inputs["node_ptrs"].astype(np.int64), inputs["edges"].astype(np.int64)
        levels = np.zeros(self.size, np.uint32)
        levels[0] = 1
        frontier, level = np.array([0]), 1
        while frontier.size:
            level += 1
            nbrs = np.concatenate([edges[ptrs[v]:ptrs[v + 1]] for v in frontier]) if frontier.size else []
            nbrs = np.unique(nbrs).astype(np.int64)
            frontier = nbrs[levels[nbrs] == 0]
            levels[frontier] = level
        return {"levels": levels}

    def launch_count(self):
        """One launch per BFS level from node 0: the host stops when a launch finds no new node."""
        key = (self.size, self.seed, self.graph, self.avg_degree)
        if key not in _LEVELS:
            _LEVELS[key] = int(self.reference(self.inputs())["levels"].max())
        return _LEVELS[key]

    # ------------------------------------------------------------ host program
    def execute(self, device, inputs):
        ptrs, edges = inputs["node_ptrs"], inputs["edges"]
        n_pad = -(-self.size // 64) * 64
        ptrs = np.concatenate([ptrs, np.full(n_pad - self.size, ptrs[-1], np.uint32)])
        per_dpu = -(-(n_pad // 64) // self.nr_dpus) * 64
        bitmap_bytes = n_pad // 8
        layout = []
        for dpu in range(self.nr_dpus):
            start = min(dpu * per_dpu, n_pad)
            local = min(per_dpu, n_pad - start)
            lo, hi = int(ptrs[start]), int(ptrs[start + local])
            heap = PARAMS_BYTES
            offsets = []
            for nbytes in (4 * (local + 1), 4 * (hi - lo), 4 * local, bitmap_bytes, local // 8, bitmap_bytes):
                offsets.append(heap)
                heap += _round8(nbytes)
            if heap > MRAM_SIZE:
                raise KernelError(f"{self.name}: DPU {dpu}'s part of the graph does not fit in MRAM")
            node_ptrs_off, edges_off, levels_off, visited_off, current_off, next_off = offsets
            params = np.array([n_pad, start, local, 1, *offsets, 0, 0], np.uint32)
            device.copy_to(dpu, DPU_MRAM_HEAP_POINTER_NAME, params)
            device.copy_to(dpu, DPU_MRAM_HEAP_POINTER_NAME, _bytes8(ptrs[start:start + local + 1] - np.uint32(lo)),
                           node_ptrs_off)
            if hi > lo:
                device.copy_to(dpu, DPU_MRAM_HEAP_POINTER_NAME, _bytes8(edges[lo:hi]), edges_off)
            if local:
                device.copy_to(dpu, DPU_MRAM_HEAP_POINTER_NAME, np.zeros(local, np.uint32), levels_off)
                device.copy_to(dpu, DPU_MRAM_HEAP_POINTER_NAME, np.zeros(local // 64, np.uint64), current_off)
            device.copy_to(dpu, DPU_MRAM_HEAP_POINTER_NAME, np.zeros(n_pad // 64, np.uint64), visited_off)
            layout.append((start, local, params))
        frontier = np.zeros(n_pad // 64, np.uint64)
        frontier[0] = 1  # the source, node 0
        level = 1

        def hand_out_frontier() -> None:
            for dpu, (_, _, params) in enumerate(layout):
                device.copy_to(dpu, DPU_MRAM_HEAP_POINTER_NAME, frontier, int(params[9]))
                if level > 1:
                    params[3] = level
                    device.copy_to(dpu, DPU_MRAM_HEAP_POINTER_NAME, params)

        hand_out_frontier()
        while True:
            device.launch()
            with device.inter_dpu():  # PrIM's Inter-DPU step: gather the next frontier, hand it out
                frontier = np.zeros(n_pad // 64, np.uint64)
                for dpu, (_, local, params) in enumerate(layout):
                    if local:  # a DPU without nodes does not run, so its bitmap still holds the old frontier
                        raw = device.copy_from(dpu, DPU_MRAM_HEAP_POINTER_NAME, bitmap_bytes, int(params[9]))
                        frontier |= np.frombuffer(raw, np.uint64)
                if not frontier.any():
                    break
                level += 1
                if level > MAX_LEVELS:
                    raise KernelError(f"{self.name}: more than {MAX_LEVELS} levels")
                hand_out_frontier()
        levels = np.zeros(n_pad, np.uint32)
        for dpu, (start, local, params) in enumerate(layout):
            if local:
                raw = device.copy_from(dpu, DPU_MRAM_HEAP_POINTER_NAME, 4 * local, int(params[6]))
                levels[start:start + local] = np.frombuffer(raw, np.uint32)
        return {"levels": levels[: self.size]}
