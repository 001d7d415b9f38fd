"""The state of one tune: what is tuned (TuneSpec), and the space, the model, every candidate
built (the population) and every run so far (Search). The loop that drives it is in
cnmtune.plugin.tune.tuner; what a round builds and runs, in cnmtune.plugin.tune.select."""

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
from cnmtune.costmodel.learn.zero_shot import load_trees
from cnmtune.errors import CnmtuneError, MissingExtra, ModelError
from cnmtune.plugin.tune.build import BuildRequest, build, candidates_of
from cnmtune.plugin.tune.measure import InProcessMeasurer, Measurer, PooledMeasurer
from cnmtune.plugin.tune.moves import Point
from cnmtune.plugin.tune.record import MeasureCallback, RecordInStore
from cnmtune.plugin.tune.report import Candidate
from cnmtune.plugin.tune.score import (ADAPT_EPOCHS, BASELINES, PRIOR_SHARE, SHORT_EPOCHS, adapt, load_model,
                                        load_prior, predict, ranked_pipelines)
from cnmtune.plugin.tune.space import Defines, Grid, Space, search_space, valid_grid
from cnmtune.plugin.tune.transfers import TransferEstimates
from cnmtune.runtime.executor import Executor
from cnmtune.runtime.kernel import Kernel
from cnmtune.runtime.registry import find_kernel
from cnmtune.runtime.sim.config import DpuConfig
from cnmtune.runtime.sim.dpu import DEFAULT_BUDGET
from cnmtune.runtime.target import Target, make_target
from cnmtune.runtime.workload import DefineValue
from cnmtune.store import Store

__all__ = ["ELITE", "SCREEN_FROM", "SPREAD", "TUNE_TASKLETS", "Search", "TuneSpec"]

ELITE = 3  # the best runs whose offspring each round builds
SCREEN_FROM = 16  # DPUs from which the search's runs are screening runs (2 DPUs simulated: >= 8x less work)
# The first population builds SPREAD x top_k pipelines at every tasklet count, the rest at the default build's
# only: a pipeline's rank at one tasklet count is its rank at the others. Measured (the shipped model, 100
# pipelines + knobs, 7-8 tasklet counts): the model's top 10 over the whole space was the top 10 over this
# population on va, gemv, mlp, bs, ts, hst-l and red, 8 of 10 with the best kept on nw, at 27-32 % of the
# compiles (a spread of 1: nw 6 of 10, the best lost; ts 8 of 10).
SPREAD = 2

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
        # the network's zero-shot trees (X.trees.onnx beside it) rank until the network is fine-tuned
        self.trees = load_trees(self.model) if self.model.kind == "l2p" else None
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
        # the analytical prior and fine-tuning (which implies it) need torch, first after the compiles:
        # it loads meanwhile (fine-tuning's Adam is cnmtune's own, learn.adam: torch.optim would
        # import torch._dynamo at its first step, 1-2.3 s more)
        if self.wants_prior:
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
        """Build the first population (see cnmtune.plugin.tune.tuner) and return it."""
        space, spec = self.space, self.spec
        spread = SPREAD * spec.top_k
        if spec.build_all or spec.exhaustive or len(space.tasklets) == 1 or len(space.pipelines) <= spread:
            return self.candidates()
        first = self.candidates([BuildRequest(text, (space.default_tasklets,)) for text in space.pipelines])
        chosen = ranked_pipelines(first, Candidate.predicted_objective_s)[:spread]
        if self.prior is not None:
            chosen += ranked_pipelines(first, Candidate.prior_objective_s)[
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
            rows = predict(self.trees if self.ranker == "trees" else self.model, self.model_path, [c for c, _ in new],
                           [f for _, f in new], self.size, [self.declared(c) for c, _ in new], self.schema)
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

    def row(self, c: Candidate) -> np.ndarray:
        """The model's input row of a candidate of the population."""
        return self.rows[self.by_binary[(c.elf_hash, c.dpus)]]

    def twin(self, c: Candidate) -> tuple[bytes, Defines]:
        """What the model and a run see of a candidate: its model input row and its defines; two
        binaries alike in both are twins, one choice (cnmtune.plugin.tune.select)."""
        return self.row(c).tobytes(), c.defines

    @property
    def ranker(self) -> str:
        """What scores new candidates now: the network's zero-shot trees ('trees') until its first
        fine-tuning, else the model (its kind: 'l2p', 'gbt', 'analytical', 'random')."""
        return "trees" if self.trees is not None and not self.last_adaptation else self.model.kind

    def adapt(self) -> dict | None:
        """Fine-tune the model on every run of the tune with a time (verified or screened) and score
        the population again; None when it cannot (fewer than 2 runs, adaptation off, no checkpoint:
        `not_adapted` says; so does a machine without torch, the 'train' extra). The first fine-tuning
        starts from the training checkpoint (ADAPT_EPOCHS); each later one goes on from the last
        fine-tuned network (the report's "shortened" counts these) for the share of ADAPT_EPOCHS
        that the runs new since it are of all the runs, at least SHORT_EPOCHS: what it learns is
        what the new runs add. The epochs follow from the runs alone, never from a clock, so the
        same tune makes the same choices on any machine and under any load."""
        verified = [c for c in self.run if c.measured_s is not None]
        if self.not_adapted or len(verified) < 2:
            return None
        full = not self.last_adaptation
        new = len(verified) - self.last_adaptation.get("samples", 0)
        epochs = ADAPT_EPOCHS if full else max(SHORT_EPOCHS, ADAPT_EPOCHS * new // len(verified))
        start = time.perf_counter()
        self.step_progress("fine-tune", 0, None)
        try:
            learnt = adapt(self.model, np.stack([self.row(c) for c in verified]),
                           verified, self.kernel.name, self.size, self.schema, self.spec.seed, epochs, restart=full)
        except (ModelError, MissingExtra) as exc:  # no checkpoint, or no torch: the model as it is
            self.not_adapted = str(exc)
            return None
        for c, p in zip(self.pool, self.model.predict(np.stack(self.rows)).runtime_s):
            c.predicted_s = float(p)
        self.add_seconds("fine-tuning", time.perf_counter() - start)
        self.step_progress("fine-tune", len(verified), len(verified))
        self.last_adaptation = learnt
        return learnt

    def stage(self, name: str, candidates: int, ran: list[Candidate], final: bool = False, **more) -> None:
        """Note one round: candidates built, runs, the error on them of the model that scored them
        (``ranker``), the best so far (with `final`, the best verified run)."""
        measured = [c for c in ran if c.measured_s is not None]
        true = np.array([c.measured_s for c in measured])
        pred = np.array([c.predicted_s for c in measured])
        known = np.isfinite(pred)
        best = self.best(verified_only=final)
        self.stages.append({
            "stage": name, "candidates": candidates, "runs": len(ran), "verified": len(measured),
            "scored_by": self.ranker,
            "model_mape": mape(true[known], pred[known]) if known.sum() else None,
            "model_kendall_tau": kendall_tau(true[known], pred[known]) if known.sum() > 1 else None,
            "best": best.to_dict() if best else None, **more})


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
