"""`cnmtune tune --app DIR --run ARGS`: tune the DPU program of an unmodified UPMEM application.

The application's Makefile decides how its DPU program is built: `make -n -B` prints the command
lines that build it, those calling dpu-upmem-dpurte-clang (cnmtune-cc; AppProject.plan). Every candidate pipeline
(the O levels, seeded random sequences, the unroll-knob pipelines) reruns exactly those lines
in-process with CNMTUNE_PIPELINE set; the cost model scores each candidate's ELF; the best
`top_k` are measured by running the application itself with ARGS, whose own check (exit status
0) verifies them and whose report gives their simulated kernel time. The default build (the
Makefile's own -O level) is measured first, and a candidate is chosen only when it is faster.
The choice is recorded in the tuning cache for the DPU sources and defines of those lines, so the
Makefile's next build picks it, and the DPU program is rebuilt with it.

The model's problem size is in each training kernel's own unit (va's vector elements, gemv's
matrix rows, ...), which an application does not declare, and no byte count measures it: the
bytes sent to the DPUs or read by their DMA count every array (twice PrIM VA's elements). So the
size given to the model is the one at which it predicts the default build's measured kernel time
(PrIM VA, 262,144 elements on 4 DPUs: 277k; told the words sent, 524k, the shipped model predicted
1.6-1.9x the measured times of the other candidates, told 277k 0.99-1.12x); when no size does,
the 32-bit words sent to the DPUs stand in, and the report says so.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import math
import os
import shlex
import shutil
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from cnmtune.errors import CnmtuneError
from cnmtune.plugin.app.project import AppError, AppProject, MakePlan, tail
from cnmtune.plugin.cc.args import BuildFailed, Invocation, parse_args

@dataclass
class AppCandidate:
    """One pipeline's DPU program: predicted and, when run, measured kernel seconds."""

    pipeline: str
    predicted_s: float | None = None
    measured_s: float | None = None
    error: str = ""
    same_as: str = ""  # the earlier pipeline that built the same ELF (scored and run once, as that one)


@dataclass
class AppTuneReport:
    """What `tune_app` did: the default build's time, every candidate, the choice."""

    app: str
    args: list[str]
    nr_dpus: int
    tasklets: int
    default_s: float
    launches: int = 1  # DPU launches of one run of the default build (a cost-model input)
    model_size: int = 0  # the problem size the cost model is given
    model_size_from: str = ""  # how it was found
    candidates: list[AppCandidate] = field(default_factory=list)
    chosen: AppCandidate | None = None
    final_s: float | None = None
    recorded: list[str] = field(default_factory=list)

    @property
    def speedup(self) -> float:
        """Default build's kernel time over the chosen one's (1.0 when the default stays)."""
        return self.default_s / self.chosen.measured_s if self.chosen else 1.0

    def to_dict(self) -> dict:
        """The JSON form (`cnmtune tune --app --json`)."""
        return {"app": self.app, "args": self.args, "nr_dpus": self.nr_dpus, "tasklets": self.tasklets,
                "launches": self.launches, "model_size": self.model_size, "model_size_from": self.model_size_from,
                "default_s": self.default_s, "speedup": self.speedup,
                "final_s": self.final_s, "chosen": vars(self.chosen) if self.chosen else None,
                "recorded": self.recorded,
                "candidates": [vars(c) for c in self.candidates]}


def _set_env(name: str, value: str | None) -> None:
    if value is None:
        os.environ.pop(name, None)
    else:
        os.environ[name] = value


@contextlib.contextmanager
def _compiling(root: Path, pipeline: str | None) -> Iterator[io.StringIO]:
    """In `root`, with CNMTUNE_PIPELINE set (None: unset, the tuning cache decides); cnmtune-cc's notices captured."""
    saved_cwd, saved = Path.cwd(), os.environ.get("CNMTUNE_PIPELINE")
    notices = io.StringIO()
    try:
        os.chdir(root)
        _set_env("CNMTUNE_PIPELINE", pipeline)
        with contextlib.redirect_stderr(notices):
            yield notices
    finally:
        os.chdir(saved_cwd)
        _set_env("CNMTUNE_PIPELINE", saved)


def build_dpu_program(project: AppProject, lines: Sequence[Sequence[str]], pipeline: str | None) -> None:
    """Run the DPU build lines in-process with `pipeline` (cnmtune-cc's own driver); AppError on a failure."""
    from cnmtune.plugin.cc.driver import build

    with _compiling(project.root, pipeline) as notices:
        for argv in lines:
            try:
                build(parse_args(list(argv[1:])))
            except (BuildFailed, CnmtuneError) as exc:
                detail = getattr(exc, "diagnostics", "") or str(exc) or notices.getvalue()
                raise AppError(f"{shlex.join(argv)} with pipeline {pipeline}: {tail(detail, 600)}") from exc


def _invocations(project: AppProject, lines: Sequence[Sequence[str]]) -> list[Invocation]:
    with _compiling(project.root, None):  # paths on the lines are relative to the project
        return [parse_args(list(argv[1:])) for argv in lines]


def _measure(project: AppProject, args: Sequence[str], timeout_s: float | None) -> tuple[float | None, str]:
    """Run the application; its kernel seconds, or None and why it does not count."""
    try:
        run = project.run(args, timeout_s=timeout_s)
    except AppError as exc:
        return None, str(exc)
    if run.returncode != 0:
        last = (run.stdout + run.stderr).strip().splitlines()[-1:] or ["no output"]
        ended = f"killed by {run.killed_by}" if run.killed_by else f"exit {run.returncode}"
        return None, f"{ended}: {last[0]}"
    if not run.sets or not any(s.launches for s in run.sets):
        return None, "the application launched no DPU program"
    return run.kernel_s, ""


#: The sizes the cost model is tried at to match the default build's time: 2^0..2^36 in 1/16 octaves.
FIT_SIZES = tuple(sorted({round(2 ** (i / 16)) for i in range(36 * 16 + 1)}))


def _score(candidates: list[AppCandidate], elves: list[Path], default_elf: Path, model: str | None,
           report: AppTuneReport) -> None:
    """Set each candidate's predicted kernel time with the cost model (the tuner's scoring), at the
    size fitted on the default build (``report.model_size``; see the module docstring). An
    application's host declares no processed size (``Workload.processed_size``): its size is taken
    as processed."""
    from cnmtune.costmodel import model_features, model_schema
    from cnmtune.costmodel.learn.samples import input_matrix
    from cnmtune.plugin.tune.score import load_model

    schema = model_schema()
    path, cost_model = load_model(model, schema)

    def predict(features: list[dict[str, float]], sizes: Sequence[int]) -> Sequence[float]:
        n = len(features)
        X = input_matrix(features, [report.nr_dpus] * n, [report.tasklets] * n, sizes, sizes,
                         [report.launches] * n, schema)
        predicted = cost_model.predict(X).runtime_s
        if predicted is None:
            raise CnmtuneError(f"{path} predicts no runtime; the tuner ranks by predicted kernel time")
        return predicted

    default, *features = [dict(zip(schema.names, map(float, model_features(elf).vector(schema))))
                          for elf in (default_elf, *elves)]
    at_sizes = predict([default] * len(FIT_SIZES), FIT_SIZES)
    below = [p < report.default_s for p in at_sizes]
    crossings = [i for i in range(len(FIT_SIZES) - 1) if below[i] != below[i + 1]]
    if crossings:  # the one nearest the words sent, should the model not be monotone in size
        i = min(crossings, key=lambda i: abs(math.log(FIT_SIZES[i] / report.model_size)))
        (s0, s1), (t0, t1) = FIT_SIZES[i:i + 2], at_sizes[i:i + 2]  # between them: log-log interpolation
        report.model_size = round(s0 * (s1 / s0) ** (math.log(report.default_s / t0) / math.log(t1 / t0)))
        report.model_size_from = "fitted: the model predicts the default build's measured time there"
    else:
        report.model_size_from = ("an estimate, the 32-bit words sent to the DPUs: at no size does the model "
                                  "predict the default build's measured time")
    for candidate, value in zip(candidates, predict(features, [report.model_size] * len(features))):
        candidate.predicted_s = float(value)


def tune_app(project: AppProject, args: Sequence[str], variables: Mapping[str, str], pipelines: Sequence[str],
             top_k: int = 5, model: str | None = None, save: bool = True, timeout_s: float | None = None,
             progress: Callable[[str, int, int], None] = lambda phase, done, total: None) -> AppTuneReport:
    """Tune the DPU program of `project` run with `args` (see the module docstring)."""
    project.build(variables)
    plan = project.plan(variables)
    lines = plan.dpu_lines
    invocations = _invocations(project, lines)
    tasklets = int(invocations[-1].defines.get("NR_TASKLETS") or 1)
    default_level = _default_level(invocations)
    build_dpu_program(project, lines, default_level)  # the Makefile's -O level, whatever the tuning cache holds
    baseline = project.run(args, timeout_s=timeout_s)
    if baseline.returncode != 0 or not baseline.sets:
        raise AppError(f"the default build does not run: {' '.join(baseline.command)} exited {baseline.returncode}"
                       f"{'' if baseline.sets else ' without allocating DPUs'}: "
                       f"{tail(baseline.stdout + baseline.stderr, 400)}")
    nr_dpus = baseline.sets[0].nr_dpus
    # the words sent: where the size the model is given starts (see the module docstring)
    report = AppTuneReport(project.root.name, list(args), nr_dpus, tasklets, baseline.kernel_s,
                           sum(s.launches for s in baseline.sets),
                           max(1, sum(s.host_to_dpu_bytes for s in baseline.sets) // 4))
    try:
        measured = _search(project, plan, args, pipelines, report, top_k, model, timeout_s, progress)
    except BaseException:
        build_dpu_program(project, lines, default_level)  # leave the application as its Makefile builds it
        raise
    best = min(measured, key=lambda c: c.measured_s, default=None)
    report.chosen = best if best is not None and best.measured_s < report.default_s else None
    if report.chosen and save:
        report.recorded = _record(project, invocations, report)
    build_dpu_program(project, lines, None if report.recorded else default_level)
    report.final_s, _ = _measure(project, args, timeout_s)
    return report


def _search(project: AppProject, plan: MakePlan, args: Sequence[str], pipelines: Sequence[str], report: AppTuneReport,
            top_k: int, model: str | None, timeout_s: float | None,
            progress: Callable[[str, int, int], None]) -> list[AppCandidate]:
    """Build every pipeline (once per distinct ELF), score them, run the `top_k` best predicted; the
    candidates that ran and verified. Leaves a candidate's DPU program in place."""
    elf, lines = plan.dpu_binary, plan.dpu_lines
    with tempfile.TemporaryDirectory(prefix="cnmtune-app-tune-") as tmp:
        default_elf = Path(tmp) / "default.elf"
        shutil.copyfile(elf, default_elf)  # the default build, measured: the size the model is given is fitted on it
        built: list[tuple[AppCandidate, Path]] = []
        first_of: dict[str, AppCandidate] = {}  # ELF digest -> the first pipeline that built it
        for done, pipeline in enumerate(pipelines, 1):
            candidate = AppCandidate(pipeline)
            report.candidates.append(candidate)
            try:
                build_dpu_program(project, lines, pipeline)
            except AppError as exc:
                candidate.error = str(exc)
            else:
                digest = hashlib.sha256(elf.read_bytes()).hexdigest()
                if digest in first_of:
                    candidate.same_as = first_of[digest].pipeline
                else:
                    first_of[digest] = candidate
                    kept = Path(tmp) / f"{done}.elf"
                    shutil.copyfile(elf, kept)
                    built.append((candidate, kept))
            progress("compile", done, len(pipelines))
        if built:
            _score([c for c, _ in built], [p for _, p in built], default_elf, model, report)
        ranked = sorted(built, key=lambda item: item[0].predicted_s)[:top_k]
        for done, (candidate, kept) in enumerate(ranked, 1):
            shutil.copyfile(kept, elf)
            candidate.measured_s, candidate.error = _measure(project, args, timeout_s)
            progress("run", done, len(ranked))
    return [c for c, _ in ranked if c.measured_s is not None]


def _default_level(invocations: Sequence[Invocation]) -> str:
    return next((inv.level for inv in invocations if inv.level), "O2")


def _record(project: AppProject, invocations: Sequence[Invocation], report: AppTuneReport) -> list[str]:
    """Record the chosen pipeline for every DPU source of the build; the sources recorded."""
    from cnmtune.plugin.tune.cache import TunedEntry, TuningCache, key_for
    from cnmtune.runtime.toolchain import ProxyToolchain

    cache, chosen = TuningCache(), report.chosen
    identity = ProxyToolchain().identity
    recorded = []
    with _compiling(project.root, None):
        for inv in invocations:
            for source in inv.sources:
                key = key_for(source.path, inv.defines, "proxy", inv.include_dirs)
                cache.record(key, TunedEntry(chosen.pipeline, report.tasklets, report.nr_dpus, chosen.measured_s,
                                             chosen.predicted_s, report.speedup, kernel=report.app, source=source.path,
                                             toolchain_identity=identity,
                                             tuner={"app": str(project.root), "run": report.args}))
                recorded.append(source.path)
    return recorded
