"""The moves of the tuner's evolutionary search: the one-step neighbours of a point of the space
(mutations, one dimension at a time) and the crossovers of two points.

A point is one build run on one DPU count: a pipeline, the tuned defines' values, tasklets, DPUs.
Its neighbours, by dimension:
- each tuned define: every other choice of it (nearest in the declared order first);
- tasklets: the next smaller and larger count the grid allows with the point's defines;
- pipeline: for an O-level pipeline (with or without LLVM knobs), the space's pipelines that change
  its knob set at the same level, or move it to the adjacent level (O1, O2, O3) with the same knobs;
  a random pass sequence has no neighbours (its neighbourhood is every other sequence);
- DPUs (when the space has several DPU counts): the adjacent counts the grid allows.
A move that leaves the grid (a larger block leaves WRAM for fewer tasklets) lands on the largest
valid tasklet count below the point's instead, if any.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass

from cnmtune.errors import PipelineError
from cnmtune.passes import Pipeline
from cnmtune.plugin.tune.space import Defines, Grid, Space
from cnmtune.runtime.workload import DefineValue

ADJACENT_LEVELS = ("O1", "O2", "O3")


@dataclass(frozen=True)
class Point:
    """One build on one DPU count: what a candidate of the search is, before it is built."""

    pipeline: str
    tuned: Defines
    tasklets: int
    dpus: int


def tuned_defines(space: Space, values: dict[str, DefineValue]) -> Defines:
    """Tuned define values as a candidate carries them: in the space's order, without those equal
    to the base build's."""
    base = dict(space.base_defines)
    return tuple((name, values[name]) for name, _ in space.tuned if name in values and values[name] != base.get(name))


def define_moves(point: Point, space: Space, grid: Callable[[Defines], Grid]) -> dict[str, list[Point]]:
    """The valid moves of `point` in each tuned define ("define NAME"): every other choice of it,
    nearest in the declared order first."""
    moves: dict[str, list[Point]] = {}
    values = {**dict(space.base_defines), **dict(point.tuned)}
    for name, choices in space.tuned:
        here = choices.index(values[name]) if values[name] in choices else 0
        others = sorted((c for c in choices if c != values[name]), key=lambda c: abs(choices.index(c) - here))
        moves[f"define {name}"] = _valid([Point(point.pipeline, tuned_defines(space, {**values, name: value}),
                                                point.tasklets, point.dpus) for value in others], grid)
    return moves


def neighbours(point: Point, space: Space, grid: Callable[[Defines], Grid]) -> dict[str, list[Point]]:
    """The valid one-step neighbours of `point` by dimension (see the module docstring)."""
    moves = define_moves(point, space, grid)
    counts = grid(point.tuned).tasklets
    moves["tasklets"] = [Point(point.pipeline, point.tuned, t, point.dpus) for t in _adjacent(counts, point.tasklets)]
    moves["pipeline"] = [Point(text, point.tuned, point.tasklets, point.dpus)
                         for text in pipeline_neighbours(point.pipeline, space.pipelines)]
    if len(space.dpu_counts) > 1:
        dpus = grid(point.tuned).dpus(point.tasklets)
        moves["DPUs"] = [Point(point.pipeline, point.tuned, point.tasklets, d) for d in _adjacent(dpus, point.dpus)]
    return {dimension: found for dimension, found in moves.items() if found}


def crossovers(a: Point, b: Point, grid: Callable[[Defines], Grid]) -> list[Point]:
    """Every valid mix of two points' pipelines, defines, tasklets and DPUs, neither parent."""
    mixes = itertools.product(*({x, y} for x, y in zip((a.pipeline, a.tuned, a.tasklets, a.dpus),
                                                        (b.pipeline, b.tuned, b.tasklets, b.dpus))))
    children = [Point(*mix) for mix in sorted(mixes, key=repr)]
    return [p for p in _valid(children, grid) if p not in (a, b)]


def pipeline_neighbours(text: str, pipelines: tuple[str, ...]) -> list[str]:
    """The pipelines of `pipelines` one move from `text`: another knob set at its level, or its knob
    set at the adjacent level; [] for a pass sequence."""
    here = _level_and_knobs(text)
    if here is None:
        return []
    level, knobs = here
    found = []
    for other in pipelines:
        there = _level_and_knobs(other)
        if there is None or there == here:
            continue
        other_level, other_knobs = there
        if (other_level == level and level in ADJACENT_LEVELS) or (
                other_knobs == knobs and level in ADJACENT_LEVELS and other_level in ADJACENT_LEVELS
                and abs(ADJACENT_LEVELS.index(other_level) - ADJACENT_LEVELS.index(level)) == 1):
            found.append(other)
    return found


def _level_and_knobs(text: str) -> tuple[str, tuple] | None:
    try:
        pipeline = Pipeline.parse(text)
    except PipelineError:
        return None
    return (pipeline.level, pipeline.knobs) if pipeline.level is not None else None


def _adjacent(values: tuple[int, ...], value: int) -> list[int]:
    """The next smaller and the next larger of `values` around `value`."""
    below = [v for v in values if v < value]
    above = [v for v in values if v > value]
    return ([max(below)] if below else []) + ([min(above)] if above else [])


def _valid(points: list[Point], grid: Callable[[Defines], Grid]) -> list[Point]:
    """`points` on their defines' grid: a tasklet count the grid refuses becomes the largest valid one
    below it on the same DPUs (dropped if none); duplicates dropped, order kept."""
    out: dict[Point, None] = {}
    for p in points:
        g = grid(p.tuned)
        if p.dpus not in g.dpus(p.tasklets):
            below = [t for t in g.tasklets if t < p.tasklets and p.dpus in g.dpus(t)]
            if not below:
                continue
            p = Point(p.pipeline, p.tuned, max(below), p.dpus)
        out[p] = None
    return list(out)
