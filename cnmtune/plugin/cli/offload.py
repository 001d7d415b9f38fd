"""`cnmtune offload KERNEL[,KERNEL...] --size S`: offload decisions with their flip point and a C header."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from cnmtune.atomic import atomic_write
from cnmtune.display import Table
from cnmtune.errors import UsageError
from cnmtune.plugin.offload.cpu_baseline import CPU_BASELINES
from cnmtune.plugin.offload.decide import (
    DEFAULT_DPUS,
    DEFAULT_SHARE_CAP,
    DEFAULT_TASKLETS,
    OffloadReport,
    OffloadSpec,
    decide,
    header_text,
)
from cnmtune.plugin.cli.options import DEFINES, int_list, parse_defines, parse_pipeline, size_value
from cnmtune.plugin.cli.output import console, emit_json, milliseconds, note, phase_bars
from cnmtune.wording import counted


#: what the columns of the sizes tables mean, printed once below them
SIZES_KEY = ("CNM ms = kernel + xfer (CPU-DPU transfers) + host; DPUs x tasklets: the fastest CNM configuration, its "
             "kernel time simulated or extrapolated; speedup = CPU ms / CNM ms, -> the side chosen")
#: what the summary's ranges mean, printed once below it
SUMMARY_KEY = ("xfer share: the best config's transfer time / its CNM time at the size asked for, and the share "
               "with the transfer constants at the cheap and the dear end of their fitted 5-95 % ranges; flips "
               "between: the sizes around the flip, and the first size past it at those two ends ('<' / '>': beyond "
               "the swept sizes)")


def offload_command(
    kernels: str = typer.Argument(..., help="kernel name(s), comma-separated (va,red,gemv,bs)"),
    size: str = typer.Option("default", "--size", "-s", help="problem size to decide for, or a preset"),
    sizes: Optional[str] = typer.Option(None, "--sizes", help="sizes (or presets) swept for the flip point, "
                                                              "comma-separated (default: x4 steps from --min-size "
                                                              "to --max-size)"),
    min_size: Optional[str] = typer.Option(None, "--min-size", help="first size of the default sweep "
                                                                    "(default: the smallest preset)"),
    max_size: Optional[str] = typer.Option(None, "--max-size", help="last size of the default sweep "
                                                                    "(default: the largest preset)"),
    factor: float = typer.Option(4.0, "--factor", help="ratio between sizes of the default sweep"),
    dpus: str = typer.Option(",".join(map(str, DEFAULT_DPUS)), "--dpus",
                             help="DPU counts to consider (2560 = a full UPMEM system)"),
    tasklets: str = typer.Option(",".join(map(str, DEFAULT_TASKLETS)), "--tasklets", help="tasklet counts"),
    pipeline: str = typer.Option("O2", "--pipeline", "-p", help="pass pipeline of the DPU program"),
    define: list[str] = DEFINES,
    cpu: str = typer.Option("auto", "--cpu", help="CPU baseline of every size: auto (native C where available, "
                                                  "else numpy), native, numpy"),
    repeats: int = typer.Option(7, "--repeats", help="CPU runs per size (the median counts)"),
    min_speedup: float = typer.Option(1.0, "--min-speedup", help="offload when CPU time / CNM time is at least this"),
    bisect: int = typer.Option(4, "--bisect", help="bisection steps between the last two sizes that disagree"),
    share_cap: int = typer.Option(DEFAULT_SHARE_CAP, "--share-cap",
                                  help="simulate a DPU count when size / DPUs is at most this; extrapolate above"),
    emit_header: Optional[Path] = typer.Option(None, "--emit-header", help="write a C header with the decisions"),
    as_json: bool = typer.Option(False, "--json", help="print the report as JSON"),
) -> None:
    """Decide CPU vs CNM: predicted DPU end-to-end time (best DPUs x tasklets) against the measured CPU
    time of the same computation, per size, with the size at which the decision flips."""

    if cpu not in ("auto", "native", "numpy"):
        raise UsageError(f"unknown --cpu {cpu!r}; choose auto, native or numpy")
    if repeats < 1:
        raise UsageError("--repeats must be at least 1")
    parse_pipeline(pipeline)  # a bad one is refused here, as a usage error, before any kernel is measured
    defines = tuple(parse_defines(define).items())
    reports: list[OffloadReport] = []
    with phase_bars(label_width=16) as bars:
        for name in [k.strip() for k in kernels.split(",") if k.strip()]:
            spec = OffloadSpec(kernel=name, size=size_value(size),
                               sizes=tuple(size_value(s) for s in sizes.split(",") if s.strip()) if sizes else None,
                               min_size=None if min_size is None else size_value(min_size),
                               max_size=None if max_size is None else size_value(max_size), factor=factor,
                               dpus=int_list(dpus, "dpus"), tasklets=int_list(tasklets, "tasklets"),
                               pipeline=pipeline,
                               defines=defines, cpu=cpu, repeats=repeats, min_speedup=min_speedup,
                               bisect_steps=bisect, share_cap=share_cap)
            reports.append(decide(spec, progress=bars.of(name)))
    if emit_header:
        atomic_write(emit_header, header_text(reports).encode())
    if as_json:
        emit_json({"kernels": [r.to_dict() for r in reports], "header": str(emit_header) if emit_header else None})
        return
    for report in reports:
        console.print(_sizes_table(report))
    console.print(SIZES_KEY, highlight=False, markup=False)
    console.print(_summary_table(reports))
    console.print(SUMMARY_KEY, highlight=False, markup=False)
    for text in dict.fromkeys(n for r in reports for n in r.notes):  # how the numbers were obtained
        console.print(f"- {text}", highlight=False, markup=False)
    if emit_header:
        note(f"wrote {emit_header}")


def _sizes_table(report: OffloadReport) -> Table:
    """One row per size: CPU and CNM times, the CNM time's parts, the best configuration, the choice."""
    table = Table(title=f"{report.kernel}: CPU ({CPU_BASELINES[report.cpu_baseline]}) vs CNM across sizes "
                        f"({report.size_unit})")
    # short headers, two-line cells, every cell wraps (never cut to an ellipsis): 80 columns suffice
    for column in ("size", "CPU ms", "CNM ms", "kernel", "xfer", "host", "DPUs x tasklets", "speedup"):
        table.add_column(column, justify="left" if column == "DPUs x tasklets" else "right", overflow="fold")
    for p in report.points:
        b = p.best
        origin = {"requested": "\n--size", "bisection": "\nbisected", "range": "\nfor range"}.get(p.origin, "")
        times = tuple(map(milliseconds, (p.cnm_s, b.kernel_s, b.transfer_s, b.host_s))) if b else ("-",) * 4
        method = {"extrapolated": "extrap."}.get(b.method, b.method) if b else ""
        table.add_row(f"{p.size:,}{origin}", milliseconds(p.cpu.seconds), *times,
                      f"{b.dpus} x {b.tasklets}\n{method}" if b else "none feasible",
                      f"{p.speedup:.3g}x\n-> {'CNM' if p.offload else 'CPU'}")
    return table


def _summary_table(reports: list[OffloadReport]) -> Table:
    """One row per kernel: the decision at --size, its transfer share and where the decision flips,
    each with its range over the transfer constants' fitted ranges."""
    table = Table(title="offload decisions")
    for column in ("kernel", "size", "decision", "speedup", "best config", "xfer share", "flips between", "monotone"):
        table.add_column(column, overflow="fold")
    for r in reports:
        at = r.at_size
        best = (f"{counted(at.best.dpus, 'DPU')} x {counted(at.best.tasklets, 'tasklet')}, {at.best.pipeline}"
                if at.best else "-")
        share = "-"
        if at.best:
            others = at.best.total_s - at.best.transfer_s
            low, high = (t / (others + t) for t in r.transfer_range_s)
            share = f"{at.transfer_share:.0%} ({low:.0%}-{high:.0%})"
        flip = f"{r.flip[0]:,} and {r.flip[1]:,}" if r.flip else "no flip in the swept sizes"
        if r.flip_range:
            low, high = (f"<{r.points[0].size:,}" if r.flip_range[0] is None else f"{r.flip_range[0]:,}",
                         f">{r.points[-1].size:,}" if r.flip_range[1] is None else f"{r.flip_range[1]:,}")
            flip += f"; range {low}" + ("" if low == high else f" to {high}")
        if len(r.flips) > 1:
            flip += f" ({len(r.flips)} changes)"
        table.add_row(r.kernel, f"{r.requested:,}", "offload (CNM)" if at.offload else "CPU", f"{at.speedup:.3g}x",
                      best, share, flip, "yes" if r.monotone else "no")
    return table
