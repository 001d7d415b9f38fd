"""The autotuner: enumerate pipelines x configurations, score every variant statically, run the top-k.

One tune of a kernel at one problem size, every build with the workload's defines updated by
``defines`` (-D) and every run with the workload parameters ``params`` (--param):
1. the pipeline set (O0..O3 + seeded random sequences) x the tasklet counts of the grid are
   compiled in parallel (build cache; identical ELFs are one candidate) and their features read;
2. every (binary, DPUs) candidate on the grid is scored in one batch by the ONNX cost model;
   With ``finetune_samples`` N, the model is first adapted to this kernel and size: N
   candidates spread evenly over the predicted-faster half of the ranking are run, the model's
   torch checkpoint (X.pt beside X.onnx) is fine-tuned on their measured times as in L2P's
   transfer (first 6 blocks frozen), and every candidate is scored again;
3. the default build (the workload's own with those defines and parameters, see space; on the
   largest DPU count its tasklets run on) is always run, then the k candidates with the lowest
   predicted kernel time (verified), in predicted order until the optional execution time budget
   is spent; the fastest verified run is chosen, the default when nothing beats it: a tune never
   returns a variant slower than the default.
With a store, every compile, feature vector and run is recorded and a later tune of the same
kernel re-uses the recorded runs instead of executing again; runs with workload parameters are
neither re-used nor recorded (the store keys a run by binary, DPUs, tasklets and size, not by the
parameters it was given). On a UPMEM target ('upmem-sim', 'upmem-hw') candidates are still
scored from their proxy binaries' features (the model's schema) and each chosen pipeline is
rebuilt with the UPMEM SDK and measured there, one at a time in this process; UPMEM runs are not
recorded in the store, which keys runs by proxy ELF.
``exhaustive`` also runs every candidate, to measure the regret of the top-k choice and how
much faster the tuner was.

The roles are modules of this package: space (what is searched), build (compile and features),
score (the cost model, fine-tuning), measure (runs on the target), record (measure callbacks),
report (candidates and the outcome); this module is the loop between them.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from cnmtune.costmodel import model_schema
from cnmtune.plugin.tune.build import Candidates, build, candidates_of
from cnmtune.plugin.tune.measure import InProcessMeasurer, Measurer, PooledMeasurer
from cnmtune.plugin.tune.record import MeasureCallback, RecordInStore
from cnmtune.plugin.tune.report import Candidate, TuneReport
from cnmtune.plugin.tune.score import finetune, load_model, score
from cnmtune.plugin.tune.space import DEFAULT_PIPELINE, Space, search_space
from cnmtune.runtime.executor import Executor
from cnmtune.runtime.kernel import Kernel
from cnmtune.runtime.registry import find_kernel
from cnmtune.runtime.sim.dpu import DEFAULT_BUDGET
from cnmtune.runtime.target import Target, make_target
from cnmtune.runtime.workload import DefineValue
from cnmtune.store import Store

__all__ = ["TuneSpec", "tune"]


@dataclass(frozen=True)
class TuneSpec:
    """What to tune: a kernel at one size over pipelines x the (DPUs, tasklets) grid."""

    kernel: str
    size: int | str = "default"
    pipelines: int = 200
    seed: int = 0
    length: int | None = 10
    dpus: tuple[int, ...] = (1, 2, 4, 8, 16)
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


def tune(spec: TuneSpec, executor: Executor, store: Store | None = None,
         progress: Callable[[str, int, int], None] | None = None) -> TuneReport:
    """Tune `spec.kernel` (see the module docstring); `progress(phase, done, total)` as work completes."""
    progress = progress or (lambda *_: None)
    target = make_target(spec.device, sim_config=spec.sim_config, budget=spec.budget, sdk_dir=spec.sdk_dir)
    kernel = find_kernel(spec.kernel)
    kernel.workload.resolve_defines(dict(spec.defines))  # a define the kernel refuses: one error before any work
    size = kernel.workload.size_of(spec.size)
    schema = model_schema()
    path, model = load_model(spec.model, schema)
    space = search_space(kernel, size, spec.pipelines, spec.seed, spec.length, spec.dpus, spec.tasklets,
                         spec.defines, spec.params)
    callbacks = [RecordInStore(store, schema.hash)] if store is not None else []
    built = build(kernel, space, executor, progress, lambda results: [c.compiled(results) for c in callbacks])
    seconds = {"features": built.features_s, "compile": built.compile_s}
    found = candidates_of(kernel, built, space)
    candidates = found.candidates
    start = time.perf_counter()
    X = score(model, path, candidates, found.features, size, schema)
    seconds["scoring"] = time.perf_counter() - start
    measurer = _measurer(spec, kernel, size, space, target, executor, store, callbacks, progress)
    finetuned, tuned_on = None, []
    if spec.finetune_samples:
        start = time.perf_counter()
        finetuned, tuned_on = finetune(model, candidates, X, spec.finetune_samples,
                                       lambda cs: measurer.measure(cs, None), kernel.name, size, schema, spec.seed)
        seconds["fine-tuning"] = time.perf_counter() - start
    top = sorted(candidates, key=lambda c: c.predicted_s)[: spec.top_k]
    default = _default(found, space)
    start = time.perf_counter()
    # the default first: it runs even when the time budget is spent before the top-k (runs of
    # the fine-tuning are not repeated)
    runs = ([default] if default is not None else []) + [c for c in top if c is not default]
    measurer.measure([c for c in runs if c.status == "not run"], spec.budget_s)
    seconds["execution"] = time.perf_counter() - start
    # the default leads, so that min() keeps it on a tie: only a faster run replaces it
    verified = [c for c in runs + tuned_on if c.measured_s is not None]
    chosen = min(verified, key=lambda c: c.measured_s) if verified else None
    report = TuneReport(kernel.name, size, sum(len(c.pipelines) for c in candidates), len(candidates), top,
                        chosen, default, seconds, built.failures, finetune=finetuned, defines=dict(spec.defines),
                        params=dict(spec.params))
    if spec.exhaustive:
        report.exhaustive = _exhaustive(measurer, candidates, chosen, seconds)
    report.executed, report.reused = measurer.executed, measurer.reused
    return report


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
    default = next((c for c in found.candidates if c.elf_hash == found.default_elf and c.dpus == dpus), None)
    if default is not None:  # named by its own pipeline, not by the first one with the same ELF
        default.pipelines.sort(key=lambda text: text != DEFAULT_PIPELINE)
    return default


def _exhaustive(measurer: Measurer, candidates: list[Candidate], chosen: Candidate | None,
                seconds: dict[str, float]) -> dict:
    """Run every candidate not run yet: the regret of the choice and how much faster the tuner was."""
    tuner_seconds = sum(seconds.values())
    start = time.perf_counter()
    measurer.measure([c for c in candidates if c.measured_s is None and c.status == "not run"], None)
    run_all = time.perf_counter() - start + seconds["execution"]
    measured = [c for c in candidates if c.measured_s is not None]
    best = min(measured, key=lambda c: c.measured_s) if measured else None
    exhaustive_seconds = seconds["compile"] + seconds["features"] + run_all
    true = np.array([c.measured_s for c in measured])
    pred = np.array([c.predicted_s for c in measured])
    from cnmtune.costmodel.learn.metrics import kendall_tau, mape

    return {
        "best": best.to_dict() if best else None,
        "regret": (chosen.measured_s / best.measured_s - 1) if chosen and best else None,
        "tuner_seconds": tuner_seconds, "exhaustive_seconds": exhaustive_seconds,
        "tuner_speedup": exhaustive_seconds / tuner_seconds if tuner_seconds else None,
        "measured": len(measured), "mape": mape(true, pred) if len(measured) else None,
        "kendall_tau": kendall_tau(true, pred) if len(measured) > 1 else None,
        "chosen_rank": 1 + sum(c.measured_s < chosen.measured_s for c in measured) if chosen else None,
    }
