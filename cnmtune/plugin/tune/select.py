"""The selection role of a tune: what a round builds (the elite's offspring) and which of the built
candidates it runs (the batch).

A candidate is not run where its twin has run or is picked: another binary with the same model
input row (features, DPUs, tasklets, sizes, launches) and the same defines. The model cannot tell
twins apart, and neither can a run: in the reference dataset 22,358 of 129,783 distinct binaries
at a configuration (kernel, defines, DPUs, tasklets, size) are in 10,239 groups of twins, and in
every group their kernel times are the same to 0.005 % (O1 and O2 builds that differ in register
names, random pass sequences that end in the same code). A tune's run is worth a distinct variant.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from cnmtune.plugin.tune.build import BuildRequest
from cnmtune.plugin.tune.moves import Point, crossovers, define_moves, neighbours
from cnmtune.plugin.tune.report import Candidate
from cnmtune.plugin.tune.score import PRIOR_SHARE, interleave, ranked_pipelines
from cnmtune.plugin.tune.space import Defines

if TYPE_CHECKING:
    from cnmtune.plugin.tune.search import Search

__all__ = ["batch", "offspring", "ranked_neighbours"]


def offspring(search: Search) -> dict[str, list[Candidate]]:
    """Build and score the elite's offspring:
    - the neighbours of each elite run, and the crossovers of the best two;
    - the 2k pipelines the model ranks best, at the best run's defines and tasklets;
    - the best run at every tasklet count of its grid, for the model to rank (bs: 16 tasklets 2.56x,
      12 2.51x, 8 2.61x: the adjacent moves stop at 16);
    - two moves from the best run, a define to one of its two nearest values and either the pipeline
      (ts's fastest build is O3 at BL=5, 1.99x; O2 is best at BL=4, 1.87x, and 1.72x at BL=5) or
      another define to one of its two nearest values (hst-l on 8 tasklets: BL=7 alone 1.04x,
      NR_HISTO=2 alone 1.00x, both 1.20x).
    Returns the unmeasured crossovers and neighbours of the best run by dimension, the define pairs
    one dimension after the single defines. A define's values, and the pairs, come nearest first: the
    features barely see define values, nor how two interact (NR_HISTO splits the tasklets' contention
    for hst-l's mutexes). The other dimensions come in the order of ``ranked_neighbours``."""
    space, elite = search.space, search.elite()
    if not elite:
        return {}
    points = [search.point_of(c) for c in elite]
    moves = [neighbours(p, space, search.grid) for p in points]
    crossed = crossovers(points[0], points[1], search.grid) if len(points) > 1 else []
    wanted = [p for m in moves for found in m.values() for p in found] + crossed
    best = points[0]
    # the pipelines the model ranks best, built with the best run's defines and tasklets
    texts = ranked_pipelines(search.pool, Candidate.predicted_objective_s)[:2 * search.spec.top_k]
    wanted += [Point(text, best.tuned, best.tasklets, best.dpus) for text in texts]
    # the best run at every tasklet count of its grid
    grid = search.grid(best.tuned)
    wanted += [Point(best.pipeline, best.tuned, t, best.dpus) for t in grid.tasklets if best.dpus in grid.dpus(t)]
    # two moves from the best run: a define to one of its two nearest values, and the pipeline or
    # another define to one of its two nearest values
    defines = {dimension: found for dimension, found in moves[0].items() if dimension.startswith("define ")}
    moved = {dimension: found[:2] for dimension, found in defines.items()}
    wanted += [Point(q.pipeline, p.tuned, p.tasklets, p.dpus) for found in moved.values() for p in found
               for q in moves[0].get("pipeline", [])]
    pairs = list(dict.fromkeys(q for dimension, found in moved.items() for p in found
                               for other, there in define_moves(p, space, search.grid).items()
                               if other != dimension for q in there[:2]))
    wanted += pairs
    grouped: dict[tuple[str, Defines], set[int]] = {}
    for p in wanted:
        grouped.setdefault((p.pipeline, p.tuned), set()).add(p.tasklets)
    search.candidates([BuildRequest(text, tuple(sorted(t)), tuned) for (text, tuned), t in grouped.items()])
    by_dimension = {"crossover": crossed, **defines, "define pair": pairs, **moves[0]}
    out = {}
    for dimension, found in by_dimension.items():
        fresh = [search.points[p] for p in found if p in search.points and search.points[p].status == "not run"]
        distinct = list({id(c): c for c in fresh}.values())
        # a define's values nearest first: the features barely see them, so the model cannot rank them
        out[dimension] = distinct if dimension.startswith("define ") else ranked_neighbours(search, distinct)
    return out


def ranked_neighbours(search: Search, candidates: list[Candidate]) -> list[Candidate]:
    """`candidates` lowest predicted first; while a learned model has not been fine-tuned on this
    kernel, the prior's lowest first and then the model's and the prior's alternately: a round
    explores about one neighbour per dimension, and zero-shot the network can miss what the
    features show (bitonic: it ranks unroll-count=16 first, the prior unroll-count=8, 2.2x faster;
    MODEL.md, "Trip counts")."""
    by_model = sorted(candidates, key=lambda c: c.predicted_objective_s())
    if not _zero_shot(search):
        return by_model
    by_prior = sorted(candidates, key=Candidate.prior_objective_s)
    return interleave(by_prior, by_model, len(by_model), len(by_model))


def batch(search: Search, explore: dict[str, list[Candidate]]) -> tuple[list[Candidate], list[Candidate]]:
    """A round's runs, none the twin of a run or of another pick (the module docstring): up to a share
    `exploration` of `top_k` from `explore`, one dimension after the other, the rest the unmeasured
    candidates with the lowest predicted objective; while a learned model has not been fine-tuned on
    this kernel, a share PRIOR_SHARE of the rest (every other one until it is used) goes to the
    prior's lowest at the best run's defines."""
    k = search.spec.top_k
    share = math.ceil(k * search.spec.exploration)
    taken = {search.twin(c) for c in search.run}
    queues = [list(q) for q in explore.values()]
    explored: list[Candidate] = []
    while len(explored) < share and any(queues):
        for queue in queues:
            while queue and search.twin(queue[0]) in taken:
                queue.pop(0)
            if queue and len(explored) < share:
                explored.append(queue.pop(0))
                taken.add(search.twin(explored[-1]))
    # one of each set of unmeasured twins: they score alike, by the model and by the prior
    by_twin: dict[tuple, Candidate] = {}
    for c in search.pool:
        if c.status == "not run" and (twin := search.twin(c)) not in taken:
            by_twin.setdefault(twin, c)
    unmeasured = list(by_twin.values())
    exploit = k - len(explored)
    by_model = sorted(unmeasured, key=lambda c: c.predicted_objective_s())
    if not _zero_shot(search):
        return explored, by_model[:exploit]
    # the prior ranks pipelines and tasklets at the best run's defines: it does not see define values either
    best = search.best()
    at_best = [c for c in unmeasured if c.defines == (best.defines if best else ())]
    by_prior = sorted(at_best, key=Candidate.prior_objective_s)
    return explored, interleave(by_model, by_prior, exploit, math.ceil(exploit * PRIOR_SHARE))


def _zero_shot(search: Search) -> bool:
    """Whether the prior gives its second opinion: a learned model not yet fine-tuned on the kernel."""
    return search.prior is not None and not search.last_adaptation
