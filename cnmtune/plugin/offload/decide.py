"""Offload decisions: predicted CNM end-to-end time against the measured CPU time, per problem size.

CNM side, for one size: every (DPUs, tasklets) point of the grid (default: 1 to 2,560 DPUs, a
full 40-rank UPMEM system, x 8 and 16 tasklets; one pipeline, O2) is priced as
  kernel (simulated or extrapolated) + CPU->DPU + DPU->CPU transfers (modelled) + host steps (measured)
and the cheapest feasible point is the best predicted config. How each part is obtained:
- the workload's own host program runs against a SampledSimDevice of D DPUs (runtime/sampled.py):
  its transfer calls are the real pattern for D DPUs and are priced by the simulator's transfer
  model (SimDevice's transfer_seconds, calibrated DpuConfig); a configuration that does not fit
  (MRAM, WRAM, the workload's own checks) is infeasible;
- kernel time: simulated (cnmtune's DPU simulator, calibrated DpuConfig) on the first and the
  last DPU of the D-DPU partitioning, which carry the largest and the remainder share, when the
  per-DPU share size/D is at most `share_cap` size units, and always for the two largest DPU
  counts; for smaller DPU counts (larger shares) it is extrapolated under strong scaling: at a
  fixed size, the slowest DPU's cycles = a + b / D, fitted on the two simulated DPU counts with
  the largest shares (b <= 0 falls back to cycles proportional to 1 / D);
- host steps: the wall time the host program spends between two launches outside device calls
  (PrIM's inter-DPU steps: merging and redistributing partial results), measured (median of 3
  runs for the chosen configuration). Not counted, because in this Python host program they
  are copies a C host does not make: input preparation before the first launch (padding,
  splitting; a C host passes pointers into its arrays) and the work after the last launch
  (concatenating the DPUs' outputs, which a C host receives in place; it also holds red's
  final sum over the DPUs' partial sums, microseconds in C), reported as `host_tail_s`;
  nor the one-time program load.
Sampling assumes the host program does the same launches and transfers whatever the DPUs
return (true of va, red, gemv, bs and of every single-launch kernel). That is checked once per
kernel on 4 fully simulated DPUs against 4 unsimulated ones; a kernel whose host program
depends on DPU results (bfs: it loops until the frontier is empty) is reported as such
(`host_depends_on_results`), and its predictions for more than 2 DPUs are not reliable.
CPU side: the same computation on this machine (plugin/offload/cpu_baseline.py), median of `repeats`,
by one baseline for every size of a decision, so that the flip point compares like with like:
native multithreaded C where the kernel has it (va, red, gemv, bs) and a C compiler works here,
else the workload's numpy reference (`cpu`: 'auto' chooses at the first size; 'native', 'numpy').

Decision: offload when CPU time / CNM time >= min_speedup. The flip point is found by a
geometric grid of sizes and a bisection between the last two sizes with different decisions.

How sure: the transfer model's constants are fitted, each with a 5-95 % range (calibrated.py,
TRANSFER_RANGES). Every candidate keeps its transfer log, so its transfers are re-priced (closed
form, nothing re-run) with every constant at the end of its range that makes transfers cheapest,
and at the end that makes them dearest (device.transfer_bounds: all constants at once, so a
bound on what the ranges allow). The report gives the chosen configuration's transfer share of
its end-to-end time at the requested size with its transfer time at both ends, and the flip
point's range: the flip found again at both ends, by the same search (sizes already evaluated
are re-priced; a size the search needs is evaluated, origin 'range', down to the resolution of
the flip itself). Past the swept sizes the range is open at that end.
"""

from __future__ import annotations

import math
import re
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import pairwise

from cnmtune.errors import CnmtuneError, OffloadError, UsageError
from cnmtune.passes import Pipeline
from cnmtune.plugin.offload.cpu_baseline import CPU_BASELINES, CpuTime, cpu_time
from cnmtune.runtime.kernel import Kernel
from cnmtune.runtime.registry import find_kernel
from cnmtune.runtime.sampled import SampledSimDevice
from cnmtune.runtime.sim import calibrated
from cnmtune.runtime.sim.config import DpuConfig
from cnmtune.runtime.sim.device import Transfer, transfer_bounds, transfer_times
from cnmtune.runtime.toolchain import Binary, ProxyToolchain, Toolchain, Variant
from cnmtune.wording import counted

__all__ = ["DEFAULT_DPUS", "CnmCandidate", "OffloadReport", "OffloadSpec", "SizePoint", "decide", "header_text"]

FULL_SYSTEM_DPUS = 2560  # 40 ranks x 64 DPUs
DEFAULT_DPUS = (1, 4, 16, 64, 256, 1024, 2048, FULL_SYSTEM_DPUS)
DEFAULT_TASKLETS = (8, 16)
DEFAULT_SHARE_CAP = 16384
HOST_REPEATS = 3


@dataclass(frozen=True)
class OffloadSpec:
    """What to decide: a kernel at one size, the sizes to sweep for the flip, the CNM grid."""

    kernel: str
    size: int | str = "default"
    sizes: tuple[int | str, ...] | None = None
    min_size: int | str | None = None  # None: the workload's smallest preset
    max_size: int | str | None = None  # None: its largest preset
    factor: float = 4.0
    dpus: tuple[int, ...] = DEFAULT_DPUS
    tasklets: tuple[int, ...] = DEFAULT_TASKLETS
    pipeline: str = "O2"
    defines: tuple[tuple[str, int | str | None], ...] = ()
    params: tuple[tuple[str, object], ...] = ()
    seed: int = 0
    cpu: str = "auto"
    repeats: int = 7
    min_speedup: float = 1.0
    bisect_steps: int = 4
    share_cap: int = DEFAULT_SHARE_CAP


@dataclass
class CnmCandidate:
    """One (DPUs, tasklets) point at one size: its predicted times, or why it is infeasible."""

    dpus: int
    tasklets: int
    pipeline: str
    kernel_s: float = math.nan
    host_to_dpu_s: float = math.nan
    dpu_to_host_s: float = math.nan
    inter_dpu_s: float = math.nan
    host_s: float = math.nan
    host_tail_s: float = math.nan
    launches: int = 0
    cycles: float = math.nan
    method: str = "simulated"  # or "extrapolated"
    error: str | None = None
    transfers: tuple[Transfer, ...] = ()  # the host program's transfer calls, to re-price them

    @property
    def transfer_s(self) -> float:
        """Every host-link step: CPU-DPU, Inter-DPU and DPU-CPU."""
        return self.host_to_dpu_s + self.inter_dpu_s + self.dpu_to_host_s

    @property
    def total_s(self) -> float:
        """Kernel + transfers + host steps (inf if infeasible)."""
        if self.error:
            return math.inf
        return self.kernel_s + self.transfer_s + self.host_s

    def total_under(self, config: DpuConfig) -> float:
        """total_s with the transfers priced under `config`'s transfer constants."""
        if self.error:
            return math.inf
        return self.total_s - self.transfer_s + transfer_times(self.transfers, config).total_s

    def to_dict(self) -> dict:
        """JSON-safe form."""
        out = {"dpus": self.dpus, "tasklets": self.tasklets, "pipeline": self.pipeline, "method": self.method}
        if self.error:
            return {**out, "error": self.error}
        return {**out, "kernel_s": self.kernel_s, "host_to_dpu_s": self.host_to_dpu_s,
                "dpu_to_host_s": self.dpu_to_host_s, "inter_dpu_s": self.inter_dpu_s, "host_s": self.host_s,
                "host_tail_s": self.host_tail_s,
                "total_s": self.total_s,
                "launches": self.launches, "cycles": self.cycles}


@dataclass
class SizePoint:
    """The decision at one size."""

    size: int
    origin: str  # "grid", "bisection", "range" (the flip's range needed it), "requested"
    cpu: CpuTime
    best: CnmCandidate | None
    candidates: list[CnmCandidate]
    min_speedup: float = 1.0

    @property
    def cnm_s(self) -> float:
        """Predicted CNM end-to-end time of the best configuration."""
        return self.best.total_s if self.best else math.inf

    @property
    def speedup(self) -> float:
        """CPU time / predicted CNM time (> 1: the DPUs are faster)."""
        return self.cpu.seconds / self.cnm_s if self.best else 0.0

    @property
    def offload(self) -> bool:
        """The decision."""
        return self.best is not None and self.speedup >= self.min_speedup

    def offload_under(self, config: DpuConfig) -> bool:
        """The decision with every candidate's transfers priced under `config`."""
        cnm_s = min((c.total_under(config) for c in self.candidates), default=math.inf)
        return math.isfinite(cnm_s) and self.cpu.seconds / cnm_s >= self.min_speedup

    @property
    def transfer_share(self) -> float:
        """The best configuration's transfer time over its end-to-end time (nan without one)."""
        return self.best.transfer_s / self.best.total_s if self.best else math.nan

    def to_dict(self) -> dict:
        """JSON-safe form."""
        return {"size": self.size, "origin": self.origin, "offload": self.offload, "speedup": self.speedup,
                "cnm_s": self.cnm_s if self.best else None, "cpu": self.cpu.to_dict(),
                "best": self.best.to_dict() if self.best else None,
                "candidates": [c.to_dict() for c in self.candidates]}


@dataclass
class OffloadReport:
    """Decisions of one kernel across sizes, the one at the requested size and the flip point."""

    kernel: str
    size_unit: str
    requested: int
    points: list[SizePoint]
    flips: list[tuple[int, int]]
    flip: tuple[int, int] | None
    host_depends_on_results: bool = False
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0
    # with the transfer constants at their cheap and dear ends (module docstring): the best
    # configuration's transfer seconds at the requested size, and the first size past the flip
    # (smaller first; None: beyond the swept sizes at that end; no range without a flip)
    transfer_range_s: tuple[float, float] | None = None
    flip_range: tuple[int | None, int | None] | None = None

    @property
    def at_size(self) -> SizePoint:
        """The decision at the requested size."""
        return next(p for p in self.points if p.size == self.requested)

    @property
    def cpu_baseline(self) -> str:
        """The CPU implementation every size was timed with: 'native' (C) or 'numpy'."""
        return self.points[0].cpu.implementation

    @property
    def ratios(self) -> list[float]:
        """Predicted CNM time / CPU time at each evaluated size, in size order."""
        return [p.cnm_s / p.cpu.seconds for p in self.points]

    @property
    def monotone(self) -> bool:
        """Whether the CNM/CPU ratio is monotone in size over the evaluated sizes."""
        r = self.ratios
        return all(a >= b for a, b in pairwise(r)) or all(a <= b for a, b in pairwise(r))

    def to_dict(self) -> dict:
        """JSON-safe form."""
        at = self.at_size
        return {"kernel": self.kernel, "size_unit": self.size_unit, "size": self.requested,
                "cpu_baseline": self.cpu_baseline,
                "offload": at.offload, "speedup": at.speedup, "best": at.best.to_dict() if at.best else None,
                "cpu": at.cpu.to_dict(), "cnm_s": at.cnm_s if at.best else None,
                "flip": ({"below": self.flip[0], "at": self.flip[1],
                          "offload_above": next(p.offload for p in self.points if p.size == self.flip[1])}
                         if self.flip else None),
                "transfer_share": at.transfer_share if at.best else None,
                "transfer_s_range": list(self.transfer_range_s) if self.transfer_range_s else None,
                "flip_range": list(self.flip_range) if self.flip_range else None,
                "flips": [list(f) for f in self.flips], "monotone_ratio": self.monotone,
                "host_depends_on_results": self.host_depends_on_results,
                "decisions": [p.to_dict() for p in self.points], "notes": self.notes, "seconds": self.seconds}


def size_grid(first: int, last: int, factor: float) -> list[int]:
    """Geometric sizes from `first` to `last` (both included)."""
    if first < 1 or last < first or factor <= 1:
        raise UsageError(f"bad size range {first}..{last} x{factor}: need 1 <= min <= max and factor > 1")
    sizes, value = [], float(first)
    while value < last:
        sizes.append(round(value))
        value *= factor
    return sorted({*sizes, last})


class _Decider:
    def __init__(self, spec: OffloadSpec, toolchain: Toolchain | None,
                 progress: Callable[[str, int, int], None] | None):
        self.spec = spec
        self.kernel = find_kernel(spec.kernel)
        self.workload = self.kernel.workload
        self.config = DpuConfig.calibrated()
        self.transfer_ends = transfer_bounds(self.config, calibrated.TRANSFER_RANGES)  # (cheap, dear)
        self.toolchain = toolchain or ProxyToolchain()
        self.progress = progress or (lambda *_: None)
        self.defines = dict(spec.defines)
        self.params = dict(spec.params)
        self.binaries: dict[int, Binary | CnmtuneError] = {}
        self.points: dict[int, SizePoint] = {}
        self.cpu_baseline: str | None = None  # the CPU implementation of this decision, from its first size
        self._dependent: bool | None = None
        if not spec.dpus or min(spec.dpus) < 1 or not spec.tasklets:
            raise UsageError("give at least one DPU count (>= 1) and one tasklet count")
        Pipeline.parse(spec.pipeline)

    def binary(self, tasklets: int) -> Binary | CnmtuneError:
        if tasklets not in self.binaries:
            try:
                variant = Variant.of(self.kernel, self.spec.pipeline, tasklets, self.defines)
                self.binaries[tasklets] = self.toolchain.compile(variant)
            except CnmtuneError as exc:
                self.binaries[tasklets] = exc
        return self.binaries[tasklets]

    # ------------------------------------------------------------ CNM
    def _run(self, binary: Binary, size: int, dpus: int, tasklets: int, simulate: bool) -> CnmCandidate:
        workload = self.workload(size, dpus, tasklets, self.defines, self.spec.seed, **self.params)
        device = SampledSimDevice(dpus, None if simulate else (), self.config)
        device.load(binary.elf_path)
        inputs = workload.inputs()
        workload.execute(device, inputs)
        tail = device.host_seconds_after_last_launch(time.perf_counter())
        cycles = sum(max((t.cycles for t in record.timings), default=0) for record in device.launches)
        times = device.times
        return CnmCandidate(dpus, tasklets, self.spec.pipeline, times.kernel_s, times.host_to_dpu_s,
                            times.dpu_to_host_s, times.inter_dpu_s, device.host_between_launches_s, tail, times.launches,
                            float(cycles) if simulate else math.nan, "simulated" if simulate else "extrapolated",
                            transfers=tuple(device.transfers))

    def candidates(self, size: int) -> list[CnmCandidate]:
        out = []
        for tasklets in self.spec.tasklets:
            binary = self.binary(tasklets)
            if isinstance(binary, CnmtuneError):
                out += [CnmCandidate(d, tasklets, self.spec.pipeline, error=str(binary)) for d in self.spec.dpus]
                continue
            simulated: list[CnmCandidate] = []
            row = []
            for dpus in sorted(set(self.spec.dpus), reverse=True):
                simulate = size / dpus <= self.spec.share_cap or len(simulated) < 2
                try:
                    candidate = self._run(binary, size, dpus, tasklets, simulate)
                except CnmtuneError as exc:  # does not fit, or a simulator fault: infeasible here
                    candidate = CnmCandidate(dpus, tasklets, self.spec.pipeline, error=str(exc))
                if simulate and not candidate.error:
                    simulated.append(candidate)
                row.append(candidate)
            self._extrapolate(row, simulated)
            out += row
        return out

    def _extrapolate(self, row: list[CnmCandidate], simulated: list[CnmCandidate]) -> None:
        pending = [c for c in row if c.method == "extrapolated" and not c.error]
        if not pending:
            return
        if not simulated:
            for c in pending:
                c.error = "no DPU count of the grid could be simulated to extrapolate from"
            return
        near = sorted(simulated, key=lambda c: c.dpus)[:2]
        if len(near) == 2 and near[0].cycles > near[1].cycles:
            (d1, c1), (d2, c2) = ((c.dpus, c.cycles) for c in near)
            b = (c1 - c2) / (1 / d1 - 1 / d2)
            a = c1 - b / d1

            def cycles(d: int) -> float:
                return a + b / d
        else:
            d1, c1 = near[0].dpus, near[0].cycles

            def cycles(d: int) -> float:
                return c1 * d1 / d
        for c in pending:
            c.cycles = cycles(c.dpus)
            c.kernel_s = c.cycles / self.config.frequency_hz + c.launches * self.config.launch_overhead_s

    def host_depends_on_results(self, size: int) -> bool:
        """Whether the host program's launches or transfers change with what the DPUs return."""
        if self._dependent is None:
            tasklets = next((t for t in self.spec.tasklets if not isinstance(self.binary(t), CnmtuneError)), None)
            self._dependent = False
            if tasklets is not None:
                logs = []
                for sampled in ((0, 1, 2, 3), ()):
                    device = SampledSimDevice(4, sampled, self.config)
                    try:
                        workload = self.workload(size, 4, tasklets, self.defines, self.spec.seed, **self.params)
                        device.load(self.binary(tasklets).elf_path)
                        workload.execute(device, workload.inputs())
                    except CnmtuneError as exc:
                        logs.append(type(exc).__name__)
                    else:
                        logs.append((device.times.launches, tuple(device.transfers)))
                self._dependent = logs[0] != logs[1]
        return self._dependent

    def _host_median(self, best: CnmCandidate, size: int) -> float:
        binary = self.binary(best.tasklets)
        runs = [best.host_s] + [self._run(binary, size, best.dpus, best.tasklets, False).host_s
                                for _ in range(HOST_REPEATS - 1)]
        return statistics.median(runs)

    # ------------------------------------------------------------ CPU and decision
    def evaluate(self, size: int, origin: str) -> SizePoint:
        if size in self.points:
            return self.points[size]
        candidates = self.candidates(size)
        feasible = [c for c in candidates if not c.error]
        best = min(feasible, key=lambda c: c.total_s) if feasible else None
        # one launch: no host step between launches; a result-dependent host program: only the sampled run counts
        if best is not None and best.launches > 1 and not self.host_depends_on_results(size):
            best.host_s = self._host_median(best, size)
        workload = self.workload(size, 1, 1, self.defines, self.spec.seed, **self.params)
        try:
            cpu = cpu_time(workload, workload.inputs(), self.cpu_baseline or self.spec.cpu, self.spec.repeats)
        except ValueError as exc:
            raise OffloadError(f"{self.kernel.name} at size {size:,}: {exc}") from None
        self.cpu_baseline = cpu.implementation
        point = SizePoint(size, origin, cpu, best, candidates, self.spec.min_speedup)
        self.points[size] = point
        return point

    def run(self) -> OffloadReport:
        start = time.perf_counter()
        spec, kernel = self.spec, self.kernel
        requested = kernel.workload.size_of(spec.size)
        if spec.sizes:
            grid = sorted({kernel.workload.size_of(s) for s in spec.sizes})
        else:
            first, last = self.sweep_bounds()
            grid = size_grid(first, last, spec.factor)
        grid = sorted({*grid, requested})
        for done, size in enumerate(grid):
            self.progress("sizes", done, len(grid))
            self.evaluate(size, "requested" if size == requested else "grid")
        self.progress("sizes", len(grid), len(grid))
        flip = self._search(lambda p: p.offload, "bisection", spec.bisect_steps)
        flip_range = self._flip_range(*flip) if flip else None
        changes = self._changes(lambda p: p.offload)
        flip = changes[-1] if changes else None  # the last change over every size evaluated, for the range too
        points = [self.points[s] for s in sorted(self.points)]
        best = self.points[requested].best
        transfer_range = (tuple(transfer_times(best.transfers, c).total_s for c in self.transfer_ends)
                          if best else None)
        dependent = self.host_depends_on_results(min(self.points))
        notes = self._notes(points)
        if dependent:
            notes.insert(0, f"{kernel.name}'s host program depends on what the DPUs return (its launches or "
                            "transfers change), so predictions on sampled DPUs (more than 2 DPUs) are not reliable")
        return OffloadReport(kernel.name, self.workload.size_unit, requested, points, changes, flip,
                             dependent, notes, time.perf_counter() - start, transfer_range, flip_range)

    def _search(self, offload: Callable[[SizePoint], bool], origin: str, steps: int,
                resolution: float = 1.0) -> tuple[int, int] | None:
        """The last two evaluated sizes whose decisions by `offload` differ, narrowed by bisection
        (evaluating the sizes it needs, as `origin`) for at most `steps` steps and while their ratio
        exceeds `resolution`; None if every evaluated size gets the same decision."""
        changes = self._changes(offload)
        if not changes:
            return None
        lo, hi = changes[-1]
        for step in range(steps):
            mid = round(math.sqrt(lo * hi))
            if mid <= lo or mid >= hi or hi / lo <= resolution:
                break
            self.progress(origin, step, steps)
            if offload(self.evaluate(mid, origin)) == offload(self.points[lo]):
                lo = mid
            else:
                hi = mid
        return lo, hi

    def _flip_range(self, lo: int, hi: int) -> tuple[int | None, int | None]:
        """The first size past the flip with the transfer constants at their cheap and at their dear
        end, smaller first, each searched as the flip (`lo`, `hi`) was, to its resolution; None at an
        end: the decision flips beyond the swept sizes there."""
        above = self.points[hi].offload  # the decision past the flip
        deciders = [lambda p, c=config: p.offload_under(c) for config in self.transfer_ends]
        for offload in deciders:
            self._search(offload, "range", self.spec.bisect_steps, hi / lo)
        past = []
        for offload in deciders:  # on every size evaluated by now
            changes = self._changes(offload)
            if changes:
                past.append(changes[-1][1])
            else:  # one decision everywhere: the flip lies below the sweep if it is the one past the flip
                past.append(-math.inf if offload(self.points[min(self.points)]) == above else math.inf)
        low, high = sorted(past)
        return (None if math.isinf(low) else int(low)), (None if math.isinf(high) else int(high))

    def sweep_bounds(self) -> tuple[int, int]:
        """The default sweep's first and last size: as given, else the smallest and the largest preset."""
        spec, presets = self.spec, self.workload.sizes.values()
        if not presets and None in (spec.min_size, spec.max_size):
            raise OffloadError(f"{self.kernel.name} has no size presets: give the sizes to sweep "
                               "(--sizes, or --min-size and --max-size)")
        first = min(presets) if spec.min_size is None else self.kernel.workload.size_of(spec.min_size)
        last = max(presets) if spec.max_size is None else self.kernel.workload.size_of(spec.max_size)
        return first, max(first, last)

    def _changes(self, offload: Callable[[SizePoint], bool]) -> list[tuple[int, int]]:
        """Consecutive evaluated sizes whose decisions by `offload` differ."""
        sizes = sorted(self.points)
        return [(a, b) for a, b in pairwise(sizes) if offload(self.points[a]) != offload(self.points[b])]

    def _notes(self, points: list[SizePoint]) -> list[str]:
        unit = self.workload.size_unit
        extrapolated = sorted({c.dpus for p in points for c in p.candidates if c.method == "extrapolated"})
        labels = sorted({p.cpu.label for p in points})
        notes = [
            f"CNM kernel time: simulated on the first and last DPU of each partitioning (calibrated DpuConfig "
            f"{self.config.hash}) where size / DPUs <= {self.spec.share_cap:,} ({unit}); extrapolated under strong "
            f"scaling (cycles = a + b / DPUs) for larger shares"
            + (f" (DPU counts {', '.join(map(str, extrapolated))} at some sizes)" if extrapolated else ""),
            ("CNM transfers: the workload's own transfer calls for that DPU count, priced by the simulator's "
             "transfer model (modelled); host steps between launches: measured; not counted: input preparation, "
             "output gathering after the last launch (host_tail_s, a Python-harness copy), program load"),
            ("transfer ranges (xfer share, flip range): the transfers priced again with every transfer constant at "
             "the end of its fitted 5-95 % range that makes them cheapest, then dearest (all at once: a bound)"),
            *(f"CPU: {label}" for label in labels),
        ]
        if self.spec.cpu == "auto":
            notes.append(f"CPU baseline at every size: {CPU_BASELINES[self.cpu_baseline]} (--cpu auto: native C "
                         "where the kernel has a C version and a C compiler works here, else numpy)")
        return notes


def decide(spec: OffloadSpec, toolchain: Toolchain | None = None,
           progress: Callable[[str, int, int], None] | None = None) -> OffloadReport:
    """The offload decision for spec.kernel at spec.size, with the flip point (see the module docstring)."""
    return _Decider(spec, toolchain, progress).run()


def macro_name(kernel: str) -> str:
    """CNMTUNE_OFFLOAD_<KERNEL> with every character that is not a letter or digit as '_'."""
    return "CNMTUNE_OFFLOAD_" + re.sub(r"[^A-Za-z0-9]", "_", kernel).upper()


def _c_string(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def header_text(reports: list[OffloadReport]) -> str:
    """A C header with each kernel's decision at its requested size and the chosen configuration."""
    lines = ["/* Generated by `cnmtune offload`: offload decisions for this machine. Do not edit. */",
             "#ifndef CNMTUNE_OFFLOAD_H", "#define CNMTUNE_OFFLOAD_H", ""]
    for report in reports:
        at, name = report.at_size, macro_name(report.kernel)
        best = at.best
        lines.append(f"/* {report.kernel} at size {report.requested} ({report.size_unit}): "
                     + (f"CNM {at.cnm_s * 1e3:.4f} ms predicted on {counted(best.dpus, 'DPU')} x "
                        f"{counted(best.tasklets, 'tasklet')}, "
                        if best else "no feasible CNM configuration, ")
                     + f"CPU {at.cpu.seconds * 1e3:.4f} ms measured ({at.cpu.implementation}); "
                     + f"speedup {at.speedup:.3g}x */")
        lines.append(f"#define {name} {int(at.offload)}")
        if best:
            lines.append(f"#define {name}_DPUS {best.dpus}")
            lines.append(f"#define {name}_TASKLETS {best.tasklets}")
            lines.append(f"#define {name}_PIPELINE {_c_string(best.pipeline)}")
        lines.append(f"#define {name}_SIZE {report.requested}")
        if report.flip:
            above = next(p.offload for p in report.points if p.size == report.flip[1])
            lines.append(f"/* the decision flips between sizes {report.flip[0]} and {report.flip[1]}; "
                         f"from {report.flip[1]} on it is {int(above)} */")
            lines.append(f"#define {name}_FLIP_SIZE {report.flip[1]}")
        else:
            lines.append(f"#define {name}_FLIP_SIZE 0 /* no flip within the swept sizes */")
        lines.append("")
    lines.append("#endif /* CNMTUNE_OFFLOAD_H */")
    return "\n".join(lines) + "\n"
