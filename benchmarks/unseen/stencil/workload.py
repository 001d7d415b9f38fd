"""stencil: one step of a 1-D 5-point binomial smoothing (Jacobi-style) on an int32 vector:
y[i] = (x[i-2] + 4 x[i-1] + 6 x[i] + 4 x[i+1] + x[i+2]) >> 4, with zeros beyond both ends.

Written for issue 40's ablation (benchmarks/unseen/README.md): no dataset or training reads it.

Size = elements of x (and of y), total over all DPUs; presets small (4,096) and default
(2,097,152: 128 KiB of x and of y per DPU on 64 DPUs). Compile time: BL, log2 of the output
block in bytes a tasklet computes per round (tuned, 3..11: every DMA within 8..2048 B). WRAM:
each tasklet allocates its output block and an input window of the block plus 16 bytes.

Host side: x is split in equal per-DPU parts of ceil(size / DPUs) elements rounded up to even
(8-byte words), zero-padded at the end. Every DPU gets its part with a halo of the two
elements before it and the two after it (zeros past either end of x, so the padding acts as
the boundary), 16 bytes more than the part, at heap offset 0; the DPU writes y after it.
"""

import numpy as np

from cnmtune.dpu.memory_map import MRAM_SIZE
from cnmtune.errors import KernelError
from cnmtune.runtime.device import DPU_MRAM_HEAP_POINTER_NAME
from cnmtune.runtime.workload import Workload

HALO = 2  # elements on each side: support/common.h
VALUE_LIMIT = 1 << 20  # inputs in [-2^20, 2^20]: the weighted sums (x 16) stay within int32
WEIGHTS = (1, 4, 6, 4, 1)


class Stencil(Workload):
    name = "stencil"
    defines = {"BL": 10}
    define_choices = {"BL": tuple(range(3, 12))}
    tuned_defines = ("BL",)
    nr_tasklets = 16
    sizes = {"small": 4096, "default": 2_097_152}

    def __init__(self, size, nr_dpus, nr_tasklets, defines=None, seed=0):
        super().__init__(size, nr_dpus, nr_tasklets, defines, seed)
        self.check_wram((2 << int(self.config["BL"])) + 4 * 2 * HALO)  # window and output block
        if (2 * self.per_dpu + 2 * HALO) * 4 > MRAM_SIZE:
            raise KernelError(f"{self.name}: {self.per_dpu} elements per DPU (x and y) do not fit in MRAM")

    @property
    def per_dpu(self) -> int:
        """Elements per DPU: ceil(size / DPUs), rounded up to whole 8-byte words."""
        return self.part_per_dpu(2)

    def processed_size(self):
        """Every DPU smooths its whole padded part."""
        return self.per_dpu * self.nr_dpus

    def inputs(self):
        rng = np.random.default_rng(self.seed)
        return {"x": rng.integers(-VALUE_LIMIT, VALUE_LIMIT + 1, self.size, dtype=np.int32)}

    def reference(self, inputs):
        padded = np.pad(inputs["x"].astype(np.int64), HALO)
        total = sum(w * padded[k:k + self.size] for k, w in enumerate(WEIGHTS))
        return {"y": (total >> 4).astype(np.int32)}

    def execute(self, device, inputs):
        per_dpu = self.per_dpu
        size_bytes = per_dpu * 4
        # x with HALO zeros before it and after its padded end: DPU d's window starts at d * per_dpu
        x = np.zeros(per_dpu * self.nr_dpus + 2 * HALO, np.int32)
        x[HALO:HALO + self.size] = inputs["x"]
        windows = [x[d * per_dpu:(d + 1) * per_dpu + 2 * HALO] for d in range(self.nr_dpus)]
        device.broadcast("DPU_INPUT_ARGUMENTS", np.array([size_bytes, 0], np.uint32))
        device.push_to(DPU_MRAM_HEAP_POINTER_NAME, windows)
        device.launch()
        chunks = device.push_from(DPU_MRAM_HEAP_POINTER_NAME, size_bytes, offset=size_bytes + 2 * HALO * 4)
        return {"y": np.concatenate([np.frombuffer(c, np.int32) for c in chunks])[: self.size]}
