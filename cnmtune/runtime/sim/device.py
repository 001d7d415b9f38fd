"""SimDevice: the Device API on cnmtune's DPU simulator (the embedded default backend).

Host transfer times follow the shape PrIM measured: a serial copy runs at one DPU's link
bandwidth; a parallel push uses every DPU of a rank at once but saturates at the rank's
bandwidth, ranks transfer concurrently; a broadcast is limited by the broadcast bandwidth.
Each call also pays a fixed latency. Kernel time of a launch = slowest DPU + launch overhead.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from cnmtune.errors import DeviceError
from cnmtune.runtime.device import Buffer, Device, as_bytes
from cnmtune.runtime.sim.config import DpuConfig
from cnmtune.runtime.sim.dpu import DEFAULT_BUDGET, SimulatedDpu
from cnmtune.runtime.sim.image import ProgramImage
from cnmtune.runtime.sim.timing import DpuTiming
from cnmtune.runtime.sim.trace import Trace


@dataclass(frozen=True)
class LaunchRecord:
    """One launch: the timing and the trace of every DPU."""

    timings: tuple[DpuTiming, ...]
    traces: tuple[Trace, ...]
    kernel_s: float


class SimDevice(Device):
    """N simulated DPUs sharing one loaded program."""

    kind = "sim"

    def __init__(self, nr_dpus: int, config: DpuConfig | None = None, budget: int = DEFAULT_BUDGET):
        super().__init__(nr_dpus)
        self.config = config or DpuConfig()
        self.budget = budget
        self.image: ProgramImage | None = None
        self.dpus = [SimulatedDpu(d) for d in range(nr_dpus)]
        self.launches: list[LaunchRecord] = []

    # ------------------------------------------------------------ program
    def load(self, elf_path) -> None:
        self.image = ProgramImage.load(Path(elf_path))
        for dpu in self.dpus:
            dpu.load(self.image, self.config)

    def _address(self, symbol: str) -> int:
        if self.image is None:
            raise DeviceError("no program loaded: call load() first")
        try:
            return self.image.symbol(symbol)
        except KeyError:
            raise DeviceError(f"symbol {symbol!r} is not defined by {self.image.path.name}") from None

    # ------------------------------------------------------------ transfers
    def copy_to(self, dpu: int, symbol: str, data: Buffer, offset: int = 0) -> None:
        self._check_dpu(dpu)
        raw = as_bytes(data)
        self.dpus[dpu].write(self._address(symbol) + offset, raw, symbol)
        self._charge_to(len(raw), self.config.host_to_dpu_Bps)

    def copy_from(self, dpu: int, symbol: str, nbytes: int, offset: int = 0) -> bytes:
        self._check_dpu(dpu)
        data = self.dpus[dpu].read(self._address(symbol) + offset, nbytes, symbol)
        self._charge_from(nbytes, self.config.dpu_to_host_Bps)
        return data

    def push_to(self, symbol: str, buffers: list[Buffer], offset: int = 0) -> None:
        raw = self._check_buffers(buffers)
        address = self._address(symbol) + offset
        for dpu, data in zip(self.dpus, raw):
            dpu.write(address, data, symbol)
        self._charge_to(len(raw[0]) * self.nr_dpus, self._parallel_bandwidth(to_dpu=True))

    def push_from(self, symbol: str, nbytes: int, offset: int = 0) -> list[bytes]:
        address = self._address(symbol) + offset
        data = [dpu.read(address, nbytes, symbol) for dpu in self.dpus]
        self._charge_from(nbytes * self.nr_dpus, self._parallel_bandwidth(to_dpu=False))
        return data

    def broadcast(self, symbol: str, data: Buffer, offset: int = 0) -> None:
        raw = as_bytes(data)
        address = self._address(symbol) + offset
        for dpu in self.dpus:
            dpu.write(address, raw, symbol)
        self._charge_to(len(raw), self.config.broadcast_Bps)

    def _parallel_bandwidth(self, to_dpu: bool) -> float:
        """Aggregate bytes/s of a parallel transfer: per-DPU links, capped per rank; ranks add up."""
        cfg = self.config
        per_dpu, per_rank = ((cfg.host_to_dpu_Bps, cfg.rank_to_dpu_Bps) if to_dpu
                             else (cfg.dpu_to_host_Bps, cfg.rank_to_host_Bps))
        full, rest = divmod(self.nr_dpus, cfg.dpus_per_rank)
        ranks = [cfg.dpus_per_rank] * full + ([rest] if rest else [])
        return sum(min(k * per_dpu, per_rank) for k in ranks)

    def _charge_to(self, nbytes: int, bandwidth: float) -> None:
        self.times.host_to_dpu_s += self.config.transfer_latency_s + nbytes / bandwidth
        self.times.host_to_dpu_bytes += nbytes

    def _charge_from(self, nbytes: int, bandwidth: float) -> None:
        self.times.dpu_to_host_s += self.config.transfer_latency_s + nbytes / bandwidth
        self.times.dpu_to_host_bytes += nbytes

    # ------------------------------------------------------------ execution
    def launch(self) -> None:
        if self.image is None:
            raise DeviceError("no program loaded: call load() first")
        results = [dpu.launch(self.config, self.budget) for dpu in self.dpus]
        timings = tuple(r[0] for r in results)
        kernel_s = max(t.cycles for t in timings) / self.config.frequency_hz + self.config.launch_overhead_s
        self.launches.append(LaunchRecord(timings, tuple(r[1] for r in results), kernel_s))
        self.times.kernel_s += kernel_s
        self.times.kernel_per_launch_s.append(kernel_s)
        self.times.launches += 1

    def log(self, dpu: int) -> str:
        self._check_dpu(dpu)
        return self.dpus[dpu].log_text()
