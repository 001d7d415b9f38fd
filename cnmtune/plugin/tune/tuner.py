"""The autotuner: a model-ranked search over pipelines and a measured one over kernel parameters.

One tune of a kernel at one problem size on the DPU count the user gives (default: one rank of 64,
or the largest count the size allows), every build with the workload's defines updated by
``defines`` (-D, the base) and every run with the workload parameters ``params`` (--param):
1. pipelines: the pipeline set (O0..O3, seeded random sequences, O2/O3 with LLVM unroll counts) x
   the tasklet counts of the grid are compiled in parallel (build cache; identical ELFs are one
   candidate) and their features read; every candidate is scored in one batch by the ONNX cost
   model (with ``finetune_samples`` N, the model is first adapted to this kernel and size on N
   measured candidates, L2P's transfer); the default build (O2, the base, the workload's tasklets)
   and the k candidates with the lowest predicted objective are run (verified);
2. kernel parameters: the workload's tuned defines (a block size, a synchronisation scheme; those
   -D did not fix) are searched by measurement, one define at a time from the best run so far:
   the best run's pipeline is built with every choice of the define at its tasklet count and run,
   then the two fastest choices at every other tasklet count the grid allows with them (a larger
   block leaves WRAM for fewer tasklets); the fastest becomes the start of the next define. The
   cost model is not asked here: it was trained on the workloads' default defines;
3. pipelines again, when step 2 changed a define: every pipeline is built with the new defines at
   the best run's tasklet count, scored, and the top k run.
The objective is the kernel time, or with ``objective='end-to-end'`` the kernel time plus the
run's host transfers over several DPU counts (predicted: the model's kernel time plus the
transfers of the host program for that configuration, cnmtune.plugin.tune.transfers). Runs stop
at the execution time budget or at ``max_runs``; the default build always runs first. The fastest
verified run is chosen, the default when nothing beats it: a tune never returns a variant slower
than the default. The report lists per stage what was built and run, the model's error on it, and
what the choice changes against the default (``wins``).
With a store, every compile, feature vector and run is recorded and a later tune of the same
kernel re-uses the recorded runs instead of executing again; runs with workload parameters are
neither re-used nor recorded (the store keys a run by binary, DPUs, tasklets and size, not by the
parameters it was given). On a UPMEM target ('upmem-sim', 'upmem-hw') candidates are still
scored from their proxy binaries' features (the model's schema) and each chosen pipeline is
rebuilt with the UPMEM SDK and measured there, one at a time in this process; UPMEM runs are not
recorded in the store, which keys runs by proxy ELF.
``exhaustive`` also runs every candidate of step 1, to measure the regret of the top-k choice and
how much faster the tuner was.

The roles are modules of this package: space (what is searched), build (compile and features),
score (the cost model, fine-tuning), measure (runs on the target), transfers (host-link
estimates), record (measure callbacks), report (candidates and the outcome); this module is the
loop between them.
"""

from __future__ import annotations

import itertools
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from cnmtune.costmodel import model_schema
from cnmtune.costmodel.learn.metrics import kendall_tau, mape
from cnmtune.errors import CnmtuneError
from cnmtune.plugin.tune.build import BuildRequest, Candidates, build, candidates_of
from cnmtune.plugin.tune.measure import InProcessMeasurer, Measurer, PooledMeasurer
from cnmtune.plugin.tune.record import MeasureCallback, RecordInStore
from cnmtune.plugin.tune.report import Candidate, TuneReport
from cnmtune.plugin.tune.score import finetune, load_model, score
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

__all__ = ["Exploration", "TuneSpec", "explore", "tune"]


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
    tasklets: tuple[int, ...] = (1, 2, 4, 8, 16)
    top_k: int = 10
    model: str | None = None
    exhaustive: bool = False
    budget_s: float | None = None
    sim_config: str = "calibrated"
    budget: int = DEFAULT_BUDGET
    device: str = "sim"
    sdk_dir: str | None = None
    finetune_samples: int = 0
    defines: tuple[tuple[str, DefineValue], ...] = ()  # over the workload's, in every build
    params: tuple[tuple[str, object], ...] = ()  # the workload's parameters in every run
    objective: str = "kernel"  # or "end-to-end": kernel + transfers, over the DPU counts
    tune_defines: bool = True  # search the workload's tuned defines (those -D does not fix)
    knobs: bool = True  # add O2/O3 with LLVM unroll counts to the pipelines
    max_runs: int | None = None  # stop running candidates after this many runs


class _Search:
    """The state of one tune between its stages: the space, the model, the runs so far."""

    def __init__(self, spec: TuneSpec, executor: Executor, store: Store | None,
                 progress: Callable[[str, int, int], None]):
        self.spec, self.executor, self.progress = spec, executor, progress
        self.target = make_target(spec.device, sim_config=spec.sim_config, budget=spec.budget, sdk_dir=spec.sdk_dir)
        self.kernel = find_kernel(spec.kernel)
        self.kernel.workload.resolve_defines(dict(spec.defines))  # a define the kernel refuses: one error first
        self.size = self.kernel.workload.size_of(spec.size)
        self.schema = model_schema()
        self.model_path, self.model = load_model(spec.model, self.schema)
        self.space = search_space(self.kernel, self.size, spec.pipelines, spec.seed, spec.length, spec.dpus,
                                  spec.tasklets, spec.defines, spec.params, spec.objective, spec.tune_defines,
                                  spec.knobs)
        self.grids: dict[Defines, Grid] = {(): self.space.grid}
        self.callbacks: list[MeasureCallback] = [RecordInStore(store, self.schema.hash)] if store is not None else []
        self.measurer = _measurer(spec, self.kernel, self.size, self.space, self.target, executor, store,
                                  self.callbacks, progress)
        config = getattr(self.target, "config", None) or DpuConfig.calibrated()
        self.transfers = TransferEstimates(self.kernel, self.space, config) \
            if spec.objective == "end-to-end" else None
        self.seconds: dict[str, float] = {}
        self.stages: list[dict] = []
        self.failures = 0
        self.run: list[Candidate] = []  # every candidate measured, in order
        self.default: Candidate | None = None

    def add_seconds(self, phase: str, seconds: float) -> None:
        self.seconds[phase] = self.seconds.get(phase, 0.0) + seconds

    def grid(self, tuned: Defines) -> Grid:
        """The valid (DPUs, tasklets) points of builds with `tuned` defines (cached)."""
        if tuned not in self.grids:
            self.grids[tuned], _ = valid_grid(self.kernel, self.size, self.space.dpu_counts, self.spec.tasklets,
                                              self.space.build_defines(tuned), self.space.params)
        return self.grids[tuned]

    def candidates(self, requests: Sequence[BuildRequest] | None = None) -> tuple[Candidates, np.ndarray]:
        """Build `requests` (default: the space), read features, score every candidate."""
        for request in requests or ():
            self.grid(request.tuned)
        built = build(self.kernel, self.space, self.executor, self.progress,
                      lambda results: [c.compiled(results) for c in self.callbacks], requests)
        self.add_seconds("compile", built.compile_s)
        self.add_seconds("features", built.features_s)
        self.failures += built.failures
        found = candidates_of(self.kernel, built, self.space, self.grids)
        start = time.perf_counter()
        X = score(self.model, self.model_path, found.candidates, found.features, self.size, self.schema)
        if self.transfers is not None:
            self.transfers.estimate(found.candidates)
        self.add_seconds("scoring", time.perf_counter() - start)
        return found, X

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

    def best(self) -> Candidate | None:
        """The fastest verified run so far by the objective; on a tie the default build, else the
        earliest: only a faster run replaces the default."""
        verified = [c for c in self.run if c.objective_s(self.spec.objective) is not None]
        return min(verified, key=lambda c: (c.objective_s(self.spec.objective), c is not self.default)) \
            if verified else None

    def stage(self, name: str, candidates: int, ran: list[Candidate]) -> None:
        """Note one stage: candidates scored, runs, the model's error on them, the best so far."""
        measured = [c for c in ran if c.measured_s is not None]
        true = np.array([c.measured_s for c in measured])
        pred = np.array([c.predicted_s for c in measured])
        known = np.isfinite(pred)
        best = self.best()
        self.stages.append({
            "stage": name, "candidates": candidates, "runs": len(ran), "verified": len(measured),
            "model_mape": mape(true[known], pred[known]) if known.sum() else None,
            "model_kendall_tau": kendall_tau(true[known], pred[known]) if known.sum() > 1 else None,
            "best": best.to_dict() if best else None})


def tune(spec: TuneSpec, executor: Executor, store: Store | None = None,
         progress: Callable[[str, int, int], None] | None = None) -> TuneReport:
    """Tune `spec.kernel` (see the module docstring); `progress(phase, done, total)` as work completes."""
    search = _Search(spec, executor, store, progress or (lambda *_: None))
    space, objective = search.space, spec.objective
    found, X = search.candidates()
    candidates = found.candidates
    finetuned, tuned_on = None, []
    if spec.finetune_samples:
        start = time.perf_counter()
        finetuned, tuned_on = finetune(search.model, candidates, X, spec.finetune_samples, search.measure,
                                       search.kernel.name, search.size, search.schema, spec.seed)
        search.add_seconds("fine-tuning", time.perf_counter() - start)
    top = _top(candidates, spec.top_k)
    search.default = default = _default(found, space)
    # the default first: it runs even when the budget is spent before the top-k
    search.stage("pipelines", len(candidates), tuned_on + search.measure(([default] if default else []) + top))
    if space.tuned:
        _search_defines(search)
    best = search.best()
    if best is not None and best.defines:
        _pipelines_again(search, best)
    chosen = search.best()
    report = TuneReport(search.kernel.name, search.size, sum(len(c.pipelines) for c in candidates), len(candidates),
                        top, chosen, default, search.seconds, search.failures, finetune=finetuned,
                        defines=dict(spec.defines), params=dict(spec.params), objective=objective,
                        stages=search.stages, runs=search.run)
    if spec.exhaustive:
        report.exhaustive = _exhaustive(search, candidates, chosen)
    report.executed, report.reused = search.measurer.executed, search.measurer.reused
    return report


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
        """The fastest verified run of the sample (kernel time)."""
        verified = [c for c in self.runs if c.measured_s is not None]
        return min(verified, key=lambda c: c.measured_s) if verified else None


def explore(spec: TuneSpec, executor: Executor, points: int, seed: int = 0,
            progress: Callable[[str, int, int], None] | None = None) -> Exploration:
    """Build and run `points` points drawn uniformly from the space of `spec` (every pipeline x every
    choice of the tuned defines x the tasklet counts the grid allows with them, on the tune's DPU
    count); the cost model chooses nothing here. The kernel objective only."""
    search = _Search(spec, executor, None, progress or (lambda *_: None))
    space = search.space
    if len(space.dpu_counts) != 1:
        raise CnmtuneError("explore samples the space at one DPU count (the kernel objective)")
    combos = [_tuned(space, dict(zip([name for name, _ in space.tuned], values)))
              for values in itertools.product(*(choices for _, choices in space.tuned))]
    every = [(pipeline, tuned, tasklets) for tuned in dict.fromkeys(combos) for tasklets in search.grid(tuned).tasklets
             for pipeline in space.pipelines]
    chosen = random.Random(seed).sample(every, min(points, len(every)))
    grouped: dict[tuple[str, Defines], list[int]] = {}
    for pipeline, tuned, tasklets in chosen:
        grouped.setdefault((pipeline, tuned), []).append(tasklets)
    found, _ = search.candidates([BuildRequest(p, tuple(sorted(t)), tuned) for (p, tuned), t in grouped.items()])
    search.measure(found.candidates)
    return Exploration(len(chosen), len(every), search.run, search.seconds)


def _top(candidates: Sequence[Candidate], k: int) -> list[Candidate]:
    """The k candidates with the lowest predicted objective."""
    return sorted(candidates, key=lambda c: c.predicted_objective_s())[:k]


def _search_defines(search: _Search) -> None:
    """Step 2: each tuned define in turn from the best run so far: every choice at the best run's
    tasklets (and DPUs), then the two fastest choices at every other tasklet count the grid allows."""
    space, objective = search.space, search.spec.objective
    for name, choices in space.tuned:
        best = search.best()
        if best is None:
            return
        settings = [_tuned(space, {**dict(best.defines), name: value}) for value in choices]
        ran = _run_builds(search, best, [BuildRequest(best.pipeline, (best.tasklets,), tuned) for tuned in settings
                                         if best.tasklets in search.grid(tuned).tasklets])
        scored = {c.defines: c.objective_s(objective) for c in [*ran, best] if c.objective_s(objective) is not None}
        requests = []
        for tuned in sorted(scored, key=scored.get)[:2]:
            others = tuple(t for t in search.grid(tuned).tasklets if t != best.tasklets)
            if others:
                requests.append(BuildRequest(best.pipeline, others, tuned))
        ran += _run_builds(search, best, requests)
        search.stage(f"define {name}", len(ran), ran)


def _run_builds(search: _Search, best: Candidate, requests: list[BuildRequest]) -> list[Candidate]:
    """Build `requests` and run their candidates on the best run's DPUs not run before."""
    if not requests:
        return []
    found, _ = search.candidates(requests)
    known = {(c.elf_hash, c.dpus) for c in search.run}
    return search.measure([c for c in found.candidates if c.dpus == best.dpus and (c.elf_hash, c.dpus) not in known])


def _tuned(space: Space, values: dict[str, DefineValue]) -> Defines:
    """Tuned define values as a candidate carries them: in the space's order, without those equal
    to the base build's."""
    base = dict(space.base_defines)
    return tuple((name, values[name]) for name, _ in space.tuned if name in values and values[name] != base.get(name))


def _pipelines_again(search: _Search, best: Candidate) -> None:
    """Step 3: every pipeline with the best run's defines at its tasklet count, scored; the top k run."""
    requests = [BuildRequest(text, (best.tasklets,), best.defines) for text in search.space.pipelines]
    found, _ = search.candidates(requests)
    known = {(c.elf_hash, c.dpus) for c in search.run}
    top = [c for c in _top(found.candidates, search.spec.top_k) if (c.elf_hash, c.dpus) not in known]
    search.stage("pipelines with the tuned defines", len(found.candidates), search.measure(top))


def _measurer(spec: TuneSpec, kernel: Kernel, size: int, space: Space, target: Target, executor: Executor,
              store: Store | None, callbacks: list[MeasureCallback], progress) -> Measurer:
    """Worker processes and the store for pure targets (not the store for runs with workload
    parameters: it does not key runs by them), this process for exclusive ones."""
    if target.exclusive:
        return InProcessMeasurer(kernel, size, space, progress, target)
    if spec.params:
        store, callbacks = None, []
    return PooledMeasurer(kernel, size, space, progress, target, executor, store, callbacks, spec.sim_config,
                          spec.budget)


def _default(found: Candidates, space: Space) -> Candidate | None:
    """The default build's candidate on the largest DPU count its tasklets run on (None: O2 did
    not compile at the default tasklet count)."""
    dpus = max(space.dpus(space.default_tasklets))
    default = next((c for c in found.candidates if c.elf_hash == found.default_elf and c.dpus == dpus
                    and not c.defines), None)
    if default is not None:  # named by its own pipeline, not by the first one with the same ELF
        default.pipelines.sort(key=lambda text: text != DEFAULT_PIPELINE)
    return default


def _exhaustive(search: _Search, candidates: list[Candidate], chosen: Candidate | None) -> dict:
    """Run every candidate of step 1 not run yet: the regret of the choice and how much faster the
    tuner was."""
    objective = search.spec.objective
    tuner_seconds = sum(search.seconds.values())
    start = time.perf_counter()
    search.measurer.measure([c for c in candidates if c.measured_s is None and c.status == "not run"], None)
    run_all = time.perf_counter() - start + search.seconds["execution"]
    measured = [c for c in candidates if c.objective_s(objective) is not None]
    best = min(measured, key=lambda c: c.objective_s(objective)) if measured else None
    exhaustive_seconds = search.seconds["compile"] + search.seconds["features"] + run_all
    true = np.array([c.objective_s(objective) for c in measured])
    pred = np.array([c.predicted_objective_s() for c in measured])
    chosen_s = chosen.objective_s(objective) if chosen else None
    return {
        "best": best.to_dict() if best else None,
        "regret": (chosen_s / best.objective_s(objective) - 1) if chosen_s and best else None,
        "tuner_seconds": tuner_seconds, "exhaustive_seconds": exhaustive_seconds,
        "tuner_speedup": exhaustive_seconds / tuner_seconds if tuner_seconds else None,
        "measured": len(measured), "mape": mape(true, pred) if len(measured) else None,
        "kendall_tau": kendall_tau(true, pred) if len(measured) > 1 else None,
        "chosen_rank": 1 + sum(c.objective_s(objective) < chosen_s for c in measured) if chosen_s else None,
    }
