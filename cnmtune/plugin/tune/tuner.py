"""The autotuner: an evolutionary search over the space with the cost model as its fitness, the
model fine-tuned on what each round measured (TVM/Ansor-style).

One tune of a kernel at one problem size on the DPU count the user gives (default: one rank of 64,
or the largest count the size allows), every build with the workload's defines updated by
``defines`` (-D, the base) and every run with the workload parameters ``params`` (--param). A point
of the space is a pipeline (O0..O3, seeded random sequences, O2/O3 with LLVM's unroll knobs) x the
workload's tuned defines (those -D did not fix) x tasklets (x DPUs under the end-to-end objective);
building it gives a candidate, one per distinct (binary, DPUs), scored by the ONNX cost model from
the binary's features. The search:
- the population starts as every pipeline at the base defines and the default build's tasklet count,
  compiled in parallel (build cache; identical ELFs are one candidate) and scored in one batch, then
  the SPREAD x ``top_k`` pipelines the model ranks best there (and, beside a learned model, the
  prior's best PRIOR_SHARE of as many) at every other tasklet count of the grid; the rest are built
  at other counts only when a round asks for them (``build_all``, and ``exhaustive``, build every
  pipeline at every count first); the default build (O2, the base, the workload's tasklets) runs
  first, whatever the budget;
- each round builds and scores the offspring of the best runs so far (the elite): every one-step
  neighbour of each (cnmtune.plugin.tune.moves: another value of one define, the adjacent tasklet
  counts, another unroll knob or the adjacent O-level), the crossovers of the best two, the 2 x
  ``top_k`` pipelines the model ranks best, at the best run's defines and tasklets, and the best
  run's pipeline neighbours with one define at either nearest value, the best run with two
  defines each at either nearest value, and the best run at every tasklet count of its grid; then it
  runs a batch of ``top_k``: a share ``exploration`` of it from the best run's unmeasured
  neighbours, one dimension after the other, the define pairs one after the single defines (a
  define's values and the pairs nearest first: the binaries' features do not see most define
  values, so these are measured, not predicted; in the other
  dimensions lowest predicted first), the rest the unmeasured candidates with the lowest
  predicted objective; while a learned model has not been fine-tuned on the kernel's runs, the
  static analytical prior's lowest comes first in each dimension's order and then alternates with
  the model's, and every other one of the rest up to a share PRIOR_SHARE is the prior's lowest at
  the best run's defines (zero-shot, the two miss different kernels); no run is the twin of
  another (the same model input row and defines: cnmtune.plugin.tune.select);
- until the network is first fine-tuned on the kernel's runs, its zero-shot trees score the
  candidates where they lie beside it (X.trees.onnx for X.onnx, as the shipped model has them:
  cnmtune.costmodel.learn.zero_shot), which rank kernels the network never saw better than it;
- after each round, with ``adapt``, the model is fine-tuned from its training checkpoint on every
  run of the tune so far (L2P's transfer, the first layers frozen) and every candidate is scored
  again by the network; each fine-tuning after the first goes on from the last fine-tuned network
  instead, for the share of the epochs that the new runs are of all (Search.adapt: from the runs,
  never a clock, so a tune makes the same choices on any machine and under any load); a model without
  its checkpoint is used as it is, and the report says so; the baselines (``model`` 'analytical'
  or 'random[:SEED]', cnmtune.plugin.tune.score) learn nothing.
The rounds stop at ``rounds``, after three rounds that found no faster run (on a UPMEM target, none
0.5 % faster: measured times vary from run to run, the simulator's do not), when nothing is left
to run, or when the execution budget (``budget_s``) or ``max_runs`` is spent.
On the simulator from SCREEN_FROM (16) DPUs on (``screen``), the search's runs are screening
runs: only the first and the last DPU execute (cnmtune.runtime.sampled: the kernel time is the
slower of the two, the full run's for PrIM's partitionings, which leave the remainder to the last
DPU; an estimate where the work depends on the data), so a run on 64 DPUs costs two DPUs' work,
and no output is verified. The default build and the CONFIRM (3) best screening runs then run again
on every DPU, verified, beyond the run limit and the budget; the choice is the fastest of those,
and the report keeps each confirmed run's screening time (``screened_s``). The objective is the
kernel time, or with ``objective='end-to-end'`` the kernel time plus the run's host transfers over
several DPU counts (predicted: the model's kernel time plus the transfers of the host program for
that configuration, cnmtune.plugin.tune.transfers). The fastest verified run
is chosen, the default when nothing beats it: a tune never returns a variant slower than the
default. The report lists per round what was built and run and the model's error on the runs
(predicted before they ran), and what the choice changes against the default (``wins``).
With a store, every compile, feature vector and run is recorded and a later tune of the same
kernel re-uses the recorded runs instead of executing again (the store keys a run by kernel,
defines, workload parameters, binary, DPUs, tasklets, size and simulator config). On a UPMEM
target ('upmem-sim', 'upmem-hw') candidates are still scored from their proxy binaries' features
(the model's schema) and each chosen pipeline is rebuilt with the UPMEM SDK and measured there,
one at a time in this process; UPMEM runs are not recorded in the store, which keys runs by
proxy ELF.
``exhaustive`` also runs every candidate of the first population, to measure the regret of the
choice and how much faster the tuner was.

The roles are modules of this package: space (what is searched), search (the state of a tune:
TuneSpec, Search), moves (mutations and crossovers), build (compile and features), score (the
cost model, fine-tuning), select (what a round builds and runs), measure (runs on the target),
transfers (host-link estimates), record (measure callbacks), report (candidates and the
outcome); this module is the loop between them.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np

from cnmtune.costmodel.learn.metrics import kendall_tau, mape
from cnmtune.plugin.tune.moves import Point
from cnmtune.plugin.tune.report import Candidate, TuneReport
from cnmtune.plugin.tune.search import Search, TuneSpec
from cnmtune.plugin.tune.select import batch, offspring
from cnmtune.plugin.tune.space import DEFAULT_PIPELINE
from cnmtune.runtime.executor import Executor
from cnmtune.store import Store

__all__ = ["tune"]

CONFIRM = 3  # the best screening runs run again on every DPU, verified (with the default build)
PATIENCE = 3  # rounds without a better run before the search stops
NOISY_IMPROVEMENT = 0.005  # a better run on a UPMEM target: 0.5 % faster (better_run)


def tune(spec: TuneSpec, executor: Executor, store: Store | None = None,
         progress: Callable[[str, int, int | None], None] | None = None) -> TuneReport:
    """Tune `spec.kernel` (see the module docstring); `progress(phase, done, total)` as work completes,
    each phase named after its step of the search ('compile', 'score', 'round 2: fine-tune', 'round 2: run',
    'confirm: run', ...; total None while unknown)."""
    search = Search(spec, executor, store, progress or (lambda *_: None))
    population = search.population()
    search.default = default = _default(search)
    if default is not None:  # first: it runs even when the budget is spent before anything else
        search.step = "default build"
        search.measure([default])
    _evolve(search)
    if search.screening:
        _confirm(search)
    chosen = search.best(verified_only=True)
    objective = spec.objective
    tried = [c for c in search.run if c is not default]
    top = sorted(tried, key=lambda c: (c.objective_s(objective) is None, c.objective_s(objective) or 0.0))
    report = TuneReport(search.kernel.name, search.size, sum(len(c.pipelines) for c in search.pool),
                        len(search.pool), top[:spec.top_k], chosen, default, search.seconds, search.failures,
                        finetune=_adaptation(search), defines=dict(spec.defines), params=dict(spec.params),
                        objective=objective, stages=search.stages, runs=search.run)
    if spec.exhaustive:
        report.exhaustive = _exhaustive(search, population, chosen)
    measurers = [search.measurer, *([search.confirmer] if search.confirmer else [])]
    report.executed, report.reused = sum(m.executed for m in measurers), sum(m.reused for m in measurers)
    return report


def better_run(best_s: float, before_s: float, device: str) -> bool:
    """Whether a round's best run beats the best before it: on the embedded simulator ('sim'),
    whose times are exact and repeat, any faster run (va's demo tune found a run 0.38 % faster in
    round 2 and the one 1.6 % faster two rounds on); on a UPMEM target, a run NOISY_IMPROVEMENT
    faster, above the run-to-run noise of measured times."""
    return best_s < (1 - (0.0 if device == "sim" else NOISY_IMPROVEMENT)) * before_s


def _evolve(search: Search) -> None:
    """The rounds of the search (see the module docstring); the default build has run."""
    spec, objective = search.spec, search.spec.objective
    quiet = 0
    for number in range(1, spec.rounds + 1):
        if search.spent():
            return
        search.step = f"round {number}"
        adapted = search.adapt() if number > 1 else None
        before, built = search.best(), len(search.pool) if number > 1 else 0
        explored, exploited = batch(search, offspring(search))
        if not explored + exploited:
            return
        ran = search.measure(explored + exploited)
        if number == 1 and any(c is search.default for c in search.run):
            ran.insert(0, search.default)
        search.stage(f"round {number}", len(search.pool) - built, ran, explored=len(explored),
                     adapted_on=adapted["samples"] if adapted else None)
        best = search.best()
        if before is None or best is None or \
                better_run(best.objective_s(objective), before.objective_s(objective), spec.device):
            quiet = 0
        else:
            quiet += 1
            if quiet >= PATIENCE:
                return


def _confirm(search: Search) -> None:
    """Run the default build and the CONFIRM best screening runs again on every DPU, verified,
    beyond the run limit and the budget: the choice and its speedup are those of full runs."""
    objective = search.spec.objective
    screened = sorted((c for c in search.run if c.status == "screened" and c is not search.default),
                      key=lambda c: c.objective_s(objective))
    default = [search.default] if search.default is not None and search.default.status == "screened" else []
    todo = default + screened[:CONFIRM]
    for c in todo:
        c.screened_s, c.measured_s, c.transfer_s, c.status = c.measured_s, None, None, "not run"
    search.step = "confirm"
    start = time.perf_counter()
    search.confirmer.measure(todo, None)
    search.add_seconds("confirmation", time.perf_counter() - start)
    search.stage("confirm", 0, todo, final=True, explored=0, adapted_on=None)


def _adaptation(search: Search) -> dict | None:
    """What fine-tuning did over the rounds, for the report: the last adaptation, or why none ran;
    "shortened" counts the fine-tunings that went on from the last fine-tuned network, every one
    after the first (Search.adapt)."""
    rounds = [s for s in search.stages if s.get("adapted_on")]
    if search.not_adapted and search.adapts:
        return {"skipped": search.not_adapted}
    if not rounds:
        return None
    return {**search.last_adaptation, "rounds": len(rounds), "shortened": len(rounds) - 1}


def _default(search: Search) -> Candidate | None:
    """The default build's candidate on the largest DPU count its tasklets run on (None: O2 did
    not compile at the default tasklet count)."""
    space = search.space
    tasklets = space.default_tasklets
    default = search.points.get(Point(DEFAULT_PIPELINE, (), tasklets, max(space.dpus(tasklets))))
    if default is not None:  # named by its own pipeline, not by the first one with the same ELF
        default.pipelines.sort(key=lambda text: text != DEFAULT_PIPELINE)
    return default


def _exhaustive(search: Search, candidates: list[Candidate], chosen: Candidate | None) -> dict:
    """Run every candidate of the first population not run yet: the regret of the choice and how
    much faster the tuner was (screening runs' times where the search screened)."""
    objective = search.spec.objective
    tuner_seconds = sum(search.seconds.values())
    search.step = "exhaustive"
    start = time.perf_counter()
    search.measurer.measure([c for c in candidates if c.measured_s is None and c.status == "not run"], None)
    run_all = time.perf_counter() - start + search.seconds["execution"]
    measured = [c for c in candidates if c.compared_s(objective) is not None]
    best = min(measured, key=lambda c: c.compared_s(objective)) if measured else None
    exhaustive_seconds = search.seconds["compile"] + search.seconds["features"] + run_all
    true = np.array([c.compared_s(objective) for c in measured])
    pred = np.array([c.predicted_objective_s() for c in measured])
    chosen_s = chosen.compared_s(objective) if chosen else None
    return {
        "best": best.to_dict() if best else None,
        "regret": (chosen_s / best.compared_s(objective) - 1) if chosen_s and best else None,
        "tuner_seconds": tuner_seconds, "exhaustive_seconds": exhaustive_seconds,
        "tuner_speedup": exhaustive_seconds / tuner_seconds if tuner_seconds else None,
        "measured": len(measured), "mape": mape(true, pred) if len(measured) else None,
        "kendall_tau": kendall_tau(true, pred) if len(measured) > 1 else None,
        "chosen_rank": 1 + sum(c.compared_s(objective) < chosen_s for c in measured) if chosen_s else None,
    }
