"""Running one compiled variant of a workload on a device, verified, with its times and counters."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace

import numpy as np

from cnmtune.errors import KernelError, VerificationError
from cnmtune.runtime.device import Device
from cnmtune.runtime.sim.config import DpuConfig
from cnmtune.runtime.sim.device import SimDevice
from cnmtune.runtime.sim.jit import Stopwatch
from cnmtune.runtime.sim.timing import priced_slots
from cnmtune.runtime.toolchain import Binary


@dataclass(frozen=True)
class TaskletBreakdown:
    """Where one tasklet of the critical (slowest) DPU spent its cycles, summed over launches."""

    tasklet: int
    issue_cycles: float
    dma_wait_cycles: float
    sync_wait_cycles: float
    slots: float


@dataclass(frozen=True)
class RunResult:
    """A verified run: PrIM's time split, DPU counters and the critical DPU's tasklet breakdown."""

    variant: str
    device: str
    nr_dpus: int
    nr_tasklets: int
    size: int
    config_hash: str
    launches: int
    kernel_s: float
    host_to_dpu_s: float
    dpu_to_host_s: float
    inter_dpu_s: float
    cycles: int
    slots: float
    instructions: int
    ipc: float
    dma_read_bytes: int
    dma_write_bytes: int
    routine_slots: float
    tasklets: tuple[TaskletBreakdown, ...]
    verified: bool
    wall_s: float
    log: str
    seed: int = 0  # of the workload's input generator
    params: dict = field(default_factory=dict)  # the workload's parameters as run: its defaults and --param
    warnings: tuple[str, ...] = ()  # what the simulator ran on past, as a DPU would (stack overflows)

    @property
    def transfer_s(self) -> float:
        """All host-link time: CPU-DPU, Inter-DPU and DPU-CPU."""
        return self.host_to_dpu_s + self.inter_dpu_s + self.dpu_to_host_s

    def to_dict(self) -> dict:
        """JSON-safe form."""
        return asdict(self)


def run_binary(binary: Binary, nr_dpus: int, size: int, config: DpuConfig | None = None,
               seed: int = 0, budget: int | None = None, params: dict | None = None) -> RunResult:
    """Run `binary` on the embedded simulator with the kernel's host program; verify the result."""
    device = SimDevice(nr_dpus, config, **({"budget": budget} if budget else {}))
    return run_on_device(binary, device, size, seed, params)


def run_on_device(binary: Binary, device: Device, size: int, seed: int = 0,
                  params: dict | None = None, verify: bool = True) -> RunResult:
    """Load `binary` on a fresh `device`, run the workload's host program, verify, report.

    On the embedded simulator the result carries its cycle, instruction and tasklet counts; on
    any other device (UPMEM hardware or SDK simulator) only the measured times, plus cycles when
    the device reads per-DPU counters (UpmemDevice's cycles_symbol). `verify` False skips the
    comparison with the reference (a sampled simulation computes only some DPUs' outputs). The
    wall time leaves out a first run's compile of the simulator's native code (sim.jit)."""
    stopwatch = Stopwatch()
    variant = binary.variant
    workload = variant.kernel.workload(size, device.nr_dpus, variant.nr_tasklets, dict(variant.defines), seed,
                                       **(params or {}))
    device.load(binary.elf_path)
    inputs = workload.inputs()
    outputs = workload.execute(device, inputs)
    warnings = tuple(dict.fromkeys(str(o) for record in getattr(device, "launches", ())
                                   for o in getattr(record, "stack_overflows", ())))
    if verify:
        try:
            workload.verify(outputs, workload.reference(inputs))
        except VerificationError as error:  # an overflowed stack is the likelier cause: say so
            if warnings:
                raise VerificationError(f"{error}; {'; '.join(warnings)}") from error
            raise
    if isinstance(device, SimDevice):
        result = _result(binary, device, size, stopwatch.seconds())
    else:
        result = _measured_result(binary, device, size, stopwatch.seconds())
    # a sampled run reads zeros from unsampled DPUs, so a data-driven host (bfs) may stop early
    if verify and result.launches != (declared := workload.launch_count()):
        raise KernelError(f"{workload.name}: the host program launched the DPUs {result.launches} time(s) but its "
                          f"workload declares {declared} (Workload.launch_count, a cost-model input)")
    return replace(result, verified=verify, seed=seed, params=dict(workload.param_values), warnings=warnings)


def _measured_result(binary: Binary, device: Device, size: int, wall: float) -> RunResult:
    """A run on a device that measures times only (the simulator's counters stay zero)."""
    launches = getattr(device, "launches", [])
    # like the simulator's: the slowest DPU of each launch, summed over launches
    cycles = sum(max(record.counters) for record in launches if getattr(record, "counters", ()))
    return RunResult(
        variant=binary.variant.label, device=device.kind, nr_dpus=device.nr_dpus,
        nr_tasklets=binary.variant.nr_tasklets, size=size, config_hash=getattr(device, "config_hash", ""),
        launches=device.times.launches, kernel_s=device.times.kernel_s, host_to_dpu_s=device.times.host_to_dpu_s,
        dpu_to_host_s=device.times.dpu_to_host_s, inter_dpu_s=device.times.inter_dpu_s, cycles=cycles, slots=0.0, instructions=0, ipc=0.0,
        dma_read_bytes=0, dma_write_bytes=0, routine_slots=0.0, tasklets=(), verified=True, wall_s=wall,
        log=device.log(0),
    )


def _result(binary: Binary, device: SimDevice, size: int, wall: float) -> RunResult:
    variant = binary.variant
    launches = device.launches
    # the critical DPU of each launch, summed: what the host waits for
    critical = [max(record.timings, key=lambda t: t.cycles) for record in launches]
    n = variant.nr_tasklets
    tasklets = tuple(
        TaskletBreakdown(t, float(sum(c.issue_cycles[t] for c in critical)),
                         float(sum(c.dma_wait_cycles[t] for c in critical)),
                         float(sum(c.sync_wait_cycles[t] for c in critical)),
                         float(sum(c.slots[t] for c in critical)))
        for t in range(n)
    )
    all_timings = [t for record in launches for t in record.timings]
    cycles = sum(c.cycles for c in critical)
    slots = float(sum(t.slots.sum() for t in all_timings))
    critical_slots = float(sum(c.slots.sum() for c in critical))
    return RunResult(
        variant=variant.label, device=device.kind, nr_dpus=device.nr_dpus, nr_tasklets=n, size=size,
        config_hash=device.config.hash, launches=len(launches), kernel_s=device.times.kernel_s,
        host_to_dpu_s=device.times.host_to_dpu_s, dpu_to_host_s=device.times.dpu_to_host_s,
        inter_dpu_s=device.times.inter_dpu_s, cycles=cycles, slots=slots, instructions=int(sum(int(np.sum(t.instructions)) for t in all_timings)),
        ipc=critical_slots / cycles if cycles else 0.0,
        dma_read_bytes=sum(t.dma_read_bytes for t in all_timings),
        dma_write_bytes=sum(t.dma_write_bytes for t in all_timings),
        routine_slots=sum(priced_slots(trace, device.config) for record in launches for trace in record.traces),
        tasklets=tasklets, verified=True, wall_s=wall, log=device.log(0),
    )
