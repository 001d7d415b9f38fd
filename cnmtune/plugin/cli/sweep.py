"""`cnmtune sweep KERNEL[,KERNEL...] --param NAME=V1,V2 ...`: design sweeps from stored traces."""

from __future__ import annotations

import io
import time
from pathlib import Path

import typer
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
)

from cnmtune.atomic import atomic_write
from cnmtune.display import Table
from cnmtune.errors import SweepError
from cnmtune.plugin.sweep.design import (
    PARAMETERS,
    CostExpression,
    design_points,
    parameter_help,
    parse_param,
)
from cnmtune.plugin.cli.options import DEFINES, kernel_size, parse_defines, parse_pipeline
from cnmtune.plugin.cli.output import console, emit_json, err_console, milliseconds, note
from cnmtune.costmodel.learn.perfvec_onnx import PerfVecScorer, perfvec_model_dir
from cnmtune.plugin.sweep.evaluate import KernelSweep, sweep_trace_set
from cnmtune.plugin.sweep.learned import LearnedSweep, learned_sweep
from cnmtune.runtime.sim.traces import MANIFEST, TraceSet, load_trace_set, obtain_trace_set
from cnmtune.runtime.registry import find_kernel
from cnmtune.runtime.sim.config import DpuConfig
from cnmtune.runtime.toolchain import ProxyToolchain, Variant
from cnmtune.wording import counted


def sweep_command(
    kernels: str = typer.Argument(..., help="kernel name(s), comma-separated (va,red,gemv), or a trace-set directory"),
    param: list[str] = typer.Option([], "--param", metavar="NAME=V1,V2", help="design parameter NAME=V1,V2,... (repeatable; full factorial "
                                                        f"grid). Names: {parameter_help()}"),
    pipeline: str = typer.Option("O2", "--pipeline", "-p", help="pipeline of the recorded run"),
    tasklets: int | None = typer.Option(None, "--tasklets", "-t", help="NR_TASKLETS (default: workload's)"),
    dpus: int = typer.Option(1, "--dpus", "-d", help="DPUs of the recorded run"),
    size: str = typer.Option("default", "--size", "-s", help="problem size, or a preset: small, default, large"),
    define: list[str] = DEFINES,
    seed: int = typer.Option(0, "--seed", help="input generator seed of the recorded run"),
    traces: Path | None = typer.Option(None, "--traces", help="trace store directory (default: <cache>/traces)"),
    rerecord: bool = typer.Option(False, "--rerecord", help="record the traces again even if stored"),
    cost: str = typer.Option("frequency_mhz", "--cost", help="cost proxy: an arithmetic expression over the "
                                                             "parameters, e.g. 'frequency_mhz*1.0+revolver*2'"),
    metric: str = typer.Option("kernel", "--metric", help="time to rank and plot: kernel, or total (+ transfers)"),
    strict: bool = typer.Option(False, "--strict", help="refuse design points whose trace cannot be re-timed "
                                                        "exactly, instead of re-executing them"),
    plot: Path | None = typer.Option(None, "--plot", help="write a PNG here: the Pareto front (time vs cost), or "
                                                          "with --learned time over two parameters (--axes)"),
    learned: str | None = typer.Option(None, "--learned", metavar="DIR", help="predict with this PerfVec model "
                                       "directory, or 'shipped' (unseen designs, many points); exact: omit"),
    confirm: int = typer.Option(5, "--confirm", help="with --learned: the best N points priced exactly too"),
    axes: str | None = typer.Option(None, "--axes", metavar="A,B", help="with --learned --plot: the two "
                                                                         "parameters plotted (default: the first two)"),
    as_json: bool = typer.Option(False, "--json", help="print the report as JSON"),
) -> None:
    """Re-time stored traces under a grid of DpuConfig design points (no re-execution where exact).

    Reports the time of every design point, the Pareto front of time vs the cost proxy, and which
    parameter matters most for each kernel (the range of its level means). A trace is re-timed only
    where that is exact: the replay must feed every tasklet the same values (counters, try-locks,
    handshakes) and grant every lock and semaphore in the same order as the recording did; other
    points are re-executed under their config (or refused with --strict).

    With --learned DIR (or 'shipped', the model cnmtune ships), a PerfVec model predicts every
    point from the program's representation (computed once from its traces): thousands of points
    per second, for designs never simulated; the best --confirm points are then priced exactly as
    above. NAME=LO:HI:N gives N evenly spaced values."""
    if not param:
        raise SweepError(f"nothing to sweep: give --param NAME=V1,V2,... (names: {', '.join(PARAMETERS)})")
    grid = dict(parse_param(p) for p in param)
    if len(grid) != len(param):
        raise SweepError("a parameter is given twice; list all its values in one --param")
    base = DpuConfig.calibrated()
    points = design_points(base, grid)
    expression = CostExpression(cost)
    if axes and not (learned and plot):
        raise SweepError("--axes chooses the two parameters of a learned sweep's plot: give --learned and --plot too")
    scorer = PerfVecScorer(perfvec_model_dir(learned)) if learned else None
    plotted = _axes(axes, list(grid)) if learned and plot else None
    toolchain = ProxyToolchain()
    sweeps: list[KernelSweep] = []
    predictions: list[LearnedSweep] = []
    start = time.perf_counter()
    with Progress(TextColumn("{task.description:14}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=err_console, transient=True) as bar:
        for item in [k.strip() for k in kernels.split(",") if k.strip()]:
            task = bar.add_task(f"{item}: traces", total=None)
            trace_set, recorded = _trace_set(item, pipeline, tasklets, define, dpus, size, seed, traces, base,
                                             toolchain, rerecord)
            bar.update(task, description=f"{trace_set.kernel}: points", total=len(points))
            if scorer is not None:
                predictions.append(learned_sweep(trace_set, points, scorer, confirm, expression, metric, strict,
                                                 toolchain))
                result = predictions[-1].sweep
            else:
                result = sweep_trace_set(trace_set, points, expression, metric, strict, toolchain,
                                         lambda done, total, task=task: bar.update(task, completed=done))
            result.recorded_now = recorded
            sweeps.append(result)
    seconds = time.perf_counter() - start
    if plot:
        if plotted:
            write_heatmap(sweeps, plotted, plot)
        else:
            write_pareto_plot(sweeps, expression, plot)
    if as_json:
        emit_json({"params": {k: list(v) for k, v in grid.items()}, "cost": expression.text, "metric": metric,
                   "base_config": {"hash": base.hash, **{p.name: p.user_value(base) for p in PARAMETERS.values()}},
                   "points": len(points), "learned": str(learned) if learned else None,
                   "kernels": [s.to_dict() for s in (predictions or sweeps)],
                   "seconds": seconds, "plot": str(plot) if plot else None})
        return
    if predictions:
        for prediction in predictions:
            console.print(_confirmed_table(prediction, list(grid)))
    else:
        for result in sweeps:
            console.print(_points_table(result, list(grid)))
    console.print(_summary_table(sweeps))
    for reason in sorted({r.note for s in sweeps for r in s.results if r.note}):
        console.print(f"re-executed because: {reason}", highlight=False, markup=False)
    console.print(f"{counted(len(points), 'design point')} x {counted(len(sweeps), 'kernel')} in {seconds:.2f} s",
                  highlight=False)
    if plot:
        note(f"wrote {plot}")


def _trace_set(item: str, pipeline: str, tasklets: int | None, define: list[str], dpus: int, size: str,
               seed: int, root: Path | None, base: DpuConfig, toolchain: ProxyToolchain,
               rerecord: bool) -> tuple[TraceSet, bool]:
    if (Path(item) / MANIFEST).is_file():  # an existing recorded run
        return load_trace_set(Path(item)), False
    kernel = find_kernel(item)
    variant = Variant.of(kernel, parse_pipeline(pipeline), tasklets, parse_defines(define, kernel))
    problem = kernel_size(kernel, size)
    return obtain_trace_set(variant, dpus, problem, seed, None, base, root, toolchain, rerecord)


def _points_table(result: KernelSweep, names: list[str]) -> Table:
    ts = result.trace_set
    how = "recorded now" if result.recorded_now else f"stored traces ({ts.directory})"
    table = Table(title=f"{ts.label}: {len(result.results)} design points from {how}",
                  caption="times in ms; front: on the Pareto front of time and cost")
    for name in names:
        table.add_column(name, justify="right", overflow="fold")
    for column in ("kernel", "transfers", "total", "cost", "front", "how"):
        table.add_column(column, justify="left" if column == "how" else "right", overflow="fold")
    for r in result.results:
        values = dict(r.point.values)
        table.add_row(*(f"{values[n]:g}" for n in names),
                      *map(milliseconds, (r.kernel_s, r.transfer_s, r.total_s)),
                      f"{r.cost:g}", "*" if r.pareto else "", r.method)
    return table


def _summary_table(sweeps: list[KernelSweep]) -> Table:
    table = Table(title="which parameter matters most (main effect: range of the mean time over its levels)",
                  caption="range in ms, and as a share of the mean time; exact: points retimed or recorded, "
                          "rerun: points re-executed")
    for column in ("kernel", "most important", "range", "share", "others (range)", "exact", "rerun", "seconds"):
        table.add_column(column, justify="left" if column in ("kernel", "most important", "others (range)")
                         else "right", overflow="fold")
    for s in sweeps:
        top = s.main_effects[0] if s.main_effects else None
        others = ", ".join(f"{e['param']} {milliseconds(e['range_s'])}" for e in s.main_effects[1:])
        exact = sum(r.method in ("retimed", "recorded") for r in s.results)
        table.add_row(s.trace_set.kernel, top["param"] if top else "-", milliseconds(top["range_s"]) if top else "-",
                      f"{100 * top['relative']:.1f} %" if top else "-", others, str(exact),
                      str(sum(r.method == "re-executed" for r in s.results)), f"{s.seconds:.2f}")
    return table


def _axes(text: str | None, names: list[str]) -> tuple[str, str]:
    """The two swept parameters a learned sweep's plot shows (--axes A,B, else the first two)."""
    chosen = [a.strip() for a in text.split(",")] if text else names[:2]
    if len(chosen) != 2 or len(set(chosen)) != 2 or not set(chosen) <= set(names):
        raise SweepError(f"--axes: give two different swept parameters A,B (swept: {', '.join(names)})")
    return chosen[0], chosen[1]


def _confirmed_table(prediction: LearnedSweep, names: list[str]) -> Table:
    ts, sweep = prediction.sweep.trace_set, prediction.sweep
    table = Table(title=f"{ts.label}: {len(sweep.results):,} design points predicted "
                        f"({prediction.points_per_s:,.0f} points/s), the best {len(prediction.confirmed)} priced exactly",
                  caption=f"times in ms ({sweep.metric} time); error: predicted over exact - 1")
    for name in names:
        table.add_column(name, justify="right", overflow="fold")
    for column in ("predicted", "exact", "error", "how"):
        table.add_column(column, justify="left" if column == "how" else "right", overflow="fold")
    for predicted, exact in prediction.confirmed:
        values = dict(predicted.point.values)
        mine, truth = predicted.seconds(sweep.metric), exact.seconds(sweep.metric)
        table.add_row(*(f"{values[n]:g}" for n in names), milliseconds(mine), milliseconds(truth),
                      f"{100 * (mine / truth - 1):+.1f} %", exact.method)
    if prediction.extrapolated:
        table.caption += f"; {counted(prediction.extrapolated, 'point')} outside the model's training ranges"
    return table


MAX_TICKS = 12  # labelled levels per axis of a heatmap


def write_heatmap(sweeps: list[KernelSweep], axes: tuple[str, str], path: Path) -> Path:
    """One panel per kernel: time over two parameters (each cell the best over the other parameters)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    x_name, y_name = axes
    fig, panels = plt.subplots(1, len(sweeps), figsize=(5.5 * len(sweeps), 4.5), squeeze=False)
    for ax, s in zip(panels.flat, sweeps):
        values = [dict(r.point.values) for r in s.results]
        xs, ys = sorted({v[x_name] for v in values}), sorted({v[y_name] for v in values})
        grid = np.full((len(ys), len(xs)), np.inf)
        for v, r in zip(values, s.results):
            i, j = ys.index(v[y_name]), xs.index(v[x_name])
            grid[i, j] = min(grid[i, j], r.seconds(s.metric) * 1e3)
        mesh = ax.pcolormesh(range(len(xs) + 1), range(len(ys) + 1), grid, cmap="viridis_r")
        fig.colorbar(mesh, ax=ax, label=f"{s.metric} time (ms)")
        for levels, set_ticks in ((xs, ax.set_xticks), (ys, ax.set_yticks)):
            shown = range(0, len(levels), -(-len(levels) // MAX_TICKS))  # every level, or evenly thinned
            set_ticks([k + 0.5 for k in shown], [f"{levels[k]:g}" for k in shown], fontsize=7)
        ax.set_xlabel(x_name)
        ax.set_ylabel(y_name)
        ax.set_title(f"{s.trace_set.kernel}: predicted (best over the other parameters)", fontsize=9)
    fig.tight_layout()
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=110)
    plt.close(fig)
    return atomic_write(path, buffer.getvalue())


def write_pareto_plot(sweeps: list[KernelSweep], cost: CostExpression, path: Path) -> Path:
    """One panel per kernel: time of every design point vs its cost, the Pareto front joined."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    columns = min(3, len(sweeps))
    rows = -(-len(sweeps) // columns)
    fig, axes = plt.subplots(rows, columns, figsize=(5 * columns, 4 * rows), squeeze=False)
    for ax, s in zip(axes.flat, sweeps):
        metric = s.metric
        times = [r.seconds(metric) * 1e3 for r in s.results]
        costs = [r.cost for r in s.results]
        ax.scatter(costs, times, s=18, color="tab:blue", alpha=0.6, label="design points")
        front = sorted((r.cost, t) for r, t in zip(s.results, times) if r.pareto)
        ax.step([c for c, _ in front], [t for _, t in front], where="post", color="tab:red", marker="o",
                label="Pareto front")
        ax.set_title(f"{s.trace_set.kernel} ({counted(s.trace_set.dpus, 'DPU')}, size {s.trace_set.size:,})")
        ax.set_xlabel(f"cost: {cost.text}")
        ax.set_ylabel(f"{metric} time (ms)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    for ax in list(axes.flat)[len(sweeps):]:
        ax.set_visible(False)
    fig.tight_layout()
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=110)
    plt.close(fig)
    return atomic_write(path, buffer.getvalue())


# the parameter list in --help (indented like the docstring's own lines, one paragraph each)
sweep_command.__doc__ += "\n\n    Design parameters, in user units (DpuConfig field):\n\n" + "\n\n".join(
    f"    {p.name} in {p.unit}: {p.help} ({', '.join(p.fields)})" for p in PARAMETERS.values())
