"""GEMV: y = A x over uint32 with wrap-around (PrIM), cnmtune's own implementation.

Size = rows of A (the calibration CSV's size_param). Columns = `n_cols`: 64 by default, the
calibration's layout (size x 64 uint32 matrix, 64-element x, size-element y); PrIM's own
default is 8192 x 8192. Set it per run: `--param n_cols=2048`, or
`GemvWorkload(size, dpus, tasklets, n_cols=2048)`.

Inputs as PrIM: A and x hold `rand() % 50` values (a seeded numpy generator over 0..49: PrIM's
range, not libc's sequence).

Compile time: BL, log2 of the MRAM->WRAM block in bytes (default 10; 3..11 keeps every DMA in
8..2048 B). WRAM: each tasklet allocates 2 x 2^BL + 8 bytes next to its 1 KiB stack, so
BL = 10 runs up to 20 tasklets and BL = 11 up to 12 (refused beyond: mem_alloc would fault, as on
a DPU).

Host side as PrIM (common/gemv_host.py): rows split as evenly as possible, each DPU's rows as
a max_rows x n_pad block at heap offset 0, x at max_rows*n_pad*4, y after it; arguments
{n_size, n_size_pad, nr_rows, max_rows} by a parallel push; after the launch the host pulls
max_rows y elements from every DPU and keeps its real rows. The DPU program is PrIM's GEMV
loop (common/gemv_rows.h): row pairs, full blocks accumulated in WRAM, a last block of
1..2^BL/4 columns read whole and accumulated under PrIM's per-element bound check.

Remaining differences from PrIM:
- rows sit in MRAM at stride n_pad (the host zero-pads each row to even length), so every row
  starts 8-aligned; PrIM copies rows at stride n and, for odd n, reads a row that starts
  4 bytes off alignment from the aligned-down address, shifts the block by one element and
  reads 8 more bytes. Effect: none for even n (every preset and every PrIM run); for odd n
  PrIM spends one more 8-byte DMA and a 2^BL/4-element shift per block of every other row;
- PrIM's error printf in the tail loop (unreachable) is left out: binary size only;
- every DPU's outputs are compared exactly (PrIM: the same); padding rows and columns are
  zeros (PrIM copies whatever follows in the host array; the DPU never reads them).
"""

import numpy as np
from gemv_host import GemvLayout, row_split

from cnmtune.errors import KernelError
from cnmtune.runtime.workload import Workload


class GemvWorkload(Workload):
    name = "gemv"
    defines = {"BL": 10}
    define_choices = {"BL": tuple(range(3, 12))}
    tuned_defines = ("BL",)
    nr_tasklets = 16
    sizes = {"small": 256, "default": 8192, "large": 65_536}
    size_unit = "matrix rows"
    params = {"n_cols": 64}

    def __init__(self, size, nr_dpus, nr_tasklets, defines=None, seed=0, **params):
        super().__init__(size, nr_dpus, nr_tasklets, defines, seed, **params)
        self.n_cols = int(self.param_values["n_cols"])
        if self.n_cols < 1:
            raise KernelError(f"{self.name}: n_cols must be positive, got {self.n_cols}")
        self.check_wram(2 * (1 << int(self.config["BL"])) + 8)  # two blocks and the row pair's sums

    def inputs(self):
        rng = np.random.default_rng(self.seed)
        a = rng.integers(0, 50, (self.size, self.n_cols), dtype=np.uint32)
        x = rng.integers(0, 50, self.n_cols, dtype=np.uint32)
        return {"A": a, "x": x}

    def reference(self, inputs):
        y = inputs["A"].astype(np.uint64) @ inputs["x"].astype(np.uint64)  # exact below 2^64
        return {"y": y.astype(np.uint32)}  # wrap-around to uint32

    def row_split(self) -> tuple[list[int], list[int]]:
        """(first row, real row count) per DPU: the first m mod D DPUs get one more row."""
        return row_split(self.size, self.nr_dpus)

    def execute(self, device, inputs):
        layout = GemvLayout(self.name, self.size, self.n_cols, self.nr_dpus, 1 << int(self.config["BL"]))
        layout.push_arguments(device)
        layout.push_matrix(device, inputs["A"])
        layout.push_vector(device, inputs["x"])
        device.launch()
        return {"y": layout.pull_result(device, np.uint32)}
