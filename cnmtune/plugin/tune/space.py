"""The search space of one tune: pipelines x tasklet counts x the DPU counts valid with each.

The pipeline set is O0..O3 plus seeded random pass sequences (cnmtune.passes.pipeline_set);
the (DPUs, tasklets) points are those of the grid that the workload accepts at the tuned size
(cnmtune.runtime.grid). Every point is built with the workload's defines updated by the user's
(-D) and run with the user's workload parameters (--param); the grid is checked with both. The
default build is the workload's own build within the grid, as the user asked for it: O2, those
defines and parameters, and the workload's tasklet count if the grid has it, else the nearest
grid value below it, else the smallest; it is always compiled and run, the reference no choice
may be slower than.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from cnmtune.errors import CnmtuneError
from cnmtune.passes import pipeline_set
from cnmtune.runtime.grid import config_grid
from cnmtune.runtime.kernel import Kernel
from cnmtune.runtime.workload import DefineValue

DEFAULT_PIPELINE = "O2"


@dataclass(frozen=True)
class Space:
    """Pipelines to compile at each tasklet count, the DPU counts each tasklet count runs on, and
    the defines of every build and workload parameters of every run."""

    pipelines: tuple[str, ...]
    tasklets: tuple[int, ...]
    dpus_by_tasklets: tuple[tuple[int, tuple[int, ...]], ...]
    default_tasklets: int
    defines: tuple[tuple[str, DefineValue], ...] = ()
    params: tuple[tuple[str, object], ...] = ()

    def dpus(self, tasklets: int) -> tuple[int, ...]:
        """The DPU counts a binary with `tasklets` tasklets is a candidate on."""
        return dict(self.dpus_by_tasklets).get(tasklets, ())


def default_tasklets(workload_tasklets: int, grid: tuple[int, ...]) -> int:
    """The tasklet count of the default build: the workload's if in `grid`, else the nearest grid
    value below it, else the smallest."""
    below = [t for t in grid if t <= workload_tasklets]
    return max(below) if below else min(grid)


def search_space(kernel: Kernel, size: int, pipelines: int, seed: int, length: int | None,
                 dpus: tuple[int, ...], tasklets: tuple[int, ...],
                 defines: tuple[tuple[str, DefineValue], ...] = (),
                 params: tuple[tuple[str, object], ...] = ()) -> Space:
    """The space of a tune of `kernel` at `size` with `defines` and `params`; no valid (DPUs,
    tasklets) point is an error naming the most frequent reason."""
    grid_points = config_grid(kernel, list(dpus), list(tasklets), [size], defines=dict(defines), params=dict(params))
    points = [p.config for p in grid_points if p.valid]
    if not points:
        reason, _ = Counter(p.reason for p in grid_points).most_common(1)[0]
        raise CnmtuneError(f"{kernel.name}: no valid (DPUs, tasklets) point in the grid at size {size}: {reason}")
    by_tasklets: dict[int, list[int]] = {}
    for c in points:
        by_tasklets.setdefault(c.tasklets, []).append(c.dpus)
    texts = [p.text for p in pipeline_set(pipelines, seed, length)]
    if DEFAULT_PIPELINE not in texts:
        texts.append(DEFAULT_PIPELINE)
    grid = tuple(sorted(by_tasklets))
    return Space(tuple(texts), grid, tuple((t, tuple(d)) for t, d in by_tasklets.items()),
                 default_tasklets(kernel.workload.nr_tasklets, grid), defines, params)
