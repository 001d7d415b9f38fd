"""A uniform sample of a tune's whole space, every point built and run as the search runs them:
the yardstick a search is judged by (benchmarks/tune_quality.py --explore)."""

from __future__ import annotations

import itertools
import random
from collections.abc import Callable
from dataclasses import dataclass

from cnmtune.errors import CnmtuneError
from cnmtune.plugin.tune.build import BuildRequest
from cnmtune.plugin.tune.moves import tuned_defines
from cnmtune.plugin.tune.report import Candidate
from cnmtune.plugin.tune.space import Defines
from cnmtune.plugin.tune.search import Search, TuneSpec
from cnmtune.runtime.executor import Executor

__all__ = ["Exploration", "explore"]


@dataclass
class Exploration:
    """A uniform sample of a tune's whole space, every point built and run: the yardstick a search
    is judged by."""

    points: int  # sampled (pipeline, tuned defines, tasklets) points of the space
    space_points: int  # all valid points of the space
    runs: list[Candidate]  # every distinct (binary, DPUs) candidate the sample built, as run
    seconds: dict[str, float]

    @property
    def best(self) -> Candidate | None:
        """The fastest verified (or screened) run of the sample (kernel time)."""
        verified = [c for c in self.runs if c.measured_s is not None]
        return min(verified, key=lambda c: c.measured_s) if verified else None


def explore(spec: TuneSpec, executor: Executor, points: int, seed: int = 0,
            progress: Callable[[str, int, int | None], None] | None = None) -> Exploration:
    """Build and run `points` points drawn uniformly from the space of `spec` (every pipeline x every
    choice of the tuned defines x the tasklet counts the grid allows with them, on the tune's DPU
    count), run as the tune's search runs them (screening runs from SCREEN_FROM DPUs unless
    `spec.screen` is off); the cost model chooses nothing here. The kernel objective only."""
    search = Search(spec, executor, None, progress or (lambda *_: None))
    space = search.space
    if len(space.dpu_counts) != 1:
        raise CnmtuneError("explore samples the space at one DPU count (the kernel objective)")
    combos = [tuned_defines(space, dict(zip([name for name, _ in space.tuned], values)))
              for values in itertools.product(*(choices for _, choices in space.tuned))]
    every = [(pipeline, tuned, tasklets) for tuned in dict.fromkeys(combos) for tasklets in search.grid(tuned).tasklets
             for pipeline in space.pipelines]
    chosen = random.Random(seed).sample(every, min(points, len(every)))
    grouped: dict[tuple[str, Defines], list[int]] = {}
    for pipeline, tuned, tasklets in chosen:
        grouped.setdefault((pipeline, tuned), []).append(tasklets)
    found = search.candidates([BuildRequest(p, tuple(sorted(t)), tuned) for (p, tuned), t in grouped.items()])
    search.measure(found)
    return Exploration(len(chosen), len(every), search.run, search.seconds)
