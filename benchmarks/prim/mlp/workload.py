"""MLP: inference of a 3-layer perceptron, one int32 GEMV layer per launch (PrIM), cnmtune's own.

Size = rows m of every layer's weight matrix (PrIM's -m). Columns n = the `n_cols` keyword
(default 64, as GEMV's calibration layout; PrIM's strong scaling uses 8192 x 1024): every
layer is an m x n int32 matrix. Layer l computes y = ReLU(W_l x) with int32 wrap-around; the
next layer's input is the first n outputs (as in PrIM; when m < n the rest of x is zeros).
Inputs (seeded numpy): W_l entries in -3..3, the first x in 0..9.

Compile time: BL, log2 of the MRAM->WRAM block in bytes (default 10; 3..11 keeps every DMA in
8..2048 B). WRAM: each tasklet allocates 2 x 2^BL + 8 bytes next to its 1 KiB stack, so
BL = 10 runs up to 21 tasklets and BL = 11 up to 12; the workload refuses larger counts
(KernelError) instead of letting mem_alloc fault.

Host side as PrIM (the GEMV split): rows split as evenly as possible (the first m mod D DPUs
get one more), each DPU's count padded to even (rows go in pairs on the DPU), max_rows = the
largest padded count, n_pad = n rounded up to even. Per layer (3 launches):
arguments {n_size, n_size_pad, nr_rows, max_rows} (4 x uint32) by a parallel push to
DPU_INPUT_ARGUMENTS; the DPU's rows of W_l as a max_rows x n_pad block at heap offset 0
(parallel push); x (n_pad int32, the same buffer to every DPU, parallel push) at offset
max_rows*n_pad*4; launch; parallel pull of max_rows int32 of y from offset
(max_rows+1)*n_pad*4. Between layers the host packs every DPU's real rows into one vector
and keeps its first n entries as the next x. The outputs are the last layer's m values.

Deliberate differences from PrIM:
- the DPU applies ReLU (PrIM's DPU does not; its results match its ReLU reference only
  because its inputs keep every value non-negative); the sum is kept in uint32 so the
  wrap-around is defined C; here inputs are signed, so ReLU matters;
- rows sit in MRAM at stride n_pad (each row zero-padded to even length), so no DMA is ever
  misaligned; PrIM copies rows at stride n and, for odd n, relies on the DMA aligning down;
- padding rows and columns are zeros; the arguments are pushed before every layer;
- inputs are seeded random values instead of PrIM's fixed 0/1 pattern.
Kept on purpose: the partial last block of a row is read whole (2^BL bytes of W and of x).
"""

from typing import ClassVar

import numpy as np

from cnmtune.dpu.memory_map import DEFAULT_STACK_SIZE, MRAM_SIZE, WRAM_SIZE
from cnmtune.errors import KernelError
from cnmtune.runtime.device import DPU_MRAM_HEAP_POINTER_NAME
from cnmtune.runtime.workload import Workload

NUM_LAYERS = 3
WRAM_GLOBALS = 256  # bytes: a bound on this kernel's WRAM globals (arguments, barrier, ...)


class MlpWorkload(Workload):
    name = "mlp"
    defines = {"BL": 10}
    define_choices = {"BL": tuple(range(3, 12))}
    nr_tasklets = 16
    sizes = {"small": 256, "default": 8192, "large": 65_536}
    params: ClassVar[dict[str, object]] = {"n_cols": 64}

    def __init__(self, size, nr_dpus, nr_tasklets, defines=None, seed=0, n_cols=None):
        super().__init__(size, nr_dpus, nr_tasklets, defines, seed)
        self.n_cols = int(self.params["n_cols"] if n_cols is None else n_cols)
        if self.n_cols < 1:
            raise KernelError(f"{self.name}: n_cols must be positive, got {self.n_cols}")
        wram = self.tasklets * (2 * (1 << int(self.config["BL"])) + 8 + DEFAULT_STACK_SIZE) + WRAM_GLOBALS
        if wram > WRAM_SIZE:
            raise KernelError(f"{self.name}: BL={self.config['BL']} with {self.tasklets} tasklets needs "
                              f"{wram} bytes of WRAM (> {WRAM_SIZE}); use fewer tasklets or a smaller BL")

    def inputs(self):
        rng = np.random.default_rng(self.seed)
        arrays = {f"W{l}": rng.integers(-3, 4, (self.size, self.n_cols), dtype=np.int32)
                  for l in range(NUM_LAYERS)}
        arrays["x"] = rng.integers(0, 10, self.n_cols, dtype=np.int32)
        return arrays

    def _next_input(self, y: np.ndarray) -> np.ndarray:
        x = np.zeros(self.n_cols, np.int32)
        take = min(self.n_cols, y.size)
        x[:take] = y[:take]
        return x

    def reference(self, inputs):
        x = inputs["x"]
        for l in range(NUM_LAYERS):
            # modulo 2^64 products and sums, then the low 32 bits: exact int32 wrap-around
            wide = inputs[f"W{l}"].astype(np.uint64) @ x.astype(np.uint64)
            y = np.maximum(wide.astype(np.uint32).view(np.int32), 0)
            if l + 1 < NUM_LAYERS:
                x = self._next_input(y)
        return {"y": y}

    def row_split(self) -> tuple[list[int], list[int]]:
        """(first row, real row count) per DPU: the first m mod D DPUs get one more row."""
        base, extra = divmod(self.size, self.nr_dpus)
        counts = [base + (d < extra) for d in range(self.nr_dpus)]
        starts = [sum(counts[:d]) for d in range(self.nr_dpus)]
        return starts, counts

    def execute(self, device, inputs):
        n = self.n_cols
        n_pad = n + n % 2
        starts, counts = self.row_split()
        padded_rows = [c + c % 2 for c in counts]
        max_rows = max(padded_rows)
        block = 1 << int(self.config["BL"])
        x_offset = max_rows * n_pad * 4
        y_offset = x_offset + n_pad * 4
        if max(y_offset + max_rows * 4, x_offset + block) > MRAM_SIZE:
            raise KernelError(f"{self.name}: {max_rows} rows x {n} columns per DPU do not fit in MRAM")
        args = [np.array([n, n_pad, rows, max_rows], dtype=np.uint32) for rows in padded_rows]
        x = inputs["x"]
        for l in range(NUM_LAYERS):
            w = inputs[f"W{l}"]
            blocks = []
            for start, count in zip(starts, counts):
                mine = np.zeros((max_rows, n_pad), dtype=np.int32)
                mine[:count, :n] = w[start:start + count]
                blocks.append(mine)
            x_pad = np.zeros(n_pad, dtype=np.int32)
            x_pad[:n] = x
            device.push_to("DPU_INPUT_ARGUMENTS", args)
            device.push_to(DPU_MRAM_HEAP_POINTER_NAME, blocks)
            device.push_to(DPU_MRAM_HEAP_POINTER_NAME, [x_pad] * self.nr_dpus, offset=x_offset)
            device.launch()
            chunks = device.push_from(DPU_MRAM_HEAP_POINTER_NAME, max_rows * 4, offset=y_offset)
            y = np.concatenate([np.frombuffer(c, np.int32)[:count] for c, count in zip(chunks, counts)])
            x = self._next_input(y)
        return {"y": y}
