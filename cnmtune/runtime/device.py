"""The Device API: the UPMEM host API's shape, in Python, for every backend (runner role).

A workload's host side talks only to this interface, so one workload runs on the embedded
simulator, on the UPMEM SDK simulator and on hardware. Names follow UPMEM's host library:
copy_to/copy_from (dpu_copy_to/from, one DPU), push_to/push_from (dpu_prepare_xfer +
dpu_push_xfer, the same size for every DPU), broadcast (dpu_broadcast_to), launch
(dpu_launch, synchronous, all DPUs). Symbols are names in the loaded program: a WRAM
variable (`DPU_INPUT_ARGUMENTS`), an MRAM variable, or `DPU_MRAM_HEAP_POINTER_NAME`.

Times are split as PrIM's hosts report them: CPU-DPU, DPU kernel, Inter-DPU (the transfers a
host makes between two launches to combine partial results, inside `with device.inter_dpu():`)
and DPU-CPU. Transfers inside `with device.untimed():` count nowhere: a workload reads there
what only its results check needs, which the host program it mirrors does not transfer.
"""

from __future__ import annotations

import abc
import contextlib
from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np

from cnmtune.errors import DeviceError

DPU_MRAM_HEAP_POINTER_NAME = "__sys_used_mram_end"

Buffer = bytes | bytearray | memoryview | np.ndarray


def as_bytes(data: Buffer) -> bytes:
    """Raw bytes of a buffer (numpy arrays in their in-memory layout)."""
    if isinstance(data, np.ndarray):
        return np.ascontiguousarray(data).tobytes()
    return bytes(data)


@dataclass
class DeviceTimes:
    """Seconds spent so far, split as PrIM reports them."""

    host_to_dpu_s: float = 0.0
    dpu_to_host_s: float = 0.0
    inter_dpu_s: float = 0.0
    kernel_s: float = 0.0
    launches: int = 0
    host_to_dpu_bytes: int = 0
    dpu_to_host_bytes: int = 0
    inter_dpu_bytes: int = 0
    kernel_per_launch_s: list[float] = field(default_factory=list)

    @property
    def transfer_s(self) -> float:
        """All host-link time so far: CPU-DPU, inter-DPU and DPU-CPU."""
        return self.host_to_dpu_s + self.inter_dpu_s + self.dpu_to_host_s


class Device(abc.ABC):
    """A set of DPUs with one program loaded (the runner role of the tuning loop)."""

    kind: str = ""

    def __init__(self, nr_dpus: int):
        if nr_dpus < 1:
            raise DeviceError(f"a device needs at least one DPU, got {nr_dpus}")
        self.nr_dpus = nr_dpus
        self.times = DeviceTimes()
        self._in_inter_dpu = False
        self._untimed = False

    @contextlib.contextmanager
    def inter_dpu(self) -> Iterator["Device"]:
        """Transfers inside this block are PrIM's Inter-DPU step, not CPU-DPU or DPU-CPU time."""
        outer, self._in_inter_dpu = self._in_inter_dpu, True
        try:
            yield self
        finally:
            self._in_inter_dpu = outer

    @contextlib.contextmanager
    def untimed(self) -> Iterator["Device"]:
        """Transfers inside this block are the harness's own (reading what a results check needs and
        the mirrored host program does not transfer): in no time, byte count or transfer log."""
        outer, self._untimed = self._untimed, True
        try:
            yield self
        finally:
            self._untimed = outer

    def _account_transfer(self, to_dpu: bool, seconds: float, nbytes: int) -> None:
        """Add one transfer call to the time split: Inter-DPU inside `inter_dpu()`, else by direction;
        nothing inside `untimed()`."""
        times = self.times
        if self._untimed:
            return
        if self._in_inter_dpu:
            times.inter_dpu_s += seconds
            times.inter_dpu_bytes += nbytes
        elif to_dpu:
            times.host_to_dpu_s += seconds
            times.host_to_dpu_bytes += nbytes
        else:
            times.dpu_to_host_s += seconds
            times.dpu_to_host_bytes += nbytes

    @abc.abstractmethod
    def load(self, elf_path) -> None:
        """Load one program into every DPU (dpu_load)."""

    @abc.abstractmethod
    def copy_to(self, dpu: int, symbol: str, data: Buffer, offset: int = 0) -> None:
        """Write `data` at `symbol + offset` of one DPU (dpu_copy_to)."""

    @abc.abstractmethod
    def copy_from(self, dpu: int, symbol: str, nbytes: int, offset: int = 0) -> bytes:
        """Read `nbytes` at `symbol + offset` of one DPU (dpu_copy_from)."""

    @abc.abstractmethod
    def push_to(self, symbol: str, buffers: list[Buffer], offset: int = 0) -> None:
        """Parallel transfer, one buffer per DPU, all of the same size (dpu_push_xfer TO_DPU)."""

    @abc.abstractmethod
    def push_from(self, symbol: str, nbytes: int, offset: int = 0) -> list[bytes]:
        """Parallel transfer of `nbytes` from every DPU (dpu_push_xfer FROM_DPU)."""

    @abc.abstractmethod
    def broadcast(self, symbol: str, data: Buffer, offset: int = 0) -> None:
        """The same buffer to every DPU (dpu_broadcast_to)."""

    @abc.abstractmethod
    def launch(self) -> None:
        """Run the loaded program on every DPU and wait for all (dpu_launch SYNCHRONOUS)."""

    @abc.abstractmethod
    def log(self, dpu: int) -> str:
        """What the DPU printed (printf/puts) so far."""

    def close(self) -> None:
        """Release what the device holds (DPUs, a host process); idempotent. Nothing by default."""

    def __enter__(self) -> "Device":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _check_dpu(self, dpu: int) -> None:
        if not 0 <= dpu < self.nr_dpus:
            raise DeviceError(f"DPU {dpu} does not exist (this device has {self.nr_dpus})")

    def _check_buffers(self, buffers: list[Buffer]) -> list[bytes]:
        if len(buffers) != self.nr_dpus:
            raise DeviceError(f"push_to needs one buffer per DPU: got {len(buffers)} for {self.nr_dpus} DPUs")
        raw = [as_bytes(b) for b in buffers]
        sizes = {len(b) for b in raw}
        if len(sizes) > 1:
            raise DeviceError(f"parallel transfers need the same size on every DPU, got sizes {sorted(sizes)}")
        return raw
