"""What a round of the tuner runs, on real compiles and real simulator runs: one of each set of twins."""

from __future__ import annotations

from collections import Counter
from types import SimpleNamespace

from cnmtune.plugin.tune import TuneSpec, tune
from cnmtune.plugin.tune.moves import Point, pipeline_neighbours
from cnmtune.plugin.tune.report import Candidate
from cnmtune.plugin.tune.search import Search
from cnmtune.plugin.tune.select import batch, offspring
from cnmtune.plugin.tune.space import search_space
from cnmtune.runtime.executor import InlineExecutor
from cnmtune.runtime.registry import find_kernel

# ts at its small size: O1 and O2 build other binaries (register names) with the same model input row
SPEC = TuneSpec("ts", size="small", pipelines=6, dpus=(2,), tasklets=(4,), top_k=4, rounds=5, model="analytical",
                tune_defines=False, knobs=False)


def test_a_tune_runs_one_of_each_set_of_twins():
    search = Search(SPEC, InlineExecutor(), None, lambda *_: None)
    search.population()
    twins = Counter(search.twin(c) for c in search.pool)
    assert max(twins.values()) > 1, "ts no longer builds twins here: the test needs another case"
    report = tune(SPEC, InlineExecutor())
    # the rounds run out of candidates: every set of twins has run, once
    ran = [search.twin(c) for c in report.runs]
    assert len(ran) == len(set(ran)) and set(ran) == set(twins)


def test_a_batch_takes_one_of_each_set_of_twins_and_no_twin_of_a_run():
    pool = [Candidate([f"O{i}"], 16, 4, f"elf{i}", predicted_s=i + 1.0) for i in range(8)]
    twin = {"elf0": 0, "elf1": 0, "elf2": 2, "elf3": 2, "elf4": 4, "elf5": 5, "elf6": 6, "elf7": 7}
    pool[0].status = "verified"
    search = SimpleNamespace(spec=TuneSpec("va", top_k=4, exploration=0.5), pool=pool, run=[pool[0]],
                             last_adaptation={}, prior=None, best=lambda: pool[0], twin=lambda c: twin[c.elf_hash])
    explored, exploited = batch(search, {"tasklets": [pool[1], pool[3]], "pipeline": [pool[2], pool[7]]})
    # pool[1]'s twin has run; pool[2] is the twin of pool[3], picked before it
    assert explored == [pool[3], pool[7]]
    assert exploited == [pool[4], pool[5]]


def _offspring(space, tuned: tuple) -> set[tuple[str, tuple, int]]:
    """(pipeline, tuned defines, tasklets) of what a round builds when the best run, the only one, is
    O2 with `tuned` on 16 tasklets."""
    best = Candidate(["O2"], 16, 4, "elf0", defines=tuned, measured_s=1.0, status="verified")
    requests = []
    search = SimpleNamespace(space=space, elite=lambda: [best], grid=lambda _: space.grid, pool=[best],
                             spec=TuneSpec("va", top_k=4), points={}, candidates=requests.extend, prior=None,
                             point_of=lambda c: Point("O2", tuned, 16, 4))
    offspring(search)
    return {(r.pipeline, r.tuned, t) for r in requests for t in r.tasklets}


def test_the_offspring_move_a_define_and_the_pipeline_together():
    """Besides the one-step neighbours, the best run's pipeline neighbours are built at each define's
    two nearest other values (ts's fastest build is two moves from where the search stops without
    them: O2 at BL=4 -> O3 at BL=5)."""
    space = search_space(find_kernel("va"), 4096, 2, 0, 10, (4,), (4, 8, 16))
    built = _offspring(space, (("BL", 8),))
    for bl in (7, 9):
        assert {(text, (("BL", bl),), 16) for text in pipeline_neighbours("O2", space.pipelines)} <= built
    assert ("O3", (("BL", 6),), 16) not in built  # a define two values away moves alone


def test_the_offspring_hold_the_best_run_at_every_tasklet_count():
    """The best run is built at every tasklet count of its grid, not only the adjacent ones, for the
    model to rank (bs: 12 tasklets run slower than 16, 8 faster)."""
    space = search_space(find_kernel("va"), 4096, 2, 0, 10, (4,), (2, 4, 8, 16))
    assert {2, 4, 8, 16} <= set(space.grid.tasklets)
    built = _offspring(space, (("BL", 8),))
    assert {("O2", (("BL", 8),), t) for t in space.grid.tasklets} <= built


def test_the_offspring_move_two_defines_together():
    """The best run is built with two defines moved, each to one of its two nearest values (hst-l:
    BL=7 and NR_HISTO=2 together run 1.20x, each alone at most 1.04x), not farther."""
    space = search_space(find_kernel("hst-l"), 4096, 2, 0, 10, (4,), (16,))
    built = _offspring(space, ())  # BL=8, NR_HISTO=1: the workload's defaults
    for bl in (7, 9):
        for histograms in (2, 4):
            assert ("O2", (("BL", bl), ("NR_HISTO", histograms)), 16) in built
    assert ("O2", (("BL", 6), ("NR_HISTO", 2)), 16) not in built
    assert ("O2", (("BL", 7), ("NR_HISTO", 8)), 16) not in built
