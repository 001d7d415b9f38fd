"""The autotuner: enumerate pipelines x configurations, score every variant statically, run the top-k.

One tune of a kernel at one problem size:
1. the pipeline set (O0..O3 + seeded random sequences) x the tasklet counts of the grid are
   compiled in parallel (build cache; identical ELFs are one candidate) and their features read;
2. every (binary, DPUs) candidate on the grid is scored in one batch by the ONNX cost model;
   With ``finetune_samples`` N, the model is first adapted to this kernel and size: N
   candidates spread evenly over the predicted-faster half of the ranking are run, the model's
   torch checkpoint (X.pt beside X.onnx) is fine-tuned on their measured times as in L2P's
   transfer (first 6 blocks frozen), and every candidate is scored again;
3. the k candidates with the lowest predicted kernel time are run on the device (verified), plus
   the default build (O2, 16 tasklets, the grid's largest DPU count) for reference, in predicted
   order until the optional execution time budget is spent; the fastest verified run is chosen.
With a store, every compile, feature vector and run is recorded and a later tune of the same
kernel re-uses the recorded runs instead of executing again. On a UPMEM device ('upmem-sim',
'upmem-hw') candidates are still scored from their proxy binaries' features (the model's
schema) and each chosen pipeline is rebuilt with the UPMEM SDK and measured there, one at a
time in this process; UPMEM runs are not recorded in the store, which keys runs by proxy ELF. ``exhaustive`` also runs every
candidate, to measure the regret of the top-k choice and how much faster the tuner was.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from cnmtune.costmodel import Scorer, default_schema
from cnmtune.costmodel.learn.samples import input_matrix
from cnmtune.errors import CnmtuneError, ModelError
from cnmtune.passes import pipeline_set
from cnmtune.plugin.dataset.generate import (CompileJob, CompileResult, RunJob, compile_job, record_results, run_job,
                                    sim_config)
from cnmtune.runtime.grid import config_grid
from cnmtune.runtime.executor import Executor
from cnmtune.runtime.registry import find_kernel
from cnmtune.runtime.sim.dpu import DEFAULT_BUDGET
from cnmtune.store import RunRecord, Store

__all__ = ["Candidate", "TuneReport", "TuneSpec", "default_model_path", "tune"]

DEFAULT_PIPELINE, DEFAULT_TASKLETS = "O2", 16
DEVICES = ("sim", "upmem-sim", "upmem-hw")


def default_model_path() -> Path:
    """The pretrained model shipped with cnmtune (cnmtune/data/l2p.onnx)."""
    return Path(__file__).resolve().parents[2] / "data" / "l2p.onnx"


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


@dataclass
class Candidate:
    """One distinct (binary, DPUs) point; `pipelines` lists every pipeline that built the binary."""

    pipelines: list[str]
    tasklets: int
    dpus: int
    elf_hash: str
    predicted_s: float = float("nan")
    measured_s: float | None = None
    status: str = "not run"

    @property
    def pipeline(self) -> str:
        """The first pipeline (in set order) that produced this binary."""
        return self.pipelines[0]

    def to_dict(self) -> dict:
        """JSON-safe form."""
        return {"pipeline": self.pipeline, "equivalent_pipelines": len(self.pipelines) - 1,
                "tasklets": self.tasklets, "dpus": self.dpus, "elf_hash": self.elf_hash,
                "predicted_s": self.predicted_s, "measured_s": self.measured_s, "status": self.status}


@dataclass
class TuneReport:
    """The outcome of a tune: the top-k as run, the choice, the default build, where time went."""

    kernel: str
    size: int
    variants: int
    candidates: int
    top: list[Candidate]
    chosen: Candidate | None
    default: Candidate | None
    seconds: dict[str, float] = field(default_factory=dict)
    compile_failures: int = 0
    executed: int = 0
    reused: int = 0
    exhaustive: dict | None = None
    finetune: dict | None = None

    @property
    def speedup_vs_default(self) -> float | None:
        """Measured default time over the chosen variant's measured time."""
        if not (self.chosen and self.default and self.chosen.measured_s and self.default.measured_s):
            return None
        return self.default.measured_s / self.chosen.measured_s

    def to_dict(self) -> dict:
        """JSON-safe form."""
        return {"kernel": self.kernel, "size": self.size, "variants": self.variants,
                "candidates": self.candidates, "compile_failures": self.compile_failures,
                "executed": self.executed, "reused_measurements": self.reused,
                "top": [c.to_dict() for c in self.top],
                "chosen": self.chosen.to_dict() if self.chosen else None,
                "default": self.default.to_dict() if self.default else None,
                "speedup_vs_default": self.speedup_vs_default, "seconds": self.seconds,
                "finetune": self.finetune, "exhaustive": self.exhaustive}


class _Tuner:
    def __init__(self, spec: TuneSpec, executor: Executor, store: Store | None,
                 progress: Callable[[str, int, int], None] | None):
        self.spec, self.executor, self.store = spec, executor, store
        self.progress = progress or (lambda *_: None)
        self.kernel = find_kernel(spec.kernel)
        self.size = self.kernel.workload.preset(spec.size) if isinstance(spec.size, str) else int(spec.size)
        if spec.device not in DEVICES:
            raise CnmtuneError(f"unknown device {spec.device!r}; valid: {', '.join(DEVICES)}")
        if spec.device != "sim":  # before any work: without an SDK this names what is missing
            from cnmtune.runtime.upmem import UpmemSdk

            self.sdk = UpmemSdk.find(spec.sdk_dir)
        self.config_hash = sim_config(spec.sim_config).hash
        self.schema = default_schema()
        self.seconds: dict[str, float] = {}
        self.executed = self.reused = 0
        self.tuned_on: list[Candidate] = []  # the candidates run for fine-tuning

    def run(self) -> TuneReport:
        model = Path(self.spec.model) if self.spec.model else default_model_path()
        if not model.is_file():
            raise ModelError(f"no cost model at {model}: pass --model M.onnx (see `cnmtune model train`)")
        scorer = Scorer(model, expect_schema_hash=self.schema.hash)
        points = [p.config for p in config_grid(self.kernel, list(self.spec.dpus), list(self.spec.tasklets),
                                                [self.size]) if p.valid]
        if not points:
            raise CnmtuneError(f"{self.kernel.name}: no valid (DPUs, tasklets) point in the grid at size {self.size}")
        dpus_by_tasklets: dict[int, list[int]] = {}
        for c in points:
            dpus_by_tasklets.setdefault(c.tasklets, []).append(c.dpus)
        compiled, failures = self._compile(dpus_by_tasklets)
        candidates, features = self._candidates(compiled, dpus_by_tasklets)
        start = time.perf_counter()
        X = input_matrix(features, [c.dpus for c in candidates], [c.tasklets for c in candidates],
                         [self.size] * len(candidates), self.schema)
        predicted = scorer.predict(X).runtime_s
        if predicted is None:
            raise ModelError(f"{model} predicts no runtime; the tuner ranks by predicted kernel time")
        for c, p in zip(candidates, predicted):
            c.predicted_s = float(p)
        self.seconds["scoring"] = time.perf_counter() - start
        finetune = self._finetune(model, scorer, candidates, X) if self.spec.finetune_samples else None
        ranked = sorted(candidates, key=lambda c: c.predicted_s)
        top = ranked[: self.spec.top_k]
        default = self._default(candidates, dpus_by_tasklets)
        start = time.perf_counter()
        self._measure(top + ([default] if default and default not in top else []), self.spec.budget_s)
        self.seconds["execution"] = time.perf_counter() - start
        verified = [c for c in top + [c for c in self.tuned_on if c not in top] if c.measured_s is not None]
        chosen = min(verified, key=lambda c: c.measured_s) if verified else None
        report = TuneReport(self.kernel.name, self.size, sum(len(c.pipelines) for c in candidates),
                            len(candidates), top, chosen, default, self.seconds, failures, finetune=finetune)
        if self.spec.exhaustive:
            report.exhaustive = self._exhaustive(candidates, chosen)
        report.executed, report.reused = self.executed, self.reused
        return report

    # -- phases ------------------------------------------------------------------------------

    def _compile(self, dpus_by_tasklets: dict[int, list[int]]) -> tuple[list[CompileResult], int]:
        start = time.perf_counter()
        pipelines = [p.text for p in pipeline_set(self.spec.pipelines, self.spec.seed, self.spec.length)]
        if DEFAULT_PIPELINE not in pipelines:
            pipelines.append(DEFAULT_PIPELINE)
        tasklets = tuple(sorted(set(dpus_by_tasklets) | {DEFAULT_TASKLETS}))
        for text in pipelines:
            self.executor.submit(compile_job, CompileJob(str(self.kernel.root), text, tasklets))
        results: list[CompileResult] = []
        for done, outcome in enumerate(self.executor.results(), 1):
            if outcome.ok:
                results.extend(outcome.value)
            self.progress("compile", done, len(pipelines))
        order = {text: i for i, text in enumerate(pipelines)}
        results.sort(key=lambda r: (order[r.record.pipeline], r.record.tasklets))
        if self.store is not None:
            record_results(self.store, results, self.schema.hash)
        wall = time.perf_counter() - start
        share = sum(r.feature_seconds for r in results) / max(1, self.executor.workers)
        self.seconds["features"] = min(share, wall)
        self.seconds["compile"] = wall - self.seconds["features"]
        failures = sum(not r.record.ok for r in results)
        return [r for r in results if r.record.ok], failures

    def _candidates(self, compiled: list[CompileResult], dpus_by_tasklets: dict[int, list[int]]):
        by_binary: dict[tuple[str, int], Candidate] = {}
        features: list[dict[str, float]] = []
        self.features_by_elf: dict[str, dict[str, float]] = {}
        for result in compiled:
            rec = result.record
            self.features_by_elf[rec.elf_hash] = result.features
            for dpus in dpus_by_tasklets.get(rec.tasklets, []):
                key = (rec.elf_hash, dpus)
                if key in by_binary:
                    by_binary[key].pipelines.append(rec.pipeline)
                    continue
                by_binary[key] = Candidate([rec.pipeline], rec.tasklets, dpus, rec.elf_hash)
                features.append(result.features)
        if not by_binary:
            raise CnmtuneError(f"{self.kernel.name}: no pipeline compiled; nothing to tune")
        self.default_elf = next((r.record.elf_hash for r in compiled if r.record.pipeline == DEFAULT_PIPELINE
                                 and r.record.tasklets == DEFAULT_TASKLETS), None)
        return list(by_binary.values()), features

    def _finetune(self, model: Path, scorer: Scorer, candidates: list[Candidate], X: np.ndarray) -> dict:
        """Run ``finetune_samples`` candidates, fine-tune the model on them, re-score all candidates."""
        from cnmtune.costmodel.learn.checkpoint import load_checkpoint
        from cnmtune.costmodel.learn.metrics import mape
        from cnmtune.costmodel.learn.model import TRANSFER_FROZEN
        from cnmtune.costmodel.learn.samples import runtime_samples
        from cnmtune.costmodel.learn.training import finetune_on, predict

        start = time.perf_counter()
        checkpoint = model.with_suffix(".pt")
        if not checkpoint.is_file():
            raise ModelError(f"--finetune-samples needs the training checkpoint of {model} at {checkpoint} "
                             "(`cnmtune model train` writes it beside the ONNX file)")
        base, meta = load_checkpoint(checkpoint)
        if meta.get("data_hash") != scorer.data_hash:
            raise ModelError(f"{checkpoint} is not the checkpoint of {model}: training data hash "
                             f"{meta.get('data_hash')} != {scorer.data_hash}")
        order = np.argsort([c.predicted_s for c in candidates], kind="stable")
        half = order[: max(self.spec.finetune_samples, (len(order) + 1) // 2)]
        picks = half[np.unique(np.linspace(0, len(half) - 1, self.spec.finetune_samples).round().astype(int))]
        self.tuned_on = [candidates[i] for i in picks]
        self._measure(self.tuned_on, None)
        rows = [i for i in picks if candidates[i].measured_s is not None]
        if len(rows) < 2:
            raise CnmtuneError(f"{self.kernel.name}: fine-tuning needs at least 2 verified runs; "
                               f"{len(rows)} of {len(picks)} verified")
        measured = [candidates[i] for i in rows]
        samples = runtime_samples(X[rows], [c.measured_s for c in measured], self.kernel.name,
                                  [c.pipeline for c in measured], [c.dpus for c in measured],
                                  [c.tasklets for c in measured], [self.size] * len(rows), self.schema)
        true = np.array([c.measured_s for c in measured])
        before = np.array([c.predicted_s for c in measured])
        # L2P freezes 6 of 12 blocks; a shallower model keeps its first half
        tuned, _ = finetune_on(base, samples, min(TRANSFER_FROZEN, base.config.depth // 2), seed=self.spec.seed)
        for c, p in zip(candidates, predict(tuned, X).runtime_s):
            c.predicted_s = float(p)
        self.seconds["fine-tuning"] = time.perf_counter() - start
        return {"samples": len(rows), "runs_failed": len(picks) - len(rows), "checkpoint": str(checkpoint),
                "mape_before": mape(true, before),
                "mape_after": mape(true, np.array([c.predicted_s for c in measured]))}

    def _default(self, candidates: list[Candidate], dpus_by_tasklets: dict[int, list[int]]) -> Candidate | None:
        if self.default_elf is None:
            return None
        dpus = max(self.spec.dpus)
        found = next((c for c in candidates if c.elf_hash == self.default_elf and c.dpus == dpus), None)
        return found or Candidate([DEFAULT_PIPELINE], DEFAULT_TASKLETS, dpus, self.default_elf)

    def _measure(self, candidates: list[Candidate], budget_s: float | None) -> None:
        """Run candidates (recorded runs are reused), in order, until the time budget is spent."""
        if self.spec.device != "sim":
            self._measure_upmem(candidates, budget_s)
            return
        start = time.perf_counter()
        todo: list[Candidate] = []
        for c in candidates:
            rec = self.store.find_run(c.elf_hash, c.dpus, c.tasklets, self.size, self.config_hash) \
                if self.store is not None else None
            if rec is not None:
                self._take(c, rec)
                self.reused += 1
            else:
                todo.append(c)
        # with a budget, one run per worker at a time, so the budget is checked between runs;
        # without one, everything is queued at once and the workers never wait for each other
        window = max(1, self.executor.workers) if budget_s is not None else max(1, len(todo))
        done = 0
        for first in range(0, len(todo), window):
            if budget_s is not None and time.perf_counter() - start > budget_s:
                for c in todo[first:]:
                    c.status = "skipped: time budget spent"
                break
            group = todo[first:first + window]
            for c in group:
                self.executor.submit(run_job, RunJob(str(self.kernel.root), c.pipeline, c.tasklets, c.elf_hash,
                                                     ((c.dpus, self.size),), self.spec.sim_config,
                                                     self.spec.budget, 0))
            by_key = {(c.elf_hash, c.dpus): c for c in group}
            records: list[RunRecord] = []
            for outcome in self.executor.results():
                job = outcome.arg
                if outcome.ok:
                    for rec in outcome.value:
                        self._take(by_key[(rec.elf_hash, rec.dpus)], rec)
                    records.extend(outcome.value)
                else:
                    by_key[(job.elf_hash, job.points[0][0])].status = f"error: {outcome.error}"
                self.executed += 1
                done += 1
                if self.store is not None and len(records) >= 64:  # a long exhaustive run keeps its runs
                    record_results(self.store, records, self.schema.hash)
                    records = []
                self.progress("execute", done, len(todo))
            if self.store is not None:
                record_results(self.store, records, self.schema.hash)

    def _measure_upmem(self, candidates: list[Candidate], budget_s: float | None) -> None:
        from cnmtune.runtime.execute import run_on_device
        from cnmtune.runtime.toolchain import UpmemToolchain, Variant
        from cnmtune.runtime.upmem import UpmemDevice

        sdk = self.sdk
        toolchain = UpmemToolchain(sdk)
        backend = "hw" if self.spec.device == "upmem-hw" else "simulator"
        start = time.perf_counter()
        for done, c in enumerate(candidates, 1):
            if budget_s is not None and time.perf_counter() - start > budget_s:
                c.status = "skipped: time budget spent"
                continue
            try:
                binary = toolchain.compile(Variant.of(self.kernel, c.pipeline, c.tasklets))
                with UpmemDevice(c.dpus, backend, sdk=sdk) as device:
                    result = run_on_device(binary, device, self.size)
                c.measured_s, c.status = result.kernel_s, "verified"
            except CnmtuneError as exc:
                c.status = f"error: {exc}"
            self.executed += 1
            self.progress("execute", done, len(candidates))

    @staticmethod
    def _take(c: Candidate, rec: RunRecord) -> None:
        if rec.ok:
            c.measured_s, c.status = rec.kernel_seconds, "verified"
        else:
            c.status = f"{rec.status.value}: {rec.error}"

    def _exhaustive(self, candidates: list[Candidate], chosen: Candidate | None) -> dict:
        tuner_seconds = sum(self.seconds.values())
        start = time.perf_counter()
        self._measure([c for c in candidates if c.measured_s is None and c.status == "not run"], None)
        run_all = time.perf_counter() - start + self.seconds["execution"]
        measured = [c for c in candidates if c.measured_s is not None]
        best = min(measured, key=lambda c: c.measured_s) if measured else None
        exhaustive_seconds = self.seconds["compile"] + self.seconds["features"] + run_all
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


def tune(spec: TuneSpec, executor: Executor, store: Store | None = None,
         progress: Callable[[str, int, int], None] | None = None) -> TuneReport:
    """Tune `spec.kernel` (see the module docstring); `progress(phase, done, total)` as work completes."""
    return _Tuner(spec, executor, store, progress).run()
