"""Host side shared by SCAN-SSA and SCAN-RSS (PrIM's two prefix-sum variants): cnmtune's own.

Each workload.py imports this module from the suite's common/ directory; they differ in the
DPU program and in which DPU_RESULTS entry carries a DPU's total after the first launch.

Inputs as PrIM: A[i] = `(T) rand()` (c_rand: PrIM's range, not libc's sequence); integer sums
wrap around as in C; float results are compared with a relative tolerance (the DPU's float
sums round differently from the host's double prefix sums).

Remaining differences from PrIM (DPU work otherwise PrIM's: loops, blocks, types, handshakes):
- PrIM fully unrolls its per-block loops (`#pragma unroll` over the REGS elements), and so do
  these kernels; their add loop also has an empty `asm volatile` memory barrier per element
  (no instruction): without it the rv32 proxy compiler hoists all 2 x REGS loads of the
  unrolled add and spills about 1 KiB, overflowing the 1 KiB stack. With it each element is
  ld, add, addc, sd, as PrIM's straight-line code; the barrier may also keep the compiler from
  reordering across elements where the UPMEM compiler could (no effect on the count). Unrolled,
  a block of one-byte elements at the default BL = 10 (1,024 per block) overflows IRAM: CHAR
  needs BL <= 8, SHORT BL <= 9 for SCAN-RSS (whether the UPMEM compiler's code fits is not
  checked);
- the DPU's running total is double-buffered by round parity (two WRAM words instead of one),
  so its correctness no longer depends on the round-robin issue order (PrIM's shared counter
  is read by the other tasklets after the barrier while the last tasklet advances it): a few
  instructions per round, no measurable effect on DPU time;
- tasklet 0 seeds the running total before the start barrier, so the scan kernel has one
  barrier at its start (PrIM: a second one after its last tasklet seeds the shared count):
  one barrier less per launch, negligible.
"""

import numpy as np
from c_rand import c_rand

from cnmtune.dpu.memory_map import MRAM_SIZE
from cnmtune.errors import KernelError
from cnmtune.runtime.device import DPU_MRAM_HEAP_POINTER_NAME
from cnmtune.runtime.workload import ELEMENT_TYPES, Workload

ARGS_DTYPE = np.dtype([("size_bytes", "<u4"), ("kernel", "<u4"), ("t_count", "<u8")])
RESULT_BYTES = 8  # sizeof(scan_result_t)


def slot_bits(value, dtype: np.dtype) -> int:
    """An element's bytes in the low bytes of a 64-bit little-endian slot, as an integer."""
    raw = np.array([value], dtype).tobytes().ljust(8, b"\0")
    return int(np.frombuffer(raw, "<u8")[0])


def slot_value(raw: bytes, dtype: np.dtype):
    """The element in the low bytes of an 8-byte slot."""
    return np.frombuffer(raw[: dtype.itemsize], dtype)[0]


def make_args(size_bytes: int, kernel: int, t_count, dtype: np.dtype) -> np.ndarray:
    args = np.zeros(1, ARGS_DTYPE)
    args["size_bytes"], args["kernel"], args["t_count"] = size_bytes, kernel, slot_bits(t_count, dtype)
    return args


def scan_reference(a: np.ndarray) -> np.ndarray:
    if a.dtype.kind == "f":  # the DPU's float sums round differently: compared with a tolerance
        return np.cumsum(a.astype(np.float64)).astype(a.dtype)
    # wrap-around sums: modulo 2^64, then truncated to the element type
    return np.cumsum(a.astype(np.uint64), dtype=np.uint64).astype(a.dtype)


def exclusive_scan(totals: list, dtype: np.dtype) -> list:
    """Each DPU's offset: the sum of the totals of the DPUs before it, in the element type."""
    offsets, acc = [], np.zeros(1, dtype)
    with np.errstate(over="ignore"):
        for total in totals:
            offsets.append(acc[0])
            acc = (acc + np.array([total], dtype)).astype(dtype)
    return offsets


def split_padded(workload, a: np.ndarray) -> tuple[int, list[np.ndarray]]:
    """(elements per DPU, each DPU's zero-padded part), ``workload.per_dpu`` elements each."""
    itemsize = a.dtype.itemsize
    per_dpu = workload.per_dpu
    if 2 * per_dpu * itemsize > MRAM_SIZE:
        raise KernelError(f"{workload.name}: {per_dpu} elements per DPU (input and output) do not fit in MRAM")
    padded = np.zeros(per_dpu * workload.nr_dpus, a.dtype)
    padded[: workload.size] = a
    return per_dpu, np.split(padded, workload.nr_dpus)


class PrefixSum(Workload):
    """PrIM's two-launch prefix sums: a first kernel per DPU, an exclusive scan of the DPU totals
    on the host, a second kernel seeded with each DPU's offset."""

    defines = {"BL": 10, "INT64": None}
    define_choices = {"BL": tuple(range(3, 12))}
    tuned_defines = ("BL",)
    nr_tasklets = 16
    sizes = {"small": 4096, "default": 3_932_160, "large": 7_864_320}
    flag_groups = {"element type": ("INT64", *(t for t in ELEMENT_TYPES if t != "INT64"))}
    total_entry = "last"  # which DPU_RESULTS entry holds the DPU total after launch 1: "first" or "last"

    def __init__(self, size, nr_dpus, nr_tasklets, defines=None, seed=0):
        super().__init__(size, nr_dpus, nr_tasklets, defines, seed)
        self.check_wram(2 << int(self.config["BL"]), reserved=2048)

    @property
    def dtype(self) -> np.dtype:
        return np.dtype(ELEMENT_TYPES[self.flag("element type")])

    @property
    def per_dpu(self) -> int:
        """Elements per DPU: ceil(N / D) rounded up to T x REGS (REGS: the elements of a 2^BL block)."""
        unit = self.tasklets * ((1 << int(self.config["BL"])) // self.dtype.itemsize)
        per_dpu = -(-self.size // self.nr_dpus)
        return -(-per_dpu // unit) * unit

    def processed_size(self):
        """Every DPU scans its whole padded part."""
        return self.per_dpu * self.nr_dpus

    def launch_count(self):
        return 2

    def inputs(self):
        return {"A": c_rand(self.seed, self.size, self.dtype)}  # PrIM's (T) rand()

    def reference(self, inputs):
        return {"S": scan_reference(inputs["A"])}

    def execute(self, device, inputs):
        dtype = self.dtype
        per_dpu, parts = split_padded(self, inputs["A"])
        size_bytes = per_dpu * dtype.itemsize
        device.push_to("DPU_INPUT_ARGUMENTS", [make_args(size_bytes, 0, 0, dtype)] * self.nr_dpus)
        device.push_to(DPU_MRAM_HEAP_POINTER_NAME, parts)
        device.launch()  # kernel 0
        with device.inter_dpu():  # PrIM's Inter-DPU step: the DPU totals, their scan, the offsets
            results = device.push_from("DPU_RESULTS", RESULT_BYTES * self.tasklets)
            entry = (self.tasklets - 1 if self.total_entry == "last" else 0) * RESULT_BYTES
            totals = [slot_value(raw[entry:], dtype) for raw in results]
            offsets = exclusive_scan(totals, dtype)
            device.push_to("DPU_INPUT_ARGUMENTS", [make_args(size_bytes, 1, o, dtype) for o in offsets])
        device.launch()  # kernel 1, seeded with the DPU's offset
        chunks = device.push_from(DPU_MRAM_HEAP_POINTER_NAME, size_bytes, offset=size_bytes)
        s = np.concatenate([np.frombuffer(chunk, dtype) for chunk in chunks])
        return {"S": s[: self.size]}
