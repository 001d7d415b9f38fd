"""DMA_LATENCY: MRAM<->WRAM DMA latency versus transfer size (PrIM's MRAM-Latency), cnmtune's own code.

Compile time: TRANSFER (bytes per DMA, a multiple of 8 in 8..2048; default 8), the direction
as a bare define (READ, the default, or WRITE) and CALIBRATION (empty counter brackets timed
per tasklet, default 32). Run it with one tasklet for the unloaded latency; more tasklets
measure the latency under load (they share the DMA engine).

Host side: size = number of transfers per DPU; transfer k covers MRAM heap bytes
[k * TRANSFER, (k + 1) * TRANSFER). READ: the host pushes seeded random words and checks each
tasklet's XOR checksum of the words it sampled (first, last and a rotating word of every
copy). WRITE: the host fills every tasklet's row of the WRAM array PATTERN with word i = seed ^ i,
pulls the whole MRAM buffer after the launch and checks what every transfer wrote. In
both modes each tasklet must report the number of transfers it owns.

The DPU prints one `dma: tasklet=t cycles=c overhead=o calibration=n transfers=m` line per
tasklet; `parse_log` reads them and `latency` turns them into cycles per transfer (the
bracket's own cost, o / n, subtracted).
"""


import numpy as np

from cnmtune.errors import KernelError, VerificationError
from cnmtune.runtime.device import DPU_MRAM_HEAP_POINTER_NAME
from cnmtune.runtime.workload import Workload, parse_report

RESULT_BYTES = 40  # sizeof(dma_result_t)
TRANSFERS = tuple(range(8, 2049, 8))
_MASK = (1 << 64) - 1


def parse_log(log: str) -> list[dict[str, int]]:
    """One dict per tasklet: tasklet, cycles, overhead, calibration, transfers."""
    return parse_report(log, "dma")


def latency(rows: list[dict[str, int]]) -> float:
    """Mean cycles of one transfer over every tasklet's transfers, the bracket's cost removed."""
    cycles = sum(r["cycles"] - r["transfers"] * r["overhead"] / r["calibration"] for r in rows)
    transfers = sum(r["transfers"] for r in rows)
    return cycles / transfers if transfers else 0.0


class DmaLatency(Workload):
    name = "dma_latency"
    defines = {"TRANSFER": 8, "CALIBRATION": 32}
    define_choices = {"TRANSFER": TRANSFERS, "CALIBRATION": tuple(range(1, 257))}
    nr_tasklets = 1
    sizes = {"small": 64, "default": 256, "large": 4096}

    @classmethod
    def resolve_defines(cls, overrides=None):
        resolved = super().resolve_defines(overrides)
        if "READ" in resolved and "WRITE" in resolved:
            raise KernelError("dma_latency: define READ or WRITE, not both")
        for name in ("READ", "WRITE"):
            if name in resolved and resolved[name] is not None:
                raise KernelError(f"dma_latency: {name} is a bare define (value None), got {resolved[name]!r}")
        return resolved

    @property
    def write(self) -> bool:
        return "WRITE" in self.config

    @property
    def transfer(self) -> int:
        return int(self.config["TRANSFER"])

    @property
    def buffer_bytes(self) -> int:
        return self.size * self.transfer

    def inputs(self):
        rng = np.random.default_rng(self.seed)
        words = self.buffer_bytes // 8
        data = rng.integers(0, 2 ** 64, (self.nr_dpus, words), dtype=np.uint64, endpoint=False)
        seeds = rng.integers(0, 2 ** 64, self.nr_dpus, dtype=np.uint64, endpoint=False)
        return {"data": data, "seeds": seeds}

    def _owned(self, tasklet: int) -> np.ndarray:
        return np.arange(tasklet, self.size, self.tasklets)

    def reference(self, inputs):
        words = self.transfer // 8
        if self.write:
            out = np.empty((self.nr_dpus, self.size, words), np.uint64)
            for dpu, seed in enumerate(inputs["seeds"]):
                pattern = np.uint64(seed) ^ np.arange(words, dtype=np.uint64)
                values = (np.arange(self.size, dtype=np.uint64) + np.uint64(seed))  # wraps mod 2^64
                out[dpu] = pattern
                out[dpu, :, 0] = values
                out[dpu, :, words - 1] = ~values
            return {"mram": out.reshape(self.nr_dpus, -1)}
        sums = np.zeros((self.nr_dpus, self.tasklets), np.uint64)
        for dpu in range(self.nr_dpus):
            blocks = inputs["data"][dpu].reshape(self.size, words)
            for t in range(self.tasklets):
                owned = self._owned(t)
                rotating = np.arange(owned.size) % words
                mixed = blocks[owned, 0] ^ blocks[owned, words - 1] ^ blocks[owned, rotating]
                sums[dpu, t] = np.bitwise_xor.reduce(mixed) if owned.size else 0
        return {"checksum": sums}

    def execute(self, device, inputs):
        if self.buffer_bytes > 60 * 1024 * 1024:
            raise KernelError(f"dma_latency: {self.size} transfers of {self.transfer} B do not fit in MRAM")
        words = self.transfer // 8
        args = []
        for seed in inputs["seeds"]:
            arg = np.zeros(4, np.uint32)
            arg[:2] = (self.size, words)
            arg[2:] = np.array([seed], np.uint64).view(np.uint32)
            args.append(arg)
        device.push_to("DPU_INPUT_ARGUMENTS", args)
        if self.write:
            patterns = [np.tile(np.uint64(seed) ^ np.arange(words, dtype=np.uint64), self.tasklets)
                        for seed in inputs["seeds"]]
            device.push_to("PATTERN", patterns)
        else:
            device.push_to(DPU_MRAM_HEAP_POINTER_NAME, list(inputs["data"]))
        device.launch()
        results = device.push_from("DPU_RESULTS", RESULT_BYTES * self.tasklets)
        checksums = np.zeros((self.nr_dpus, self.tasklets), np.uint64)
        for dpu, raw in enumerate(results):
            words = np.frombuffer(raw, np.uint64).reshape(self.tasklets, RESULT_BYTES // 8)
            for t in range(self.tasklets):
                made = int(words[t, 3] & np.uint64(0xFFFFFFFF))
                if made != self._owned(t).size:
                    raise VerificationError(f"dma_latency: DPU {dpu} tasklet {t} made {made} transfers, "
                                            f"expected {self._owned(t).size}")
            checksums[dpu] = words[:, 2]
        if self.write:
            chunks = device.push_from(DPU_MRAM_HEAP_POINTER_NAME, self.buffer_bytes)
            return {"mram": np.stack([np.frombuffer(c, np.uint64) for c in chunks])}
        return {"checksum": checksums}
