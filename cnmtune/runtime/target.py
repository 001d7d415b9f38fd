"""Run targets (the runner role): where a kernel variant is built and run, chosen by name.

A target pairs a toolchain with the devices it runs on: ``sim`` (cnmtune's proxy toolchain and
DPU simulator), ``sim-sampled`` (the simulator with only some DPUs executed, the others
modelled; cnmtune.runtime.sampled), ``upmem-sim`` and ``upmem-hw`` (the UPMEM SDK toolchain and
its functional simulator or hardware). What callers need to know about a target is data, not its
name: whether runs may go to worker processes and be recorded (``exclusive``, ``config_hash``)
and whether results carry the simulator's counters (``counts``).
"""

from __future__ import annotations

import abc
import os
from typing import ClassVar

from cnmtune.errors import CnmtuneError
from cnmtune.runtime.device import Device
from cnmtune.runtime.execute import RunResult, run_on_device
from cnmtune.runtime.sim.config import DpuConfig
from cnmtune.runtime.sim.dpu import DEFAULT_BUDGET
from cnmtune.runtime.toolchain import Binary, ProxyToolchain, Toolchain, Variant

TARGETS = ("sim", "sim-sampled", "upmem-sim", "upmem-hw")


class Target(abc.ABC):
    """Where variants run: a toolchain for their binaries and a device for each run."""

    name: ClassVar[str]
    # cycles, issue slots, instructions and tasklet breakdowns come with every result
    counts: ClassVar[bool] = False
    # one run at a time in this process (hardware and the SDK simulator); otherwise runs are
    # pure functions of (binary, DPUs, size, config) that worker processes may execute and the
    # store may record under `config_hash`
    exclusive: ClassVar[bool] = True

    @property
    @abc.abstractmethod
    def toolchain(self) -> Toolchain:
        """The toolchain that builds this target's binaries."""

    @abc.abstractmethod
    def device(self, nr_dpus: int) -> Device:
        """A fresh device of `nr_dpus` DPUs (use it as a context manager)."""

    @property
    def config_hash(self) -> str:
        """The timing configuration runs are recorded under ('' where runs are not recorded)."""
        return ""

    @property
    def link_hash(self) -> str:
        """The link model that prices the transfer times of recorded runs ('' where runs are not
        recorded)."""
        return ""

    def run(self, variant: Variant, nr_dpus: int, size: int, seed: int = 0, params: dict | None = None) -> RunResult:
        """Build `variant` with this target's toolchain, run it on `nr_dpus` DPUs and verify it."""
        return self.run_binary(self.toolchain.compile(variant), nr_dpus, size, seed, params)

    def run_binary(self, binary: Binary, nr_dpus: int, size: int, seed: int = 0,
                   params: dict | None = None) -> RunResult:
        """Run an already built binary of this target on `nr_dpus` DPUs and verify it."""
        with self.device(nr_dpus) as device:
            return run_on_device(binary, device, size, seed, params)


class SimTarget(Target):
    """cnmtune's proxy toolchain and DPU simulator under a named or given DpuConfig."""

    name = "sim"
    counts = True
    exclusive = False

    def __init__(self, config: DpuConfig | str = "calibrated", budget: int = DEFAULT_BUDGET):
        self.config = DpuConfig.named(config) if isinstance(config, str) else config
        self.budget = budget
        self._toolchain: ProxyToolchain | None = None

    @property
    def toolchain(self) -> ProxyToolchain:
        if self._toolchain is None:
            self._toolchain = ProxyToolchain()
        return self._toolchain

    @property
    def config_hash(self) -> str:
        return self.config.hash

    @property
    def link_hash(self) -> str:
        return self.config.link_hash

    def device(self, nr_dpus: int) -> Device:
        from cnmtune.runtime.sim.device import SimDevice

        return SimDevice(nr_dpus, self.config, self.budget)


class SampledSimTarget(SimTarget):
    """The simulator with only the `sampled` DPUs executed (default: the first and the last)."""

    name = "sim-sampled"

    def __init__(self, config: DpuConfig | str = "calibrated", sampled: tuple[int, ...] | None = None,
                 budget: int = DEFAULT_BUDGET):
        super().__init__(config, budget)
        self.sampled = sampled

    @property
    def config_hash(self) -> str:
        return ""  # a sampled run is not the full run the store keys by its DPU count

    def device(self, nr_dpus: int) -> Device:
        from cnmtune.runtime.sampled import SampledSimDevice

        return SampledSimDevice(nr_dpus, self.sampled, self.config, self.budget)

    def run_binary(self, binary: Binary, nr_dpus: int, size: int, seed: int = 0,
                   params: dict | None = None) -> RunResult:
        """Run with only the sampled DPUs simulated; the result is not verified (``verified``
        False): the other DPUs' outputs are zeros."""
        with self.device(nr_dpus) as device:
            return run_on_device(binary, device, size, seed, params, verify=False)


class UpmemTarget(Target):
    """The UPMEM SDK's toolchain and its functional simulator ('simulator') or hardware ('hw')."""

    def __init__(self, backend: str, sdk_dir: str | os.PathLike | None = None):
        from cnmtune.runtime.upmem import UpmemSdk

        self.backend = backend
        self.name = "upmem-hw" if backend == "hw" else "upmem-sim"
        self.sdk = UpmemSdk.find(sdk_dir)  # before any work: without an SDK this names what is missing
        self._toolchain = None

    @property
    def toolchain(self) -> Toolchain:
        if self._toolchain is None:
            from cnmtune.runtime.toolchain import UpmemToolchain

            self._toolchain = UpmemToolchain(self.sdk)
        return self._toolchain

    def device(self, nr_dpus: int) -> Device:
        from cnmtune.runtime.upmem import UpmemDevice

        return UpmemDevice(nr_dpus, self.backend, sdk=self.sdk)


def make_target(name: str, *, sim_config: DpuConfig | str = "calibrated", budget: int = DEFAULT_BUDGET,
                sdk_dir: str | os.PathLike | None = None) -> Target:
    """The target called `name` (one of TARGETS); an unknown name is refused with the valid ones."""
    if name == "sim":
        return SimTarget(sim_config, budget)
    if name == "sim-sampled":
        return SampledSimTarget(sim_config, budget=budget)
    if name in ("upmem-sim", "upmem-hw"):
        return UpmemTarget("hw" if name == "upmem-hw" else "simulator", sdk_dir)
    raise CnmtuneError(f"unknown device {name!r}; choose {', '.join(TARGETS[:-1])} or {TARGETS[-1]}")
