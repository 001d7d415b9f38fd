"""Host-link time estimates for the end-to-end objective (kernel + transfers).

The workload's own host program runs against DPUs that are not simulated
(cnmtune.runtime.sampled.SampledSimDevice with no sampled DPU): every transfer call it makes for
that DPU count is priced by the simulator's host-link model, nothing executes. The pipeline does
not change what is transferred, so one probe per (DPUs, tasklets, tuned defines) serves every
candidate there; the probe builds the default pipeline (a build-cache hit after the first tune).
A host program that loops on what the DPUs return (bfs) reads zeros here, so its estimate is
rough; the measured objective of a run is always its own transfers.
"""

from __future__ import annotations

from cnmtune.errors import CnmtuneError
from cnmtune.plugin.tune.report import Candidate
from cnmtune.plugin.tune.space import DEFAULT_PIPELINE, Space
from cnmtune.runtime.kernel import Kernel
from cnmtune.runtime.sampled import SampledSimDevice
from cnmtune.runtime.sim.config import DpuConfig
from cnmtune.runtime.toolchain import ProxyToolchain, Variant


class TransferEstimates:
    """Estimated host-link seconds of a candidate's configuration, probed once per configuration."""

    def __init__(self, kernel: Kernel, space: Space, config: DpuConfig, toolchain: ProxyToolchain | None = None):
        self.kernel, self.space, self.config = kernel, space, config
        self.toolchain = toolchain or ProxyToolchain()
        self._seconds: dict[tuple, float] = {}

    def estimate(self, candidates: list[Candidate]) -> None:
        """Set every candidate's `predicted_transfer_s`."""
        for c in candidates:
            c.predicted_transfer_s = self.seconds(c.dpus, c.tasklets, c.defines)

    def seconds(self, dpus: int, tasklets: int, tuned: tuple) -> float:
        """CPU-DPU + inter-DPU + DPU-CPU seconds of one run of the host program."""
        key = (dpus, tasklets, tuned)
        if key not in self._seconds:
            defines = dict(self.space.build_defines(tuned))
            binary = self.toolchain.compile(Variant.of(self.kernel, DEFAULT_PIPELINE, tasklets, defines))
            workload = self.kernel.workload(self.space.size, dpus, tasklets, defines, 0, **dict(self.space.params))
            device = SampledSimDevice(dpus, (), self.config)
            device.load(binary.elf_path)
            try:
                workload.execute(device, workload.inputs())
            except CnmtuneError as exc:
                raise CnmtuneError(f"{self.kernel.name}: reading the transfers of {dpus} DPUs x {tasklets} "
                                   f"tasklets failed: {exc}") from exc
            self._seconds[key] = device.times.transfer_s
        return self._seconds[key]
