"""The build role of a tune: compile every pipeline of the space at every tasklet count (with the
space's defines) in worker processes, read each binary's features, and turn distinct (binary,
DPUs) pairs into candidates."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from cnmtune.errors import CnmtuneError
from cnmtune.plugin.jobs import CompileJob, CompileResult, compile_job
from cnmtune.plugin.tune.report import Candidate
from cnmtune.plugin.tune.space import DEFAULT_PIPELINE, Space
from cnmtune.runtime.executor import Executor
from cnmtune.runtime.kernel import Kernel


@dataclass(frozen=True)
class Built:
    """The usable binaries in space order (pipeline, then tasklets), failures (and the first
    one's error) and where time went."""

    results: tuple[CompileResult, ...]
    failures: int
    compile_s: float
    features_s: float
    first_failure: str = ""


def build(kernel: Kernel, space: Space, executor: Executor, progress: Callable[[str, int, int], None],
          on_compiled: Callable[[list[CompileResult]], None]) -> Built:
    """Compile the space; `on_compiled` sees every result, failures included."""
    start = time.perf_counter()
    for text in space.pipelines:
        executor.submit(compile_job, CompileJob(str(kernel.root), text, space.tasklets, space.defines))
    results: list[CompileResult] = []
    for done, outcome in enumerate(executor.results(), 1):
        if outcome.ok:
            results.extend(outcome.value)
        progress("compile", done, len(space.pipelines))
    order = {text: i for i, text in enumerate(space.pipelines)}
    results.sort(key=lambda r: (order[r.record.pipeline], r.record.tasklets))
    on_compiled(results)
    wall = time.perf_counter() - start
    # features are read on the workers: their share of the wall time, at most all of it
    features = min(sum(r.feature_seconds for r in results) / max(1, executor.workers), wall)
    usable = tuple(r for r in results if r.record.ok)
    failed = next((r.record.error for r in results if not r.record.ok), "")
    return Built(usable, len(results) - len(usable), wall - features, features, first_error(failed))


def first_error(error: str) -> str:
    """A failure in one line: its first line, with the compiler's first 'file:line: error:' line."""
    head, *rest = error.splitlines() or [""]
    found = next((line.strip() for line in rest if "error:" in line), None)
    return f"{head}: {found}" if found else head


@dataclass(frozen=True)
class Candidates:
    """Every distinct (binary, DPUs) candidate with its features, and the default build's binary."""

    candidates: list[Candidate]
    features: list[dict[str, float]]
    default_elf: str | None


def candidates_of(kernel: Kernel, built: Built, space: Space) -> Candidates:
    """One candidate per distinct (ELF, DPUs): pipelines giving the same binary share it."""
    by_binary: dict[tuple[str, int], Candidate] = {}
    features: list[dict[str, float]] = []
    for result in built.results:
        rec = result.record
        for dpus in space.dpus(rec.tasklets):
            key = (rec.elf_hash, dpus)
            if key in by_binary:
                by_binary[key].pipelines.append(rec.pipeline)
                continue
            by_binary[key] = Candidate([rec.pipeline], rec.tasklets, dpus, rec.elf_hash)
            features.append(result.features)
    if not by_binary:
        raise CnmtuneError(f"{kernel.name}: no pipeline compiled ({built.failures} compiles failed); "
                           f"the first: {built.first_failure}")
    default_elf = next((r.record.elf_hash for r in built.results if r.record.pipeline == DEFAULT_PIPELINE
                        and r.record.tasklets == space.default_tasklets), None)
    return Candidates(list(by_binary.values()), features, default_elf)
