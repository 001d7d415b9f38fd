"""NW: Needleman-Wunsch global alignment score matrix (PrIM), cnmtune's own implementation.

Size = n, the length of both sequences (PrIM's -n); the score matrix has (n+1) x (n+1) cells,
row 0 and column 0 holding -i * penalty. n must be a multiple of BL. Keyword `penalty` (gap
penalty, default 1, PrIM's -p).
Cell (i, j) = max(cell(i-1, j-1) + score(i, j), cell(i, j-1) - penalty, cell(i-1, j) - penalty).

Inputs as PrIM: every substitution score is BLOSUM62[0][0] = 4. PrIM draws two sequences of
residues 1..10 (rand() % 10 + 1 after srand(7)) but builds the scores from a still zeroed
array, so this is what its DPUs compute with. Keyword `random_sequences=1` uses what PrIM
meant instead: BLOSUM62[s1[i]][s2[j]] of two seeded random sequences (a numpy generator over
1..10, not libc's sequence).
Presets: small 64, default 512, large 2560 (PrIM's strong scaling on one rank); the simulator
runs about 20,000 cells per second here.

Compile time: BL, the block edge in cells (NOT a log2; even; default 32, the block of PrIM's
full strong-scaling runs, since PrIM's Makefile default of 1024 with its default n = 256 runs
nothing) and BL_IN, the sub-block edge (2, 4, 8 or 16; default 2 as in PrIM's scaling runs;
BL must be a multiple of BL_IN). NR_TASKLETS defaults to 13, as in PrIM (so the per-diagonal
split divides by a non-power of two). WRAM per tasklet: (BL_IN+1)(BL_IN+2)*4 + BL_IN^2*4 bytes
next to its 1 KiB stack; the workload refuses tasklet counts that do not fit (KernelError).

Host side as PrIM: the matrix is tiled into (n/BL)^2 blocks, computed as a wavefront over the
2(n/BL)-1 block anti-diagonals, one launch each. A diagonal's blocks are split over
min(blocks, DPUs) DPUs in consecutive runs (blocks/used each, one more for the first
blocks mod used); active_blocks = the largest run. Per launch: arguments {nblocks,
active_blocks, penalty, reserved} (4 x 32-bit) by a parallel push to DPU_INPUT_ARGUMENTS; for
every block slot, one parallel push per block row: row 0 = BL+2 ints of the host matrix (the
corner, the BL cells above, one more), rows 1..BL = 2 ints (the left boundary and the next),
at slot*(BL+1)(BL+2)*4 + row*(BL+2)*4; then per slot and row the BL substitution scores at
active_blocks*(BL+1)(BL+2)*4 + (slot*BL + row)*BL*4; launch; then one parallel pull per slot
and row 1..BL of BL+2 ints, whose BL cells go back into the host matrix (row stride n+2: one
padding column keeps the rows even). Idle DPUs get nblocks = 0 and zero buffers. The DPU work
is PrIM's: per block, the top-left sub-diagonal steps 0..BL/BL_IN (step 0 holds no sub-block)
and the bottom-right steps 2..BL/BL_IN, a barrier after each (dpu/task.c).

Remaining differences from PrIM:
- the DPU set is not re-allocated when a diagonal has fewer blocks than DPUs (PrIM's
  DYNAMIC frees and reloads it): surplus DPUs launch with nblocks = 0 and return at once;
  kernel time is the slowest DPU's, so none on DPU time;
- PrIM's DPU binary also holds the 2.3 KiB BLOSUM62 table in WRAM (unused there): WRAM
  footprint only;
- only the BL cells of each pulled row are copied into the host matrix (PrIM copies the whole
  BL+2-int row, spare columns included); no host traceback is run: host side only;
- every cell except row and column 0 is compared exactly, as in PrIM.
"""

from typing import ClassVar

import numpy as np

from cnmtune.dpu.memory_map import DEFAULT_STACK_SIZE, MRAM_SIZE, WRAM_SIZE
from cnmtune.errors import KernelError
from cnmtune.runtime.device import DPU_MRAM_HEAP_POINTER_NAME
from cnmtune.runtime.workload import Workload

WRAM_GLOBALS = 256  # bytes: a bound on this kernel's WRAM globals (arguments, barrier, ...)

# BLOSUM62 in the usual order A R N D C Q E G H I L K M F P S T W Y V B Z X *
BLOSUM62 = np.array([
    [4, -1, -2, -2, 0, -1, -1, 0, -2, -1, -1, -1, -1, -2, -1, 1, 0, -3, -2, 0, -2, -1, 0, -4],
    [-1, 5, 0, -2, -3, 1, 0, -2, 0, -3, -2, 2, -1, -3, -2, -1, -1, -3, -2, -3, -1, 0, -1, -4],
    [-2, 0, 6, 1, -3, 0, 0, 0, 1, -3, -3, 0, -2, -3, -2, 1, 0, -4, -2, -3, 3, 0, -1, -4],
    [-2, -2, 1, 6, -3, 0, 2, -1, -1, -3, -4, -1, -3, -3, -1, 0, -1, -4, -3, -3, 4, 1, -1, -4],
    [0, -3, -3, -3, 9, -3, -4, -3, -3, -1, -1, -3, -1, -2, -3, -1, -1, -2, -2, -1, -3, -3, -2, -4],
    [-1, 1, 0, 0, -3, 5, 2, -2, 0, -3, -2, 1, 0, -3, -1, 0, -1, -2, -1, -2, 0, 3, -1, -4],
    [-1, 0, 0, 2, -4, 2, 5, -2, 0, -3, -3, 1, -2, -3, -1, 0, -1, -3, -2, -2, 1, 4, -1, -4],
    [0, -2, 0, -1, -3, -2, -2, 6, -2, -4, -4, -2, -3, -3, -2, 0, -2, -2, -3, -3, -1, -2, -1, -4],
    [-2, 0, 1, -1, -3, 0, 0, -2, 8, -3, -3, -1, -2, -1, -2, -1, -2, -2, 2, -3, 0, 0, -1, -4],
    [-1, -3, -3, -3, -1, -3, -3, -4, -3, 4, 2, -3, 1, 0, -3, -2, -1, -3, -1, 3, -3, -3, -1, -4],
    [-1, -2, -3, -4, -1, -2, -3, -4, -3, 2, 4, -2, 2, 0, -3, -2, -1, -2, -1, 1, -4, -3, -1, -4],
    [-1, 2, 0, -1, -3, 1, 1, -2, -1, -3, -2, 5, -1, -3, -1, 0, -1, -3, -2, -2, 0, 1, -1, -4],
    [-1, -1, -2, -3, -1, 0, -2, -3, -2, 1, 2, -1, 5, 0, -2, -1, -1, -1, -1, 1, -3, -1, -1, -4],
    [-2, -3, -3, -3, -2, -3, -3, -3, -1, 0, 0, -3, 0, 6, -4, -2, -2, 1, 3, -1, -3, -3, -1, -4],
    [-1, -2, -2, -1, -3, -1, -1, -2, -2, -3, -3, -1, -2, -4, 7, -1, -1, -4, -3, -2, -2, -1, -2, -4],
    [1, -1, 1, 0, -1, 0, 0, 0, -1, -2, -2, 0, -1, -2, -1, 4, 1, -3, -2, -2, 0, 0, 0, -4],
    [0, -1, 0, -1, -1, -1, -1, -2, -2, -1, -1, -1, -1, -2, -1, 1, 5, -2, -2, 0, -1, -1, 0, -4],
    [-3, -3, -4, -4, -2, -2, -3, -2, -2, -3, -2, -3, -1, 1, -4, -3, -2, 11, 2, -3, -4, -3, -2, -4],
    [-2, -2, -2, -3, -2, -1, -2, -3, 2, -1, -1, -2, -1, 3, -3, -2, -2, 2, 7, -1, -3, -2, -1, -4],
    [0, -3, -3, -3, -1, -2, -2, -3, -3, 3, 1, -2, 1, -1, -2, -2, 0, -3, -1, 4, -3, -2, -1, -4],
    [-2, -1, 3, 4, -3, 0, 1, -1, 0, -3, -4, 0, -3, -3, -2, 0, -1, -4, -3, -3, 4, 1, -1, -4],
    [-1, 0, 0, 1, -3, 3, 4, -2, 0, -3, -3, 1, -1, -3, -1, 0, -1, -3, -2, -2, 1, 4, -1, -4],
    [0, -1, -1, -1, -2, -1, -1, -1, -1, -1, -1, -1, -1, -1, -2, 0, 0, -2, -1, -1, -1, -1, -1, -4],
    [-4, -4, -4, -4, -4, -4, -4, -4, -4, -4, -4, -4, -4, -4, -4, -4, -4, -4, -4, -4, -4, -4, -4, 1],
], dtype=np.int32)


class NeedlemanWunsch(Workload):
    name = "nw"
    defines = {"BL": 32, "BL_IN": 2}
    define_choices = {"BL": (4, 8, 16, 32, 40, 64, 128, 160, 256, 512, 640, 1024, 2560),
                      "BL_IN": (2, 4, 8, 16)}
    tuned_defines = ("BL", "BL_IN")
    nr_tasklets = 13
    sizes = {"small": 64, "default": 512, "large": 2560}
    params: ClassVar[dict[str, object]] = {"penalty": 1, "random_sequences": 0}

    def __init__(self, size, nr_dpus, nr_tasklets, defines=None, seed=0, penalty=None, random_sequences=None):
        super().__init__(size, nr_dpus, nr_tasklets, defines, seed)
        self.penalty = int(self.params["penalty"] if penalty is None else penalty)
        self.random_sequences = bool(int(self.params["random_sequences"] if random_sequences is None
                                         else random_sequences))
        self.bl, self.bl_in = int(self.config["BL"]), int(self.config["BL_IN"])
        if self.bl % self.bl_in:
            raise KernelError(f"{self.name}: BL={self.bl} must be a multiple of BL_IN={self.bl_in}")
        if size % self.bl:
            raise KernelError(f"{self.name}: the sequence length {size} must be a multiple of BL={self.bl}")
        tile = (self.bl_in + 1) * (self.bl_in + 2) * 4 + self.bl_in * self.bl_in * 4
        wram = self.tasklets * (tile + DEFAULT_STACK_SIZE) + WRAM_GLOBALS
        if wram > WRAM_SIZE:
            raise KernelError(f"{self.name}: BL_IN={self.bl_in} with {self.tasklets} tasklets needs "
                              f"{wram} bytes of WRAM (> {WRAM_SIZE}); use fewer tasklets or a smaller BL_IN")

    def launch_count(self):
        return 2 * (self.size // self.bl) - 1  # one per block anti-diagonal

    def inputs(self):
        """scores[i-1, j-1] is the substitution score of cell (i, j)."""
        if not self.random_sequences:
            return {"scores": np.full((self.size, self.size), BLOSUM62[0, 0], np.int32)}
        rng = np.random.default_rng(self.seed)
        s1, s2 = rng.integers(1, 11, self.size), rng.integers(1, 11, self.size)
        return {"scores": BLOSUM62[np.ix_(s1, s2)]}

    def reference(self, inputs):
        n, p = self.size, self.penalty
        scores = inputs["scores"].astype(np.int64)
        j = np.arange(n + 1, dtype=np.int64)
        prev = -j * p  # row 0
        out = np.empty((n, n), np.int32)
        for i in range(1, n + 1):
            # best of the diagonal and the up move, then the left moves as a running maximum:
            # cell[j] + j p = max over k <= j of (candidate[k] + k p)
            cand = np.empty(n + 1, np.int64)
            cand[0] = -i * p
            cand[1:] = np.maximum(prev[:-1] + scores[i - 1], prev[1:] - p)
            row = np.maximum.accumulate(cand + j * p) - j * p
            out[i - 1] = row[1:]
            prev = row
        return {"score": out}

    def _diagonal(self, d: int, nb: int) -> list[list[tuple[int, int]]]:
        """The blocks (bi, bj) of block anti-diagonal d, per DPU, in consecutive runs."""
        blocks = [(bi, d - bi) for bi in range(max(0, d - nb + 1), min(d, nb - 1) + 1)]
        used = min(len(blocks), self.nr_dpus)
        per, extra = divmod(len(blocks), used)
        runs, start = [], 0
        for dpu in range(self.nr_dpus):
            count = per + (dpu < extra) if dpu < used else 0
            runs.append(blocks[start:start + count])
            start += count
        return runs

    def execute(self, device, inputs):
        n, bl, p = self.size, self.bl, self.penalty
        nb = n // bl
        region = (bl + 1) * (bl + 2) * 4  # bytes of one block slot
        row_bytes = (bl + 2) * 4
        matrix = np.zeros((n + 1, n + 2), np.int32)
        matrix[0, :n + 1] = -np.arange(n + 1) * p
        matrix[:, 0] = -np.arange(n + 1) * p
        scores = inputs["scores"]
        for d in range(2 * nb - 1):
            runs = self._diagonal(d, nb)
            active = max(len(run) for run in runs)
            if active * (region + bl * bl * 4) > MRAM_SIZE:
                raise KernelError(f"{self.name}: {active} blocks of {bl} x {bl} per DPU do not fit in MRAM")
            device.push_to("DPU_INPUT_ARGUMENTS",
                           [np.array([len(run), active, p, 0], dtype=np.int32) for run in runs])
            for s in range(active):
                slot = [run[s] if s < len(run) else None for run in runs]
                for r in range(bl + 1):
                    width = bl + 2 if r == 0 else 2
                    bufs = [np.zeros(width, np.int32) if b is None else
                            matrix[b[0] * bl + r, b[1] * bl:b[1] * bl + width] for b in slot]
                    device.push_to(DPU_MRAM_HEAP_POINTER_NAME, bufs, offset=s * region + r * row_bytes)
            ref_base = active * region
            for s in range(active):
                slot = [run[s] if s < len(run) else None for run in runs]
                for r in range(bl):
                    bufs = [np.zeros(bl, np.int32) if b is None else
                            scores[b[0] * bl + r, b[1] * bl:b[1] * bl + bl] for b in slot]
                    device.push_to(DPU_MRAM_HEAP_POINTER_NAME, bufs, offset=ref_base + (s * bl + r) * bl * 4)
            device.launch()
            for s in range(active):
                for r in range(1, bl + 1):
                    rows = device.push_from(DPU_MRAM_HEAP_POINTER_NAME, row_bytes, offset=s * region + r * row_bytes)
                    for run, raw in zip(runs, rows):
                        if s < len(run):
                            bi, bj = run[s]
                            matrix[bi * bl + r, bj * bl + 1:bj * bl + bl + 1] = np.frombuffer(raw, np.int32)[1:bl + 1]
        return {"score": matrix[1:, 1:n + 1].copy()}
