"""The build role of a tune: compile pipelines at tasklet counts (with the space's base defines
updated by a build's tuned defines) in worker processes, read each binary's features, and turn
distinct (binary, DPUs) pairs into candidates."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from cnmtune.errors import CnmtuneError
from cnmtune.plugin.jobs import CompileJob, CompileResult, compile_job
from cnmtune.plugin.tune.report import Candidate
from cnmtune.plugin.tune.space import Defines, Grid, Space
from cnmtune.runtime.executor import Executor
from cnmtune.runtime.kernel import Kernel


@dataclass(frozen=True)
class BuildRequest:
    """One pipeline at some tasklet counts, with tuned defines over the space's base."""

    pipeline: str
    tasklets: tuple[int, ...]
    tuned: Defines = ()


@dataclass(frozen=True)
class Built:
    """The usable binaries in request order (pipeline, then tasklets) with the tuned defines each
    was built with, failures (and the first one's error) and where time went."""

    results: tuple[tuple[Defines, CompileResult], ...]
    failures: int
    compile_s: float
    features_s: float
    first_failure: str = ""


def build(kernel: Kernel, space: Space, executor: Executor, progress: Callable[[str, int, int | None], None],
          on_compiled: Callable[[list[CompileResult]], None],
          requests: Sequence[BuildRequest] | None = None) -> Built:
    """Compile `requests` (default: every pipeline of the space at its base grid's tasklet counts);
    `on_compiled` sees every result, failures included."""
    if requests is None:
        requests = [BuildRequest(text, space.tasklets) for text in space.pipelines]
    start = time.perf_counter()
    jobs = {}
    for request in requests:
        job = CompileJob(str(kernel.root), request.pipeline, request.tasklets, space.build_defines(request.tuned))
        jobs[job] = request
        executor.submit(compile_job, job)
    progress("compile", 0, len(requests))
    results: list[tuple[Defines, CompileResult]] = []
    for done, outcome in enumerate(executor.results(), 1):
        if outcome.ok:
            results.extend((jobs[outcome.arg].tuned, r) for r in outcome.value)
        progress("compile", done, len(requests))
    order = {(r.pipeline, r.tuned): i for i, r in enumerate(requests)}
    results.sort(key=lambda item: (order[(item[1].record.pipeline, item[0])], item[1].record.tasklets))
    on_compiled([r for _, r in results])
    wall = time.perf_counter() - start
    # features are read on the workers: their share of the wall time, at most all of it
    features = min(sum(r.feature_seconds for _, r in results) / max(1, executor.workers), wall)
    usable = tuple((tuned, r) for tuned, r in results if r.record.ok)
    failed = next((r.record.error for _, r in results if not r.record.ok), "")
    return Built(usable, len(results) - len(usable), wall - features, features, first_error(failed))


def first_error(error: str) -> str:
    """A failure in one line: its first line, with the compiler's first 'file:line: error:' line."""
    head, *rest = error.splitlines() or [""]
    found = next((line.strip() for line in rest if "error:" in line), None)
    return f"{head}: {found}" if found else head


@dataclass(frozen=True)
class Candidates:
    """Every distinct (binary, DPUs) candidate with its features."""

    candidates: list[Candidate]
    features: list[dict[str, float]]


def candidates_of(kernel: Kernel, built: Built, space: Space, grids: dict[Defines, Grid] | None = None) -> Candidates:
    """One candidate per distinct (ELF, DPUs) on the grid of its defines (`grids`, default: the
    space's base grid for untuned builds): pipelines giving the same binary share it."""
    grids = grids or {(): space.grid}
    by_binary: dict[tuple[str, int], Candidate] = {}
    features: list[dict[str, float]] = []
    for tuned, result in built.results:
        rec = result.record
        for dpus in grids[tuned].dpus(rec.tasklets):
            key = (rec.elf_hash, dpus)
            if key in by_binary:
                by_binary[key].pipelines.append(rec.pipeline)
                continue
            by_binary[key] = Candidate([rec.pipeline], rec.tasklets, dpus, rec.elf_hash, defines=tuned)
            features.append(result.features)
    if not by_binary:
        raise CnmtuneError(f"{kernel.name}: no pipeline compiled ({built.failures} compiles failed); "
                           f"the first: {built.first_failure}")
    return Candidates(list(by_binary.values()), features)
