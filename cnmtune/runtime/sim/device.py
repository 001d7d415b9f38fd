"""SimDevice: the Device API on cnmtune's DPU simulator (the embedded default backend).

Host transfers are priced as the UPMEM SDK's host library does the work (issue 41; SDK 2020.2
sources, backends/api/src/dpu_memory.c and the x86 backend's xeon_sp_translation.c). Every
host call (dpu_copy_to/from, dpu_prepare_xfer + dpu_push_xfer, dpu_broadcast_to) pays a fixed
cost. An MRAM symbol goes through one transfer matrix per rank: the host takes the MRAM mux of
every addressed DPU (a cost per DPU), and 8 host threads move the bytes row by row, so a call
costs bytes per DPU x a per-byte cost that grows with the DPUs it addresses in a rank. Reading:
a row cost + a host-side cost x the rank's DPUs. Writing: a cost x the rank's DPUs to a fitted
power below 1 (the thread pool overlaps more of a wider matrix: the calibration rows' write
bandwidth keeps growing from 16 to 64 DPUs, as PrIM's does, docs/transfer_facts.md F6, G8; a
power of 1 would saturate it, and a row term beside it is not pinned down by the rows). Ranks
transfer concurrently, so the fullest rank sets the time. Reading MRAM also flushes the host
cache first (a fixed extra per read call). A write costs less when its host buffer is
cache-resident: one buffer for every DPU (a broadcast, or the same buffer prepared for every DPU)
is read from host memory once; per-DPU buffers fit the cache while their footprint is small. A
WRAM symbol is written and read DPU by DPU through the control interface (a cost per byte per
DPU), except a broadcast, which writes a rank's WRAM at once. Kernel time of a launch = slowest
DPU + launch overhead.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, fields, replace
from pathlib import Path
from types import SimpleNamespace

import numpy as np

from cnmtune.dpu.memory_map import MRAM_BASE, MRAM_SIZE, WRAM_SIZE
from cnmtune.errors import DeviceError
from cnmtune.runtime.device import Buffer, Device, as_bytes
from cnmtune.runtime.sim.config import DpuConfig
from cnmtune.runtime.sim.dpu import DEFAULT_BUDGET, SimulatedDpu, StackOverflow
from cnmtune.runtime.sim.image import ProgramImage
from cnmtune.runtime.sim.timing import DpuTiming
from cnmtune.runtime.sim.trace import Trace

#: the host calls a transfer is made by: dpu_copy_to/from on one DPU, dpu_push_xfer, dpu_broadcast_to
KINDS = ("copy", "push", "broadcast")
MEMORIES = ("mram", "wram")
#: the modes of transfer logs written before issue 41, as call kinds
LEGACY_MODES = {"serial": "copy", "parallel": "push", "broadcast": "broadcast"}


@dataclass(frozen=True)
class Transfer:
    """One host transfer call: direction, call kind (KINDS), bytes per DPU, DPUs addressed, whether
    it belongs to PrIM's Inter-DPU step (between launches), the memory of the symbol (MEMORIES)
    and whether every DPU got the same host buffer."""

    to_dpu: bool
    kind: str
    nbytes: int
    nr_dpus: int
    inter_dpu: bool = False
    memory: str = "mram"
    shared_buffer: bool = False

    def __post_init__(self) -> None:
        if self.kind not in KINDS or self.memory not in MEMORIES:
            raise ValueError(f"Transfer: kind {self.kind!r} (one of {KINDS}), memory {self.memory!r} "
                             f"(one of {MEMORIES})")
        if self.nr_dpus < 1 or (self.kind == "copy" and self.nr_dpus != 1):
            raise ValueError(f"Transfer: a {self.kind} addresses {'one DPU' if self.kind == 'copy' else 'DPUs'}, "
                             f"not {self.nr_dpus}")
        if self.kind == "broadcast" and not self.to_dpu:
            raise ValueError("Transfer: a broadcast writes to the DPUs")

    @property
    def total_bytes(self) -> int:
        """Bytes moved over the host link by this call."""
        return self.nbytes * self.nr_dpus

    @property
    def one_host_buffer(self) -> bool:
        """Whether the host reads one buffer for several DPUs (a broadcast, or the same buffer prepared for all)."""
        return self.to_dpu and self.nr_dpus > 1 and (self.shared_buffer or self.kind == "broadcast")


def transfer_seconds(transfer: Transfer, config: DpuConfig) -> float:
    """Time of one transfer call under `config` (see the module docstring)."""
    t = transfer
    return float(call_seconds(config, to_dpu=t.to_dpu, wram=t.memory == "wram", broadcast=t.kind == "broadcast",
                              nbytes=t.nbytes, dpus=t.nr_dpus, one_host_buffer=t.one_host_buffer))


def call_seconds(c, *, to_dpu, wram, broadcast, nbytes, dpus, one_host_buffer):
    """Seconds of host transfer calls (the module docstring's model), each argument a scalar or a
    numpy array with one element per call (calibration prices many calls under many candidate
    constants at once). `c` holds the constants: a DpuConfig, or any object with its xfer_*
    fields and dpus_per_rank as attributes. dpus: the DPUs the call addresses (1 for a copy)."""
    rank_dpus = np.minimum(dpus, c.dpus_per_rank)  # ranks transfer concurrently: the fullest one sets the time
    wram_s = c.xfer_call_s + np.where(broadcast, 1, dpus) * nbytes * c.xfer_wram_s_per_B
    footprint = (nbytes * dpus / c.xfer_host_cache_bytes) ** 2
    cached = c.xfer_host_cached_fraction
    share = np.where(one_host_buffer, cached, cached + (1 - cached) * footprint / (1 + footprint))
    to_s = nbytes * c.xfer_to_s_per_B * rank_dpus ** c.xfer_to_rank_exponent * share
    from_s = c.xfer_mram_read_s + nbytes * (c.xfer_from_row_s_per_B + c.xfer_from_shared_s_per_B * rank_dpus)
    mram_s = c.xfer_call_s + c.xfer_mram_per_dpu_s * rank_dpus + np.where(to_dpu, to_s, from_s)
    return np.where(wram, wram_s, mram_s)


#: the transfer constant that makes transfers cheaper as it grows; call_seconds grows with every other one
_CHEAPER_WHEN_LARGER = frozenset({"xfer_host_cache_bytes"})


def transfer_bounds(config: DpuConfig, ranges: dict[str, tuple[float, float]]) -> tuple[DpuConfig, DpuConfig]:
    """`config` with every constant of `ranges` (name: (low, high)) at the end that makes transfers
    cheapest, and at the end that makes them dearest. call_seconds is monotone in each constant,
    so a transfer log's time under any constants within the ranges lies between its times under
    these two."""
    ends = [{name: bounds[(name in _CHEAPER_WHEN_LARGER) != dear] for name, bounds in ranges.items()}
            for dear in (False, True)]
    return config.with_(**ends[0]), config.with_(**ends[1])


def _nbytes(data: Buffer) -> int:
    return data.nbytes if hasattr(data, "nbytes") else len(data)


@dataclass(frozen=True)
class TransferTimes:
    """Seconds of a transfer log, split as PrIM's hosts report them."""

    host_to_dpu_s: float = 0.0
    inter_dpu_s: float = 0.0
    dpu_to_host_s: float = 0.0

    @property
    def total_s(self) -> float:
        """All three steps."""
        return self.host_to_dpu_s + self.inter_dpu_s + self.dpu_to_host_s


def _step(transfer: Transfer) -> int:
    """The PrIM step of a call, as the index of its field in TransferTimes."""
    return 1 if transfer.inter_dpu else 0 if transfer.to_dpu else 2


def transfer_times(transfers: Iterable[Transfer] | Mapping[Transfer, int], config: DpuConfig) -> TransferTimes:
    """Price a transfer log under `config`, summed per step (CPU-DPU, Inter-DPU, DPU-CPU) as SimDevice does;
    the log may come counted (a Mapping such as Counter(log): each distinct call priced once)."""
    split = [0.0, 0.0, 0.0]
    for transfer, count in transfers.items() if isinstance(transfers, Mapping) else ((t, 1) for t in transfers):
        split[_step(transfer)] += count * transfer_seconds(transfer, config)
    return TransferTimes(*split)


def call_arrays(transfers: Sequence[Transfer]) -> dict[str, np.ndarray]:
    """The calls as call_seconds' keyword arguments, one array element per call."""
    return {"to_dpu": np.array([t.to_dpu for t in transfers], bool),
            "wram": np.array([t.memory == "wram" for t in transfers], bool),
            "broadcast": np.array([t.kind == "broadcast" for t in transfers], bool),
            "nbytes": np.array([t.nbytes for t in transfers], float),
            "dpus": np.array([t.nr_dpus for t in transfers], float),
            "one_host_buffer": np.array([t.one_host_buffer for t in transfers], bool)}


#: the DpuConfig fields call_seconds reads
PRICE_FIELDS = tuple(f.name for f in fields(DpuConfig) if f.name.startswith("xfer_")) + ("dpus_per_rank",)


def transfer_times_under(transfers: Iterable[Transfer] | Mapping[Transfer, int],
                         configs: Sequence[DpuConfig]) -> np.ndarray:
    """A transfer log priced under each of `configs` at once (a sweep's design points): seconds,
    one row per config, the columns TransferTimes' steps (CPU-DPU, Inter-DPU, DPU-CPU). Every
    distinct call goes through call_seconds once for all configs."""
    counted = transfers if isinstance(transfers, Mapping) else Counter(transfers)
    calls = list(counted)
    constants = SimpleNamespace(**{name: np.array([getattr(c, name) for c in configs], float)[:, None]
                                   for name in PRICE_FIELDS})
    seconds = call_seconds(constants, **call_arrays(calls)) * np.array([counted[t] for t in calls], float)
    steps = np.array([_step(t) for t in calls], int)
    return np.stack([seconds[:, steps == k].sum(1) for k in range(3)], 1)


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

    def _memory(self, symbol: str, offset: int, nbytes: int) -> str:
        """The memory ("wram" or "mram") that the `nbytes` at `symbol + offset` lie in, or an error if
        they leave both."""
        address = self._address(symbol) + offset
        if 0 <= address and address + nbytes <= WRAM_SIZE:
            return "wram"
        if MRAM_BASE <= address and address + nbytes <= MRAM_BASE + MRAM_SIZE:
            return "mram"
        raise DeviceError(f"host access of {nbytes} B at {symbol}+{offset} ({address:#x}) is outside WRAM and MRAM")

    def _held(self, dpu: int) -> SimulatedDpu | None:
        """The simulated DPU behind DPU number `dpu` (None where the device holds no memory for it)."""
        return self.dpus[dpu]

    # ------------------------------------------------------------ transfers
    def write(self, dpus: Sequence[int], symbol: str, buffers: Sequence[Buffer], offset: int = 0,
              kind: str = "push", shared_buffer: bool = False) -> None:
        """One host call writing buffers[i] to DPU dpus[i] (all of one size), priced as `kind`
        (KINDS); shared_buffer: the host passed the same buffer for every DPU. The Device API's
        writes and the SDK host library (hostapi/server.py) both come here."""
        if not dpus or len(buffers) != len(dpus):
            raise DeviceError(f"a transfer needs one buffer for each of its DPUs: got {len(buffers)} for "
                              f"{len(dpus)} DPUs")
        sizes = {_nbytes(b) for b in buffers}
        if len(sizes) > 1:
            raise DeviceError(f"parallel transfers need the same size on every DPU, got sizes {sorted(sizes)}")
        transfer = self._transfer(True, kind, dpus, symbol, offset, sizes.pop(), shared_buffer and len(dpus) > 1)
        address = self._address(symbol) + offset
        raw: dict[int, bytes] = {}  # each host buffer converted once
        for dpu, data in zip(dpus, buffers):
            held = self._held(dpu)
            if held is not None:
                if id(data) not in raw:
                    raw[id(data)] = as_bytes(data)
                held.write(address, raw[id(data)], symbol)
        self._record(transfer)

    def read(self, dpus: Sequence[int], symbol: str, nbytes: int, offset: int = 0, kind: str = "push") -> list[bytes]:
        """One host call reading `nbytes` from each DPU of `dpus`, priced as `kind` (see write)."""
        if not dpus:
            raise DeviceError("a transfer needs at least one DPU")
        transfer = self._transfer(False, kind, dpus, symbol, offset, nbytes, False)
        address = self._address(symbol) + offset
        zeros = bytes(nbytes)
        data = [held.read(address, nbytes, symbol) if (held := self._held(dpu)) is not None else zeros
                for dpu in dpus]
        self._record(transfer)
        return data

    def _transfer(self, to_dpu: bool, kind: str, dpus: Sequence[int], symbol: str, offset: int, nbytes: int,
                  shared_buffer: bool) -> Transfer:
        """The call's Transfer record, once its DPUs and its bytes at `symbol + offset` are checked."""
        for dpu in dpus:
            self._check_dpu(dpu)
        if kind not in KINDS or (kind == "copy" and len(dpus) != 1):
            raise DeviceError(f"a transfer is one of {', '.join(KINDS)} (a copy to or from one DPU), not a "
                              f"{kind} to {len(dpus)} DPUs")
        return Transfer(to_dpu, kind, nbytes, len(dpus), memory=self._memory(symbol, offset, nbytes),
                        shared_buffer=shared_buffer)

    def copy_to(self, dpu: int, symbol: str, data: Buffer, offset: int = 0) -> None:
        self.write([dpu], symbol, [data], offset, "copy")

    def copy_from(self, dpu: int, symbol: str, nbytes: int, offset: int = 0) -> bytes:
        return self.read([dpu], symbol, nbytes, offset, "copy")[0]

    def push_to(self, symbol: str, buffers: list[Buffer], offset: int = 0) -> None:
        if len(buffers) != self.nr_dpus:
            raise DeviceError(f"push_to needs one buffer per DPU: got {len(buffers)} for {self.nr_dpus} DPUs")
        self.write(range(self.nr_dpus), symbol, buffers, offset, "push",
                   shared_buffer=all(b is buffers[0] for b in buffers))

    def push_from(self, symbol: str, nbytes: int, offset: int = 0) -> list[bytes]:
        return self.read(range(self.nr_dpus), symbol, nbytes, offset, "push")

    def broadcast(self, symbol: str, data: Buffer, offset: int = 0) -> None:
        self.write(range(self.nr_dpus), symbol, [data] * self.nr_dpus, offset, "broadcast", shared_buffer=True)

    def _record(self, transfer: Transfer) -> None:
        if self._untimed:  # the harness's own read (Device.untimed): not a call of the host program
            return
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
