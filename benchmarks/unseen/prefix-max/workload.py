"""prefix-max: inclusive running maximum of an int32 vector, y[i] = max(x[0], ..., x[i]), in
two launches (reduce, then scan) with the host combining the tasklets' and DPUs' maxima.

Written for issue 40's ablation (benchmarks/unseen/README.md): no dataset or training reads it.

Size = elements of x, total over all DPUs; presets small (4,096) and default (2,097,152: 128
KiB of x and of y per DPU on 64 DPUs). Compile time: BL, log2 of the block in bytes each
tasklet moves per DMA (tuned, 3..11). WRAM: one block per tasklet.

Host side: every DPU's part is ceil(size / DPUs) elements rounded up to NR_TASKLETS whole
blocks and padded with INT32_MIN (which no maximum sees); x at heap offset 0, y after it.
Launch 1 (kernel 0): every tasklet's slice maximum, pulled from DPU_SLICE_MAX. The host
computes for every slice the maximum of all slices before it (the exclusive prefix max over
the DPUs' slices in order) and pushes each DPU's values to DPU_CARRY (the Inter-DPU step).
Launch 2 (kernel 1): every tasklet scans its slice from its carry into y; the host pulls y.
"""

import numpy as np

from cnmtune.dpu.memory_map import MRAM_SIZE
from cnmtune.errors import KernelError
from cnmtune.runtime.device import DPU_MRAM_HEAP_POINTER_NAME
from cnmtune.runtime.workload import Workload

INT32_MIN = np.iinfo(np.int32).min
SLOT = np.dtype([("value", "<i4"), ("unused", "<i4")])  # prefix_max_slot_t of support/common.h


class PrefixMax(Workload):
    name = "prefix-max"
    defines = {"BL": 10}
    define_choices = {"BL": tuple(range(3, 12))}
    tuned_defines = ("BL",)
    nr_tasklets = 16
    sizes = {"small": 4096, "default": 2_097_152}

    def __init__(self, size, nr_dpus, nr_tasklets, defines=None, seed=0):
        super().__init__(size, nr_dpus, nr_tasklets, defines, seed)
        self.check_wram(1 << int(self.config["BL"]), reserved=1024 + 2 * SLOT.itemsize * nr_tasklets)
        if 2 * self.per_dpu * 4 > MRAM_SIZE:
            raise KernelError(f"{self.name}: {self.per_dpu} elements per DPU (x and y) do not fit in MRAM")

    @property
    def per_dpu(self) -> int:
        """Elements per DPU: ceil(size / DPUs) rounded up to NR_TASKLETS blocks of 2^BL bytes."""
        return self.part_per_dpu(self.tasklets * ((1 << int(self.config["BL"])) // 4))

    def processed_size(self):
        """Every DPU scans its whole padded part."""
        return self.per_dpu * self.nr_dpus

    def launch_count(self):
        return 2

    def inputs(self):
        return {"x": np.random.default_rng(self.seed).integers(INT32_MIN, 2**31, self.size, dtype=np.int32)}

    def reference(self, inputs):
        return {"y": np.maximum.accumulate(inputs["x"])}

    def execute(self, device, inputs):
        per_dpu = self.per_dpu
        size_bytes = per_dpu * 4
        x = np.full(per_dpu * self.nr_dpus, INT32_MIN, np.int32)
        x[: self.size] = inputs["x"]
        device.broadcast("DPU_INPUT_ARGUMENTS", np.array([size_bytes, 0], np.uint32))
        device.push_to(DPU_MRAM_HEAP_POINTER_NAME, np.split(x, self.nr_dpus))
        device.launch()  # kernel 0: slice maxima
        with device.inter_dpu():
            raw = device.push_from("DPU_SLICE_MAX", SLOT.itemsize * self.tasklets)
            maxima = np.concatenate([np.frombuffer(r, SLOT)["value"] for r in raw])  # slices in order
            carry = np.empty(maxima.size, SLOT)
            carry["unused"] = 0
            carry["value"][0] = INT32_MIN
            carry["value"][1:] = np.maximum.accumulate(maxima)[:-1]
            device.push_to("DPU_CARRY", np.split(carry, self.nr_dpus))
            device.broadcast("DPU_INPUT_ARGUMENTS", np.array([size_bytes, 1], np.uint32))
        device.launch()  # kernel 1: the scan from each slice's carry
        chunks = device.push_from(DPU_MRAM_HEAP_POINTER_NAME, size_bytes, offset=size_bytes)
        return {"y": np.concatenate([np.frombuffer(c, np.int32) for c in chunks])[: self.size]}
