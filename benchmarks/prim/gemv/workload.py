"""GEMV: y = A x over uint32 with wrap-around (PrIM), cnmtune's own implementation.

Size = rows of A (the calibration CSV's size_param). Columns = `n_cols`: 64 by default, the
calibration's layout (size x 64 uint32 matrix, 64-element x, size-element y); PrIM's own
default is 8192 x 8192. Set it per run: `--param n_cols=2048`, or
`GemvWorkload(size, dpus, tasklets, n_cols=2048)`. A and x hold values in 0..49, as PrIM's rand() % 50.

Compile time: BL, log2 of the MRAM->WRAM block in bytes (default 10; 3..11 keeps every DMA in
8..2048 B). WRAM: each tasklet allocates 2 x 2^BL + 8 bytes next to its 1 KiB stack, so
BL = 10 runs up to 21 tasklets and BL = 11 up to 12 (mem_alloc faults beyond, as on a DPU).

Host side as PrIM: rows split as evenly as possible (the first m mod D DPUs get one more);
each DPU's row count is padded to even (rows go in pairs on the DPU), and max_rows is the
largest padded count; n_pad = n rounded up to even. Every DPU gets the same transfer sizes:
arguments {n_size, n_size_pad, nr_rows, max_rows} (4 x uint32, nr_rows = the DPU's padded
count) by a parallel push to DPU_INPUT_ARGUMENTS; its rows as a max_rows x n_pad block at heap
offset 0 (parallel push); x (n_pad elements, parallel push of the same buffer) at offset
max_rows*n_pad*4; after the launch the host pulls max_rows y elements from offset
(max_rows+1)*n_pad*4 and keeps each DPU's real rows.

Deliberate differences from PrIM:
- rows sit in MRAM at stride n_pad (the host zero-pads each row to even length), so every row
  starts 8-aligned and no DMA is ever misaligned; PrIM copies rows at stride n and, for odd
  n, reads from a 4-byte-misaligned address and shifts the buffer in WRAM;
- padding rows and columns are zeros (PrIM copies whatever follows in the host array);
- all m outputs are compared exactly.
Kept on purpose: like PrIM, the last partial block of a row is read whole (2^BL bytes of A and
of x, past the row's end), so the DMA traffic matches PrIM's for calibration (with 64 columns
and BL = 10, every row reads 1 KiB of A and 1 KiB of x for 64 multiply-adds).
"""

import numpy as np

from cnmtune.dpu.memory_map import MRAM_SIZE
from cnmtune.errors import KernelError
from cnmtune.runtime.device import DPU_MRAM_HEAP_POINTER_NAME
from cnmtune.runtime.workload import Workload


class GemvWorkload(Workload):
    name = "gemv"
    defines = {"BL": 10}
    define_choices = {"BL": tuple(range(3, 12))}
    nr_tasklets = 16
    sizes = {"small": 256, "default": 8192, "large": 65_536}
    size_unit = "matrix rows"
    params = {"n_cols": 64}

    def __init__(self, size, nr_dpus, nr_tasklets, defines=None, seed=0, **params):
        super().__init__(size, nr_dpus, nr_tasklets, defines, seed, **params)
        self.n_cols = int(self.param_values["n_cols"])
        if self.n_cols < 1:
            raise KernelError(f"{self.name}: n_cols must be positive, got {self.n_cols}")

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
        base, extra = divmod(self.size, self.nr_dpus)
        counts = [base + (d < extra) for d in range(self.nr_dpus)]
        starts = [sum(counts[:d]) for d in range(self.nr_dpus)]
        return starts, counts

    def execute(self, device, inputs):
        a, x = inputs["A"], inputs["x"]
        n = a.shape[1]
        n_pad = n + n % 2
        starts, counts = self.row_split()
        padded_rows = [c + c % 2 for c in counts]
        max_rows = max(padded_rows)
        block = 1 << int(self.config["BL"])
        if (max_rows + 1) * n_pad * 4 + max_rows * 4 + block > MRAM_SIZE:
            raise KernelError(f"{self.name}: {max_rows} rows x {n} columns per DPU do not fit in MRAM")
        args, blocks = [], []
        for start, count, rows in zip(starts, counts, padded_rows):
            args.append(np.array([n, n_pad, rows, max_rows], dtype=np.uint32))
            mine = np.zeros((max_rows, n_pad), dtype=np.uint32)
            mine[:count, :n] = a[start:start + count]
            blocks.append(mine)
        x_pad = np.zeros(n_pad, dtype=np.uint32)
        x_pad[:n] = x
        x_offset = max_rows * n_pad * 4
        device.push_to("DPU_INPUT_ARGUMENTS", args)
        device.push_to(DPU_MRAM_HEAP_POINTER_NAME, blocks)
        device.push_to(DPU_MRAM_HEAP_POINTER_NAME, [x_pad] * self.nr_dpus, offset=x_offset)
        device.launch()
        chunks = device.push_from(DPU_MRAM_HEAP_POINTER_NAME, max_rows * 4, offset=x_offset + n_pad * 4)
        y = [np.frombuffer(chunk, np.uint32)[:count] for chunk, count in zip(chunks, counts)]
        return {"y": np.concatenate(y)}
