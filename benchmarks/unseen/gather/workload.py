"""gather: out[i] = table[idx[i]] with an int32 table in every DPU's MRAM and uniformly random
indices: one irregular 8-byte DMA per element.

Written for issue 40's ablation (benchmarks/unseen/README.md): no dataset or training reads it.

Size = indices (and outputs), total over all DPUs; presets small (4,096) and default
(2,097,152: 128 KiB of indices and of outputs per DPU on 64 DPUs, next to the table).
Parameter `table`: the table's entries (default 65,536: 256 KiB, copied to every DPU).
Compile time: BL, log2 of the block of indices (and of outputs) in bytes a tasklet streams
per DMA (tuned, 3..11). WRAM: two blocks and one 8-byte word per tasklet.

Host side: the table (zero-padded to whole 8-byte words) goes to heap offset 0 of every DPU;
the indices are split in equal per-DPU parts of ceil(size / DPUs) rounded up to even (padding
indices are 0), after the table; the DPU writes its outputs after its indices.
"""

import numpy as np

from cnmtune.dpu.memory_map import MRAM_SIZE
from cnmtune.errors import KernelError
from cnmtune.runtime.device import DPU_MRAM_HEAP_POINTER_NAME
from cnmtune.runtime.workload import Workload


class Gather(Workload):
    name = "gather"
    defines = {"BL": 10}
    define_choices = {"BL": tuple(range(3, 12))}
    tuned_defines = ("BL",)
    nr_tasklets = 16
    sizes = {"small": 4096, "default": 2_097_152}
    size_unit = "indices, total over all DPUs"
    params = {"table": 65536}

    def __init__(self, size, nr_dpus, nr_tasklets, defines=None, seed=0, **params):
        super().__init__(size, nr_dpus, nr_tasklets, defines, seed, **params)
        self.check_wram((2 << int(self.config["BL"])) + 8)  # indices, outputs, one table word
        entries = self.param_values["table"]
        if entries < 1:
            raise KernelError(f"{self.name}: the table must hold at least 1 entry, got {entries}")
        if self.table_bytes + 2 * self.per_dpu * 4 > MRAM_SIZE:
            raise KernelError(f"{self.name}: a table of {entries} entries and {self.per_dpu} indices per DPU "
                              "do not fit in MRAM")

    @property
    def table_bytes(self) -> int:
        """Bytes of the table in MRAM: its entries rounded up to whole 8-byte words."""
        entries = self.param_values["table"]
        return (entries + entries % 2) * 4

    @property
    def per_dpu(self) -> int:
        """Indices per DPU: ceil(size / DPUs), rounded up to whole 8-byte words."""
        return self.part_per_dpu(2)

    def processed_size(self):
        """Every DPU gathers its whole padded part."""
        return self.per_dpu * self.nr_dpus

    def inputs(self):
        rng = np.random.default_rng(self.seed)
        entries = self.param_values["table"]
        return {"table": rng.integers(np.iinfo(np.int32).min, 2**31, entries, dtype=np.int32),
                "idx": rng.integers(0, entries, self.size, dtype=np.uint32)}

    def reference(self, inputs):
        return {"out": inputs["table"][inputs["idx"]]}

    def execute(self, device, inputs):
        per_dpu, table_bytes = self.per_dpu, self.table_bytes
        size_bytes = per_dpu * 4
        table = np.zeros(table_bytes // 4, np.int32)
        table[: inputs["table"].size] = inputs["table"]
        idx = np.zeros(per_dpu * self.nr_dpus, np.uint32)
        idx[: self.size] = inputs["idx"]
        device.broadcast("DPU_INPUT_ARGUMENTS", np.array([table_bytes, size_bytes], np.uint32))
        device.broadcast(DPU_MRAM_HEAP_POINTER_NAME, table)
        device.push_to(DPU_MRAM_HEAP_POINTER_NAME, np.split(idx, self.nr_dpus), offset=table_bytes)
        device.launch()
        chunks = device.push_from(DPU_MRAM_HEAP_POINTER_NAME, size_bytes, offset=table_bytes + size_bytes)
        return {"out": np.concatenate([np.frombuffer(c, np.int32) for c in chunks])[: self.size]}
