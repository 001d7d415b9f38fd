"""Design sweeps: re-time stored traces under a full-factorial grid of DpuConfig design points.

For each kernel, one functional run is recorded once (runtime/sim/traces.py) and every design point
is priced from it without re-executing: per launch the slowest DPU's re-timed cycles divided
by the frequency plus the launch overhead, summed over launches (SimDevice's own arithmetic, so
the recording config gives the co-simulated kernel time bit for bit), and the transfer log
priced with the simulator's transfer model under the point's config. A trace is re-timed only
where that is exact (runtime/sim/retime.py); elsewhere the point is re-executed by co-simulation
under its config, or refused (`strict`). Results: time per point, the Pareto front of time
against a user cost proxy (a safe arithmetic expression over the parameters, see CostExpression)
and the main effect of every parameter (how much the mean time moves across its levels).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace

from cnmtune.errors import InvalidRetime, SweepError
from cnmtune.plugin.sweep.design import CostExpression, DesignPoint
from cnmtune.runtime.sim.retime import (
    PreparedTrace,
    checked_retime,
    counter_actions,
    timing_key,
)
from cnmtune.runtime.sim.traces import TraceSet, kernel_of
from cnmtune.runtime.sim.config import DpuConfig
from cnmtune.runtime.sim.device import SimDevice, transfer_times
from cnmtune.runtime.toolchain import ProxyToolchain, Toolchain, Variant

__all__ = ["KernelSweep", "PointResult", "kernel_seconds", "main_effects", "pareto_front", "retime_points",
           "sweep_trace_set"]


@dataclass(frozen=True)
class PointResult:
    """A design point's times: kernel (all launches), transfers each way, and how they were had."""

    point: DesignPoint
    kernel_s: float
    host_to_dpu_s: float
    dpu_to_host_s: float
    inter_dpu_s: float
    method: str  # "retimed", "recorded" (DPU timing unchanged), or "re-executed"
    note: str = ""
    cost: float = math.nan
    pareto: bool = False
    launch_cycles: tuple[int, ...] = ()  # per launch, the slowest DPU's cycles

    @property
    def transfer_s(self) -> float:
        """Every host-link step: CPU-DPU, Inter-DPU and DPU-CPU."""
        return self.host_to_dpu_s + self.inter_dpu_s + self.dpu_to_host_s

    @property
    def total_s(self) -> float:
        """Kernel + transfers."""
        return self.kernel_s + self.transfer_s

    def seconds(self, metric: str) -> float:
        """The time a sweep ranks by: 'kernel', or 'total' (kernel + transfers)."""
        return self.kernel_s if metric == "kernel" else self.total_s

    def to_dict(self) -> dict:
        """JSON-safe form."""
        return {"params": dict(self.point.values), "kernel_s": self.kernel_s, "host_to_dpu_s": self.host_to_dpu_s,
                "dpu_to_host_s": self.dpu_to_host_s, "inter_dpu_s": self.inter_dpu_s, "transfer_s": self.transfer_s, "total_s": self.total_s,
                "cost": self.cost, "pareto": self.pareto, "method": self.method, "note": self.note}


@dataclass
class KernelSweep:
    """Every design point of one kernel's trace set, with main effects and the Pareto front."""

    trace_set: TraceSet
    results: list[PointResult]
    metric: str
    main_effects: list[dict] = field(default_factory=list)
    seconds: float = 0.0
    recorded_now: bool = False

    @property
    def most_important(self) -> str | None:
        """The parameter with the largest main effect on the metric."""
        return self.main_effects[0]["param"] if self.main_effects else None

    def to_dict(self) -> dict:
        """JSON-safe form."""
        ts = self.trace_set
        methods = {m: sum(r.method == m for r in self.results) for m in ("recorded", "retimed", "re-executed")}
        return {"kernel": ts.kernel, "variant": ts.variant, "dpus": ts.dpus, "size": ts.size, "seed": ts.seed,
                "trace_set": str(ts.directory) if ts.directory else None, "recorded_now": self.recorded_now,
                "recorded": {"kernel_s": ts.kernel_s, "host_to_dpu_s": ts.host_to_dpu_s,
                             "dpu_to_host_s": ts.dpu_to_host_s, "inter_dpu_s": ts.inter_dpu_s, "config_hash": ts.config.hash,
                             "record_seconds": ts.record_seconds},
                "metric": self.metric, "points": [r.to_dict() for r in self.results], "methods": methods,
                "main_effects": self.main_effects, "most_important": self.most_important,
                "seconds": self.seconds}


def kernel_seconds(cycles_per_launch: list[list[int]], config: DpuConfig) -> float:
    """Sum over launches of the slowest DPU's cycles / frequency + launch overhead (SimDevice's sum)."""
    total = 0.0
    for cycles in cycles_per_launch:
        total += max(cycles) / config.frequency_hz + config.launch_overhead_s
    return total


class _Evaluator:
    """Prices design points of one trace set, caching re-timed cycles per DPU-timing key."""

    def __init__(self, trace_set: TraceSet, strict: bool, toolchain: Toolchain | None):
        self.ts = trace_set
        self.strict = strict
        self.toolchain = toolchain
        self.recorded_key = timing_key(trace_set.config)
        self.prepared = {}
        for launch in trace_set.launches:
            for file, trace in zip(launch.files, launch.traces):
                self.prepared.setdefault(file, PreparedTrace(trace))
        self.counters = any(counter_actions(p.trace) for p in self.prepared.values())
        self._cycles: dict[tuple, list[list[int]] | InvalidRetime] = {}
        self._executed: dict[tuple, tuple[list[list[int]], list]] = {}
        self._binary = None

    def __call__(self, point: DesignPoint) -> PointResult:
        ts, config = self.ts, point.config
        if config.frequency_hz != ts.config.frequency_hz and self.counters:
            return self._invalid(point, InvalidRetime(
                "the program reads the performance counter and the frequency changes (a program can turn counter "
                "values into seconds with CLOCKS_PER_SEC, which the replay cannot see)"))
        key = timing_key(config)
        if key == self.recorded_key:  # nothing the DPU timeline reads changed
            cycles, method = [list(launch.cycles) for launch in ts.launches], "recorded"
        else:
            try:
                cycles, method = self._retimed(key, config), "retimed"
            except InvalidRetime as exc:
                return self._invalid(point, exc)
        return self._result(point, cycles, ts.transfers, config, method)

    @staticmethod
    def _result(point: DesignPoint, cycles: list[list[int]], transfers, config: DpuConfig, method: str,
                note: str = "") -> PointResult:
        times = transfer_times(transfers, config)
        return PointResult(point, kernel_seconds(cycles, config), times.host_to_dpu_s, times.dpu_to_host_s,
                           times.inter_dpu_s, method, note, launch_cycles=tuple(max(c) for c in cycles))

    def _retimed(self, key: tuple, config: DpuConfig) -> list[list[int]]:
        cached = self._cycles.get(key)
        if cached is None:
            per_file: dict[str, int] = {}
            cached = []
            try:
                for launch in self.ts.launches:
                    row = []
                    for dpu, (file, signature) in enumerate(zip(launch.files, launch.signatures)):
                        if file not in per_file:
                            per_file[file] = checked_retime(self.prepared[file], config, signature,
                                                            self.ts.config, dpu).cycles
                        row.append(per_file[file])
                    cached.append(row)
            except InvalidRetime as exc:
                cached = exc
            self._cycles[key] = cached
        if isinstance(cached, InvalidRetime):
            raise cached
        return cached

    def _invalid(self, point: DesignPoint, exc: InvalidRetime) -> PointResult:
        reason = str(exc)
        if self.strict:
            raise InvalidRetime(f"{self.ts.variant} at {point.label}: the trace cannot be re-timed exactly: {reason}; "
                                "drop --strict to re-execute such points") from None
        config = point.config
        # cycles do not depend on the host-side constants; with counters, CLOCKS_PER_SEC follows the frequency
        key = (timing_key(config), config.frequency_hz if self.counters else None)
        if key not in self._executed:
            self._executed[key] = self._reexecute(config)
        cycles, transfers = self._executed[key]
        # this run's own transfer log: its host decisions may differ from the recording's
        return self._result(point, cycles, transfers, config, "re-executed", reason)

    def _reexecute(self, config: DpuConfig) -> tuple[list[list[int]], list]:
        """Co-simulate the recorded run under `config` (verified): its cycles per launch and transfer log."""
        ts = self.ts
        if self._binary is None:
            variant = Variant.of(kernel_of(ts), ts.pipeline, ts.tasklets, dict(ts.defines))
            self._binary = (self.toolchain or ProxyToolchain()).compile(variant)
            if self._binary.elf_hash != ts.elf_hash:
                raise InvalidRetime(f"{ts.variant}: cannot re-execute: the kernel now compiles to another ELF "
                                    f"({self._binary.elf_hash[:12]}, traces from {ts.elf_hash[:12]})")
        device = SimDevice(ts.dpus, config)
        workload = self._binary.variant.kernel.workload(ts.size, ts.dpus, ts.tasklets, dict(ts.defines), ts.seed,
                                                        **dict(ts.params))
        device.load(self._binary.elf_path)
        inputs = workload.inputs()
        workload.verify(workload.execute(device, inputs), workload.reference(inputs))
        return [[t.cycles for t in record.timings] for record in device.launches], list(device.transfers)


def main_effects(results: list[PointResult], metric: str = "kernel") -> list[dict]:
    """Per parameter: the mean metric at each level and its range (max - min of those means),
    ranked largest first; 'relative' is the range over the grand mean."""
    if not results:
        return []
    grand = sum(r.seconds(metric) for r in results) / len(results)
    effects = []
    for name, _ in results[0].point.values:
        levels: dict[float, list[float]] = {}
        for r in results:
            levels.setdefault(dict(r.point.values)[name], []).append(r.seconds(metric))
        means = {level: sum(v) / len(v) for level, v in levels.items()}
        spread = max(means.values()) - min(means.values())
        effects.append({"param": name, "range_s": spread, "relative": spread / grand if grand else 0.0,
                        "level_means_s": {f"{level:g}": mean for level, mean in means.items()}})
    effects.sort(key=lambda e: -e["range_s"])
    return effects


def pareto_front(results: list[PointResult], metric: str = "kernel") -> list[int]:
    """Indices of the points no other point beats on both cost and the metric (ties kept once)."""
    order = sorted(range(len(results)), key=lambda i: (results[i].cost, results[i].seconds(metric)))
    front, best = [], math.inf
    for i in order:
        value = results[i].seconds(metric)
        if value < best:
            front.append(i)
            best = value
    return front


def sweep_trace_set(trace_set: TraceSet, points: list[DesignPoint], cost: CostExpression | None = None,
                    metric: str = "kernel", strict: bool = False, toolchain: Toolchain | None = None,
                    progress: Callable[[int, int], None] | None = None) -> KernelSweep:
    """Price every design point from one trace set (see the module docstring)."""
    if metric not in ("kernel", "total"):
        raise SweepError(f"unknown metric {metric!r}; choose kernel or total")
    cost = cost or CostExpression()
    start = time.perf_counter()
    evaluate = _Evaluator(trace_set, strict, toolchain)
    results = []
    for done, point in enumerate(points, 1):
        results.append(replace(evaluate(point), cost=cost(point)))
        if progress:
            progress(done, len(points))
    front = set(pareto_front(results, metric))
    results = [replace(r, pareto=i in front) for i, r in enumerate(results)]
    return KernelSweep(trace_set, results, metric, main_effects(results, metric), time.perf_counter() - start)


class _ExactOnly(_Evaluator):
    """An evaluator that re-executes nothing: a point that cannot be re-timed raises its reason."""

    def _invalid(self, point: DesignPoint, exc: InvalidRetime) -> PointResult:
        raise exc


def retime_points(trace_set: TraceSet, points: list[DesignPoint]) -> Iterator[PointResult | InvalidRetime]:
    """Each point's exact result (recorded or re-timed), or the InvalidRetime saying why its trace
    cannot be re-timed exactly there; nothing is re-executed."""
    evaluate = _ExactOnly(trace_set, True, None)
    for point in points:
        try:
            yield evaluate(point)
        except InvalidRetime as exc:
            yield exc
