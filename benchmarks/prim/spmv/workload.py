"""SpMV: sparse matrix-vector multiply y = A x, CSR, float (PrIM), cnmtune's own implementation.

Size = rows of A. Parameters (constructor keywords, also in `params`):
- `matrix`: path of a Matrix Market file (coordinate; real, integer or pattern; general,
  symmetric or skew-symmetric) or of PrIM's own format (a "rows cols nnz" line, then 1-based
  "row col [value]" lines). Pattern entries get the value 1.0, as in PrIM. The file's rows are
  stacked (cycled) or cut to `size` rows, as PrIM's replicate tool stacks copies of the rows.
  Default None: a seeded generator, standing in for PrIM's bcsstk30 (not shipped).
- `nnz_per_row` (default 36, about bcsstk30's: 1,036,208 stored entries over 28,924 rows, the
  default size) and `bandwidth` (default 32) shape the generated matrix: square, each row has
  about nnz_per_row nonzeros, half inside a band of half-width `bandwidth` around the
  diagonal and half at uniformly random columns (duplicates merged).
Values as PrIM: every generated value and every element of x is 1.0 (a file's values are
used as given). The reference repeats the DPU's float32 operations in the same order (one
rounded multiply and one rounded add per nonzero, in column order), so it is exact.

No compile-time define (PrIM has none: x and y tiles are 64 floats, seqread caches 256 B).
WRAM per tasklet: 1 KiB stack + two 512-byte seqread windows + two 256-byte tiles + 32 bytes.

Host side as PrIM: an odd row count is padded by one empty row; rows per DPU = ceil(rows /
DPUs) rounded up to even (the last DPUs may get fewer or none). A host-side bump allocator
(8-byte rounding) places, per DPU, on the MRAM heap: the parameter struct (in MRAM, 32 bytes:
nr_rows, first_rowptr, and the offsets of rowptr, nonzeros, x, y) at 0; the DPU's nr_rows + 1
row pointers (global values, rebased on the DPU with first_rowptr); its nonzeros as 8-byte
(uint32 column, float value) pairs; the whole x (padded to 64-float tiles); then y. Every
transfer is a serial copy_to / copy_from, sizes rounded up to 8 bytes. The DPU work is
PrIM's (dpu/task.c).

Remaining differences from PrIM:
- the generated matrix replaces bcsstk30: same row count and density at the default size,
  but half of each row's columns are random where bcsstk30's lie in its finite-element
  profile, so x tiles are re-read more often (one 256-byte DMA per switch between tiles):
  DPU time likely above PrIM's on the real file;
- a DPU or tasklet with no rows does nothing (PrIM's row arithmetic assumes rows); no DPU
  printf on an odd row count (the host never makes one): none on DPU time.
"""

from pathlib import Path
from typing import ClassVar

import numpy as np

from cnmtune.dpu.memory_map import MRAM_SIZE
from cnmtune.errors import KernelError
from cnmtune.runtime.device import DPU_MRAM_HEAP_POINTER_NAME
from cnmtune.runtime.workload import Workload

TILE = 64
PARAMS_BYTES = 32


def _round8(n: int) -> int:
    return n + (-n % 8)


def read_matrix(path: str | Path) -> tuple[int, int, np.ndarray, np.ndarray, np.ndarray]:
    """(rows, cols, row, col, value) of a Matrix Market or PrIM-format file; 0-based indices."""
    lines = Path(path).read_text().splitlines()
    symmetry = "general"
    if lines and lines[0].startswith("%%MatrixMarket"):
        words = lines[0].lower().split()
        if "coordinate" not in words:
            raise KernelError(f"spmv: {path}: only coordinate Matrix Market files are supported")
        symmetry = words[-1]
    body = [ln for ln in lines if ln.strip() and not ln.lstrip().startswith(("%", "#"))]
    if not body:
        raise KernelError(f"spmv: {path}: no size line")
    rows, cols, _ = (int(v) for v in body[0].split()[:3])
    entries = [ln.split() for ln in body[1:]]
    r = np.array([int(e[0]) - 1 for e in entries], np.int64)
    c = np.array([int(e[1]) - 1 for e in entries], np.int64)
    v = np.array([float(e[2]) if len(e) > 2 else 1.0 for e in entries], np.float32)
    if symmetry in ("symmetric", "skew-symmetric", "hermitian"):
        off = r != c
        sign = -1.0 if symmetry == "skew-symmetric" else 1.0
        r, c, v = (np.concatenate([r, c[off]]), np.concatenate([c, r[off]]),
                   np.concatenate([v, (sign * v[off]).astype(np.float32)]))
    if r.size and (r.min() < 0 or c.min() < 0 or r.max() >= rows or c.max() >= cols):
        raise KernelError(f"spmv: {path}: an entry lies outside the {rows} x {cols} matrix")
    return rows, cols, r, c, v


class SparseMatVec(Workload):
    name = "spmv"
    defines = {}
    define_choices = {}
    nr_tasklets = 16
    sizes = {"small": 512, "default": 28_924, "large": 131_072}
    params: ClassVar[dict[str, object]] = {"matrix": None, "nnz_per_row": 36, "bandwidth": 32}

    def __init__(self, size, nr_dpus, nr_tasklets, defines=None, seed=0, matrix=None, nnz_per_row=None,
                 bandwidth=None):
        super().__init__(size, nr_dpus, nr_tasklets, defines, seed)
        self.matrix = matrix if matrix is not None else self.params["matrix"]
        self.nnz_per_row = int(self.params["nnz_per_row"] if nnz_per_row is None else nnz_per_row)
        self.bandwidth = int(self.params["bandwidth"] if bandwidth is None else bandwidth)
        if self.nnz_per_row < 1 or self.bandwidth < 0:
            raise KernelError(f"{self.name}: nnz_per_row must be positive and bandwidth non-negative")
        if self.tasklets * (1024 + 2 * 512 + 2 * 256 + PARAMS_BYTES) > 64 * 1024 - 512:
            raise KernelError(f"{self.name}: {self.tasklets} tasklets do not fit in WRAM")

    # ------------------------------------------------------------ inputs
    def _coordinates(self, rng) -> tuple[int, np.ndarray, np.ndarray, np.ndarray]:
        n = self.size
        if self.matrix is not None:
            rows, cols, r, c, v = read_matrix(self.matrix)
            order = np.lexsort((c, r))
            r, c, v = r[order], c[order], v[order]
            counts = np.bincount(r, minlength=rows)
            starts = np.concatenate([[0], np.cumsum(counts)])
            pick = [np.arange(starts[i % rows], starts[i % rows + 1]) for i in range(n)]
            idx = np.concatenate(pick) if pick else np.zeros(0, np.int64)
            new_r = np.repeat(np.arange(n), [counts[i % rows] for i in range(n)])
            return cols, new_r, c[idx], v[idx]
        half = max(1, self.nnz_per_row // 2)
        rr = np.repeat(np.arange(n), self.nnz_per_row)
        band = np.arange(n)[:, None] + rng.integers(-self.bandwidth, self.bandwidth + 1, (n, half))
        rand = rng.integers(0, n, (n, self.nnz_per_row - half))
        cc = np.concatenate([np.clip(band, 0, n - 1), rand], axis=1).ravel()
        keys = np.unique(rr * n + cc)  # merge duplicates; sorted by row, then column
        r, c = keys // n, keys % n
        return n, r, c, np.ones(r.size, np.float32)

    def inputs(self):
        rng = np.random.default_rng(self.seed)
        cols, r, c, v = self._coordinates(rng)
        rowptr = np.concatenate([[0], np.cumsum(np.bincount(r, minlength=self.size))]).astype(np.uint32)
        x = np.ones(cols, np.float32)
        return {"rowptr": rowptr, "cols": c.astype(np.uint32), "values": v.astype(np.float32), "x": x}

    def reference(self, inputs):
        rowptr, cols, values, x = (inputs[k] for k in ("rowptr", "cols", "values", "x"))
        lengths = np.diff(rowptr.astype(np.int64))
        y = np.zeros(self.size, np.float32)
        for k in range(int(lengths.max()) if lengths.size else 0):  # same order and rounding as the DPU
            live = np.flatnonzero(lengths > k)
            at = rowptr[live].astype(np.int64) + k
            y[live] = y[live] + values[at] * x[cols[at]]
        return {"y": y}

    # ------------------------------------------------------------ host program
    def execute(self, device, inputs):
        rowptr, cols, values, x = (inputs[k] for k in ("rowptr", "cols", "values", "x"))
        rows_pad = self.size + self.size % 2
        rowptr = np.concatenate([rowptr, rowptr[-1:]] if rows_pad > self.size else [rowptr]).astype(np.uint32)
        per_dpu = -(-rows_pad // self.nr_dpus)
        per_dpu += per_dpu % 2
        x_pad = np.zeros(-(-x.size // TILE) * TILE, np.float32)
        x_pad[: x.size] = x
        pairs = np.empty((cols.size, 2), np.uint32)
        pairs[:, 0], pairs[:, 1] = cols, values.view(np.uint32)
        layout = []
        for dpu in range(self.nr_dpus):
            first = min(dpu * per_dpu, rows_pad)
            count = min(per_dpu, rows_pad - first)
            lo, hi = int(rowptr[first]), int(rowptr[first + count])
            heap = PARAMS_BYTES  # the host's bump allocator
            rp_off = heap; heap += _round8(4 * (count + 1))
            nz_off = heap; heap += _round8(8 * (hi - lo))
            x_off = heap; heap += _round8(4 * x_pad.size)
            y_off = heap; heap += _round8(4 * count)
            if heap > MRAM_SIZE:
                raise KernelError(f"{self.name}: DPU {dpu}'s rows, nonzeros and x do not fit in MRAM")
            params = np.array([count, lo, rp_off, nz_off, x_off, y_off, 0, 0], np.uint32)
            device.copy_to(dpu, DPU_MRAM_HEAP_POINTER_NAME, params)
            device.copy_to(dpu, DPU_MRAM_HEAP_POINTER_NAME, _pad8(rowptr[first:first + count + 1]), rp_off)
            if hi > lo:
                device.copy_to(dpu, DPU_MRAM_HEAP_POINTER_NAME, pairs[lo:hi], nz_off)
            device.copy_to(dpu, DPU_MRAM_HEAP_POINTER_NAME, x_pad, x_off)
            layout.append((first, count, y_off))
        device.launch()
        y = np.zeros(rows_pad, np.float32)
        for dpu, (first, count, y_off) in enumerate(layout):
            if count:
                raw = device.copy_from(dpu, DPU_MRAM_HEAP_POINTER_NAME, _round8(4 * count), y_off)
                y[first:first + count] = np.frombuffer(raw, np.float32)[:count]
        return {"y": y[: self.size]}


def _pad8(a: np.ndarray) -> np.ndarray:
    """The array's bytes zero-padded to a multiple of 8."""
    raw = a.tobytes()
    return np.frombuffer(raw + bytes(-len(raw) % 8), np.uint8)
