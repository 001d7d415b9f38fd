"""`cnmtune dataset ...`: generate training data on the simulator, inspect and export it."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Optional

import typer
from rich.progress import (BarColumn, MofNCompleteColumn, Progress, ProgressColumn, TextColumn,
                           TimeElapsedColumn, TimeRemainingColumn)
from rich.text import Text

from cnmtune.display import Table
from cnmtune.plugin.dataset.generate import SAMPLING_TOLERANCE, DatasetSpec, GenerationReport, generate
from cnmtune.plugin.cli.options import int_list, size_value
from cnmtune.plugin.cli.output import ProgressLines, console, emit_json, err_console, note, warn
from cnmtune.runtime.executor import make_executor
from cnmtune.runtime.registry import expand_kernels
from cnmtune.runtime.sim.dpu import DEFAULT_BUDGET
from cnmtune.store import Store, StoreStats

dataset_app = typer.Typer(help="Generate, inspect and export L2P-style training datasets.",
                          no_args_is_help=True)


class _RateColumn(ProgressColumn):
    """Items per second of a progress task."""

    def render(self, task) -> Text:
        return Text(f"{task.speed:.1f}/s" if task.speed else "-/s", style="progress.data.speed")


@dataset_app.command("generate")
def generate_command(
    kernels: str = typer.Option(..., "--kernels", "-k",
                                help="comma-separated kernel names, directories or suites (prim, pim-ml)"),
    db: Path = typer.Option(..., "--db", help="SQLite store to create or complete"),
    pipelines: int = typer.Option(1004, "--pipelines", help="pipelines per kernel: O0..O3 + random sequences"),
    seed: int = typer.Option(0, "--seed", help="seed of the random pass sequences"),
    length: int = typer.Option(10, "--length", help="passes per random sequence; 0 = CompilerGym-style 1..40"),
    dpus: str = typer.Option("1,2,4,8,16", "--dpus", help="DPU counts of the grid"),
    tasklets: str = typer.Option("1,2,4,8,16", "--tasklets", help="tasklet counts of the grid"),
    sizes: str = typer.Option("default", "--sizes",
                              help="size presets, element counts or ladder:N (N log-spaced sizes, small to default), comma-separated"),
    knobs: bool = typer.Option(False, "--knobs/--no-knobs", help="add O2/O3 with LLVM's unroll knobs to the pipelines"),
    define_values: int = typer.Option(1, "--define-values", min=1,
                                      help="per tuned define (BL, ...): the default and up to N-1 other declared values"),
    l2p_rule: bool = typer.Option(True, "--l2p-rule/--any-tasklets", help="keep only tasklets >= DPUs (L2P's grid)"),
    per_dpu_limit: Optional[float] = typer.Option(None, "--per-dpu-limit",
                                                  help="skip points where a DPU gets more than this fraction of the default input"),
    sampled_from: Optional[int] = typer.Option(None, "--sampled-from",
                                               help="from this many DPUs on, simulate the first and the last DPU only"),
    sim_config: str = typer.Option("calibrated", "--sim-config", help="simulator timing: calibrated, literature"),
    budget: int = typer.Option(DEFAULT_BUDGET, "--budget", help="instructions per DPU and launch before a timeout"),
    workers: Optional[int] = typer.Option(None, "--workers", "-j", help="local worker processes (default: all cores)"),
    scheduler: Optional[str] = typer.Option(None, "--scheduler", help="Dask scheduler, e.g. tcp://HOST:8786"),
    retry_failed: bool = typer.Option(False, "--retry-failed", help="redo recorded failures (e.g. with a larger budget)"),
    as_json: bool = typer.Option(False, "--json", help="print the report as JSON"),
) -> None:
    """Compile every pipeline x tasklet count, simulate every distinct binary on the grid (resumable)."""
    spec = DatasetSpec(
        kernels=tuple(expand_kernels([k.strip() for k in kernels.split(",") if k.strip()])), pipelines=pipelines,
        seed=seed, length=length or None, dpus=int_list(dpus, "dpus"), tasklets=int_list(tasklets, "tasklets"),
        sizes=tuple(size_value(s) for s in sizes.split(",") if s.strip()), sim_config=sim_config,
        budget=budget, retry_failed=retry_failed, knobs=knobs, define_values=define_values,
        tasklets_at_least_dpus=l2p_rule, per_dpu_limit=per_dpu_limit, sampled_from=sampled_from)
    with Store(db) as store, make_executor(workers, scheduler) as executor:
        columns = (TextColumn("{task.description:9}"), BarColumn(), MofNCompleteColumn(),
                   _RateColumn(), TimeElapsedColumn(), TextColumn("eta"), TimeRemainingColumn())
        # one printer: bars on a terminal; elsewhere (a log file, a pipe) lines, as the bars would
        # only print their last state at the end, with a rate of their own
        with Progress(*columns, console=err_console, transient=as_json, disable=not err_console.is_terminal) as bar:
            tasks = {phase: bar.add_task(phase, total=None) for phase in ("compile", "simulate")}
            lines = ProgressLines(err_console)

            def progress(phase: str, done: int, total: int) -> None:
                bar.update(tasks[phase], completed=done, total=total)
                lines(phase, done, total)

            report = generate(spec, store, executor, progress)
    if as_json:
        emit_json(_report_dict(report))
    else:
        _print_report(report)


def _report_dict(report: GenerationReport) -> dict:
    record = {k: v for k, v in vars(report).items()}
    record["dedup_fraction"] = report.dedup_fraction
    return record


def _print_report(report: GenerationReport) -> None:
    table = Table(title=f"dataset generation on {report.executor}", show_header=False)
    rows = [
        ("kernels", ", ".join(report.kernels)),
        ("compiles (new / planned)", f"{report.compiles_done} / {report.compiles_planned}"),
        ("simulations (new / planned)", f"{report.runs_done} / {report.runs_planned}"),
        ("simulations saved by binary dedup", f"{100 * report.dedup_fraction:.1f} %"),
        ("compile outcomes", _counts(report.compile_status)),
        ("run outcomes", _counts(report.run_status)),
        ("grid points skipped", _by_rule(report.invalid_points) or "none"),
        *([("sampled-run error (checked)", _sampling(report.sampling_error))] if report.sampling_error else []),
        ("units left to another generator", str(report.left_to_others)),
        ("wall time", f"{report.seconds:.1f} s"),
    ]
    for label, value in rows:
        table.add_row(label, value)
    console.print(table)
    for failure in report.task_failures:
        warn(f"task failed: {failure}")


def _by_rule(reasons: dict[str, int]) -> str:
    """One line per rule, most points first: a reason that varies only in its numbers becomes one
    rule with them as N ('tasklets N < DPUs N'); a reason that occurs once keeps its numbers."""
    groups: dict[str, dict[str, int]] = {}
    for reason, count in reasons.items():
        groups.setdefault(re.sub(r"\b\d+\b", "N", reason), {})[reason] = count
    rules = {next(iter(g)) if len(g) == 1 else rule: sum(g.values()) for rule, g in groups.items()}
    return "\n".join(f"{count} x {rule}" for rule, count in sorted(rules.items(), key=lambda kv: (-kv[1], kv[0])))


def _sampling(errors: dict[str, float | None]) -> str:
    """Each kernel's sampled-run error, and whether its runs are sampled."""
    return ", ".join("{}: {}".format(k, "-" if e is None else
                                     f"{100 * e:.2f} %{'' if e <= SAMPLING_TOLERANCE else ' (not sampled)'}")
                     for k, e in errors.items())


def _counts(counter: dict[str, int]) -> str:
    return ", ".join(f"{k}: {v}" for k, v in sorted(counter.items()))


@dataset_app.command("retime")
def retime_command(
    kernels: str = typer.Option(..., "--kernels", "-k", help="comma-separated kernel names, directories or suites"),
    db: Path = typer.Option(..., "--db", help="SQLite store to create or complete"),
    designs: int = typer.Option(300, "--designs", help="random designs from the design space (a seeded stream)"),
    design_seed: int = typer.Option(0, "--design-seed", help="seed of the design sampler"),
    pipelines: str = typer.Option("O0,O2", "--pipelines", help="pipelines of the recorded variants"),
    tasklets: str = typer.Option("1,4,11,16", "--tasklets", help="tasklet counts of the recorded variants"),
    dpus: int = typer.Option(1, "--dpus", help="DPUs of each recorded run"),
    size: str = typer.Option("small", "--size", help="size preset of each recorded run"),
    traces: Optional[Path] = typer.Option(None, "--traces", help="trace store (default: DB's name + .traces)"),
    as_json: bool = typer.Option(False, "--json", help="print the report as JSON"),
) -> None:
    """PerfVec training data: record each variant once, re-time it exactly under every sampled
    design, into the store (resumable; more --designs later re-times only the new ones)."""
    from cnmtune.plugin.sweep.perfvec_data import RetimeSpec, generate_retimes

    spec = RetimeSpec(kernels=tuple(expand_kernels([k.strip() for k in kernels.split(",") if k.strip()])),
                      pipelines=tuple(p.strip() for p in pipelines.split(",") if p.strip()),
                      tasklets=int_list(tasklets, "tasklets"), dpus=dpus, size=size, designs=designs,
                      design_seed=design_seed)
    lines = ProgressLines(err_console)
    with Store(db) as store, Progress(TextColumn("{task.description:40}"), BarColumn(), MofNCompleteColumn(),
                                      TimeElapsedColumn(), console=err_console, transient=True,
                                      disable=not err_console.is_terminal) as bar:
        task = bar.add_task("variants", total=None)

        def progress(unit: str, done: int, total: int) -> None:
            bar.update(task, description=" ".join(unit.split("|")[:3]), completed=done, total=total)
            lines("variants", done, total)

        report = generate_retimes(store, spec, traces or db.with_name(db.name + ".traces"), progress=progress)
    if as_json:
        emit_json(vars(report))
        return
    table = Table(title=f"re-timings in {db}", show_header=False)
    for label, value in (("variants", report.units), ("recorded now", report.recorded), ("failed", report.failed),
                         ("re-timings added", report.retimed), ("of which not exact", report.invalid),
                         ("recording", f"{report.record_seconds:.1f} s"),
                         ("re-timing", f"{report.retime_seconds:.1f} s")):
        table.add_row(label, str(value))
    console.print(table)


@dataset_app.command("stats")
def stats_command(
    db: Path = typer.Argument(..., help="SQLite store"),
    as_json: bool = typer.Option(False, "--json", help="print JSON"),
) -> None:
    """Counts per kernel, validity breakdown, duplicate-binary ratio and generation speed."""
    _require(db)
    with Store(db) as store:
        stats = store.stats()
    if as_json:
        record = {k: v for k, v in vars(stats).items()}
        record.update(samples_per_second=stats.samples_per_second,
                      simulations_per_second=stats.simulations_per_second)
        emit_json(record)
        return
    _print_stats(db, stats)


def _print_stats(db: Path, stats: StoreStats) -> None:
    per_kernel = Table(title=f"{db}: per kernel")
    for column in ("kernel", "compiles", "runs"):
        per_kernel.add_column(column, justify="left" if column == "kernel" else "right")
    for kernel in sorted(set(stats.compiles_per_kernel) | set(stats.runs_per_kernel)):
        per_kernel.add_row(kernel, str(stats.compiles_per_kernel.get(kernel, 0)),
                           str(stats.runs_per_kernel.get(kernel, 0)))
    console.print(per_kernel)
    summary = Table(title="totals", show_header=False)
    for label, value in (
        ("pipelines", stats.pipelines), ("compiles", stats.compiles),
        ("distinct binaries", stats.distinct_elfs),
        ("duplicate-binary ratio", f"{100 * stats.duplicate_binary_ratio:.1f} %"),
        ("compile outcomes", _counts(stats.compile_status)),
        ("simulations", stats.runs), ("run outcomes", _counts(stats.run_status)),
        ("training samples", stats.samples),
        ("generation sessions", stats.generations),
        ("generation wall time", f"{stats.generation_seconds:.1f} s"),
        ("samples per second", f"{stats.samples_per_second:.2f}"),
        ("simulations per second", f"{stats.simulations_per_second:.2f}"),
    ):
        summary.add_row(label, str(value))
    console.print(summary)


@dataset_app.command("export")
def export_command(
    db: Path = typer.Argument(..., help="SQLite store"),
    output: Path = typer.Argument(..., help="a .parquet or .csv file"),
    table: str = typer.Option("training", "--table", help="training, compiles or runs"),
    with_features: bool = typer.Option(True, "--features/--no-features",
                                       help="training table: one column per feature"),
) -> None:
    """Write one table of the store to Parquet or CSV (atomically)."""
    from cnmtune import __version__
    from cnmtune.costmodel import model_schema

    _require(db)
    schema = model_schema()
    metadata = {"cnmtune.table": table, "cnmtune.version": __version__}
    if with_features and table == "training":
        metadata.update({"cnmtune.feature_schema": schema.version, "cnmtune.feature_schema_hash": schema.hash})
    with Store(db) as store:
        path = store.export(output, table, schema.hash if with_features else None, metadata)
    note(f"wrote {path}")


@dataset_app.command("import")
def import_command(
    files: list[Path] = typer.Argument(..., help="compiles or runs exports (.parquet or .csv)"),
    db: Path = typer.Option(..., "--db", help="SQLite store to create or add to"),
    as_json: bool = typer.Option(False, "--json", help="print the result as JSON"),
) -> None:
    """Add the compiles and runs another store exported (`export --table compiles|runs`): a
    generation goes on from them, compiling the binaries again for features, repeating no run."""
    from cnmtune.store_import import import_table

    with Store(db) as store:
        reports = [import_table(store, path) for path in files]
    if as_json:
        emit_json([{"file": str(r.path), "table": r.table, "added": r.added, "kept": r.kept} for r in reports])
        return
    table = Table(title=f"imported into {db}")
    for column in ("file", "table", "added", "kept (already in the store)"):
        table.add_column(column, justify="left" if column in ("file", "table") else "right")
    for r in reports:
        table.add_row(r.path.name, r.table, f"{r.added:,}", f"{r.kept:,}")
    console.print(table)


def _require(db: Path) -> None:
    from cnmtune.errors import StoreError

    if not db.is_file():
        raise StoreError(f"no store at {db}")
