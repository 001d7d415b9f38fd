"""BS: binary search of many int64 queries in a sorted int64 array (PrIM), cnmtune's own version.

Size = length of the sorted array (the calibration CSV's size_param), at least 2^BL elements
(PrIM's DPU reads the block 2^BL elements before the array's end for every query). Inputs as
PrIM: the array holds 1..size and is copied whole to every DPU; there are size/8 queries (at
least one; the calibration's count), rounded up to a multiple of DPUs x tasklets as PrIM
rounds its query count; query i is the value i (so query 0, and any query above size, is
absent and takes PrIM's "NOT found" path, a DPU printf). The queries are split in equal
consecutive slices across DPUs, then across tasklets.

Compile time: BL, log2 of the search block in bytes (default 8 = the 256-byte blocks PrIM
always uses, since its Makefile never passes BL; 3..11 allowed). WRAM: each tasklet allocates
three blocks (as PrIM) and 264 bytes next to its 1 KiB stack, so BL = 9 runs 16 tasklets and
BL = 11 up to 8; the workload refuses more (KernelError) instead of letting mem_alloc fault.

Host side, PrIM's transfers (call, memory, bytes): arguments {input_size, slice_per_dpu (uint64
each), kernel, reserved (uint32 each)} pushed to DPU_INPUT_ARGUMENTS (WRAM) of every DPU, the
same buffer for all; the array pushed to heap offset 0 (MRAM), the same buffer for every DPU;
each DPU's query slice at heap offset size*8; after the launch, PrIM's DPU-CPU step: one push
from DPU_RESULTS (WRAM, 8 bytes per tasklet: each tasklet's last found index), reduced to PrIM's
result, the largest found index. The DPU work per query is PrIM's: the query read, the two
unused block reads, the bisection with whole-block scans, the final block and remainder scans
(see dpu/task.c).

Remaining differences from PrIM:
- every query's result is also kept and checked: the DPU gathers each found index (or -1) in
  WRAM and writes them 32 at a time (one 256-byte write per 32 queries, next to PrIM's about
  3 + log2(size / 32) block reads per query: well under 1 % more DMA); the host reads them
  (each DPU's slice, int64 at heap offset (size+slice)*8) outside the timed steps
  (Device.untimed: PrIM's host reads DPU_RESULTS only) and checks all of them exactly, and
  the largest found index as PrIM does;
- when the final range is exactly one block, the remainder is empty and no DMA is issued
  (PrIM issues a 0-byte mram_read): absent queries only (query 0 at the presets), one DMA less.
"""

import numpy as np

from cnmtune.dpu.memory_map import MRAM_SIZE
from cnmtune.errors import KernelError
from cnmtune.runtime.device import DPU_MRAM_HEAP_POINTER_NAME
from cnmtune.runtime.workload import Workload

NOT_FOUND = -1
FOUND_BATCH = 32  # found indices per MRAM write (dpu/task.c)
RESULT_BYTES = 8  # one DPU_RESULTS entry per tasklet (support/common.h, bs_results_t)


class BinarySearch(Workload):
    name = "bs"
    defines = {"BL": 8}
    define_choices = {"BL": tuple(range(3, 12))}
    tuned_defines = ("BL",)
    nr_tasklets = 16
    sizes = {"small": 4096, "default": 131_072, "large": 2_097_152}
    size_unit = "sorted-array elements (queries = size / 8)"

    def __init__(self, size, nr_dpus, nr_tasklets, defines=None, seed=0):
        super().__init__(size, nr_dpus, nr_tasklets, defines, seed)
        block = 1 << int(self.config["BL"])  # bytes; PrIM's extra read starts `block` elements before the end
        if size < block:
            raise KernelError(f"{self.name}: the array must hold at least 2^BL = {block} elements "
                              f"(PrIM reads the block 2^BL elements before its end), got {size}")
        self.check_wram(3 * block + 8 + 8 * FOUND_BATCH)  # three blocks, the query, the found batch

    @property
    def nr_queries(self) -> int:
        """size/8 rounded up to a multiple of DPUs x tasklets (PrIM rounds its query count)."""
        unit = self.nr_dpus * self.tasklets
        wanted = max(1, self.size // 8)
        return -(-wanted // unit) * unit

    def processed_size(self):
        """The array size whose size / 8 queries the DPUs answer: 8 x the rounded query count."""
        return 8 * self.nr_queries

    def inputs(self):
        array = np.arange(1, self.size + 1, dtype=np.int64)
        queries = np.arange(self.nr_queries, dtype=np.int64)
        return {"array": array, "queries": queries}

    def reference(self, inputs):
        array, queries = inputs["array"], inputs["queries"]
        pos = np.searchsorted(array, queries)
        hit = pos < array.size
        hit[hit] = array[pos[hit]] == queries[hit]
        found = np.where(hit, pos, NOT_FOUND).astype(np.int64)
        return {"found": found, "largest_found": np.array([found.max()], np.int64)}

    def execute(self, device, inputs):
        array, queries = inputs["array"], inputs["queries"]
        n = array.size
        slice_per_dpu = queries.size // self.nr_dpus
        if (n + 2 * slice_per_dpu) * 8 > MRAM_SIZE:
            raise KernelError(f"{self.name}: the array and {slice_per_dpu} queries per DPU do not fit in MRAM")
        args = np.zeros(3, dtype=np.uint64)
        args[0], args[1] = n, slice_per_dpu  # word 2 = kernel 0, reserved 0
        device.push_to("DPU_INPUT_ARGUMENTS", [args] * self.nr_dpus)
        device.push_to(DPU_MRAM_HEAP_POINTER_NAME, [array] * self.nr_dpus)
        device.push_to(DPU_MRAM_HEAP_POINTER_NAME, np.split(queries, self.nr_dpus), offset=n * 8)
        device.launch()
        results = device.push_from("DPU_RESULTS", RESULT_BYTES * self.tasklets)
        largest = max(np.frombuffer(r, np.int64).max() for r in results)
        with device.untimed():
            chunks = device.push_from(DPU_MRAM_HEAP_POINTER_NAME, slice_per_dpu * 8, offset=(n + slice_per_dpu) * 8)
        return {"found": np.concatenate([np.frombuffer(c, np.int64) for c in chunks]),
                "largest_found": np.array([largest], np.int64)}
