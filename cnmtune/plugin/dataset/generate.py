"""Dataset generation: kernels x pipelines x (DPUs, tasklets, size) on the embedded simulator.

The L2P protocol at scale. For every kernel, every pipeline of a seeded pipeline set is
compiled once per tasklet count of the configuration grid (NR_TASKLETS is a compile-time
define), its features extracted, and every distinct binary simulated once per grid point that
runs with its tasklet count. Many pipelines produce the same ELF; runs are keyed by the ELF
hash, so a duplicate binary costs one compile and no simulation, and every pipeline that made
it gets the run's sample in the training view.

Work runs on an Executor (local processes by default, Dask with a scheduler); only the
coordinator writes the store, in short atomic batches, so killing it at any point loses at
most the batch in flight and a rerun of the same command skips everything already recorded.
Failures (compile errors, IRAM/WRAM overflow, faults, timeouts, wrong results) are recorded
with their reason: they count as done and stay out of the training view.

A functional trace is not reused across sizes, DPU counts or tasklet counts: each changes
what every tasklet executes. What repeats across the grid is reused instead: the binary
(dedup by ELF hash) and, within a worker, the compiled program (build cache).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field

from cnmtune.costmodel import default_schema
from cnmtune.passes import pipeline_set
from cnmtune.plugin.jobs import (CompileJob, CompileResult, RunJob, compile_job, kernel_of, record_results,
                                 run_job)
from cnmtune.runtime.executor import Executor, Outcome
from cnmtune.runtime.grid import config_grid
from cnmtune.runtime.kernel import Kernel
from cnmtune.runtime.registry import find_kernel
from cnmtune.runtime.sim.config import DpuConfig
from cnmtune.runtime.sim.dpu import DEFAULT_BUDGET
from cnmtune.store import CompileRecord, RunRecord, Status, Store, defines_key

__all__ = ["DatasetSpec", "GenerationReport", "generate"]

@dataclass(frozen=True)
class DatasetSpec:
    """What to generate. Pipelines: the L2P set (O0..O3 + unique random sequences)."""

    kernels: tuple[str, ...]
    pipelines: int = 1004
    seed: int = 0
    length: int | None = 10
    dpus: tuple[int, ...] = (1, 2, 4, 8, 16)
    tasklets: tuple[int, ...] = (1, 2, 4, 8, 16)
    sizes: tuple[int | str, ...] = ("default",)
    sim_config: str = "calibrated"
    budget: int = DEFAULT_BUDGET
    input_seed: int = 0
    retry_failed: bool = False

    def to_dict(self) -> dict:
        """JSON-safe form (recorded with each generation session)."""
        return asdict(self)


@dataclass
class GenerationReport:
    """What one `generate` call did."""

    kernels: list[str]
    executor: str
    compiles_planned: int = 0
    compiles_done: int = 0
    runs_planned: int = 0
    runs_done: int = 0
    sample_points: int = 0
    distinct_points: int = 0
    invalid_points: dict[str, int] = field(default_factory=dict)
    compile_status: dict[str, int] = field(default_factory=dict)
    run_status: dict[str, int] = field(default_factory=dict)
    task_failures: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def dedup_fraction(self) -> float:
        """Share of the dataset's simulations made unnecessary by identical binaries.

        `sample_points` counts (usable compile, grid point) pairs of the whole dataset, done
        before or now; `distinct_points` the (distinct ELF, grid point) pairs actually simulated.
        """
        return 1.0 - self.distinct_points / self.sample_points if self.sample_points else 0.0


# ------------------------------------------------------------------------------ coordinator

@dataclass
class _KernelPlan:
    kernel: Kernel
    points: dict[int, list[tuple[int, int]]]  # tasklets -> [(dpus, size)]


class _Coordinator:
    """Plans jobs from what the store lacks, dispatches them, records results in batches."""

    def __init__(self, spec: DatasetSpec, store: Store, executor: Executor,
                 progress: Callable[[str, int, int], None] | None, commit_seconds: float):
        self.spec, self.store, self.executor = spec, store, executor
        self.progress = progress or (lambda *_: None)
        self.commit_seconds = commit_seconds
        self.config_hash = DpuConfig.named(spec.sim_config).hash
        self.schema_hash = default_schema().hash
        self.invalid: dict[str, int] = {}
        self.plans = {plan.kernel.name: plan for plan in map(self._plan, spec.kernels)}
        self.report = GenerationReport(list(self.plans), executor.description)
        self.done_runs = store.run_keys(self.config_hash)
        self.simulated: set[str] = set()  # ELF hashes whose runs are recorded or dispatched
        self.pending: list[object] = []  # records not yet committed

    def _plan(self, name: str) -> _KernelPlan:
        kernel = find_kernel(name)
        points: dict[int, list[tuple[int, int]]] = {}
        for point in config_grid(kernel, list(self.spec.dpus), list(self.spec.tasklets),
                                 list(self.spec.sizes)):
            if point.valid:
                c = point.config
                points.setdefault(c.tasklets, []).append((c.dpus, c.size))
            else:
                self.invalid[point.reason] = self.invalid.get(point.reason, 0) + 1
        return _KernelPlan(kernel, points)

    def _finished(self, status: Status) -> bool:
        return status is Status.OK or not self.spec.retry_failed

    def run(self) -> GenerationReport:
        start = time.time()
        self.report.invalid_points = self.invalid
        self.generation = self.store.start_generation(self.spec.to_dict(), self.executor.description,
                                                      self.executor.workers, start)
        pipelines = [p.text for p in pipeline_set(self.spec.pipelines, self.spec.seed, self.spec.length)]
        recorded = {(c.kernel, c.pipeline, c.defines, c.tasklets): c for c in self.store.compiles()}
        for plan in self.plans.values():
            defaults = defines_key(plan.kernel.workload.resolve_defines())
            for text in pipelines:
                todo = []
                for tasklets in sorted(plan.points):
                    rec = recorded.get((plan.kernel.name, text, defaults, tasklets))
                    if rec is not None and self._finished(rec.status):
                        self._schedule_runs(plan, rec)
                    else:
                        todo.append(tasklets)
                if todo:
                    self.executor.submit(compile_job, CompileJob(str(plan.kernel.root), text, tuple(todo)))
                    self.report.compiles_planned += len(todo)
        self._tick()
        last_commit = time.monotonic()
        for outcome in self.executor.results():
            self._take(outcome)
            self._tick()
            if time.monotonic() - last_commit >= self.commit_seconds:
                self._commit(start)
                last_commit = time.monotonic()
        self._commit(start, finished=True)
        self.report.seconds = time.time() - start
        return self.report

    def _schedule_runs(self, plan: _KernelPlan, rec: CompileRecord) -> None:
        if not rec.ok:
            return
        points = plan.points.get(rec.tasklets, [])
        self.report.sample_points += len(points)
        if rec.elf_hash in self.simulated:
            return
        self.simulated.add(rec.elf_hash)
        self.report.distinct_points += len(points)
        todo = []
        for dpus, size in points:
            status = self.done_runs.get((rec.elf_hash, dpus, rec.tasklets, size))
            if status is None or not self._finished(status):
                todo.append((dpus, size))
        if todo:
            self.executor.submit(run_job, RunJob(
                str(plan.kernel.root), rec.pipeline, rec.tasklets, rec.elf_hash, tuple(todo),
                self.spec.sim_config, self.spec.budget, self.spec.input_seed))
            self.report.runs_planned += len(todo)

    def _take(self, outcome: Outcome) -> None:
        job = outcome.arg
        if not outcome.ok:
            self.report.task_failures.append(f"{type(job).__name__} {job}: {outcome.error}")
            if isinstance(job, CompileJob):  # the worker died: record each variant as failed
                kernel = kernel_of(job.kernel_dir)
                key = defines_key(kernel.workload.resolve_defines())
                results = [CompileResult(CompileRecord(kernel.name, job.pipeline, key, t, None,
                                                       Status.ERROR, outcome.error), None)
                           for t in job.tasklets]
            else:
                config_hash = self.config_hash
                results = [RunRecord(job.elf_hash, d, job.tasklets, s, config_hash, Status.ERROR,
                                     error=outcome.error, device="sim") for d, s in job.points]
        else:
            results = outcome.value
        for item in results:
            self.pending.append(item)
            if isinstance(item, CompileResult):
                rec = item.record
                self.report.compiles_done += 1
                _count(self.report.compile_status, rec.status)
                self._schedule_runs(self.plans[rec.kernel], rec)
            else:
                self.report.runs_done += 1
                _count(self.report.run_status, item.status)

    def _tick(self) -> None:
        self.progress("compile", self.report.compiles_done, self.report.compiles_planned)
        self.progress("simulate", self.report.runs_done, self.report.runs_planned)

    def _commit(self, start: float, finished: bool = False) -> None:
        with self.store.batch():
            record_results(self.store, self.pending, self.schema_hash)
            self.store.update_generation(self.generation, time.time() - start,
                                         self.report.compiles_done, self.report.runs_done, finished)
        self.pending.clear()


def _count(counter: dict[str, int], status: Status) -> None:
    counter[status.value] = counter.get(status.value, 0) + 1


def generate(spec: DatasetSpec, store: Store, executor: Executor,
             progress: Callable[[str, int, int], None] | None = None,
             commit_seconds: float = 0.5) -> GenerationReport:
    """Generate (or complete) the dataset `spec` into `store`; skips what is already recorded.

    `progress(phase, done, total)` is called as work completes ('compile', 'simulate'; the
    simulate total grows as new distinct binaries appear).
    """
    return _Coordinator(spec, store, executor, progress, commit_seconds).run()
