"""UNI: unique, i.e. removal of consecutive duplicates (PrIM), cnmtune's own implementation.

Keeps an element only if it differs from the element before it. int64.
Size = total number of input elements over all DPUs (PrIM's strong scaling, `-x 1`).

Compile time: BL, log2 of the MRAM->WRAM block in bytes (default 10; 3..11 keeps every DMA
in 8..2048 B). Each tasklet allocates two 2^BL-byte WRAM buffers, so BL = 11 runs up to 12
tasklets; BL <= 10 runs every tasklet count up to 16 (and BL <= 9 up to 24).

Host side as PrIM: A[i] = i for even i and i + 1 for odd i (values come in pairs). The vector
is split in equal chunks of ceil(N / DPUs) elements, each rounded up to a multiple of
NR_TASKLETS x 2^BL/8 elements so that every tasklet processes the same number of blocks; the
padding repeats the last element (so it is removed). Arguments {size_bytes, kernel}
(2 x uint32) by a parallel push; the input by a parallel push to heap offset 0; the DPU writes
its kept elements at heap offset size_bytes. After the launch: parallel pull of DPU_RESULTS
(NR_TASKLETS x {t_count, first, last}, 24 bytes each); a DPU whose first element equals the
previous DPU's last one contributes one element less; exclusive scan of the counts; then a
serial copy_from of each DPU's t_count elements into position scan - 1 or scan (the
duplicate of the previous DPU's last element is overwritten), as PrIM does.

Inputs as PrIM (A[i] = i for even i, i + 1 for odd i; padding repeats the last element) and
PrIM's DPU work: the block-local unique, the handshake chain, the output write, then the
round's barrier.

Remaining differences from PrIM:
- the running count of earlier rounds is kept privately by every tasklet (the last tasklet
  of the chain publishes each round's total before the barrier) instead of one shared count
  that the last tasklet overwrites while others may still read it (PrIM's race, benign only
  under round-robin issue); the chain hands on the prefix with boundary duplicates already
  subtracted instead of a separate running count of them: a few instructions per round;
- each tasklet writes exactly its kept elements (PrIM writes one stale element more when the
  first is a boundary duplicate, which with these inputs is every block but the DPU's first:
  8 bytes less per 512-byte write); a block with nothing to write issues no DMA (never here);
- the first block of a DPU has no predecessor (a flag), instead of PrIM's 0xFFFFFFFF
  sentinel, which drops the first element if it happens to equal that value (never here);
- one start barrier (PrIM has a second one after initialising its shared values): negligible;
- every tasklet's DPU_RESULTS entry holds the DPU's count: one WRAM store per tasklet.
"""

from typing import ClassVar

import numpy as np

from cnmtune.dpu.memory_map import MRAM_SIZE
from cnmtune.errors import KernelError
from cnmtune.runtime.device import DPU_MRAM_HEAP_POINTER_NAME
from cnmtune.runtime.workload import Workload

RESULT_BYTES = 24  # sizeof(uni_result_t)


class Unique(Workload):
    name = "uni"
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
        i = np.arange(self.size, dtype=np.int64)
        return {"A": i + (i & 1)}

    def reference(self, inputs):
        a = inputs["A"]
        keep = np.ones(a.size, bool)
        keep[1:] = a[1:] != a[:-1]
        return {"B": a[keep]}

    def execute(self, device, inputs):
        a = inputs["A"]
        chunk = self.chunk
        size_bytes = chunk * 8
        if 2 * size_bytes > MRAM_SIZE:
            raise KernelError(f"{self.name}: {chunk} elements per DPU (input and output) do not fit in MRAM")
        padded = np.full(chunk * self.nr_dpus, a[-1], np.int64)
        padded[: a.size] = a
        device.push_to("DPU_INPUT_ARGUMENTS", [np.array([size_bytes, 0], np.uint32)] * self.nr_dpus)
        device.push_to(DPU_MRAM_HEAP_POINTER_NAME, np.split(padded, self.nr_dpus))
        device.launch()
        raw = device.push_from("DPU_RESULTS", RESULT_BYTES * self.tasklets)
        results = [np.frombuffer(r, np.int64).reshape(self.tasklets, 3) for r in raw]
        counts = [int(r[-1, 0]) for r in results]
        # a DPU starting with the previous DPU's last element overlaps it by one: its first kept
        # element is dropped (a sampled run's unsampled DPUs read zeros, so counts need not add up)
        overlap = [0] + [int(results[d][0, 1] == results[d - 1][-1, 2]) for d in range(1, self.nr_dpus)]
        kept = [np.frombuffer(device.copy_from(dpu, DPU_MRAM_HEAP_POINTER_NAME, count * 8, offset=size_bytes),
                              np.int64)[overlap[dpu]:] for dpu, count in enumerate(counts)]
        return {"B": np.concatenate(kept)}
