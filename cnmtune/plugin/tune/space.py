"""The search space of one tune: pipelines x tasklet counts x the workload's tuned defines, at the
DPU count the user gives (or over DPU counts, under the end-to-end objective).

The pipeline set is O0..O3 and seeded random pass sequences (cnmtune.passes.pipeline_set), plus
O2 and O3 with LLVM's unrolling knobs (cnmtune.passes.knob_pipelines) unless ``knobs`` is off.
The (DPUs, tasklets) points are those of the grid that the workload accepts at the tuned size
with a build's defines (cnmtune.runtime.grid; a larger block define leaves WRAM for fewer
tasklets). Every build starts
from the workload's defines updated by the user's (-D): the base; a define the workload declares
tuned (``Workload.tuned_defines``) and the user did not fix is searched over its choices. Every run
gets the user's workload parameters (--param). The default build is the workload's own build as
the user asked for it: O2, the base defines and parameters, and the workload's tasklet count if the
grid has it, else the nearest grid value below it, else the smallest; it is always compiled and
run, the reference no choice may be slower than.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from cnmtune.errors import CnmtuneError, UsageError
from cnmtune.passes import knob_pipelines, pipeline_set
from cnmtune.runtime.grid import config_grid
from cnmtune.runtime.kernel import Kernel
from cnmtune.runtime.workload import DefineValue

DEFAULT_PIPELINE = "O2"
RANK_DPUS = 64  # one UPMEM rank: the default allocation of a tune
OBJECTIVES = ("kernel", "end-to-end")

Defines = tuple[tuple[str, DefineValue], ...]


@dataclass(frozen=True)
class Grid:
    """The DPU counts each tasklet count runs on, for one set of defines."""

    dpus_by_tasklets: tuple[tuple[int, tuple[int, ...]], ...]

    @property
    def tasklets(self) -> tuple[int, ...]:
        """The tasklet counts with at least one valid DPU count, ascending."""
        return tuple(sorted(t for t, _ in self.dpus_by_tasklets))

    def dpus(self, tasklets: int) -> tuple[int, ...]:
        """The DPU counts a binary with `tasklets` tasklets is a candidate on."""
        return dict(self.dpus_by_tasklets).get(tasklets, ())


@dataclass(frozen=True)
class Space:
    """Pipelines to compile at each tasklet count of the base grid, the defines of every build (the
    base) and the tuned defines' choices, the workload parameters of every run, the size and the
    DPU counts."""

    pipelines: tuple[str, ...]
    grid: Grid
    default_tasklets: int
    defines: Defines = ()
    params: tuple[tuple[str, object], ...] = ()
    tuned: tuple[tuple[str, tuple[DefineValue, ...]], ...] = ()
    size: int = 0
    dpu_counts: tuple[int, ...] = ()
    base_defines: Defines = ()  # the workload's defines updated by `defines`: the default build's

    @property
    def tasklets(self) -> tuple[int, ...]:
        """The tasklet counts of the base grid."""
        return self.grid.tasklets

    def dpus(self, tasklets: int) -> tuple[int, ...]:
        """The DPU counts a base build with `tasklets` tasklets is a candidate on."""
        return self.grid.dpus(tasklets)

    def build_defines(self, tuned: Defines) -> Defines:
        """The defines of a build: the base updated by `tuned` (tuned defines' values)."""
        return tuple({**dict(self.defines), **dict(tuned)}.items())


def default_tasklets(workload_tasklets: int, grid: tuple[int, ...]) -> int:
    """The tasklet count of the default build: the workload's if in `grid`, else the nearest grid
    value below it, else the smallest."""
    below = [t for t in grid if t <= workload_tasklets]
    return max(below) if below else min(grid)


def valid_grid(kernel: Kernel, size: int, dpus: tuple[int, ...], tasklets: tuple[int, ...], defines: Defines,
               params: tuple[tuple[str, object], ...]) -> tuple[Grid, str]:
    """The valid (DPUs, tasklets) points with `defines`, and the most frequent reason a point is not
    ('' when all are). A tune's DPU count is the user's allocation, so tasklets < DPUs is allowed."""
    points = config_grid(kernel, list(dpus), list(tasklets), [size], tasklets_at_least_dpus=False,
                         defines=dict(defines), params=dict(params))
    by_tasklets: dict[int, list[int]] = {}
    for p in points:
        if p.valid:
            by_tasklets.setdefault(p.config.tasklets, []).append(p.config.dpus)
    reasons = Counter(p.reason for p in points if not p.valid)
    return (Grid(tuple((t, tuple(d)) for t, d in sorted(by_tasklets.items()))),
            reasons.most_common(1)[0][0] if reasons else "")


def rank_dpus(kernel: Kernel, size: int, tasklets: tuple[int, ...], defines: Defines,
              params: tuple[tuple[str, object], ...]) -> int:
    """One rank (64 DPUs), or the largest power of two below it that the size allows."""
    counts = [RANK_DPUS >> k for k in range(RANK_DPUS.bit_length())]
    for dpus in counts:
        grid, _ = valid_grid(kernel, size, (dpus,), tasklets, defines, params)
        if grid.dpus_by_tasklets:
            return dpus
    return RANK_DPUS


def search_space(kernel: Kernel, size: int, pipelines: int, seed: int, length: int | None,
                 dpus: tuple[int, ...] | None, tasklets: tuple[int, ...], defines: Defines = (),
                 params: tuple[tuple[str, object], ...] = (), objective: str = "kernel",
                 tune_defines: bool = True, knobs: bool = True) -> Space:
    """The space of a tune of `kernel` at `size` with base `defines` and `params` on `dpus` (None:
    one rank, or the largest count the size allows): `pipelines` levels and random sequences, and
    the knob pipelines with `knobs`; no valid (DPUs, tasklets) point is an error naming the most
    frequent reason."""
    if objective not in OBJECTIVES:
        raise UsageError(f"unknown objective {objective!r}; choose {' or '.join(OBJECTIVES)}")
    base = tuple(kernel.workload.resolve_defines(dict(defines)).items())
    if dpus is None:
        dpus = (rank_dpus(kernel, size, tasklets, base, params),)
    if objective == "kernel" and len(dpus) > 1:
        raise UsageError(f"--dpus {','.join(map(str, dpus))}: the kernel objective tunes at one DPU count (more "
                           "DPUs always run a kernel faster); give one, or compare DPU counts with "
                           "--objective end-to-end (kernel + transfers)")
    grid, reason = valid_grid(kernel, size, dpus, tasklets, base, params)
    if not grid.dpus_by_tasklets:
        raise CnmtuneError(f"{kernel.name}: no valid (DPUs, tasklets) point in the grid at size {size}: {reason}")
    texts = [p.text for p in pipeline_set(pipelines, seed, length)]
    texts += [p.text for p in knob_pipelines() if p.text not in texts] if knobs else []
    if DEFAULT_PIPELINE not in texts:
        texts.append(DEFAULT_PIPELINE)
    fixed = set(dict(defines))
    tuned = tuple((name, kernel.workload.define_choices[name]) for name in kernel.workload.tuned_defines
                  if name not in fixed) if tune_defines else ()
    return Space(tuple(texts), grid, default_tasklets(kernel.workload.nr_tasklets, grid.tasklets), defines,
                 params, tuned, size, tuple(dpus), base)
