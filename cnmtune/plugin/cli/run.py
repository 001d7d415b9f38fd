"""`cnmtune run`: compile one variant, run it on a device, verify it, report its times."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from cnmtune.display import Table
from cnmtune.plugin.cli.options import (DEFINES, PARAMS, check_device, kernel_size, parse_defines, parse_params,
                                       parse_pipeline)
from cnmtune.plugin.cli.output import console, emit_json, milliseconds
from cnmtune.runtime.registry import find_runnable_kernel
from cnmtune.runtime.toolchain import Variant
from cnmtune.wording import counted, plural


def run_command(
    kernel_dir: str = typer.Argument(..., help="kernel name (see `cnmtune kernels`) or directory"),
    pipeline: str = typer.Option("O2", "--pipeline", "-p",
                                 help="O0..O3, Os, Oz or 'pass,pass,...', with knobs: 'O2,unroll-count=4'"),
    tasklets: Optional[int] = typer.Option(None, "--tasklets", "-t", help="NR_TASKLETS (default: workload's)"),
    dpus: int = typer.Option(1, "--dpus", "-d", help="number of DPUs"),
    size: str = typer.Option("default", "--size", "-s", help="problem size, or a preset: small, default, large"),
    define: list[str] = DEFINES,
    param: list[str] = PARAMS,
    seed: int = typer.Option(0, "--seed", help="input generator seed"),
    device: str = typer.Option("sim", "--device",
                               help="sim (cnmtune's simulator), upmem-sim (UPMEM SDK simulator) or upmem-hw"),
    sdk_dir: Optional[Path] = typer.Option(None, "--sdk-dir", help="UPMEM SDK directory (upmem-* devices)"),
    as_json: bool = typer.Option(False, "--json", help="print a JSON record instead of tables"),
) -> None:
    """Compile, run on a device (default: the embedded DPU simulator), verify against numpy, report."""
    from cnmtune.runtime.target import make_target

    target = make_target(check_device(device), sdk_dir=sdk_dir)
    kernel = find_runnable_kernel(kernel_dir)
    variant = Variant.of(kernel, parse_pipeline(pipeline), tasklets, parse_defines(define, kernel))
    given = parse_params(kernel, param)
    result = target.run(variant, dpus, kernel_size(kernel, size), seed=seed, params=given)
    if as_json:
        emit_json(result.to_dict())
        return
    where = f"{dpus} simulated {plural('DPU', dpus)}" if target.counts else f"{counted(dpus, 'DPU')} of {device}"
    with_params = "".join(f", {name}={result.params[name]}" for name in given)
    summary = Table(title=f"{result.variant} on {where}, size {result.size:,}{with_params}: verified",
                    show_header=False)
    rows = [
        ("kernel time (ms)", f"{milliseconds(result.kernel_s)}  ({counted(result.launches, 'launch')})"),
        ("CPU->DPU transfers (ms)", milliseconds(result.host_to_dpu_s)),
        ("Inter-DPU transfers (ms)", milliseconds(result.inter_dpu_s)),
        ("DPU->CPU transfers (ms)", milliseconds(result.dpu_to_host_s)),
    ]
    if target.counts:  # the UPMEM SDK measures times only; cnmtune's simulator also counts
        rows += [
            ("cycles (slowest DPU)", f"{result.cycles:,}"),
            ("DPU instructions (issue slots)", f"{result.slots:,.0f}"),
            ("proxy rv32i instructions", f"{result.instructions:,}"),
            ("IPC (slowest DPU)", f"{result.ipc:.3f}"),
            ("DMA MRAM->WRAM / WRAM->MRAM (B)", f"{result.dma_read_bytes:,} / {result.dma_write_bytes:,}"),
            ("slots in runtime routines", f"{100 * result.routine_slots / max(result.slots, 1):.1f} %"),
        ]
    rows.append(("simulation wall time (s)" if target.counts else "run wall time (s)", f"{result.wall_s:.2f}"))
    for label, value in rows:
        summary.add_row(label, value)
    console.print(summary)
    if result.tasklets:
        tasklet_table = Table(title="tasklets of the slowest DPU (cycles)")
        for column in ("tasklet", "issuing", "DMA wait", "sync wait", "instructions"):
            tasklet_table.add_column(column, justify="right")
        for t in result.tasklets:
            tasklet_table.add_row(str(t.tasklet), f"{t.issue_cycles:,.0f}", f"{t.dma_wait_cycles:,.0f}",
                                  f"{t.sync_wait_cycles:,.0f}", f"{t.slots:,.0f}")
        console.print(tasklet_table)
    if result.log:
        console.print("DPU 0 printed:", highlight=False, markup=False)
        console.print(result.log, highlight=False, markup=False, end="")
