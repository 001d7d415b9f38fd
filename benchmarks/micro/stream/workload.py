"""STREAM: sustained MRAM bandwidth of COPY / SCALE / ADD / TRIAD (PrIM's STREAM, MRAM mode), cnmtune's own code.

Compile time: the operation as a bare define (COPY, the default, SCALE, ADD or TRIAD) and BL
(log2 of the WRAM block in bytes, 3..11). Elements are uint64:
COPY C = A; SCALE C = s * A; ADD C = A + B; TRIAD C = A + s * B (wrap-around arithmetic).

Host side: size = total number of elements of each array over all DPUs (split in equal
chunks as VA). A goes to the MRAM heap at offset 0, B (ADD, TRIAD) at transfer_bytes; the DPU
writes C at 2 * transfer_bytes; the host pulls C and compares it exactly with numpy, and
checks that the tasklets streamed every byte exactly once. The DPU prints
`stream: cycles=<slowest tasklet's loop cycles> bytes=<bytes of one array>`; `parse_log`
reads it and `BYTES_MOVED` gives how many arrays' bytes an operation moves (bandwidth =
moved * bytes * f / cycles).
"""


import numpy as np

from cnmtune.errors import VerificationError
from cnmtune.runtime.device import DPU_MRAM_HEAP_POINTER_NAME
from cnmtune.runtime.workload import Workload, parse_report

OPS = ("COPY", "SCALE", "ADD", "TRIAD")
BYTES_MOVED = {"COPY": 2, "SCALE": 2, "ADD": 3, "TRIAD": 3}  # arrays read + written
RESULT_BYTES = 16  # sizeof(stream_result_t)
SCALAR = 0x9E3779B1  # s of SCALE and TRIAD: a 32-bit odd constant, so the 64-bit multiply is real


def parse_log(log: str) -> dict[str, int]:
    """The DPU's report line: {'cycles': slowest tasklet's loop cycles, 'bytes': bytes of one array}."""
    return parse_report(log, "stream")[-1]


class Stream(Workload):
    name = "stream"
    defines = {"BL": 10}
    define_choices = {"BL": tuple(range(3, 12))}
    nr_tasklets = 16
    sizes = {"small": 4096, "default": 65536, "large": 2_097_152}

    flag_groups = {"operation": OPS}

    @property
    def op(self) -> str:
        return self.flag("operation")

    def inputs(self):
        rng = np.random.default_rng(self.seed)
        a, b = (rng.integers(0, 2 ** 64, self.size, dtype=np.uint64) for _ in range(2))
        return {"A": a, "B": b}

    def reference(self, inputs):
        a, b, s = inputs["A"], inputs["B"], np.uint64(SCALAR)
        with np.errstate(over="ignore"):
            c = {"COPY": lambda: a.copy(), "SCALE": lambda: s * a, "ADD": lambda: a + b,
                 "TRIAD": lambda: a + s * b}[self.op]()
        return {"C": c}

    def execute(self, device, inputs):
        per_dpu = -(-self.size // self.nr_dpus)
        transfer = per_dpu * 8
        padded = {}
        for key in ("A", "B"):
            padded[key] = np.zeros(per_dpu * self.nr_dpus, np.uint64)
            padded[key][: self.size] = inputs[key]
        args, valid = [], []
        for dpu in range(self.nr_dpus):
            nbytes = max(0, min(per_dpu, self.size - dpu * per_dpu)) * 8
            valid.append(nbytes)
            arg = np.zeros(4, np.uint32)
            arg[:2] = (nbytes, transfer)
            arg[2:] = np.array([SCALAR], np.uint64).view(np.uint32)
            args.append(arg)
        device.push_to("DPU_INPUT_ARGUMENTS", args)
        device.push_to(DPU_MRAM_HEAP_POINTER_NAME, np.split(padded["A"], self.nr_dpus))
        if self.op in ("ADD", "TRIAD"):
            device.push_to(DPU_MRAM_HEAP_POINTER_NAME, np.split(padded["B"], self.nr_dpus), offset=transfer)
        device.launch()
        results = device.push_from("DPU_RESULTS", RESULT_BYTES * self.tasklets)
        for dpu, (raw, nbytes) in enumerate(zip(results, valid)):
            done = int(np.frombuffer(raw, np.uint32).reshape(self.tasklets, 4)[:, 2].sum())
            if done != nbytes:
                raise VerificationError(f"stream: DPU {dpu} streamed {done} bytes per array, expected {nbytes}")
        chunks = device.push_from(DPU_MRAM_HEAP_POINTER_NAME, transfer, offset=2 * transfer)
        c = np.concatenate([np.frombuffer(chunk, np.uint64) for chunk in chunks])
        return {"C": c[: self.size]}
