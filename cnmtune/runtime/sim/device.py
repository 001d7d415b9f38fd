"""SimDevice: the Device API on cnmtune's DPU simulator (the embedded default backend).

Host transfer times follow the shape PrIM measured: a serial copy runs at one DPU's link
bandwidth; a parallel push uses every DPU of a rank at once, but the DPUs of one chip share the
chip's interface (8 DPUs per chip, 8 chips per rank: FACTS.md) and the rank saturates at the
rank's bandwidth; ranks transfer concurrently; a broadcast is limited by the broadcast
bandwidth. Each call also pays a fixed latency, and a small host cost per DPU it addresses
(the host prepares one buffer per DPU, dpu_prepare_xfer in PrIM's host code). Kernel time of a launch = slowest DPU + launch overhead.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path

from cnmtune.errors import DeviceError
from cnmtune.runtime.device import Buffer, Device, as_bytes
from cnmtune.runtime.sim.config import DpuConfig
from cnmtune.runtime.sim.dpu import DEFAULT_BUDGET, SimulatedDpu, StackOverflow
from cnmtune.runtime.sim.image import ProgramImage
from cnmtune.runtime.sim.timing import DpuTiming
from cnmtune.runtime.sim.trace import Trace


@dataclass(frozen=True)
class Transfer:
    """One host transfer call: direction, mode (serial, parallel, broadcast), bytes per DPU, DPUs,
    and whether it belongs to PrIM's Inter-DPU step (between launches)."""

    to_dpu: bool
    mode: str
    nbytes: int
    nr_dpus: int
    inter_dpu: bool = False

    @property
    def total_bytes(self) -> int:
        """Bytes moved over the host link by this call."""
        return self.nbytes * (1 if self.mode == "serial" else self.nr_dpus)


def transfer_seconds(transfer: Transfer, config: DpuConfig) -> float:
    """Time of one transfer call under `config` (see the module docstring)."""
    if transfer.mode == "serial":
        bandwidth = config.host_to_dpu_Bps if transfer.to_dpu else config.dpu_to_host_Bps
        total = transfer.nbytes
    elif transfer.mode == "broadcast":
        bandwidth, total = config.broadcast_Bps, transfer.nbytes
    else:
        per_dpu, per_chip, per_rank = (
            (config.host_to_dpu_Bps, config.chip_to_dpu_Bps, config.rank_to_dpu_Bps) if transfer.to_dpu
            else (config.dpu_to_host_Bps, config.chip_to_host_Bps, config.rank_to_host_Bps))
        full, rest = divmod(transfer.nr_dpus, config.dpus_per_rank)
        ranks = [config.dpus_per_rank] * full + ([rest] if rest else [])
        bandwidth = sum(min(k * per_dpu, -(-k // config.dpus_per_chip) * per_chip, per_rank) for k in ranks)
        total = transfer.nbytes * transfer.nr_dpus
    dpus = 1 if transfer.mode == "serial" else transfer.nr_dpus
    return config.transfer_latency_s + dpus * config.transfer_per_dpu_s + total / bandwidth


@dataclass(frozen=True)
class TransferTimes:
    """Seconds of a transfer log, split as PrIM's hosts report them."""

    host_to_dpu_s: float = 0.0
    inter_dpu_s: float = 0.0
    dpu_to_host_s: float = 0.0


def transfer_times(transfers: Iterable[Transfer] | Mapping[Transfer, int], config: DpuConfig) -> TransferTimes:
    """Price a transfer log under `config`, summed per step (CPU-DPU, Inter-DPU, DPU-CPU) as SimDevice does;
    the log may come counted (a Mapping such as Counter(log): each distinct call priced once)."""
    split = [0.0, 0.0, 0.0]
    for transfer, count in transfers.items() if isinstance(transfers, Mapping) else ((t, 1) for t in transfers):
        split[1 if transfer.inter_dpu else 0 if transfer.to_dpu else 2] += count * transfer_seconds(transfer, config)
    return TransferTimes(*split)


@dataclass(frozen=True)
class LaunchRecord:
    """One launch: the timing and the trace of every DPU."""

    timings: tuple[DpuTiming, ...]
    traces: tuple[Trace, ...]
    kernel_s: float
    stack_overflows: tuple[StackOverflow, ...] = ()  # a DPU runs on past them (dpu.StackOverflow)


class SimDevice(Device):
    """N simulated DPUs sharing one loaded program."""

    kind = "sim"

    def __init__(self, nr_dpus: int, config: DpuConfig | None = None, budget: int = DEFAULT_BUDGET,
                 reference: bool = False):
        """reference: run every launch on the simulator's Python reference path, which its jitted
        co-simulation reproduces (see SimulatedDpu.launch); slower, for checking and debugging."""
        super().__init__(nr_dpus)
        self.config = config or DpuConfig.calibrated()
        self.budget = budget
        self.reference = reference
        self.image: ProgramImage | None = None
        self.dpus = [SimulatedDpu(d) for d in range(nr_dpus)]
        self.launches: list[LaunchRecord] = []
        self.transfers: list[Transfer] = []

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
        self._record(Transfer(True, "serial", len(raw), 1))

    def copy_from(self, dpu: int, symbol: str, nbytes: int, offset: int = 0) -> bytes:
        self._check_dpu(dpu)
        data = self.dpus[dpu].read(self._address(symbol) + offset, nbytes, symbol)
        self._record(Transfer(False, "serial", nbytes, 1))
        return data

    def push_to(self, symbol: str, buffers: list[Buffer], offset: int = 0) -> None:
        raw = self._check_buffers(buffers)
        address = self._address(symbol) + offset
        for dpu, data in zip(self.dpus, raw):
            dpu.write(address, data, symbol)
        self._record(Transfer(True, "parallel", len(raw[0]), self.nr_dpus))

    def push_from(self, symbol: str, nbytes: int, offset: int = 0) -> list[bytes]:
        address = self._address(symbol) + offset
        data = [dpu.read(address, nbytes, symbol) for dpu in self.dpus]
        self._record(Transfer(False, "parallel", nbytes, self.nr_dpus))
        return data

    def broadcast(self, symbol: str, data: Buffer, offset: int = 0) -> None:
        raw = as_bytes(data)
        address = self._address(symbol) + offset
        for dpu in self.dpus:
            dpu.write(address, raw, symbol)
        self._record(Transfer(True, "broadcast", len(raw), self.nr_dpus))

    def _record(self, transfer: Transfer) -> None:
        transfer = replace(transfer, inter_dpu=self._in_inter_dpu)
        self.transfers.append(transfer)
        self._account_transfer(transfer.to_dpu, transfer_seconds(transfer, self.config), transfer.total_bytes)

    # ------------------------------------------------------------ execution
    def launch(self) -> None:
        if self.image is None:
            raise DeviceError("no program loaded: call load() first")
        results = [dpu.launch(self.config, self.budget, self.reference) for dpu in self.dpus]
        timings = tuple(r[0] for r in results)
        kernel_s = max(t.cycles for t in timings) / self.config.frequency_hz + self.config.launch_overhead_s
        overflows = tuple(o for dpu in self.dpus for o in dpu.stack_overflows)
        self.launches.append(LaunchRecord(timings, tuple(r[1] for r in results), kernel_s, overflows))
        self.times.kernel_s += kernel_s
        self.times.kernel_per_launch_s.append(kernel_s)
        self.times.launches += 1

    def log(self, dpu: int) -> str:
        self._check_dpu(dpu)
        return self.dpus[dpu].log_text()
