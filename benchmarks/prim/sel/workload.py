"""SEL: select / stream compaction (PrIM), cnmtune's own implementation.

Keeps the elements that do not satisfy the predicate (the value is even), in order. uint64.
Size = total number of input elements over all DPUs (PrIM's strong scaling, `-x 1`).

Compile time: BL, log2 of the MRAM->WRAM block in bytes (default 10; 3..11 keeps every DMA
in 8..2048 B). Each tasklet allocates two 2^BL-byte WRAM buffers, so BL = 11 runs up to 12
tasklets; BL <= 10 runs every tasklet count up to 16 (and BL <= 9 up to 24).

Host side as PrIM: A[i] = i + 1. The vector is split in equal chunks of ceil(N / DPUs)
elements, each rounded up to a multiple of NR_TASKLETS x 2^BL/8 elements so that every
tasklet processes the same number of blocks; the padding is zeros (even, so removed).
Arguments {size_bytes, kernel} (2 x uint32) by a parallel push to DPU_INPUT_ARGUMENTS; the
input by a parallel push to the MRAM heap at offset 0; the DPU writes the kept elements at
heap offset size_bytes. After the launch: parallel pull of DPU_RESULTS (NR_TASKLETS x 8 bytes;
the last entry is the DPU's count), an exclusive scan of the counts on the host, then a
serial copy_from of count x 8 bytes from each DPU into the output at its offset.

Inputs and DPU work as PrIM's (the block-local select, the handshake chain, the barrier, the
output write).

Remaining differences from PrIM:
- the running count of earlier rounds is kept privately by every tasklet (the last tasklet
  of the handshake chain publishes each round's total before the barrier), instead of one
  shared count that the last tasklet overwrites after its write while others may still
  read it (PrIM's race, benign only under round-robin issue): a few instructions per round;
- a block with no kept element issues no DMA (PrIM would issue a 0-byte write): only blocks
  made entirely of padding zeros, one DMA less each;
- one start barrier (PrIM has a second one after initialising its shared count): negligible;
- every tasklet's DPU_RESULTS entry holds the DPU's count (PrIM sets only the last): one WRAM
  store per tasklet.
"""

from typing import ClassVar

import numpy as np

from cnmtune.dpu.memory_map import MRAM_SIZE
from cnmtune.errors import KernelError
from cnmtune.runtime.device import DPU_MRAM_HEAP_POINTER_NAME
from cnmtune.runtime.workload import Workload

class Select(Workload):
    name = "sel"
    defines = {"BL": 10}
    define_choices = {"BL": tuple(range(3, 12))}
    tuned_defines = ("BL",)
    nr_tasklets = 16
    sizes = {"small": 4096, "default": 3_932_160, "large": 15_728_640}
    params: ClassVar[dict[str, object]] = {}

    def __init__(self, size, nr_dpus, nr_tasklets, defines=None, seed=0):
        super().__init__(size, nr_dpus, nr_tasklets, defines, seed)
        self.check_wram(2 << int(self.config["BL"]))

    @property
    def chunk(self) -> int:
        """Elements per DPU: ceil(N / DPUs) rounded up to whole rounds of NR_TASKLETS blocks."""
        unit = self.tasklets * ((1 << int(self.config["BL"])) // 8)
        per_dpu = -(-self.size // self.nr_dpus)
        return -(-per_dpu // unit) * unit

    def processed_size(self):
        """Every DPU processes its whole padded chunk."""
        return self.chunk * self.nr_dpus

    def inputs(self):
        return {"A": np.arange(1, self.size + 1, dtype=np.uint64)}

    def reference(self, inputs):
        a = inputs["A"]
        return {"B": a[a % 2 != 0]}

    def execute(self, device, inputs):
        chunk = self.chunk
        size_bytes = chunk * 8
        if 2 * size_bytes > MRAM_SIZE:
            raise KernelError(f"{self.name}: {chunk} elements per DPU (input and output) do not fit in MRAM")
        padded = np.zeros(chunk * self.nr_dpus, np.uint64)
        padded[: self.size] = inputs["A"]
        device.push_to("DPU_INPUT_ARGUMENTS", [np.array([size_bytes, 0], np.uint32)] * self.nr_dpus)
        device.push_to(DPU_MRAM_HEAP_POINTER_NAME, np.split(padded, self.nr_dpus))
        device.launch()
        results = device.push_from("DPU_RESULTS", 8 * self.tasklets)
        counts = [int(np.frombuffer(raw, np.uint64)[-1]) for raw in results]
        offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)  # exclusive scan
        out = np.zeros(int(offsets[-1]), np.uint64)
        for dpu, count in enumerate(counts):
            if count:
                raw = device.copy_from(dpu, DPU_MRAM_HEAP_POINTER_NAME, count * 8, offset=size_bytes)
                out[offsets[dpu]:offsets[dpu] + count] = np.frombuffer(raw, np.uint64)
        return {"B": out}
