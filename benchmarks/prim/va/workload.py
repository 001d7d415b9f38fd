"""VA: element-wise vector addition (PrIM), cnmtune's own implementation.

Compile time: BL (log2 of the block in bytes; 3..11 keeps every DMA within 8..2048 B) and the
element type as a PrIM-style bare define (INT32 by default; UINT32, INT64, UINT64, FLOAT,
DOUBLE, CHAR, SHORT). Host side as PrIM: the vectors are split in equal chunks of
ceil(N / DPUs) elements rounded up to 8 bytes (parallel pushes need equal sizes); A goes to
the MRAM heap, B right after it; the DPU writes A + B over B; the host pulls the B region.
Size = total number of elements over all DPUs (PrIM's strong scaling, `-x 1`).

Inputs as PrIM: A[i] and B[i] are `(T) rand()` values (c_rand: PrIM's range, not libc's
sequence). The DPU work is PrIM's (same loop, block size and element type).

Remaining differences from PrIM:
- the last DPU's valid size is rounded up to 8 bytes (PrIM: its element count to a multiple
  of 8 when not 8-byte aligned, and with the compile-time DPU count): at most 7 padding
  elements on one DPU, none at the presets; effect on DPU time: none measurable;
- the libc random sequence: none (an add's cost does not depend on its operands; the float
  types see PrIM's value range).
"""

import numpy as np
from c_rand import c_rand

from cnmtune.runtime.device import DPU_MRAM_HEAP_POINTER_NAME
from cnmtune.runtime.workload import ELEMENT_TYPES, Workload


class VectorAdd(Workload):
    name = "va"
    defines = {"BL": 10, "INT32": None}
    define_choices = {"BL": tuple(range(3, 12))}
    tuned_defines = ("BL",)
    nr_tasklets = 16
    sizes = {"small": 4096, "default": 2_621_440, "large": 8_388_608}
    flag_groups = {"element type": tuple(ELEMENT_TYPES)}

    def __init__(self, size, nr_dpus, nr_tasklets, defines=None, seed=0):
        super().__init__(size, nr_dpus, nr_tasklets, defines, seed)
        self.check_wram(2 << int(self.config["BL"]))  # block_a and block_b

    @property
    def dtype(self) -> np.dtype:
        return np.dtype(ELEMENT_TYPES[self.flag("element type")])

    def inputs(self):
        a, b = c_rand(self.seed, 2 * self.size, self.dtype).reshape(self.size, 2).T.copy()  # A[i], B[i] drawn in turn
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
