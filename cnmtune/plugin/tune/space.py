"""The search space of one tune: pipelines x tasklet counts x the DPU counts valid with each.

The pipeline set is O0..O3 plus seeded random pass sequences (cnmtune.passes.pipeline_set);
the (DPUs, tasklets) points are those of the grid that the workload accepts at the tuned size
(cnmtune.runtime.grid). The default build, O2 at 16 tasklets, is always compiled, as the
reference a choice is measured against.
"""

from __future__ import annotations

from dataclasses import dataclass

from cnmtune.errors import CnmtuneError
from cnmtune.passes import pipeline_set
from cnmtune.runtime.grid import config_grid
from cnmtune.runtime.kernel import Kernel

DEFAULT_PIPELINE, DEFAULT_TASKLETS = "O2", 16


@dataclass(frozen=True)
class Space:
    """Pipelines to compile at each tasklet count, and the DPU counts each tasklet count runs on."""

    pipelines: tuple[str, ...]
    tasklets: tuple[int, ...]
    dpus_by_tasklets: tuple[tuple[int, tuple[int, ...]], ...]

    def dpus(self, tasklets: int) -> tuple[int, ...]:
        """The DPU counts a binary with `tasklets` tasklets is a candidate on (none: compiled only)."""
        return dict(self.dpus_by_tasklets).get(tasklets, ())


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
    return Space(tuple(texts), tuple(sorted(set(by_tasklets) | {DEFAULT_TASKLETS})),
                 tuple((t, tuple(d)) for t, d in by_tasklets.items()))
