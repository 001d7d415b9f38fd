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
with their reason: they count as done and stay out of the training view. A usable compile whose
binary has no features under the current feature schema (a store made before the schema grew)
is compiled again, once per binary, to record them; its runs, keyed by the ELF, stay valid.
Runs are keyed by the timing their kernel time depends on (DpuConfig.hash), not by the host
link's constants: a run stored under another link model is not repeated, and its ``link_hash``
names the model that priced its transfer time.

Generators started on one store share the work: a unit (one compile, one run: the natural key
of its row) is claimed in the store right before its job is dispatched, with at most two jobs
per worker in flight, so the rest stays for whichever generator gets there first. A unit done
or claimed by another generator is left to it; its result is recorded and its claim released
in one transaction. A heartbeat renews the claims; those of a generator killed on this host
are taken over at once, those of one on another host when their lease runs out. Once its own
queue is done, a generator retries what it left and takes over the units of a dead one.

A functional trace is not reused across sizes, DPU counts or tasklet counts: each changes
what every tasklet executes. What repeats across the grid is reused instead: the binary
(dedup by ELF hash) and, within a worker, the compiled program (build cache).
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from cnmtune.costmodel import model_schema
from cnmtune.passes import knob_pipelines, pipeline_set
from cnmtune.plugin.jobs import (CompileJob, CompileResult, RunJob, compile_job, kernel_of, record_results, run_host,
                                 run_job)
from cnmtune.runtime.executor import Executor, Outcome
from cnmtune.runtime.grid import config_grid, size_ladder
from cnmtune.runtime.kernel import Kernel
from cnmtune.runtime.registry import find_kernel
from cnmtune.runtime.sim.config import DpuConfig
from cnmtune.runtime.target import SampledSimTarget
from cnmtune.runtime.sim.dpu import DEFAULT_BUDGET
from cnmtune.runtime.workload import DefineValue, Workload
from cnmtune.store import ClaimOwner, CompileRecord, RunRecord, Status, Store, defines_key, sampled_config_hash

__all__ = ["LEASE_SECONDS", "SAMPLED", "SAMPLING_TOLERANCE", "DatasetSpec", "GenerationReport", "KernelPlan", "compile_unit",
           "define_settings", "drop_inexact_sampling", "generate", "plan_kernel", "pipeline_texts", "run_unit",
           "sampling_error"]

LEASE_SECONDS = 60.0
#: The device of the runs from ``DatasetSpec.sampled_from`` DPUs on (cnmtune.runtime.sampled).
SAMPLED = SampledSimTarget.name
#: A kernel's runs are sampled only when a sampled run's kernel time is within this relative
#: error of the full run's (``sampling_error``): the bound issue 17 sets for sampled simulation.
SAMPLING_TOLERANCE = 0.02
LADDER = "ladder:"


def define_settings(workload: type[Workload], values: int) -> list[dict[str, DefineValue]]:
    """The workload's own defines ({}), then, one tuned define at a time, up to ``values - 1`` of
    its other declared choices, spread evenly over them (both ends included)."""
    settings: list[dict[str, DefineValue]] = [{}]
    defaults = workload.resolve_defines()
    for name in workload.tuned_defines if values > 1 else ():
        others = [c for c in workload.define_choices[name] if c != defaults.get(name)]
        take = min(values - 1, len(others))
        picks = [others[len(others) // 2]] if take == 1 else \
            [others[round(k * (len(others) - 1) / (take - 1))] for k in range(take)]
        settings.extend({name: v} for v in dict.fromkeys(picks))
    return settings

@dataclass(frozen=True)
class DatasetSpec:
    """What to generate. Pipelines: the L2P set (O0..O3 + unique random sequences), plus O2/O3
    with LLVM's unroll knobs with ``knobs``. Sizes: presets, element counts, or ``ladder:N`` (N
    log-spaced sizes from the small preset to the default, cnmtune.runtime.grid.size_ladder).
    ``define_values`` > 1 varies each tuned define (``define_settings``). The grid keeps
    tasklets >= DPUs only with ``tasklets_at_least_dpus`` (L2P's rule); ``per_dpu_limit`` skips
    points whose per-DPU share of the input exceeds that fraction of the default preset; from
    ``sampled_from`` DPUs on, runs simulate the first and the last DPU only (``SAMPLED``).
    """

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
    knobs: bool = False
    define_values: int = 1
    tasklets_at_least_dpus: bool = True
    per_dpu_limit: float | None = None
    sampled_from: int | None = None

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
    left_to_others: int = 0  # units another generator on the store did meanwhile or still holds
    sampling_error: dict[str, float | None] = field(default_factory=dict)  # kernel -> error (None: unchecked)

    @property
    def dedup_fraction(self) -> float:
        """Share of the dataset's simulations made unnecessary by identical binaries.

        `sample_points` counts (usable compile, grid point) pairs of the whole dataset, done
        before or now; `distinct_points` the (distinct ELF, grid point) pairs actually simulated.
        """
        return 1.0 - self.distinct_points / self.sample_points if self.sample_points else 0.0


# ------------------------------------------------------------------------------ units of work

def compile_unit(kernel: str, pipeline: str, defines: str, tasklets: int) -> str:
    """Claim key of one compile: the natural key of its row."""
    return json.dumps(["compile", kernel, pipeline, defines, tasklets])


def run_unit(kernel: str, defines: str, elf_hash: str, dpus: int, tasklets: int, size: int, config_hash: str) -> str:
    """Claim key of one run: the natural key of its row (default parameters)."""
    return json.dumps(["run", kernel, defines, elf_hash, dpus, tasklets, size, config_hash])


@dataclass
class KernelPlan:
    """One kernel's part of a dataset: define settings by their key (the overrides of the
    workload's defines), the (DPUs, size) points of each (defines key, tasklets), and how many
    grid points were skipped for which reason."""

    kernel: Kernel
    settings: dict[str, tuple[tuple[str, DefineValue], ...]]
    points: dict[tuple[str, int], list[tuple[int, int]]]
    invalid: dict[str, int]


def pipeline_texts(spec: DatasetSpec) -> list[str]:
    """The pipelines of ``spec``: the L2P set, then the knob pipelines when asked for."""
    pipelines = [p.text for p in pipeline_set(spec.pipelines, spec.seed, spec.length)]
    return pipelines + ([p.text for p in knob_pipelines()] if spec.knobs else [])


def plan_kernel(spec: DatasetSpec, name: str) -> KernelPlan:
    """What ``spec`` asks of one kernel: its define settings and the valid grid points of each
    (define setting, tasklet count), with the number of points skipped per reason."""
    kernel = find_kernel(name)
    workload = kernel.workload
    sizes = [size for token in spec.sizes for size in (
        size_ladder(kernel, int(token[len(LADDER):])) if str(token).startswith(LADDER) else [token])]
    default = workload.size_of("default") if spec.per_dpu_limit else 0
    settings, points, invalid = {}, {}, {}
    for overrides in define_settings(workload, spec.define_values):
        key = defines_key(workload.resolve_defines(overrides))
        settings[key] = tuple(overrides.items())
        for point in config_grid(kernel, list(spec.dpus), list(spec.tasklets), sizes,
                                 spec.tasklets_at_least_dpus, overrides):
            c = point.config
            reason = point.reason
            if not reason and default and c.size / c.dpus > spec.per_dpu_limit * default:
                reason = f"a DPU's share of the input above {spec.per_dpu_limit:g} of the default size"
            if reason:
                invalid[reason] = invalid.get(reason, 0) + 1
            else:
                points.setdefault((key, c.tasklets), []).append((c.dpus, c.size))
    return KernelPlan(kernel, settings, points, invalid)


def sampling_error(spec: DatasetSpec, plan: KernelPlan, store: Store | None = None,
                   binaries: frozenset[str] = frozenset()) -> float | None:
    """The relative kernel-time error of a sampled run against the full run of the same binary
    (O2, the workload's own defines) at the most DPUs the plan samples, the middle of their sizes
    (the upper one of two) and the most tasklets there; None when the plan samples nothing or the
    check could not run. Sampling reads zeros where an unsimulated DPU's output would be: a host
    that feeds DPU outputs back (bfs's frontier, a training loop's gradients) changes what the
    sampled DPUs do, the more so the more DPUs and iterations (lorq: 0.02 % on 16 DPUs at its
    small size, 4.9 % on 64 at its default). With a `store`, the full run (every DPU simulated, the
    costly one) is looked up there first, and recorded there once run when its binary is one of
    the store's compiles (`binaries`: then it is a verified sample like any other): a resumed
    generation repeats only the sampled run (two DPUs), which is never recorded (it would enter
    the training view for a kernel whose sampling is off)."""
    default_key = next(iter(plan.settings))
    points = [(dpus, size, tasklets) for (key, tasklets), pts in plan.points.items() if key == default_key
              for dpus, size in pts if spec.sampled_from is not None and dpus >= spec.sampled_from]
    if not points:
        return None
    dpus = max(d for d, _, _ in points)
    sizes = sorted({s for d, s, _ in points if d == dpus})
    size = sizes[len(sizes) // 2]
    tasklets = max(t for d, s, t in points if (d, s) == (dpus, size))
    root = str(plan.kernel.root)
    rec = compile_job(CompileJob(root, "O2", (tasklets,)))[0].record
    if not rec.ok:
        return None
    full_hash = DpuConfig.named(spec.sim_config).hash
    seconds = []
    for device in ("sim", SAMPLED):
        recorded = device == "sim" and store is not None and rec.elf_hash in binaries
        run = store.find_run(rec.kernel, rec.defines, rec.elf_hash, dpus, tasklets, size, full_hash) \
            if recorded else None
        if run is None or run.status is not Status.OK:
            run = run_job(RunJob(root, "O2", tasklets, rec.elf_hash, ((dpus, size),), spec.sim_config,
                                 spec.budget, spec.input_seed, device=device))[0]
            if recorded:
                store.record_run(run)
        if run.status is not Status.OK:
            return None
        seconds.append(run.kernel_seconds)
    return abs(seconds[1] - seconds[0]) / seconds[0]


def drop_inexact_sampling(spec: DatasetSpec, plan: KernelPlan, error: float | None) -> dict[str, int]:
    """Skip a kernel's points from ``spec.sampled_from`` DPUs on unless its sampled runs were
    checked to match full runs (``sampling_error`` within ``SAMPLING_TOLERANCE``; a full run
    there costs every DPU's work, the reason to sample); the points skipped, by reason, also
    added to ``plan.invalid``."""
    if spec.sampled_from is None or (error is not None and error <= SAMPLING_TOLERANCE):
        return {}
    reason = (f"{plan.kernel.name}: sampled runs unchecked" if error is None else
              f"{plan.kernel.name}: sampled runs off by {100 * error:.1f} % (> {100 * SAMPLING_TOLERANCE:g} %)")
    skipped = 0
    for group, points in list(plan.points.items()):
        keep = [(d, s) for d, s in points if d < spec.sampled_from]
        skipped += len(points) - len(keep)
        if keep:
            plan.points[group] = keep
        else:
            del plan.points[group]
    if not skipped:
        return {}
    plan.invalid[reason] = plan.invalid.get(reason, 0) + skipped
    return {reason: skipped}


@dataclass(frozen=True)
class _CompileWork:
    """The tasklet counts (parts) of one kernel x pipeline x define setting still to compile: one
    compile job."""

    plan: KernelPlan
    pipeline: str
    defines: str
    parts: tuple[int, ...]

    def unit(self, tasklets: int) -> str:
        return compile_unit(self.plan.kernel.name, self.pipeline, self.defines, tasklets)

    def recorded(self, store: Store, tasklets: int) -> CompileRecord | None:
        return store.find_compile(self.plan.kernel.name, self.pipeline, self.defines, tasklets)

    def job(self, parts: tuple[int, ...], spec: DatasetSpec) -> tuple[Callable, CompileJob]:
        return compile_job, CompileJob(str(self.plan.kernel.root), self.pipeline, parts,
                                       self.plan.settings[self.defines])


@dataclass(frozen=True)
class _RunWork:
    """The (DPUs, size) points (parts) of one binary still to simulate on one device: one run job."""

    plan: KernelPlan
    compile: CompileRecord
    config_hash: str
    parts: tuple[tuple[int, int], ...]
    device: str = "sim"

    def unit(self, point: tuple[int, int]) -> str:
        c = self.compile
        return run_unit(c.kernel, c.defines, c.elf_hash, point[0], c.tasklets, point[1], self.config_hash)

    def recorded(self, store: Store, point: tuple[int, int]) -> RunRecord | None:
        c = self.compile
        return store.find_run(c.kernel, c.defines, c.elf_hash, point[0], c.tasklets, point[1], self.config_hash)

    def job(self, parts: tuple[tuple[int, int], ...], spec: DatasetSpec) -> tuple[Callable, RunJob]:
        c = self.compile
        return run_job, RunJob(str(self.plan.kernel.root), c.pipeline, c.tasklets, c.elf_hash, parts,
                               spec.sim_config, spec.budget, spec.input_seed,
                               self.plan.settings[c.defines], device=self.device)


class _Heartbeat:
    """Renews an owner's claims every third of their lease, on a thread with its own connection."""

    def __init__(self, path: Path, owner: ClaimOwner, lease: float):
        self.path, self.owner, self.lease = path, owner, lease
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, name="claims-heartbeat", daemon=True)

    def __enter__(self) -> _Heartbeat:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()

    def _beat(self) -> None:
        with Store(self.path) as store:
            while not self._stop.wait(self.lease / 3):
                try:
                    store.renew(self.owner, self.lease)
                except sqlite3.OperationalError:  # locked past the timeout: the next beat retries
                    pass


# ------------------------------------------------------------------------------ coordinator

_Work = _CompileWork | _RunWork


class _Coordinator:
    """Plans work from what the store lacks, claims and dispatches it, records results in batches."""

    def __init__(self, spec: DatasetSpec, store: Store, executor: Executor,
                 progress: Callable[[str, int, int], None] | None, commit_seconds: float,
                 lease: float):
        self.spec, self.store, self.executor = spec, store, executor
        self.progress = progress or (lambda *_: None)
        self.commit_seconds = commit_seconds
        self.owner, self.lease = ClaimOwner.this_process(), lease
        self.window = 2 * executor.workers  # jobs in flight; the rest stays claimable by others
        self.queue: deque[_Work] = deque()
        self.deferred: list[_Work] = []  # units another live generator holds
        self.claimed: dict[object, list[str]] = {}  # job in flight -> its units
        self.released: list[str] = []  # units of the pending records
        self.config_hash = DpuConfig.named(spec.sim_config).hash
        self.sampled_hash = sampled_config_hash(self.config_hash)
        self.schema_hash = model_schema().hash
        self.invalid: dict[str, int] = {}
        self.plans = {plan.kernel.name: plan for plan in map(self._plan, spec.kernels)}
        self.report = GenerationReport(list(self.plans), executor.description)
        self.done_runs = {**store.run_keys(self.config_hash), **store.run_keys(self.sampled_hash)}
        self.featured = store.featured(self.schema_hash)  # binaries with features recorded
        self.featuring: set[str] = set()  # binaries compiled again for their features
        self.simulated: set[tuple[str, str, str]] = set()  # (kernel, defines, ELF) recorded or dispatched
        self.pending: list[object] = []  # records not yet committed

    def _plan(self, name: str) -> KernelPlan:
        plan = plan_kernel(self.spec, name)
        for reason, count in plan.invalid.items():
            self.invalid[reason] = self.invalid.get(reason, 0) + count
        return plan

    def _finished(self, status: Status) -> bool:
        return status is Status.OK or not self.spec.retry_failed

    def _compiled(self, rec: CompileRecord | None) -> bool:
        """Whether a recorded compile needs no redo: finished, and a usable binary has features
        under the current schema."""
        if rec is None or not self._finished(rec.status):
            return False
        if not rec.ok or rec.elf_hash in self.featured:
            return True
        if self.store.features(rec.elf_hash, self.schema_hash) is not None:
            self.featured.add(rec.elf_hash)
            return True
        return False

    def _done(self, rec: CompileRecord | RunRecord | None) -> bool:
        if isinstance(rec, CompileRecord):
            return self._compiled(rec)
        return rec is not None and self._finished(rec.status)

    def run(self) -> GenerationReport:
        start = time.time()
        self.report.invalid_points = self.invalid
        self.generation = self.store.start_generation(self.spec.to_dict(), self.executor.description,
                                                      self.executor.workers, start)
        pipelines = pipeline_texts(self.spec)
        recorded = {(c.kernel, c.pipeline, c.defines, c.tasklets): c for c in self.store.compiles()}
        if self.spec.sampled_from is not None:
            binaries = frozenset(c.elf_hash for c in recorded.values() if c.elf_hash)
            for name, plan in self.plans.items():
                self.report.sampling_error[name] = error = sampling_error(self.spec, plan, self.store, binaries)
                for reason, count in drop_inexact_sampling(self.spec, plan, error).items():
                    self.invalid[reason] = self.invalid.get(reason, 0) + count
        for plan in self.plans.values():
            for key in plan.settings:
                tasklet_counts = sorted(t for k, t in plan.points if k == key)
                for text in pipelines:
                    todo = []
                    for tasklets in tasklet_counts:
                        rec = recorded.get((plan.kernel.name, text, key, tasklets))
                        if self._compiled(rec) or (rec is not None and rec.elf_hash in self.featuring):
                            self._schedule_runs(plan, rec)
                        else:
                            if rec is not None and rec.ok and self._finished(rec.status):
                                self.featuring.add(rec.elf_hash)  # compiled again, once per binary
                            todo.append(tasklets)
                    if todo:
                        self._enqueue(_CompileWork(plan, text, key, tuple(todo)))
        with _Heartbeat(self.store.path, self.owner, self.lease):
            self._fill()
            self._tick()
            last_commit = time.monotonic()
            while True:
                for outcome in self.executor.results():
                    self._take(outcome)
                    self._fill()
                    self._tick()
                    if time.monotonic() - last_commit >= self.commit_seconds:
                        self._commit(start)
                        last_commit = time.monotonic()
                if not self._retry_deferred():
                    break
            self._commit(start, finished=True)
        self.report.left_to_others += sum(len(work.parts) for work in self.deferred)
        self.report.seconds = time.time() - start
        return self.report

    def _enqueue(self, work: _Work) -> None:
        self.queue.append(work)
        self._count_planned(work, len(work.parts))

    def _count_planned(self, work: _Work, units: int) -> None:
        if isinstance(work, _CompileWork):
            self.report.compiles_planned += units
        else:
            self.report.runs_planned += units

    def _fill(self) -> int:
        """Claim and dispatch queued work until the window is full; returns the jobs dispatched."""
        dispatched = 0
        while self.queue and len(self.claimed) < self.window:
            dispatched += self._dispatch(self.queue.popleft())
        return dispatched

    def _dispatch(self, work: _Work) -> bool:
        """Submit a job for the units of `work` no other generator did or holds (claiming them)."""
        with self.store.batch():  # the check and the claim see the same store
            free = []
            for part in work.parts:
                rec = work.recorded(self.store, part)
                if self._done(rec):  # another generator did it
                    self.report.left_to_others += 1
                    if isinstance(rec, CompileRecord):
                        self._schedule_runs(work.plan, rec)
                else:
                    free.append(part)
            mine = set(self.store.claim([work.unit(p) for p in free], self.owner, self.lease))
        parts = tuple(p for p in free if work.unit(p) in mine)
        held = tuple(p for p in free if work.unit(p) not in mine)
        if held:
            self.deferred.append(replace(work, parts=held))
        self._count_planned(work, len(parts) - len(work.parts))
        if not parts:
            return False
        fn, job = work.job(parts, self.spec)
        self.executor.submit(fn, job)
        self.claimed[job] = [work.unit(p) for p in parts]
        return True

    def _retry_deferred(self) -> bool:
        """Our queue is done: claim again what others held (a dead one's units); False if none."""
        retry, self.deferred = self.deferred, []
        for work in retry:
            self._enqueue(work)
        return self._fill() > 0

    def _schedule_runs(self, plan: KernelPlan, rec: CompileRecord) -> None:
        if not rec.ok:
            return
        points = plan.points.get((rec.defines, rec.tasklets), [])
        self.report.sample_points += len(points)
        if (rec.kernel, rec.defines, rec.elf_hash) in self.simulated:
            return
        self.simulated.add((rec.kernel, rec.defines, rec.elf_hash))
        self.report.distinct_points += len(points)
        full, sampled = [], []
        for dpus, size in points:
            status = self.done_runs.get((rec.kernel, rec.defines, rec.elf_hash, dpus, rec.tasklets, size))
            if status is None or not self._finished(status):
                sampling = self.spec.sampled_from is not None and dpus >= self.spec.sampled_from
                (sampled if sampling else full).append((dpus, size))
        if full:
            self._enqueue(_RunWork(plan, rec, self.config_hash, tuple(full)))
        if sampled:
            self._enqueue(_RunWork(plan, rec, self.sampled_hash, tuple(sampled), SAMPLED))

    def _take(self, outcome: Outcome) -> None:
        job = outcome.arg
        self.released += self.claimed.pop(job)
        if not outcome.ok:
            self.report.task_failures.append(f"{type(job).__name__} {job}: {outcome.error}")
            if isinstance(job, CompileJob):  # the worker died: record each variant as failed
                kernel = kernel_of(job.kernel_dir)
                key = defines_key(kernel.workload.resolve_defines(dict(job.defines)))
                results = [CompileResult(CompileRecord(kernel.name, job.pipeline, key, t, None,
                                                       Status.ERROR, outcome.error), None)
                           for t in job.tasklets]
            else:
                results = [RunRecord(elf_hash=job.elf_hash, dpus=d, tasklets=job.tasklets, size=s, config_hash="",
                                     status=Status.ERROR, error=outcome.error, device=job.device, **run_host(job))
                           for d, s in job.points]
        else:
            results = outcome.value
        if isinstance(job, RunJob):  # a sampled run is recorded under its own key
            key = self.sampled_hash if job.device == SAMPLED else self.config_hash
            results = [replace(r, config_hash=key) for r in results]
        for item in results:
            self.pending.append(item)
            if isinstance(item, CompileResult):
                rec = item.record
                self.report.compiles_done += 1
                _count(self.report.compile_status, rec.status)
                if item.features is not None:
                    self.featured.add(rec.elf_hash)
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
            self.store.release(self.owner, self.released)
            self.store.update_generation(self.generation, time.time() - start,
                                         self.report.compiles_done, self.report.runs_done, finished)
        self.pending.clear()
        self.released.clear()


def _count(counter: dict[str, int], status: Status) -> None:
    counter[status.value] = counter.get(status.value, 0) + 1


def generate(spec: DatasetSpec, store: Store, executor: Executor,
             progress: Callable[[str, int, int], None] | None = None,
             commit_seconds: float = 0.5, lease: float = LEASE_SECONDS) -> GenerationReport:
    """Generate (or complete) the dataset `spec` into `store`; skips what is already recorded.

    `progress(phase, done, total)` is called as work completes ('compile', 'simulate'; the
    simulate total grows as new distinct binaries appear, and shrinks by the units another
    generator on the store takes). Claims are renewed for `lease` seconds at a time.
    """
    return _Coordinator(spec, store, executor, progress, commit_seconds, lease).run()
