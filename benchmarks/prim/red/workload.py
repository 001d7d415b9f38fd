"""RED: sum of a vector (PrIM reduction), cnmtune's own implementation.

Size = total vector length over all DPUs (the calibration CSV's size_param: int64 elements by
default; PrIM's strong scaling, `-x 1`).

Compile time:
- the element type as a PrIM-style bare define: INT64 by default; INT32, UINT32, UINT64,
  FLOAT, DOUBLE, CHAR (int8), SHORT (int16) take precedence over it when given;
- BL, log2 of the MRAM->WRAM block in bytes (default 10; 3..11 keeps every DMA in 8..2048 B);
- VERSION = SINGLE (default: barrier, then tasklet 0 adds the partial sums) or TREE
  (log2 T pairwise rounds); SYNC = HAND (default: handshakes pair tasklet t with t + s) or
  BARRIER (one barrier per round), which only matters for TREE. They are passed as
  `-DVERSION=TREE`, `-DSYNC=BARRIER`; common.h turns the word into a number and rejects others;
- PERF = 0 (default) or 1: every tasklet stores its cycle count in DPU_RESULTS[t].cycles.

Host side as PrIM: the vector is split in equal chunks of ceil(N / DPUs) elements rounded up
to 8 bytes (parallel pushes need equal sizes; the last DPU's valid size is smaller and its
padding is zeros); each chunk goes to the MRAM heap at offset 0; arguments {size_bytes,
kernel} (2 x uint32) go to DPU_INPUT_ARGUMENTS by a parallel push; after the launch the host
pulls every DPU's DPU_RESULTS[NR_TASKLETS] (16 bytes each: the total in the low bytes of a
64-bit slot, then 64-bit cycles) and adds the DPUs' totals (entry 0) in the element type.

Inputs as PrIM: A[i] = `(T) rand()` (c_rand: PrIM's range, not libc's sequence). The DPU work
is PrIM's (same loop, block size, element type and combine). Float totals are compared with a
relative tolerance: the DPU's float partial sums round differently from the host's double sum.

Remaining differences from PrIM:
- every tasklet stores its own partial sum in DPU_RESULTS[t] and, without PERF, a zero cycle
  count (PrIM: tasklet 0 stores the total only): two WRAM stores per tasklet, no measurable
  effect on DPU time;
- the last DPU's valid size is rounded up to 8 bytes (PrIM: its element count to a multiple
  of 8 when not 8-byte aligned): at most 7 padding elements on one DPU, none at the presets;
- TREE: a tasklet leaves the combine loop once it has handed its sum on, and partners beyond
  the last tasklet are skipped (PrIM reads past its array for a non-power-of-two count); with
  SYNC=BARRIER one barrier per round (PrIM: one more after the last round): negligible;
- PrIM's tasklet-combine loops carry #pragma unroll; these stay loops (NR_TASKLETS steps, once
  per launch: a few dozen instructions, negligible).
"""

import numpy as np
from c_rand import c_rand

from cnmtune.dpu.memory_map import MRAM_SIZE
from cnmtune.errors import KernelError
from cnmtune.runtime.device import DPU_MRAM_HEAP_POINTER_NAME
from cnmtune.runtime.workload import ELEMENT_TYPES, Workload

RESULT_BYTES = 16  # sizeof(red_result_t)


class Reduction(Workload):
    name = "red"
    defines = {"BL": 10, "INT64": None, "VERSION": "SINGLE", "SYNC": "HAND", "PERF": 0}
    define_choices = {"BL": tuple(range(3, 12)), "VERSION": ("SINGLE", "TREE"),
                      "SYNC": ("HAND", "BARRIER"), "PERF": (0, 1)}
    tuned_defines = ("BL", "VERSION", "SYNC")
    nr_tasklets = 16
    sizes = {"small": 4096, "default": 2_097_152, "large": 6_553_600}
    flag_groups = {"element type": ("INT64", *(t for t in ELEMENT_TYPES if t != "INT64"))}

    @property
    def dtype(self) -> np.dtype:
        return np.dtype(ELEMENT_TYPES[self.flag("element type")])

    def inputs(self):
        return {"A": c_rand(self.seed, self.size, self.dtype)}

    def reference(self, inputs):
        a = inputs["A"]
        if self.dtype.kind == "f":
            total = a.astype(np.float64).sum()
        else:  # wrap-around sum, modulo 2^64, then truncated to the element type
            total = a.astype(np.uint64).sum(dtype=np.uint64)
        return {"total": np.array([total]).astype(self.dtype)}

    def execute(self, device, inputs):
        itemsize = self.dtype.itemsize
        per_dpu = -(-self.size // self.nr_dpus)
        per_dpu += -per_dpu % max(1, 8 // itemsize)  # chunk bytes a multiple of 8
        transfer = per_dpu * itemsize
        if transfer > MRAM_SIZE:
            raise KernelError(f"{self.name}: {transfer} bytes per DPU do not fit in MRAM")
        padded = np.zeros(per_dpu * self.nr_dpus, self.dtype)
        padded[: self.size] = inputs["A"]
        args = []
        for dpu in range(self.nr_dpus):
            valid = max(0, min(per_dpu, self.size - dpu * per_dpu)) * itemsize
            valid += -valid % 8  # the last DPU streams whole 8-byte words (zero padding)
            args.append(np.array([valid, 0], dtype=np.uint32))
        device.push_to("DPU_INPUT_ARGUMENTS", args)
        device.push_to(DPU_MRAM_HEAP_POINTER_NAME, np.split(padded, self.nr_dpus))
        device.launch()
        results = device.push_from("DPU_RESULTS", RESULT_BYTES * self.tasklets)
        totals = np.array([np.frombuffer(raw, self.dtype, count=1)[0] for raw in results], self.dtype)
        with np.errstate(over="ignore"):
            total = totals.sum(dtype=self.dtype) if self.dtype.kind == "f" else \
                totals.astype(np.uint64).sum(dtype=np.uint64)
        return {"total": np.array([total]).astype(self.dtype)}
