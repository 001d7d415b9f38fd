"""bitonic: sort every run of 512 consecutive int32 of a vector with a bitonic sorting network
in WRAM (the last run padded with INT32_MAX); the host checks each run against numpy's sort.

Written for issue 40's ablation (benchmarks/unseen/README.md): no dataset or training reads it.

Size = elements of the vector, total over all DPUs; presets small (4,096: 8 runs) and default
(1,048,576: 64 KiB, 32 runs per DPU on 64 DPUs). Compile time: BL, log2 of the block in bytes
a tasklet moves per DMA when it loads or stores a run (tuned, 3..11; a run is 2 KiB whatever
BL, so BL changes only the DMA count). WRAM: one run (2 KiB) per tasklet, so 21 tasklets at
most.

Host side: every DPU's part is ceil(size / DPUs) elements rounded up to whole runs, padded
with INT32_MAX (which sorts to the end of the last run); the part goes to heap offset 0, the
DPU sorts each run in place, the host pulls the parts back.
"""

import numpy as np

from cnmtune.dpu.memory_map import MRAM_SIZE
from cnmtune.errors import KernelError
from cnmtune.runtime.device import DPU_MRAM_HEAP_POINTER_NAME
from cnmtune.runtime.workload import Workload

RUN = 512  # elements per sorted run: RUN_ELEMS of support/common.h
INT32_MAX = np.iinfo(np.int32).max


class BitonicRuns(Workload):
    name = "bitonic"
    defines = {"BL": 10}
    define_choices = {"BL": tuple(range(3, 12))}
    tuned_defines = ("BL",)
    nr_tasklets = 16
    sizes = {"small": 4096, "default": 1_048_576}
    size_unit = "elements, total over all DPUs (sorted in runs of 512)"

    def __init__(self, size, nr_dpus, nr_tasklets, defines=None, seed=0):
        super().__init__(size, nr_dpus, nr_tasklets, defines, seed)
        self.check_wram(RUN * 4)
        if self.per_dpu * 4 > MRAM_SIZE:
            raise KernelError(f"{self.name}: {self.per_dpu} elements per DPU do not fit in MRAM")

    @property
    def per_dpu(self) -> int:
        """Elements per DPU: ceil(size / DPUs) rounded up to whole runs."""
        return self.part_per_dpu(RUN)

    def processed_size(self):
        """Every DPU sorts its whole padded part."""
        return self.per_dpu * self.nr_dpus

    def inputs(self):
        return {"x": np.random.default_rng(self.seed).integers(np.iinfo(np.int32).min, 2**31, self.size,
                                                                 dtype=np.int32)}

    def reference(self, inputs):
        x = inputs["x"]
        padded = np.full(-(-x.size // RUN) * RUN, INT32_MAX, np.int32)
        padded[: x.size] = x
        return {"sorted": np.sort(padded.reshape(-1, RUN), axis=1).ravel()[: x.size]}

    def execute(self, device, inputs):
        per_dpu = self.per_dpu
        x = np.full(per_dpu * self.nr_dpus, INT32_MAX, np.int32)
        x[: self.size] = inputs["x"]
        device.broadcast("DPU_INPUT_ARGUMENTS", np.array([per_dpu * 4, 0], np.uint32))
        device.push_to(DPU_MRAM_HEAP_POINTER_NAME, np.split(x, self.nr_dpus))
        device.launch()
        chunks = device.push_from(DPU_MRAM_HEAP_POINTER_NAME, per_dpu * 4)
        return {"sorted": np.concatenate([np.frombuffer(c, np.int32) for c in chunks])[: self.size]}
