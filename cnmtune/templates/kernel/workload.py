"""{{name}}: Y = alpha * X + Y on int32 vectors (a scaled vector add), made by `cnmtune new`.

Size = elements of X (and of Y), total over all DPUs. The host splits both vectors in equal
per-DPU chunks (zero-padded to whole 8-byte words: a DMA moves multiples of 8 bytes), puts X at
the start of each DPU's MRAM heap and Y right after it, launches once and reads Y back.
docs/own_kernel.md in the cnmtune repository walks through every part of this file and of
dpu/task.c and support/common.h.
"""

import numpy as np

from cnmtune.errors import KernelError
from cnmtune.runtime.device import DPU_MRAM_HEAP_POINTER_NAME
from cnmtune.runtime.workload import Workload

MAX_ALPHA = 2**20  # with inputs in [-1000, 1000], alpha * X + Y stays within int32


class ScaledAdd(Workload):
    """Y = alpha * X + Y on int32 vectors."""

    name = "{{name}}"  # `cnmtune run {{name}}`, the store and the reports use this name
    defines = {"BL": 10}  # compiled as -DBL=10 unless `-D BL=...` or the tuner chooses another
    define_choices = {"BL": tuple(range(3, 12))}  # 2^BL-byte blocks: 8..2048 bytes, the DMA limits
    tuned_defines = ("BL",)  # BL changes only the speed, never Y: `cnmtune tune` searches its choices
    nr_tasklets = 16  # NR_TASKLETS unless --tasklets says otherwise
    sizes = {"small": 4096, "default": 65536}  # presets for --size
    params = {"alpha": 3}  # run-time parameters: --param alpha=5

    def __init__(self, size, nr_dpus, nr_tasklets, defines=None, seed=0, **params):
        super().__init__(size, nr_dpus, nr_tasklets, defines, seed, **params)
        self.check_wram(2 << self.config["BL"])  # each tasklet allocates two blocks of 2^BL bytes
        if abs(self.param_values["alpha"]) > MAX_ALPHA:
            raise KernelError(f"{self.name}: alpha must be within +-{MAX_ALPHA} (int32 results), "
                              f"got {self.param_values['alpha']}")

    def inputs(self):
        rng = np.random.default_rng(self.seed)
        return {key: rng.integers(-1000, 1001, self.size, dtype=np.int32) for key in ("X", "Y")}

    def reference(self, inputs):
        return {"Y": self.param_values["alpha"] * inputs["X"] + inputs["Y"]}

    def execute(self, device, inputs):
        per_dpu = -(-self.size // self.nr_dpus)  # ceil(size / DPUs) elements
        per_dpu += per_dpu % 2  # whole 8-byte words of int32
        size_bytes = per_dpu * 4
        x, y = (np.zeros(per_dpu * self.nr_dpus, np.int32) for _ in range(2))
        x[: self.size], y[: self.size] = inputs["X"], inputs["Y"]
        # arguments_t of support/common.h: {uint32_t size_bytes; int32_t alpha}, the same on every DPU
        device.broadcast("DPU_INPUT_ARGUMENTS", np.array([size_bytes, self.param_values["alpha"]], np.int32))
        device.push_to(DPU_MRAM_HEAP_POINTER_NAME, np.split(x, self.nr_dpus))
        device.push_to(DPU_MRAM_HEAP_POINTER_NAME, np.split(y, self.nr_dpus), offset=size_bytes)
        device.launch()
        chunks = device.push_from(DPU_MRAM_HEAP_POINTER_NAME, size_bytes, offset=size_bytes)
        return {"Y": np.concatenate([np.frombuffer(chunk, np.int32) for chunk in chunks])[: self.size]}
