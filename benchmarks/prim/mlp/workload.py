"""MLP: inference of a 3-layer perceptron, one int32 GEMV layer per launch (PrIM), cnmtune's own.

Size = rows m of every layer's weight matrix (PrIM's -m). Columns n = the `n_cols` keyword
(default 64, as GEMV's calibration layout; PrIM's strong scaling uses 8192 x 1024, the
calibration's MLP rows n x n): every layer is an m x n int32 matrix.

Inputs as PrIM (no randomness, so the seed is unused): weight W_l[i] = (l + i) mod 2 when
i mod 100 >= 98, else 0, for the flat row-major index i of the m x n matrix; input x[i] =
i mod 2 when i mod 50 >= 48, else 0. Layer l computes y = W_l x; the next layer's input is
the first n outputs (zeros beyond m when m < n; PrIM reads past its output there). The
reference applies ReLU after every layer, as PrIM's host; the DPU does not, as PrIM's DPU:
with these non-negative inputs the two agree, and the last layer is compared exactly.

Compile time: BL, log2 of the MRAM->WRAM block in bytes (default 10; 3..11 keeps every DMA in
8..2048 B). WRAM: each tasklet allocates 2 x 2^BL + 8 bytes next to its 1 KiB stack, so
BL = 10 runs up to 21 tasklets and BL = 11 up to 12; the workload refuses larger counts
(KernelError) instead of letting mem_alloc fault.

Host side: PrIM's calls (GEMV's split and layout, common/gemv_host.py): the arguments {n_size,
n_size_pad, nr_rows, max_rows} once, W_0 and x by parallel pushes, launch; then for each next
layer: pull every DPU's y, pack the real rows into one vector, push its first n entries as x
(the same buffer for every DPU), push the layer's weights, launch. Which step each call is
timed in follows the calibration rows (cnmtune/data/calibration: uPIMulator's artifact), not
PrIM's host/app.c: the y pull and the x push of layers 1 and 2 are Inter-DPU time, the weights
of every layer CPU-DPU time (uPIMulator's tools/upmem_reg_model/src/benchmark/mlp.py counts them
so). PrIM's app.c times W_1 and W_2 inside its Inter-DPU timer, which it restarts at every layer,
so it would print the last layer's pull + x push + W_2 push (4 MB per DPU at n = 2048 on 4 DPUs).
The rows measure 0.29-0.50 ms of Inter-DPU time at every n and DPU count, too little for any
weight push, and 62.6 ms of CPU-DPU time at n = 2048 on 4 DPUs: 0.77 GB/s if it holds all three
layers' weights (48 MB), near VA's 1.0-1.3 GB/s at 4 DPUs, but 0.27 GB/s for W_0 alone. The DPU
program is PrIM's GEMV loop (common/gemv_rows.h).

Remaining differences from PrIM:
- rows sit in MRAM at stride n_pad (zero-padded to even length), PrIM's at stride n with a
  misalignment fix-up for odd n: none for even n (every preset, PrIM's runs); for odd n PrIM
  spends one more 8-byte DMA and a 2^BL/4-element shift per block of every other row;
- x's padding element (odd n) is zero, PrIM's is the next output: never read by the DPU;
- PrIM's error printf in the tail loop (unreachable) is left out: binary size only.
"""

from typing import ClassVar

import numpy as np
from gemv_host import GemvLayout

from cnmtune.dpu.memory_map import DEFAULT_STACK_SIZE, WRAM_SIZE
from cnmtune.errors import KernelError
from cnmtune.runtime.workload import Workload

NUM_LAYERS = 3
WRAM_GLOBALS = 256  # bytes: a bound on this kernel's WRAM globals (arguments, barrier, ...)


class MlpWorkload(Workload):
    name = "mlp"
    defines = {"BL": 10}
    define_choices = {"BL": tuple(range(3, 12))}
    tuned_defines = ("BL",)
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

    def launch_count(self):
        return NUM_LAYERS

    def inputs(self):
        i = np.arange(self.size * self.n_cols, dtype=np.int64).reshape(self.size, self.n_cols)
        arrays = {f"W{l}": np.where(i % 100 >= 98, (l + i) % 2, 0).astype(np.int32) for l in range(NUM_LAYERS)}
        j = np.arange(self.n_cols)
        arrays["x"] = np.where(j % 50 >= 48, j % 2, 0).astype(np.int32)
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

    def execute(self, device, inputs):
        layout = GemvLayout(self.name, self.size, self.n_cols, self.nr_dpus, 1 << int(self.config["BL"]))
        layout.push_arguments(device)
        layout.push_matrix(device, inputs["W0"])
        layout.push_vector(device, inputs["x"])
        device.launch()
        for l in range(1, NUM_LAYERS):
            with device.inter_dpu():  # PrIM's Inter-DPU step: this layer's output is the next one's input
                layout.push_vector(device, self._next_input(layout.pull_result(device, np.int32)))
            layout.push_matrix(device, inputs[f"W{l}"])  # CPU-DPU time, as the calibration rows count it
            device.launch()
        return {"y": layout.pull_result(device, np.int32)}
