"""ARITH: arithmetic-throughput microbenchmark (PrIM's Arithmetic-Throughput), cnmtune's own code.

Compile time: the element type and the operation as PrIM-style bare defines (one of INT32,
UINT32, INT64, UINT64, FLOAT, DOUBLE; one of ADD, SUB, MUL, DIV; INT32 and ADD when none is
given), and BL (log2 of the WRAM block in bytes, 3..11). Inputs as PrIM's (DPU_CODEGEN.md §4):
the elements are C rand() values, 31-bit non-negative integers converted to the element type,
and the operand is the number of elements per DPU converted to the type (PrIM's
``(T)input_size_dpu``: 2^20 in its published runs), so a multiply's and a division's cost
follows the same operands as on PrIM. SCALAR (an int, host side only) overrides the operand.
The values come from numpy's generator, not glibc's rand() sequence: the same range and
distribution, not the same numbers (costs depend on bit lengths only).

Host side: size = total number of elements over all DPUs (split in equal chunks rounded up to
8 bytes, as VA). The vector goes to the MRAM heap, the scalar to DPU_INPUT_ARGUMENTS; the DPU
computes x = x OP scalar in place; the host pulls the vector and checks it against numpy with C
semantics (wrap-around, division truncating towards zero; relative tolerance for floats). It
also pulls DPU_RESULTS and checks that the tasklets processed every element exactly once.
The DPU prints `arith: cycles=<slowest tasklet's timed cycles> elements=<n>` (PrIM's metric:
operations/s = elements * f / cycles); `parse_log` reads that line back.
"""


import numpy as np

from cnmtune.errors import KernelError, VerificationError
from cnmtune.runtime.device import DPU_MRAM_HEAP_POINTER_NAME
from cnmtune.runtime.workload import ELEMENT_TYPES, Workload, parse_report

TYPES = ("INT32", "UINT32", "INT64", "UINT64", "FLOAT", "DOUBLE")
OPS = ("ADD", "SUB", "MUL", "DIV")
RESULT_BYTES = 16  # sizeof(arith_result_t)
RAND_MAX = 2**31 - 1  # glibc's, the range of PrIM's inputs


def parse_log(log: str) -> dict[str, int]:
    """The DPU's report line: {'cycles': slowest tasklet's timed cycles, 'elements': n}."""
    return parse_report(log, "arith")[-1]


def c_divide(a: np.ndarray, b) -> np.ndarray:
    """Integer division truncating towards zero (C), without overflow for b > 0 or b < -1."""
    q = a // b
    r = a - q * b
    fix = (r != 0) & ((a < 0) != (np.asarray(b) < 0))
    return q + fix.astype(a.dtype)


class Arithmetic(Workload):
    name = "arith"
    defines = {"BL": 10}
    define_choices = {"BL": tuple(range(3, 12))}
    nr_tasklets = 16
    sizes = {"small": 4096, "default": 65536, "large": 1_048_576}
    flag_groups = {"element type": TYPES, "operation": OPS}

    @property
    def type_name(self) -> str:
        return self.flag("element type")

    @property
    def op(self) -> str:
        return self.flag("operation")

    @property
    def dtype(self) -> np.dtype:
        return np.dtype(ELEMENT_TYPES[self.type_name])

    @property
    def scalar(self):
        value = self.config.get("SCALAR", -(-self.size // self.nr_dpus))
        scalar = self.dtype.type(value)
        if self.op == "DIV" and scalar == 0:
            raise KernelError("arith: SCALAR must not be 0 for DIV")
        return scalar

    def inputs(self):
        rng = np.random.default_rng(self.seed)
        return {"X": rng.integers(0, RAND_MAX, self.size, endpoint=True).astype(self.dtype)}

    def reference(self, inputs):
        x, s = inputs["X"], self.scalar
        with np.errstate(over="ignore"):
            if self.op == "ADD":
                y = x + s
            elif self.op == "SUB":
                y = x - s
            elif self.op == "MUL":
                y = x * s
            elif self.dtype.kind == "f":
                y = x / s
            else:
                y = c_divide(x, s)
        return {"X": y.astype(self.dtype)}

    def _arguments(self, valid: int, transfer: int) -> np.ndarray:
        args = np.zeros(32, dtype=np.uint8)
        args[:8] = np.array([valid, transfer], dtype=np.uint32).view(np.uint8)
        raw = np.array([self.scalar], dtype=self.dtype).view(np.uint8)
        args[16:16 + raw.size] = raw
        return args

    def execute(self, device, inputs):
        itemsize = self.dtype.itemsize
        per_dpu = -(-self.size // self.nr_dpus)
        per_dpu += -per_dpu % max(1, 8 // itemsize)  # chunk bytes a multiple of 8
        transfer = per_dpu * itemsize
        padded = np.zeros(per_dpu * self.nr_dpus, self.dtype)
        padded[: self.size] = inputs["X"]
        args, counts = [], []
        for dpu in range(self.nr_dpus):
            count = max(0, min(per_dpu, self.size - dpu * per_dpu))
            count += -count % max(1, 8 // itemsize)  # the last DPU streams whole 8-byte words
            counts.append(count)
            args.append(self._arguments(count * itemsize, transfer))
        device.push_to("DPU_INPUT_ARGUMENTS", args)
        device.push_to(DPU_MRAM_HEAP_POINTER_NAME, np.split(padded, self.nr_dpus))
        device.launch()
        results = device.push_from("DPU_RESULTS", RESULT_BYTES * self.tasklets)
        for dpu, (raw, count) in enumerate(zip(results, counts)):
            done = np.frombuffer(raw, np.uint32).reshape(self.tasklets, 4)[:, 2]
            if int(done.sum()) != count:
                raise VerificationError(f"arith: DPU {dpu} processed {int(done.sum())} elements, expected {count}")
        chunks = device.push_from(DPU_MRAM_HEAP_POINTER_NAME, transfer)
        x = np.concatenate([np.frombuffer(chunk, self.dtype) for chunk in chunks])
        return {"X": x[: self.size]}
