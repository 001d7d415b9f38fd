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
  counts, another unroll knob or the adjacent O-level), the crossovers of the best two, and the
  2 x ``top_k`` pipelines the model ranks best, at the best run's defines and tasklets; then it
  runs a batch of ``top_k``: a share ``exploration`` of it from the best run's unmeasured
  neighbours, one dimension after the other (a define's values nearest first: the binaries'
  features do not see most define values, so these are measured, not predicted; in the other
  dimensions lowest predicted first), the rest the unmeasured candidates with the lowest
  predicted objective, of which, while a learned model has not been fine-tuned on the kernel's
  runs, every other one up to a share PRIOR_SHARE is the static analytical prior's lowest at the
  best run's defines instead (zero-shot, the two miss different kernels);
- after each round, with ``adapt``, the model is fine-tuned from its training checkpoint on every
  run of the tune so far (L2P's transfer, the first layers frozen) and every candidate is scored
  again; where the last round's runs took less time than such a fine-tuning, it is shortened in
  proportion and goes on from the last fine-tuned network instead (Search.adapt); a model without
  its checkpoint is used as it is, and the report says so; the baselines (``model`` 'analytical'
  or 'random[:SEED]', cnmtune.plugin.tune.score) learn nothing.
The rounds stop at ``rounds``, after three rounds that did not improve the best run by 0.5 %, when
nothing is left to run, or when the execution budget (``budget_s``) or ``max_runs`` is spent.
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

The roles are modules of this package: space (what is searched), moves (mutations and
crossovers), build (compile and features), score (the cost model, fine-tuning), measure (runs on
the target), transfers (host-link estimates), record (measure callbacks), report (candidates and
the outcome); this module is the loop between them.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from cnmtune.costmodel import model_schema
from cnmtune.costmodel.learn.baselines import AnalyticalBaseline
from cnmtune.costmodel.learn.lazy import preload
from cnmtune.costmodel.learn.metrics import kendall_tau, mape
from cnmtune.errors import CnmtuneError, MissingExtra, ModelError
from cnmtune.plugin.tune.build import BuildRequest, build, candidates_of
from cnmtune.plugin.tune.measure import InProcessMeasurer, Measurer, PooledMeasurer
from cnmtune.plugin.tune.moves import Point, crossovers, neighbours
from cnmtune.plugin.tune.record import MeasureCallback, RecordInStore
from cnmtune.plugin.tune.report import Candidate, TuneReport
from cnmtune.plugin.tune.score import (ADAPT_EPOCHS, BASELINES, PRIOR_SHARE, SHORT_EPOCHS, adapt, interleave,
                                        load_model, load_prior, predict)
from cnmtune.plugin.tune.space import DEFAULT_PIPELINE, Defines, Grid, Space, search_space, valid_grid
from cnmtune.plugin.tune.transfers import TransferEstimates
from cnmtune.runtime.executor import Executor
from cnmtune.runtime.kernel import Kernel
from cnmtune.runtime.registry import find_kernel
from cnmtune.runtime.sim.config import DpuConfig
from cnmtune.runtime.sim.dpu import DEFAULT_BUDGET
from cnmtune.runtime.target import Target, make_target
from cnmtune.runtime.workload import DefineValue
from cnmtune.store import Store

__all__ = ["Search", "TuneSpec", "tune"]

ELITE = 3  # the best runs whose offspring each round builds
SCREEN_FROM = 16  # DPUs from which the search's runs are screening runs (2 DPUs simulated: >= 8x less work)
CONFIRM = 3  # the best screening runs run again on every DPU, verified (with the default build)
# The first population builds SPREAD x top_k pipelines at every tasklet count, the rest at the default build's
# only: a pipeline's rank at one tasklet count is its rank at the others. Measured (the shipped model, 100
# pipelines + knobs, 7-8 tasklet counts): the model's top 10 over the whole space was the top 10 over this
# population on va, gemv, mlp, bs, ts, hst-l and red, 8 of 10 with the best kept on nw, at 27-32 % of the
# compiles (a spread of 1: nw 6 of 10, the best lost; ts 8 of 10).
SPREAD = 2
PATIENCE = 3  # rounds without a better run before the search stops
IMPROVEMENT = 0.005  # what counts as a better run: 0.5 % faster


# Up to the 24 hardware threads of a DPU: PrIM's builds stop at 16, but where DMA or a handshake
# chain leaves issue slots idle (sel, uni), 20 tasklets hide more of it (1.04-1.05x at their
# default sizes). Counts WRAM cannot hold with a build's defines are left out by the grid.
TUNE_TASKLETS: tuple[int, ...] = (1, 2, 4, 8, 12, 16, 20, 24)


@dataclass(frozen=True)
class TuneSpec:
    """What to tune: a kernel at one size over pipelines x tasklets x its tuned defines, on `dpus`
    (None: one rank of 64, or the largest count the size allows)."""

    kernel: str
    size: int | str = "default"
    pipelines: int = 200
    seed: int = 0
    length: int | None = 10
    dpus: tuple[int, ...] | None = None
    tasklets: tuple[int, ...] = TUNE_TASKLETS
    top_k: int = 10  # runs per round
    model: str | None = None
    exhaustive: bool = False
    build_all: bool = False  # every pipeline at every tasklet count up front (default: see SPREAD)
    budget_s: float | None = None
    sim_config: str = "calibrated"
    budget: int = DEFAULT_BUDGET
    device: str = "sim"
    sdk_dir: str | None = None
    defines: tuple[tuple[str, DefineValue], ...] = ()  # over the workload's, in every build
    params: tuple[tuple[str, object], ...] = ()  # the workload's parameters in every run
    objective: str = "kernel"  # or "end-to-end": kernel + transfers, over the DPU counts
    tune_defines: bool = True  # search the workload's tuned defines (those -D does not fix)
    knobs: bool = True  # add O2/O3 with LLVM unroll counts to the pipelines
    max_runs: int | None = None  # stop running candidates after this many runs
    rounds: int = 5  # rounds of the search at most
    exploration: float = 0.5  # the share of a round's runs taken from the best run's neighbours
    adapt: bool = True  # fine-tune the model on the tune's runs after every round
    screen: bool = True  # on the simulator from SCREEN_FROM DPUs: screening runs, the best confirmed


class Search:
    """The state of one tune: the space, the model, every candidate built (the population) and
    every run so far."""

    def __init__(self, spec: TuneSpec, executor: Executor, store: Store | None,
                 progress: Callable[[str, int, int | None], None]):
        if spec.top_k < 1 or spec.rounds < 1 or not 0 <= spec.exploration <= 1:
            raise CnmtuneError(f"a tune needs top_k >= 1, rounds >= 1 and 0 <= exploration <= 1; got {spec.top_k}, "
                               f"{spec.rounds}, {spec.exploration}")
        self.spec, self.executor, self.progress = spec, executor, progress
        self.step = ""  # the step of the search under way ('round 2'), which progress phases are named after
        self.target = make_target(spec.device, sim_config=spec.sim_config, budget=spec.budget, sdk_dir=spec.sdk_dir)
        self.kernel = find_kernel(spec.kernel)
        self.kernel.workload.resolve_defines(dict(spec.defines))  # a define the kernel refuses: one error first
        self.size = self.kernel.workload.size_of(spec.size)
        self.schema = model_schema()
        self.model_path, self.model = load_model(spec.model, self.schema)
        # a second opinion while a learned model is zero-shot on this kernel (PRIOR_SHARE), made when the
        # first candidates are scored (torch loads while they compile); baselines run alone, and so does
        # the model without torch (the 'train' extra), which the prior is written in
        self.wants_prior = self.model.kind not in BASELINES
        self.prior: AnalyticalBaseline | None = None
        self.space = search_space(self.kernel, self.size, spec.pipelines, spec.seed, spec.length, spec.dpus,
                                  spec.tasklets, spec.defines, spec.params, spec.objective, spec.tune_defines,
                                  spec.knobs)
        self.grids: dict[Defines, Grid] = {(): self.space.grid}
        self.callbacks: list[MeasureCallback] = [RecordInStore(store, self.schema.hash)] if store is not None else []
        self.screening = spec.screen and spec.device == "sim" and max(self.space.dpu_counts) >= SCREEN_FROM
        self.measurer = _measurer(spec, self.kernel, self.size, self.space, self.target, executor, store,
                                  self.callbacks, self.step_progress, "sim-sampled" if self.screening else "sim")
        self.confirmer = _measurer(spec, self.kernel, self.size, self.space, self.target, executor, store,
                                   self.callbacks, self.step_progress) if self.screening else None
        config = getattr(self.target, "config", None) or DpuConfig.calibrated()
        self.transfers = TransferEstimates(self.kernel, self.space, config) \
            if spec.objective == "end-to-end" else None
        self.seconds: dict[str, float] = {}
        self.stages: list[dict] = []
        self.failures = 0
        self.pool: list[Candidate] = []  # every distinct (binary, DPUs) built, in build order
        self.rows: list[np.ndarray] = []  # the model's input row of each
        self.by_binary: dict[tuple[str, int], int] = {}  # (ELF, DPUs) -> index in the pool
        self.points: dict[Point, Candidate] = {}  # every point built, to its candidate
        self.built: set[tuple[str, Defines, int]] = set()  # (pipeline, tuned, tasklets) compiled or failed
        self.run: list[Candidate] = []  # every candidate measured, in order
        self.default: Candidate | None = None
        # a baseline has nothing to fine-tune: as with adaptation off, and no warning
        self.adapts = spec.adapt and self.model.kind not in BASELINES
        self.not_adapted = "" if self.adapts else "adaptation off"
        self.last_adaptation: dict = {}
        self.full_adaptation_s = 0.0  # what the last fine-tuning from the checkpoint took
        self.round_runs_s = 0.0  # what the last round's runs took
        self.shortened_rounds = 0  # fine-tunings shortened: the round's runs before took less than a full one
        # the first use comes after the compiles: torch loads meanwhile, and for fine-tuning torch._dynamo,
        # which torch.optim imports on an optimizer's first call (2.3 s of a 3.6 s first fine-tuning of va)
        if self.adapts:
            preload("torch._dynamo")
        elif self.wants_prior:
            preload("torch")

    def step_progress(self, phase: str, done: int, total: int | None) -> None:
        """Progress of one phase of the step under way, named after the step ('round 2: run')."""
        self.progress(f"{self.step}: {phase}" if self.step else phase, done, total)

    def add_seconds(self, phase: str, seconds: float) -> None:
        self.seconds[phase] = self.seconds.get(phase, 0.0) + seconds

    def grid(self, tuned: Defines) -> Grid:
        """The valid (DPUs, tasklets) points of builds with `tuned` defines (cached)."""
        if tuned not in self.grids:
            self.grids[tuned], _ = valid_grid(self.kernel, self.size, self.space.dpu_counts, self.spec.tasklets,
                                              self.space.build_defines(tuned), self.space.params)
        return self.grids[tuned]

    def declared(self, c: Candidate) -> tuple[int, int]:
        """(processed size, DPU launches) of one run of candidate `c`: its workload's declarations,
        cost-model inputs (runs use the workload's default input seed, as here)."""
        workload = self.kernel.workload(self.size, c.dpus, c.tasklets, dict(self.space.build_defines(c.defines)),
                                        **dict(self.space.params))
        return workload.processed_size(), workload.launch_count()

    def candidates(self, requests: Sequence[BuildRequest] | None = None) -> list[Candidate]:
        """Build `requests` (default: the space) where not built yet, score the new binaries and add
        them to the population; returns the candidates of every requested point built."""
        requests = list(requests) if requests is not None else \
            [BuildRequest(text, self.space.tasklets) for text in self.space.pipelines]
        todo = []
        for r in requests:
            self.grid(r.tuned)
            tasklets = tuple(t for t in r.tasklets if (r.pipeline, r.tuned, t) not in self.built)
            if tasklets:
                todo.append(BuildRequest(r.pipeline, tasklets, r.tuned))
                self.built.update((r.pipeline, r.tuned, t) for t in tasklets)
        if todo:
            self._add(todo)
        wanted = {(r.pipeline, r.tuned, t) for r in requests for t in r.tasklets}
        found = [c for p, c in self.points.items() if (p.pipeline, p.tuned, p.tasklets) in wanted]
        return list({id(c): c for c in found}.values())

    def population(self) -> list[Candidate]:
        """Build the first population (see the module docstring) and return it."""
        space, spec = self.space, self.spec
        spread = SPREAD * spec.top_k
        if spec.build_all or spec.exhaustive or len(space.tasklets) == 1 or len(space.pipelines) <= spread:
            return self.candidates()
        first = self.candidates([BuildRequest(text, (space.default_tasklets,)) for text in space.pipelines])
        chosen = _ranked_pipelines(first, Candidate.predicted_objective_s)[:spread]
        if self.prior is not None:
            chosen += _ranked_pipelines(first, lambda c: c.prior_s + c.predicted_transfer_s)[
                :math.ceil(spread * PRIOR_SHARE)]
        self.step = "tasklets"
        self.candidates([BuildRequest(text, space.tasklets) for text in dict.fromkeys(chosen)])
        self.step = ""
        return list(self.pool)

    def _add(self, requests: list[BuildRequest]) -> None:
        built = build(self.kernel, self.space, self.executor, self.step_progress,
                      lambda results: [c.compiled(results) for c in self.callbacks], requests)
        self.add_seconds("compile", built.compile_s)
        self.add_seconds("features", built.features_s)
        self.failures += built.failures
        if not built.results:
            if not self.pool:
                candidates_of(self.kernel, built, self.space, self.grids)  # raises: nothing compiled
            return
        found = candidates_of(self.kernel, built, self.space, self.grids)
        new = []
        for c, features in zip(found.candidates, found.features):
            key = (c.elf_hash, c.dpus)
            if key in self.by_binary:
                known = self.pool[self.by_binary[key]]
                known.pipelines += [p for p in c.pipelines if p not in known.pipelines]
            else:
                self.by_binary[key] = len(self.pool)
                self.pool.append(c)
                new.append((c, features))
        for tuned, result in built.results:
            rec = result.record
            for dpus in self.grid(tuned).dpus(rec.tasklets):
                self.points[Point(rec.pipeline, tuned, rec.tasklets, dpus)] = \
                    self.pool[self.by_binary[(rec.elf_hash, dpus)]]
        start = time.perf_counter()
        if new:
            self.step_progress("score", 0, None)
            rows = predict(self.model, self.model_path, [c for c, _ in new], [f for _, f in new], self.size,
                           [self.declared(c) for c, _ in new], self.schema)
            self.rows.extend(rows)
            if self.wants_prior and self.prior is None:
                self.prior = load_prior(self.schema)
                self.wants_prior = self.prior is not None
            if self.prior is not None:
                for (c, _), p in zip(new, self.prior.predict(rows).runtime_s):
                    c.prior_s = float(p)
            if self.transfers is not None:
                self.transfers.estimate([c for c, _ in new])
            self.step_progress("score", len(new), len(new))
        self.add_seconds("scoring", time.perf_counter() - start)

    def measure(self, candidates: Sequence[Candidate]) -> list[Candidate]:
        """Run the candidates not run yet, within the time budget and the run limit; returns them."""
        todo = [c for c in {id(c): c for c in candidates}.values() if c.status == "not run"]
        if self.spec.max_runs is not None:
            left = max(0, self.spec.max_runs - len(self.run))
            for c in todo[left:]:
                c.status = "skipped: run limit reached"
            todo = todo[:left]
        spent = self.seconds.get("execution", 0.0)
        budget = None if self.spec.budget_s is None else max(0.0, self.spec.budget_s - spent)
        start = time.perf_counter()
        if todo:
            self.measurer.measure(todo, budget)
        self.add_seconds("execution", time.perf_counter() - start)
        ran = [c for c in todo if not c.status.startswith("skipped")]
        self.run += ran
        return ran

    def spent(self) -> bool:
        """The run limit or the execution budget is used up."""
        return (self.spec.max_runs is not None and len(self.run) >= self.spec.max_runs) or \
            (self.spec.budget_s is not None and self.seconds.get("execution", 0.0) >= self.spec.budget_s)

    def best(self, verified_only: bool = False) -> Candidate | None:
        """The fastest verified (or screened, unless `verified_only`) run so far by the objective; on
        a tie the default build, else the earliest: only a faster run replaces the default."""
        verified = [c for c in self.run if c.objective_s(self.spec.objective) is not None
                    and (c.status == "verified" or not verified_only)]
        return min(verified, key=lambda c: (c.objective_s(self.spec.objective), c is not self.default)) \
            if verified else None

    def elite(self) -> list[Candidate]:
        """The fastest runs with a time, fastest first (the default build before any run)."""
        verified = sorted((c for c in self.run if c.objective_s(self.spec.objective) is not None),
                          key=lambda c: c.objective_s(self.spec.objective))
        return verified[:ELITE] or ([self.default] if self.default else [])

    def point_of(self, c: Candidate) -> Point:
        """The point a candidate was first built as."""
        return Point(c.pipeline, c.defines, c.tasklets, c.dpus)

    def adapt(self) -> dict | None:
        """Fine-tune the model on every run of the tune with a time (verified or screened) and score
        the population again; None when it cannot (fewer than 2 runs, adaptation off, no checkpoint:
        `not_adapted` says; so does a machine without torch, the 'train' extra). A fine-tuning starts
        from the training checkpoint (ADAPT_EPOCHS), but where the last round's runs took less time
        than such a fine-tuning it is shortened (`shortened_rounds` counts these): it goes on from
        the last fine-tuned network for the share of ADAPT_EPOCHS that the runs took of a full
        fine-tuning's time, at least SHORT_EPOCHS, so that cheap runs are not outweighed by making
        their picks better."""
        verified = [c for c in self.run if c.measured_s is not None]
        if self.not_adapted or len(verified) < 2:
            return None
        full = not self.last_adaptation or self.round_runs_s >= self.full_adaptation_s
        epochs = ADAPT_EPOCHS if full else \
            max(SHORT_EPOCHS, int(ADAPT_EPOCHS * self.round_runs_s / self.full_adaptation_s))
        start = time.perf_counter()
        self.step_progress("fine-tune", 0, None)
        try:
            learnt = adapt(self.model, np.stack([self.rows[self.by_binary[(c.elf_hash, c.dpus)]] for c in verified]),
                           verified, self.kernel.name, self.size, self.schema, self.spec.seed, epochs, restart=full)
        except (ModelError, MissingExtra) as exc:  # no checkpoint, or no torch: the model as it is
            self.not_adapted = str(exc)
            return None
        for c, p in zip(self.pool, self.model.predict(np.stack(self.rows)).runtime_s):
            c.predicted_s = float(p)
        seconds = time.perf_counter() - start
        if full:
            self.full_adaptation_s = seconds
        else:
            self.shortened_rounds += 1
        self.add_seconds("fine-tuning", seconds)
        self.step_progress("fine-tune", len(verified), len(verified))
        self.last_adaptation = learnt
        return learnt

    def stage(self, name: str, candidates: int, ran: list[Candidate], final: bool = False, **more) -> None:
        """Note one round: candidates built, runs, the model's error on them, the best so far (with
        `final`, the best verified run)."""
        measured = [c for c in ran if c.measured_s is not None]
        true = np.array([c.measured_s for c in measured])
        pred = np.array([c.predicted_s for c in measured])
        known = np.isfinite(pred)
        best = self.best(verified_only=final)
        self.stages.append({
            "stage": name, "candidates": candidates, "runs": len(ran), "verified": len(measured),
            "model_mape": mape(true[known], pred[known]) if known.sum() else None,
            "model_kendall_tau": kendall_tau(true[known], pred[known]) if known.sum() > 1 else None,
            "best": best.to_dict() if best else None, **more})


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
        explored, exploited = _batch(search, _offspring(search))
        if not explored + exploited:
            return
        spent = search.seconds.get("execution", 0.0)
        ran = search.measure(explored + exploited)
        search.round_runs_s = search.seconds.get("execution", 0.0) - spent
        if number == 1 and any(c is search.default for c in search.run):
            ran.insert(0, search.default)
        search.stage(f"round {number}", len(search.pool) - built, ran, explored=len(explored),
                     adapted_on=adapted["samples"] if adapted else None)
        best = search.best()
        if before is None or best is None or \
                best.objective_s(objective) < (1 - IMPROVEMENT) * before.objective_s(objective):
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


def _offspring(search: Search) -> dict[str, list[Candidate]]:
    """Build and score the elite's offspring: the neighbours of each elite run, the crossovers of the
    best two, the 2k pipelines the model ranks best at the best run's defines and tasklets. Returns the unmeasured
    crossovers and neighbours of the best run by dimension: a define's values nearest first, the
    other dimensions lowest predicted first."""
    space, elite = search.space, search.elite()
    if not elite:
        return {}
    points = [search.point_of(c) for c in elite]
    moves = [neighbours(p, space, search.grid) for p in points]
    crossed = crossovers(points[0], points[1], search.grid) if len(points) > 1 else []
    wanted = [p for m in moves for found in m.values() for p in found] + crossed
    best = points[0]
    # the pipelines the model ranks best, built with the best run's defines and tasklets
    texts = _ranked_pipelines(search.pool, Candidate.predicted_objective_s)[:2 * search.spec.top_k]
    wanted += [Point(text, best.tuned, best.tasklets, best.dpus) for text in texts]
    grouped: dict[tuple[str, Defines], set[int]] = {}
    for p in wanted:
        grouped.setdefault((p.pipeline, p.tuned), set()).add(p.tasklets)
    search.candidates([BuildRequest(text, tuple(sorted(t)), tuned) for (text, tuned), t in grouped.items()])
    by_dimension = {"crossover": crossed, **moves[0]}
    out = {}
    for dimension, found in by_dimension.items():
        fresh = [search.points[p] for p in found if p in search.points and search.points[p].status == "not run"]
        distinct = list({id(c): c for c in fresh}.values())
        # a define's values nearest first: the features barely see them, so the model cannot rank them
        out[dimension] = distinct if dimension.startswith("define ") else \
            sorted(distinct, key=lambda c: c.predicted_objective_s())
    return out


def _batch(search: Search, explore: dict[str, list[Candidate]]) -> tuple[list[Candidate], list[Candidate]]:
    """A round's runs: up to a share `exploration` of `top_k` from `explore`, one dimension after the
    other, the rest the unmeasured candidates with the lowest predicted objective; while a learned
    model has not been fine-tuned on this kernel, a share PRIOR_SHARE of the rest (every other one
    until it is used) goes to the prior's lowest at the best run's defines."""
    k = search.spec.top_k
    share = math.ceil(k * search.spec.exploration)
    queues = [list(q) for q in explore.values()]
    picked: dict[int, Candidate] = {}
    while len(picked) < share and any(queues):
        for queue in queues:
            while queue and id(queue[0]) in picked:
                queue.pop(0)
            if queue and len(picked) < share:
                c = queue.pop(0)
                picked[id(c)] = c
    explored = list(picked.values())
    unmeasured = [c for c in search.pool if c.status == "not run" and id(c) not in picked]
    exploit = k - len(explored)
    by_model = sorted(unmeasured, key=lambda c: c.predicted_objective_s())
    if search.prior is None or search.last_adaptation:
        return explored, by_model[:exploit]
    # the prior ranks pipelines and tasklets at the best run's defines: it does not see define values either
    best = search.best()
    at_best = [c for c in unmeasured if c.defines == (best.defines if best else ())]
    by_prior = sorted(at_best, key=lambda c: c.prior_s + c.predicted_transfer_s)
    return explored, interleave(by_model, by_prior, exploit, math.ceil(exploit * PRIOR_SHARE))


def _ranked_pipelines(candidates: Sequence[Candidate], score: Callable[[Candidate], float]) -> list[str]:
    """The pipelines that name `candidates` (one per binary: pipelines giving the same binary are
    one choice) by their best candidate's score, lowest first."""
    return list(dict.fromkeys(c.pipeline for c in sorted(candidates, key=score)))


def _adaptation(search: Search) -> dict | None:
    """What fine-tuning did over the rounds, for the report: the last adaptation, or why none ran."""
    rounds = [s for s in search.stages if s.get("adapted_on")]
    if search.not_adapted and search.adapts:
        return {"skipped": search.not_adapted}
    if not rounds:
        return None
    return {**search.last_adaptation, "rounds": len(rounds), "shortened": search.shortened_rounds}


def _measurer(spec: TuneSpec, kernel: Kernel, size: int, space: Space, target: Target, executor: Executor,
              store: Store | None, callbacks: list[MeasureCallback], progress, device: str = "sim") -> Measurer:
    """Worker processes and the store for pure targets (not the store for screening runs: it keys
    full runs), this process for exclusive ones."""
    if target.exclusive:
        return InProcessMeasurer(kernel, size, space, progress, target)
    if device != "sim":
        store, callbacks = None, []
    return PooledMeasurer(kernel, size, space, progress, target, executor, store, callbacks, spec.sim_config,
                          spec.budget, device)


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
