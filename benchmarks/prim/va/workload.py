"""VA: element-wise vector addition (PrIM), cnmtune's own implementation.

Compile time: BL (log2 of the block in bytes; 3..11 keeps every DMA within 8..2048 B) and the
element type as a PrIM-style bare define (INT32 by default; UINT32, INT64, UINT64, FLOAT,
DOUBLE, CHAR, SHORT). Host side as PrIM: the vectors are split in equal chunks of
ceil(N / DPUs) elements rounded up to 8 bytes (parallel pushes need equal sizes); A goes to
the MRAM heap, B right after it; the DPU writes A + B over B; the host pulls the B region.
Size = total number of elements over all DPUs (PrIM's strong scaling, `-x 1`).
"""

import numpy as np

from cnmtune.runtime.device import DPU_MRAM_HEAP_POINTER_NAME
from cnmtune.runtime.workload import ELEMENT_TYPES, Workload


class VectorAdd(Workload):
    name = "va"
    defines = {"BL": 10, "INT32": None}
    define_choices = {"BL": tuple(range(3, 12))}
    nr_tasklets = 16
    sizes = {"small": 4096, "default": 2_621_440, "large": 8_388_608}
    flag_groups = {"element type": tuple(ELEMENT_TYPES)}

    @property
    def dtype(self) -> np.dtype:
        return np.dtype(ELEMENT_TYPES[self.flag("element type")])

    def inputs(self):
        rng = np.random.default_rng(self.seed)
        if self.dtype.kind == "f":
            a, b = (rng.uniform(-1e3, 1e3, self.size).astype(self.dtype) for _ in range(2))
        else:
            info = np.iinfo(self.dtype)
            a, b = (rng.integers(info.min, info.max, self.size, dtype=self.dtype, endpoint=True) for _ in range(2))
        return {"A": a, "B": b}

    def reference(self, inputs):
        with np.errstate(over="ignore"):
            return {"C": inputs["A"] + inputs["B"]}

    def execute(self, device, inputs):
        itemsize = self.dtype.itemsize
        per_dpu = -(-self.size // self.nr_dpus)
        per_dpu += -per_dpu % max(1, 8 // itemsize)  # chunk bytes a multiple of 8
        transfer = per_dpu * itemsize
        padded = {k: np.zeros(per_dpu * self.nr_dpus, self.dtype) for k in ("A", "B")}
        for key in padded:
            padded[key][: self.size] = inputs[key]
        args = []
        for dpu in range(self.nr_dpus):
            valid = max(0, min(per_dpu, self.size - dpu * per_dpu)) * itemsize
            valid += -valid % 8  # the last DPU streams whole 8-byte words
            args.append(np.array([valid, transfer, 0, 0], dtype=np.uint32))
        device.push_to("DPU_INPUT_ARGUMENTS", args)
        device.push_to(DPU_MRAM_HEAP_POINTER_NAME, np.split(padded["A"], self.nr_dpus))
        device.push_to(DPU_MRAM_HEAP_POINTER_NAME, np.split(padded["B"], self.nr_dpus), offset=transfer)
        device.launch()
        chunks = device.push_from(DPU_MRAM_HEAP_POINTER_NAME, transfer, offset=transfer)
        c = np.concatenate([np.frombuffer(chunk, self.dtype) for chunk in chunks])
        return {"C": c[: self.size]}
