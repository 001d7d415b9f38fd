"""The measure role of a tune: run candidates on the target, verified, and note their times.

Targets whose runs are pure (the simulator: ``exclusive`` False) run in worker processes, all
at once unless a time budget asks for one batch per worker at a time, and a run the store
already holds is re-used instead. On the simulator a run may also be a screening run
(``device='sim-sampled'``): only the first and the last DPU execute, a fraction of the full
run's work on many DPUs, and the outputs cannot be verified (status 'screened'). Exclusive targets (UPMEM hardware or the SDK simulator) run
one candidate at a time in this process, rebuilt with the target's own toolchain. Every run is
built with the space's base defines updated by the candidate's tuned ones and given the
workload parameters.
"""

from __future__ import annotations

import abc
import time
from collections.abc import Callable, Sequence

from cnmtune.errors import CnmtuneError
from cnmtune.plugin.jobs import RunJob, run_host, run_job
from cnmtune.plugin.tune.record import MeasureCallback
from cnmtune.plugin.tune.report import Candidate
from cnmtune.plugin.tune.space import Space
from cnmtune.runtime.executor import Executor
from cnmtune.runtime.kernel import Kernel
from cnmtune.runtime.target import Target
from cnmtune.runtime.toolchain import Variant
from cnmtune.store import RunRecord, Status, Store

Progress = Callable[[str, int, int | None], None]


class Measurer(abc.ABC):
    """Runs candidates of one kernel at one size in one space; counts what it executed and re-used."""

    def __init__(self, kernel: Kernel, size: int, space: Space, progress: Progress):
        self.kernel, self.size, self.space, self.progress = kernel, size, space, progress
        self.executed = self.reused = 0

    @abc.abstractmethod
    def measure(self, candidates: Sequence[Candidate], budget_s: float | None) -> None:
        """Run `candidates` in order until `budget_s` seconds are spent; set their time or status."""


class PooledMeasurer(Measurer):
    """Simulator runs in worker processes, re-using and recording runs in the store."""

    def __init__(self, kernel: Kernel, size: int, space: Space, progress: Progress, target: Target,
                 executor: Executor, store: Store | None, callbacks: Sequence[MeasureCallback], sim_config: str,
                 budget: int, device: str = "sim"):
        super().__init__(kernel, size, space, progress)
        self.target, self.executor, self.store, self.callbacks = target, executor, store, callbacks
        self.sim_config, self.budget, self.device = sim_config, budget, device

    def measure(self, candidates: Sequence[Candidate], budget_s: float | None) -> None:
        start = time.perf_counter()
        todo = [c for c in candidates if not self._reuse(c)]
        if todo:
            self.progress("run", 0, len(todo))
        # with a budget, one run per worker at a time, so the budget is checked between runs;
        # without one, everything is queued at once and the workers never wait for each other
        window = max(1, self.executor.workers) if budget_s is not None else max(1, len(todo))
        done = 0
        for first in range(0, len(todo), window):
            if budget_s is not None and time.perf_counter() - start > budget_s:
                for c in todo[first:]:
                    c.status = "skipped: time budget spent"
                break
            done = self._run_group(todo[first:first + window], done, len(todo))

    def _reuse(self, c: Candidate) -> bool:
        if self.store is None:
            return False
        host = run_host(self._job(c))
        rec = self.store.find_run(host["kernel"], host["defines"], c.elf_hash, c.dpus, c.tasklets, self.size,
                                  self.target.config_hash, host["params"])
        if rec is None or (rec.transfer_seconds is not None and rec.link_hash != self.target.link_hash):
            return False  # never run, or its transfer time is another link model's
        take(c, rec)
        self.reused += 1
        return True

    def _job(self, c: Candidate) -> RunJob:
        return RunJob(str(self.kernel.root), c.pipeline, c.tasklets, c.elf_hash, ((c.dpus, self.size),),
                      self.sim_config, self.budget, 0, self.space.build_defines(c.defines), self.space.params,
                      self.device)

    def _run_group(self, group: list[Candidate], done: int, total: int) -> int:
        for c in group:
            self.executor.submit(run_job, self._job(c))
        by_key = {(c.elf_hash, c.dpus): c for c in group}
        records: list[RunRecord] = []
        for outcome in self.executor.results():
            job = outcome.arg
            if outcome.ok:
                for rec in outcome.value:
                    take(by_key[(rec.elf_hash, rec.dpus)], rec)
                records.extend(outcome.value)
            else:
                by_key[(job.elf_hash, job.points[0][0])].status = f"error: {outcome.error}"
            self.executed += 1
            done += 1
            if len(records) >= 64:  # a long exhaustive run keeps its runs
                self._recorded(records)
                records = []
            self.progress("run", done, total)
        self._recorded(records)
        return done

    def _recorded(self, records: list[RunRecord]) -> None:
        for callback in self.callbacks:
            callback.measured(records)


class InProcessMeasurer(Measurer):
    """One candidate at a time on an exclusive target, rebuilt with the target's toolchain."""

    def __init__(self, kernel: Kernel, size: int, space: Space, progress: Progress, target: Target):
        super().__init__(kernel, size, space, progress)
        self.target = target

    def measure(self, candidates: Sequence[Candidate], budget_s: float | None) -> None:
        start = time.perf_counter()
        self.progress("run", 0, len(candidates))
        for done, c in enumerate(candidates, 1):
            if budget_s is not None and time.perf_counter() - start > budget_s:
                c.status = "skipped: time budget spent"
                continue
            try:
                variant = Variant.of(self.kernel, c.pipeline, c.tasklets, dict(self.space.build_defines(c.defines)))
                result = self.target.run(variant, c.dpus, self.size, params=dict(self.space.params))
                c.measured_s, c.transfer_s, c.status = result.kernel_s, result.transfer_s, "verified"
            except CnmtuneError as exc:
                c.status = f"error: {exc}"
            self.executed += 1
            self.progress("run", done, len(candidates))


def take(c: Candidate, rec: RunRecord) -> None:
    """Copy a run's outcome onto its candidate."""
    if rec.ok:
        c.measured_s, c.transfer_s, c.status = rec.kernel_seconds, rec.transfer_seconds, "verified"
    elif rec.status is Status.OK and rec.device == "sim-sampled":
        c.measured_s, c.transfer_s, c.status = rec.kernel_seconds, rec.transfer_seconds, "screened"
    else:
        c.status = f"{rec.status.value}: {rec.error}"
