"""`cnmtune tune KERNEL`: the autotuner on the command line (see cnmtune.plugin.tune.tuner)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from cnmtune.errors import CnmtuneError
from cnmtune.plugin.cli.options import int_list, size_value
from cnmtune.plugin.cli.output import console, emit_json, err_console
from cnmtune.plugin.tune import Candidate, TuneReport, TuneSpec, tune
from cnmtune.plugin.tune.space import DEFAULT_PIPELINE
from cnmtune.runtime.executor import make_executor
from cnmtune.store import Store


def tune_command(
    kernel: str = typer.Argument(..., help="kernel name (see `cnmtune kernels`) or directory"),
    size: str = typer.Option("default", "--size", "-s", help="problem size, or a preset: small, default, large"),
    pipelines: int = typer.Option(200, "--pipelines", help="pipelines: O0..O3 + seeded random sequences"),
    seed: int = typer.Option(0, "--seed", help="seed of the random pass sequences"),
    dpus: str = typer.Option("1,2,4,8,16", "--dpus", help="DPU counts to consider"),
    tasklets: str = typer.Option("1,2,4,8,16", "--tasklets", help="tasklet counts to consider"),
    top_k: int = typer.Option(10, "--top-k", "-k", help="candidates to execute"),
    budget_s: Optional[float] = typer.Option(None, "--budget-s", help="stop executing candidates after this long"),
    device: str = typer.Option("sim", "--device", help="where to execute: sim, upmem-sim or upmem-hw"),
    sdk_dir: Optional[Path] = typer.Option(None, "--sdk-dir", help="UPMEM SDK directory (upmem-* devices)"),
    model: Optional[Path] = typer.Option(None, "--model", help="cost model .onnx (default: the shipped model)"),
    finetune_samples: int = typer.Option(0, "--finetune-samples", min=0,
                                         help="first run N candidates and fine-tune the model on them "
                                              "(needs the model's .pt checkpoint beside it)"),
    exhaustive: bool = typer.Option(False, "--exhaustive", help="also run every candidate; report the regret"),
    db: Optional[Path] = typer.Option(None, "--db", help="record everything here; reuse recorded runs"),
    workers: Optional[int] = typer.Option(None, "--workers", "-j", help="local worker processes (default: all cores)"),
    scheduler: Optional[str] = typer.Option(None, "--scheduler", help="Dask scheduler, e.g. tcp://HOST:8786"),
    as_json: bool = typer.Option(False, "--json", help="print the report as JSON"),
    save: bool = typer.Option(True, "--save/--no-save",
                              help="record the choice in the tuning cache, for cnmtune-cc (default: save)"),
) -> None:
    """Tune a kernel: compile pipelines x configs, score all statically, run the top-k, pick the best
    (never slower than the default build). Exits non-zero when no candidate verified."""
    for option, value in (("--pipelines", pipelines), ("--top-k", top_k), ("--workers", workers)):
        if value is not None and value < 1:
            raise CnmtuneError(f"{option} must be >= 1, got {value}")
    spec = TuneSpec(kernel=kernel, size=size_value(size), pipelines=pipelines, seed=seed,
                    dpus=int_list(dpus, "dpus"), tasklets=int_list(tasklets, "tasklets"), top_k=top_k,
                    model=str(model) if model else None,
                    exhaustive=exhaustive, budget_s=budget_s, device=device,
                    sdk_dir=str(sdk_dir) if sdk_dir else None, finetune_samples=finetune_samples)
    store = Store(db) if db is not None else None
    try:
        with make_executor(workers, scheduler) as executor, \
                Progress(TextColumn("{task.description:8}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                         console=err_console, transient=True) as bar:
            tasks: dict[str, int] = {}

            def progress(phase: str, done: int, total: int) -> None:
                if phase not in tasks:
                    tasks[phase] = bar.add_task(phase, total=total)
                bar.update(tasks[phase], completed=done, total=total)

            report = tune(spec, executor, store, progress)
    finally:
        if store is not None:
            store.close()
    if save:
        _save(spec, report)
    failed = report.chosen is None
    if not as_json:
        _print(report)
    elif not failed:  # a failed tune's JSON is its error line alone: one document on stdout
        emit_json(report.to_dict())
    if failed:
        raise CnmtuneError(f"{report.kernel}: no candidate verified; the first failure: "
                           f"{report.first_failure or 'none ran (time budget spent)'}")


def _save(spec: TuneSpec, report: TuneReport) -> None:
    """Record the tuned pipelines in the tuning cache (cnmtune-cc applies them) and say so."""
    from cnmtune.plugin.tune.cache import TuningCache, record_tune
    from cnmtune.runtime.registry import find_kernel
    from cnmtune.runtime.toolchain import ProxyToolchain

    if report.chosen is None:
        err_console.print("nothing recorded in the tuning cache: no verified variant", highlight=False)
        return
    cache = TuningCache()
    recorded = record_tune(cache, find_kernel(spec.kernel), spec, report, ProxyToolchain().identity)
    by_tasklets = {entry.tasklets: entry.pipeline for _, entry in recorded}
    shown = "; ".join(f"{t} tasklets: {pipeline}" for t, pipeline in sorted(by_tasklets.items()))
    # the default build is recorded too: a later cnmtune-cc build applies it instead of tuning again
    fastest = "the default build was fastest; " if report.chosen_is_default else ""
    err_console.print(f"tuning cache {cache.path}: {fastest}recorded {shown}", highlight=False, markup=False,
                      soft_wrap=True)


def _ms(seconds: float | None) -> str:
    return "-" if seconds is None else f"{1000 * seconds:.4f}"


def _print(report: TuneReport) -> None:
    table = Table(title=f"{report.kernel}, size {report.size:,}: top {len(report.top)} of {report.candidates} "
                        f"candidates ({report.variants} variants)")
    for column in ("#", "pipeline", "DPUs", "tasklets", "predicted ms", "measured ms", "vs default", "status"):
        table.add_column(column, justify="left" if column in ("pipeline", "status") else "right")
    base = report.default.measured_s if report.default else None
    for rank, c in enumerate(report.top, 1):
        vs = f"{base / c.measured_s:.2f}x" if base and c.measured_s else "-"
        mark = " *" if c is report.chosen else ""
        table.add_row(f"{rank}{mark}", _pipeline(c), str(c.dpus), str(c.tasklets), _ms(c.predicted_s),
                      _ms(c.measured_s), vs, c.status)
    console.print(table)
    summary = Table(show_header=False, title="result")
    default = report.default
    if report.chosen_is_default:
        summary.add_row("chosen", "the default build: nothing measured ran faster")
    elif report.chosen:
        summary.add_row("chosen (*)", f"{report.chosen.pipeline} on {report.chosen.dpus} DPUs x "
                                      f"{report.chosen.tasklets} tasklets: {_ms(report.chosen.measured_s)} ms")
    if default:
        summary.add_row(f"default ({DEFAULT_PIPELINE}, {default.tasklets} tasklets)",
                        f"{default.dpus} DPUs: {_ms(default.measured_s)} ms"
                        + ("" if default.status == "verified" else f" ({default.status.splitlines()[0]})"))
    if report.speedup_vs_default:
        summary.add_row("speedup over the default", f"{report.speedup_vs_default:.2f}x")
    if report.finetune:
        ft = report.finetune
        summary.add_row("fine-tuned on", f"{ft['samples']} measured candidates: MAPE on them "
                                         f"{ft['mape_before']:.1f} % -> {ft['mape_after']:.1f} %")
    summary.add_row("time spent (s)", ", ".join(f"{k} {v:.2f}" for k, v in report.seconds.items()))
    summary.add_row("runs", f"{report.executed} executed, {report.reused} reused from the store")
    if report.compile_failures:
        summary.add_row("compile failures", str(report.compile_failures))
    ex = report.exhaustive
    if ex:
        summary.add_row("exhaustive best", f"{ex['best']['pipeline']} on {ex['best']['dpus']} DPUs x "
                                           f"{ex['best']['tasklets']} tasklets: {_ms(ex['best']['measured_s'])} ms")
        summary.add_row("regret of the choice", f"{100 * ex['regret']:.2f} % (rank {ex['chosen_rank']} of "
                                                f"{ex['measured']})")
        summary.add_row("tuner vs exhaustive", f"{ex['tuner_seconds']:.1f} s vs {ex['exhaustive_seconds']:.1f} s "
                                               f"({ex['tuner_speedup']:.1f}x faster)")
        summary.add_row("model on all candidates", f"MAPE {ex['mape']:.1f} %, Kendall tau {ex['kendall_tau']:.2f}")
    console.print(summary)


def _pipeline(c: Candidate) -> str:
    text = c.pipeline if len(c.pipeline) <= 48 else c.pipeline[:45] + "..."
    return text + (f" (+{len(c.pipelines) - 1} same ELF)" if len(c.pipelines) > 1 else "")
