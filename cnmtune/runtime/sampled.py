"""SampledSimDevice: a full system's worth of DPUs of which only a few are simulated.

A workload's host program runs unchanged against N DPUs (up to a whole UPMEM system, 2,560):
every transfer is checked against the DPU's WRAM/MRAM bounds, logged and priced for all N
DPUs exactly as SimDevice prices it, so the transfer pattern and each DPU's share of the work
are those of the real N-DPU run. Only the `sampled` DPUs hold memory and execute; the others
accept writes without storing them and read back zeros. A launch's kernel time is the slowest
sampled DPU + launch overhead. With the default sample (the first and the last DPU) this is the
full system's kernel time whenever the slowest DPU is one of them, which holds for the PrIM
partitionings (equal chunks with the remainder on the last DPU, or one extra row on the first
ones); with no sampled DPU nothing executes and launches cost only their overhead (used to read
the transfer pattern and time the host steps). Outputs of unsampled DPUs are zeros, so results
cannot be verified. The device also measures the host's own work around its launches: the
time between two launches spent outside device calls (PrIM's inter-DPU steps) and the time
after the last launch (in a Python host program mostly the gathering of DPU outputs).
"""

from __future__ import annotations

import functools
import time
from collections.abc import Iterable
from pathlib import Path

from cnmtune.errors import DeviceError
from cnmtune.runtime.device import Device
from cnmtune.runtime.sim.config import DpuConfig
from cnmtune.runtime.sim.device import LaunchRecord, SimDevice, Transfer
from cnmtune.runtime.sim.dpu import DEFAULT_BUDGET, SimulatedDpu
from cnmtune.runtime.sim.image import ProgramImage

__all__ = ["SampledSimDevice"]


def _device_call(method):
    """Account the wall time of a Device API call (host-step timing excludes it)."""

    @functools.wraps(method)
    def timed(self, *args, **kwargs):
        start = time.perf_counter()
        try:
            return method(self, *args, **kwargs)
        finally:
            self.device_call_s += time.perf_counter() - start

    return timed


class SampledSimDevice(SimDevice):
    """N DPUs for the host program, `sampled` of them simulated (see the module docstring)."""

    kind = "sim-sampled"

    def __init__(self, nr_dpus: int, sampled: Iterable[int] | None = None, config: DpuConfig | None = None,
                 budget: int = DEFAULT_BUDGET):
        Device.__init__(self, nr_dpus)
        self.config = config or DpuConfig.calibrated()
        self.budget = budget
        self.image: ProgramImage | None = None
        self.sampled = tuple(sorted(set(sampled))) if sampled is not None else tuple(sorted({0, nr_dpus - 1}))
        for dpu in self.sampled:
            self._check_dpu(dpu)
        self.sim = {d: SimulatedDpu(d) for d in self.sampled}
        self.dpus = []  # SimDevice's list of all DPUs: deliberately not built
        self.launches: list[LaunchRecord] = []
        self.transfers: list[Transfer] = []
        self.device_call_s = 0.0
        self.host_between_launches_s = 0.0
        self._last_launch: tuple[float, float] | None = None  # (end, device_call_s then)

    # ------------------------------------------------------------ host-step timing
    def host_seconds_after_last_launch(self, end: float) -> float:
        """Host time from the end of the last launch to `end` (a perf_counter reading) outside device calls."""
        if self._last_launch is None:
            return 0.0
        finished, calls = self._last_launch
        return max(0.0, (end - finished) - (self.device_call_s - calls))

    # ------------------------------------------------------------ program
    @_device_call
    def load(self, elf_path) -> None:
        self.image = ProgramImage.load(Path(elf_path))
        for dpu in self.sim.values():
            dpu.load(self.image, self.config)

    def _held(self, dpu: int) -> SimulatedDpu | None:
        return self.sim.get(dpu)

    # ------------------------------------------------------------ transfers: SimDevice's, timed
    write = _device_call(SimDevice.write)
    read = _device_call(SimDevice.read)

    # ------------------------------------------------------------ execution
    def launch(self) -> None:
        start = time.perf_counter()
        if self._last_launch is not None:
            self.host_between_launches_s += self.host_seconds_after_last_launch(start)
        if self.image is None:
            raise DeviceError("no program loaded: call load() first")
        results = [dpu.launch(self.config, self.budget) for dpu in self.sim.values()]
        timings = tuple(r[0] for r in results)
        cycles = max((t.cycles for t in timings), default=0)
        kernel_s = cycles / self.config.frequency_hz + self.config.launch_overhead_s
        overflows = tuple(o for dpu in self.sim.values() for o in dpu.stack_overflows)
        self.launches.append(LaunchRecord(timings, tuple(r[1] for r in results), kernel_s, overflows))
        self.times.kernel_s += kernel_s
        self.times.kernel_per_launch_s.append(kernel_s)
        self.times.launches += 1
        end = time.perf_counter()
        self.device_call_s += end - start
        self._last_launch = (end, self.device_call_s)

    def log(self, dpu: int) -> str:
        self._check_dpu(dpu)
        return self.sim[dpu].log_text() if dpu in self.sim else ""
