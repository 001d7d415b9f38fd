"""The search space of one tune: pipelines x tasklet counts x the DPU counts valid with each.

The pipeline set is O0..O3 plus seeded random pass sequences (cnmtune.passes.pipeline_set);
the (DPUs, tasklets) points are those of the grid that the workload accepts at the tuned size
(cnmtune.runtime.grid). The default build is the workload's own build within the grid: O2, the
default defines and the workload's tasklet count if the grid has it, else the nearest grid
value below it, else the smallest; it is always compiled and run, the reference no choice may
be slower than.
"""

from __future__ import annotations

from dataclasses import dataclass

from cnmtune.errors import CnmtuneError
from cnmtune.passes import pipeline_set
from cnmtune.runtime.grid import config_grid
from cnmtune.runtime.kernel import Kernel

DEFAULT_PIPELINE = "O2"


@dataclass(frozen=True)
class Space:
    """Pipelines to compile at each tasklet count, and the DPU counts each tasklet count runs on."""

    pipelines: tuple[str, ...]
    tasklets: tuple[int, ...]
    dpus_by_tasklets: tuple[tuple[int, tuple[int, ...]], ...]
    default_tasklets: int

    def dpus(self, tasklets: int) -> tuple[int, ...]:
        """The DPU counts a binary with `tasklets` tasklets is a candidate on."""
        return dict(self.dpus_by_tasklets).get(tasklets, ())


def default_tasklets(workload_tasklets: int, grid: tuple[int, ...]) -> int:
    """The tasklet count of the default build: the workload's if in `grid`, else the nearest grid
    value below it, else the smallest."""
    below = [t for t in grid if t <= workload_tasklets]
    return max(below) if below else min(grid)


def search_space(kernel: Kernel, size: int, pipelines: int, seed: int, length: int | None,
                 dpus: tuple[int, ...], tasklets: tuple[int, ...]) -> Space:
    """The space of a tune of `kernel` at `size`; no valid (DPUs, tasklets) point is an error."""
    points = [p.config for p in config_grid(kernel, list(dpus), list(tasklets), [size]) if p.valid]
    if not points:
        raise CnmtuneError(f"{kernel.name}: no valid (DPUs, tasklets) point in the grid at size {size}")
    by_tasklets: dict[int, list[int]] = {}
    for c in points:
        by_tasklets.setdefault(c.tasklets, []).append(c.dpus)
    texts = [p.text for p in pipeline_set(pipelines, seed, length)]
    if DEFAULT_PIPELINE not in texts:
        texts.append(DEFAULT_PIPELINE)
    grid = tuple(sorted(by_tasklets))
    return Space(tuple(texts), grid, tuple((t, tuple(d)) for t, d in by_tasklets.items()),
                 default_tasklets(kernel.workload.nr_tasklets, grid))
