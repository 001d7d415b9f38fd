"""example-va: C = A + B on int32 vectors, the cnmtune twin of examples/va/host/app.c.

Size = elements of each vector, total over all DPUs (app.c's -i). Inputs and transfers are the
host program's for one timed rep without warmup: A[i] = (7i + 3) % 1024, B[i] = (13i + 5) % 1024;
equal chunks of ceil(N / DPUs) elements rounded up to an even count (whole 8-byte words); per
DPU the arguments {valid_bytes, chunk_bytes}, then A at heap offset 0, B at chunk_bytes; one
launch; C pulled from 2 * chunk_bytes.
"""

import numpy as np

from cnmtune.errors import KernelError
from cnmtune.runtime.device import DPU_MRAM_HEAP_POINTER_NAME
from cnmtune.runtime.workload import Workload

MRAM_BYTES = 64 << 20


class ExampleVectorAdd(Workload):
    """C = A + B on int32 vectors (examples/va)."""

    name = "example-va"
    defines = {"BL": 10}
    define_choices = {"BL": tuple(range(3, 12))}
    tuned_defines = ("BL",)
    nr_tasklets = 16
    sizes = {"small": 4096, "default": 262_144, "large": 2_621_440}

    def __init__(self, size, nr_dpus, nr_tasklets, defines=None, seed=0, **params):
        super().__init__(size, nr_dpus, nr_tasklets, defines, seed, **params)
        self.check_wram(2 << int(self.config["BL"]))  # two blocks per tasklet
        if 3 * self.per_dpu * 4 > MRAM_BYTES:
            raise KernelError(f"{self.name}: {size} elements do not fit in the MRAM of {nr_dpus} DPU(s)")

    @property
    def per_dpu(self) -> int:
        """Elements per DPU: ceil(N / DPUs) rounded up to even (chunks of whole 8-byte words)."""
        per = -(-self.size // self.nr_dpus)
        return per + per % 2

    def inputs(self):  # the seed is unused: app.c's inputs are a fixed formula
        i = np.arange(self.size, dtype=np.int64)
        return {"A": ((i * 7 + 3) % 1024).astype(np.int32), "B": ((i * 13 + 5) % 1024).astype(np.int32)}

    def reference(self, inputs):
        return {"C": inputs["A"] + inputs["B"]}

    def execute(self, device, inputs):
        per_dpu, chunk_bytes = self.per_dpu, self.per_dpu * 4
        a, b = (np.zeros(per_dpu * self.nr_dpus, np.int32) for _ in range(2))
        a[: self.size], b[: self.size] = inputs["A"], inputs["B"]
        args = []
        for dpu in range(self.nr_dpus):
            count = min(per_dpu, max(0, self.size - dpu * per_dpu))
            args.append(np.array([(count * 4 + 7) & ~7, chunk_bytes], np.uint32))  # va_args_t
        device.push_to("DPU_INPUT_ARGUMENTS", args)
        device.push_to(DPU_MRAM_HEAP_POINTER_NAME, np.split(a, self.nr_dpus))
        device.push_to(DPU_MRAM_HEAP_POINTER_NAME, np.split(b, self.nr_dpus), offset=chunk_bytes)
        device.launch()
        chunks = device.push_from(DPU_MRAM_HEAP_POINTER_NAME, chunk_bytes, offset=2 * chunk_bytes)
        return {"C": np.concatenate([np.frombuffer(c, np.int32) for c in chunks])[: self.size]}
