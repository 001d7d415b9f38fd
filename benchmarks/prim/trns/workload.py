"""TRNS: in-place transposition of an (M_*m) x (N_*n) int64 matrix in three steps (PrIM), cnmtune's own.

Size = M_, the number of m-row tiles in a column strip (PrIM's -o; the matrix has M_*m rows).
Presets: small 2, default 256, large 2048 (PrIM's own default is 12,288): step 3 holds a mutex
across DMAs, and the simulator executes every failed lock attempt of the spinning tasklets,
so at 16 tasklets one DPU simulates about 15 tiles per second.
Keywords (also in `params`): `m` (tile rows, default 16, PrIM's -m; 1..256), `n` (strip width,
default 8, PrIM's -n) and `strips` = N_, the number of n-column strips (PrIM's -p with -x 1).
The default strips = 0 means one strip per DPU (N_ = DPUs: PrIM's weak scaling with -p 1,
the configuration L2P measured). Elements are PrIM's `(T) rand()` int64 values (c_rand: PrIM's
range, not libc's sequence; a copy's cost does not depend on the values).

Compile time: no defines (PrIM's TRNS has no BL: DMAs are tiles and chunks). WRAM per
tasklet: step 2 allocates two m*n*8-byte tiles, step 3 two m*8-byte chunks and 8 bytes, next
to a 1 KiB stack; the workload refuses (KernelError) tile sizes and tasklet counts above
64 KiB (m = 16, n = 8 runs up to 21 tasklets).

Host side as PrIM: the strips are processed in rounds of up to DPUs strips; in a round, DPU
j holds strip round*DPUs + j. Step 1: M_*m parallel pushes of n*8 bytes (row r of every
DPU's strip to heap offset r*n*8); a zero "done" array of M_*n bytes (rounded up to 8) at
offset M_*m*n*8. Arguments {m, n, M_, kernel} (4 x uint32) by a parallel push to
DPU_INPUT_ARGUMENTS before each launch: kernel 0 (step 2, tile transposition), then kernel 1
(step 3, chunk permutation); then a parallel pull of the M_*m*n*8-byte strip, which is now
rows strip*n .. strip*n+n-1 of the transposed matrix. Two launches per round.

Remaining differences from PrIM (the DPU work is otherwise PrIM's: tiles, chunk walks with a
copy of every carried chunk, a test-and-set of a done flag that is always written back):
- the done flags are one byte per chunk, tested and set through the aligned 8-byte word that
  holds the byte (PrIM reads an 8-byte word at the byte-granular, unaligned address done+p
  and uses bit p mod 8): the same DMAs; none on DPU time;
- step 3 takes start chunks until the counter reaches M_*n (PrIM: M_*n - 1, whose chunk is a
  fixed point), and the counter is reset at every launch (PrIM's WRAM counter keeps its value
  across launches of a loaded program): one more counter increment per DPU; none;
- step 2 moves tiles larger than 2048 bytes in several DMAs with the right WRAM offsets
  (PrIM advances the WRAM pointer by sizeof(T) twice there; m*n*8 > 2048 only);
- the DPU set is not re-allocated for a last round with fewer strips than DPUs: the surplus
  DPUs get M_ = 0 and return at once (kernel time is the slowest DPU's: none).
"""

from typing import ClassVar

import numpy as np
from c_rand import c_rand

from cnmtune.dpu.memory_map import DEFAULT_STACK_SIZE, MRAM_SIZE, WRAM_SIZE
from cnmtune.errors import KernelError
from cnmtune.runtime.device import DPU_MRAM_HEAP_POINTER_NAME
from cnmtune.runtime.workload import Workload

WRAM_GLOBALS = 256  # bytes: a bound on this kernel's WRAM globals (arguments, barrier, ...)


class Transpose(Workload):
    name = "trns"
    nr_tasklets = 16
    sizes = {"small": 2, "default": 256, "large": 2048}
    params: ClassVar[dict[str, object]] = {"m": 16, "n": 8, "strips": 0}

    def __init__(self, size, nr_dpus, nr_tasklets, defines=None, seed=0, m=None, n=None, strips=None):
        super().__init__(size, nr_dpus, nr_tasklets, defines, seed)
        self.m = int(self.params["m"] if m is None else m)
        self.n = int(self.params["n"] if n is None else n)
        strips = int(self.params["strips"] if strips is None else strips)
        self.strips = strips if strips > 0 else nr_dpus
        if not 1 <= self.m <= 256:
            raise KernelError(f"{self.name}: m must be in 1..256 (a chunk is one DMA), got {self.m}")
        if self.n < 1:
            raise KernelError(f"{self.name}: n must be positive, got {self.n}")
        tile = self.m * self.n * 8
        per_tasklet = max(2 * tile, 2 * self.m * 8 + 8)
        wram = self.tasklets * (per_tasklet + DEFAULT_STACK_SIZE) + WRAM_GLOBALS
        if wram > WRAM_SIZE:
            raise KernelError(f"{self.name}: m={self.m}, n={self.n} with {self.tasklets} tasklets needs "
                              f"{wram} bytes of WRAM (> {WRAM_SIZE}); use fewer tasklets or smaller tiles")
        done = -(-self.size * self.n // 8) * 8
        if self.size * tile + done > MRAM_SIZE:
            raise KernelError(f"{self.name}: a strip of {self.size} tiles of {self.m} x {self.n} does not fit in MRAM")

    def launch_count(self):
        return 2 * -(-self.strips // self.nr_dpus)  # two per round of up to DPUs strips

    def inputs(self):
        rows, cols = self.size * self.m, self.strips * self.n
        return {"A": c_rand(self.seed, rows * cols).reshape(rows, cols)}

    def reference(self, inputs):
        return {"AT": np.ascontiguousarray(inputs["A"].T)}

    def execute(self, device, inputs):
        a = inputs["A"]
        m, n, tiles = self.m, self.n, self.size
        rows = tiles * m
        strip_bytes = rows * n * 8
        done = np.zeros(-(-tiles * n // 8) * 8, np.uint8)
        out = np.empty((self.strips * n, rows), np.int64)
        idle = np.zeros(n, np.int64)
        for first in range(0, self.strips, self.nr_dpus):
            mine = [first + j if first + j < self.strips else None for j in range(self.nr_dpus)]
            for r in range(rows):  # step 1: row r of every DPU's strip
                device.push_to(DPU_MRAM_HEAP_POINTER_NAME,
                               [idle if s is None else a[r, s * n:(s + 1) * n] for s in mine], offset=r * n * 8)
            device.push_to(DPU_MRAM_HEAP_POINTER_NAME, [done] * self.nr_dpus, offset=strip_bytes)
            for kernel in (0, 1):  # step 2, then step 3
                device.push_to("DPU_INPUT_ARGUMENTS",
                               [np.array([m, n, 0 if s is None else tiles, kernel], np.uint32) for s in mine])
                device.launch()
            strips = device.push_from(DPU_MRAM_HEAP_POINTER_NAME, strip_bytes)
            for s, raw in zip(mine, strips):
                if s is not None:
                    out[s * n:(s + 1) * n] = np.frombuffer(raw, np.int64).reshape(n, rows)
        return {"AT": out}
