"""The `cnmtune` command line: compile kernels, read features, list passes, compare pipelines."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Optional

import typer
from rich.markup import escape
from rich.table import Table

from cnmtune.errors import CnmtuneError
from cnmtune.passes import PASSES, Pipeline, random_pipeline
from cnmtune.plugin.compare import SUMMARY_ROWS, comparison_record, comparison_table, compile_all, plot_histograms
from cnmtune.plugin.cli.dataset import dataset_app
from cnmtune.plugin.cli.model import model_app
from cnmtune.plugin.cli.offload import offload_command
from cnmtune.plugin.cli.output import console, emit_json, err_console
from cnmtune.plugin.cli.sweep import sweep_command
from cnmtune.plugin.cli.tune import tune_command
from cnmtune.runtime import Kernel
from cnmtune.runtime.registry import find_kernel, list_kernels
from cnmtune.runtime.toolchain import ProxyToolchain, Variant
from cnmtune.atomic import atomic_write
from cnmtune.runtime.workload import DefineValue

app = typer.Typer(
    help="cnmtune: tune UPMEM DPU kernels with LLVM pass pipelines and a learned cost model.",
    pretty_exceptions_enable=False,
    no_args_is_help=True,
    add_completion=False,
)
app.add_typer(dataset_app, name="dataset")
app.add_typer(model_app, name="model")
app.command("tune")(tune_command)
app.command("sweep")(sweep_command)
app.command("offload")(offload_command)


def parse_defines(items: list[str]) -> dict[str, DefineValue]:
    """Turn ['BL=10', 'INT32'] into {'BL': 10, 'INT32': None}."""
    defines: dict[str, DefineValue] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not key.isidentifier():
            raise CnmtuneError(f"malformed define {item!r}; use -D NAME or -D NAME=VALUE")
        defines[key] = (int(value) if value.lstrip("-").isdigit() else value) if sep else None
    return defines


@app.command()
def compile(
    kernel_dir: str = typer.Argument(..., help="kernel name (see `cnmtune kernels`) or directory"),
    output: Path = typer.Option(..., "-o", "--output", help="where to write the linked ELF"),
    pipeline: str = typer.Option("O2", "--pipeline", "-p", help="O0..O3, Os, Oz or 'pass,pass,...'"),
    tasklets: Optional[int] = typer.Option(None, "--tasklets", "-t", help="NR_TASKLETS (default: workload's)"),
    define: list[str] = typer.Option([], "-D", help="preprocessor define NAME[=VALUE], repeatable"),
    as_json: bool = typer.Option(False, "--json", help="print a JSON record instead of a table"),
) -> None:
    """Compile a kernel for the DPU proxy and write the ELF."""
    variant = Variant.of(find_kernel(kernel_dir), Pipeline.parse(pipeline), tasklets, parse_defines(define))
    binary = ProxyToolchain().compile(variant)
    output.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(binary.elf_path, output)
    memory = binary.memory
    record = {
        "variant": variant.label, "elf": str(output), "elf_hash": binary.elf_hash,
        "toolchain": binary.toolchain, "seconds": round(binary.seconds, 4), "cached": binary.cached,
        "iram_instructions": memory.iram_instructions, "kernel_instructions": memory.kernel_instructions,
        "runtime_instructions": memory.runtime_instructions, "softlib_instructions": memory.softlib_instructions,
        "wram_static_bytes": memory.wram_static_bytes, "mram_static_bytes": memory.mram_static_bytes,
    }
    if as_json:
        emit_json(record)
        return
    table = Table(title=f"compiled {variant.label}", show_header=False)
    for key, value in record.items():
        table.add_row(key, str(value))
    console.print(table)


@app.command()
def features(
    elf: Path = typer.Argument(..., help="a linked DPU-proxy ELF (from `cnmtune compile`) or a real UPMEM DPU ELF"),
    as_json: bool = typer.Option(False, "--json", help="print the full feature record as JSON"),
    underlying: bool = typer.Option(False, "--underlying",
                                    help="DPU ELFs: count shorthands (move, jeq, jump, ...) as the operation they encode"),
) -> None:
    """Static features of an ELF: opcode histogram, runtime calls, loops, footprints."""
    from cnmtune.costmodel import extract_features
    from cnmtune.costmodel.analysis.schema import schema_for

    found = extract_features(elf, shorthands=not underlying)
    schema = schema_for(found.schema_version, found.loop_weight)
    if as_json:
        record = found.to_dict()
        record["feature_schema"] = {"version": schema.version, "hash": schema.hash, "columns": len(schema)}
        emit_json(record)
        return
    summary = Table(title=f"{elf.name}: {found.machine}, schema {schema.version} ({schema.hash})", show_header=False)
    for label, attr in SUMMARY_ROWS:
        summary.add_row(label, str(getattr(found, attr)))
    console.print(summary)
    calls = Table(title="runtime calls from kernel code")
    calls.add_column("callee")
    calls.add_column("sites", justify="right")
    calls.add_column("loop-weighted", justify="right")
    for callee, count in sorted(found.kernel_calls.items(), key=lambda kv: -kv[1]):
        calls.add_row(callee, str(count), f"{found.weighted_kernel_calls.get(callee, 0):.0f}")
    console.print(calls)
    histogram = Table(title="kernel opcode histogram")
    for column in ("mnemonic", "count", "loop-weighted", "whole program"):
        histogram.add_column(column, justify="right" if column != "mnemonic" else "left")
    for mnemonic, count in sorted(found.kernel_histogram.items(), key=lambda kv: -kv[1]):
        histogram.add_row(mnemonic, str(count), f"{found.weighted_kernel_histogram.get(mnemonic, 0):.0f}",
                          str(found.histogram.get(mnemonic, 0)))
    console.print(histogram)


@app.command()
def compare(
    kernel_dir: str = typer.Argument(..., help="kernel name (see `cnmtune kernels`) or directory"),
    pipeline: list[str] = typer.Option([], "--pipeline", "-p", help="pipeline to compare, repeatable"),
    random: int = typer.Option(0, "--random", help="also compare N seeded random pipelines"),
    random_length: int = typer.Option(10, "--random-length", help="passes per random pipeline"),
    seed: int = typer.Option(0, "--seed", help="seed of the first random pipeline"),
    tasklets: Optional[int] = typer.Option(None, "--tasklets", "-t", help="NR_TASKLETS (default: workload's)"),
    define: list[str] = typer.Option([], "-D", help="preprocessor define NAME[=VALUE], repeatable"),
    plot: Optional[Path] = typer.Option(None, "--plot", help="write a PNG bar chart of the histograms"),
    json_out: Optional[Path] = typer.Option(None, "--json-out", help="write the records as JSON here"),
    as_json: bool = typer.Option(False, "--json", help="print JSON instead of a table"),
) -> None:
    """Compile one kernel under several pipelines and compare their static features."""
    pipelines = [Pipeline.parse(text) for text in pipeline]
    pipelines += [random_pipeline(random_length, seed=seed + k) for k in range(random)]
    if not pipelines:
        raise CnmtuneError("nothing to compare: give --pipeline P (repeatable) and/or --random N")
    kernel = find_kernel(kernel_dir)
    defines = parse_defines(define)
    variants = [Variant.of(kernel, p, tasklets, defines) for p in pipelines]
    compiled = compile_all(ProxyToolchain(), variants)
    records = comparison_record(compiled)
    if json_out:
        atomic_write(json_out, (json.dumps(records, indent=2, sort_keys=True) + "\n").encode())
    if plot:
        plot_histograms(compiled, plot)
    if as_json:
        emit_json(records)
        return
    console.print(comparison_table(compiled))
    for item in compiled:
        console.print(f"  {item.binary.variant.label}: {item.binary.elf_hash[:16]}  "
                      f"{'cached' if item.binary.cached else 'compiled'} in {item.binary.seconds * 1000:.0f} ms",
                      highlight=False, markup=False)
    for path in (p for p in (plot, json_out) if p):
        console.print(f"wrote {path}", highlight=False, markup=False)


def _size(kernel: Kernel, text: str) -> int:
    if text.isdigit():
        return int(text)
    return kernel.workload.preset(text)


@app.command()
def run(
    kernel_dir: str = typer.Argument(..., help="kernel name (see `cnmtune kernels`) or directory"),
    pipeline: str = typer.Option("O2", "--pipeline", "-p", help="O0..O3, Os, Oz or 'pass,pass,...'"),
    tasklets: Optional[int] = typer.Option(None, "--tasklets", "-t", help="NR_TASKLETS (default: workload's)"),
    dpus: int = typer.Option(1, "--dpus", "-d", help="number of DPUs"),
    size: str = typer.Option("default", "--size", "-s", help="problem size, or a preset: small, default, large"),
    define: list[str] = typer.Option([], "-D", help="preprocessor define NAME[=VALUE], repeatable"),
    param: list[str] = typer.Option([], "--param", help="workload parameter NAME=VALUE, repeatable"),
    seed: int = typer.Option(0, "--seed", help="input generator seed"),
    device: str = typer.Option("sim", "--device",
                               help="sim (cnmtune's simulator), upmem-sim (UPMEM SDK simulator) or upmem-hw"),
    sdk_dir: Optional[Path] = typer.Option(None, "--sdk-dir", help="UPMEM SDK directory (upmem-* devices)"),
    as_json: bool = typer.Option(False, "--json", help="print a JSON record instead of tables"),
) -> None:
    """Compile, run on a device (default: the embedded DPU simulator), verify against numpy, report."""
    from cnmtune.runtime.execute import run_binary, run_on_device

    if device not in ("sim", "upmem-sim", "upmem-hw"):
        raise CnmtuneError(f"unknown device {device!r}; choose sim, upmem-sim or upmem-hw")
    kernel = find_kernel(kernel_dir)
    params = dict(kernel.workload.parse_param(p) for p in param)
    variant = Variant.of(kernel, Pipeline.parse(pipeline), tasklets, parse_defines(define))
    if device == "sim":
        binary = ProxyToolchain().compile(variant)
        result = run_binary(binary, dpus, _size(kernel, size), seed=seed, params=params)
    else:
        from cnmtune.runtime.toolchain import UpmemToolchain
        from cnmtune.runtime.upmem import UpmemDevice, UpmemSdk

        sdk = UpmemSdk.find(sdk_dir)
        binary = UpmemToolchain(sdk).compile(variant)
        with UpmemDevice(dpus, "hw" if device == "upmem-hw" else "simulator", sdk=sdk) as target:
            result = run_on_device(binary, target, _size(kernel, size), seed=seed, params=params)
    if as_json:
        emit_json(result.to_dict())
        return
    where = f"{dpus} simulated DPU(s)" if device == "sim" else f"{dpus} DPU(s) of {device}"
    summary = Table(title=f"{result.variant} on {where}, size {result.size:,}: verified", show_header=False)
    rows = [
        ("kernel time (ms)", f"{result.kernel_s * 1e3:.4f}  ({result.launches} launch(es))"),
        ("CPU->DPU transfers (ms)", f"{result.host_to_dpu_s * 1e3:.4f}"),
        ("DPU->CPU transfers (ms)", f"{result.dpu_to_host_s * 1e3:.4f}"),
    ]
    if device == "sim":  # the UPMEM SDK measures times only; cnmtune's simulator also counts
        rows += [
            ("cycles (slowest DPU)", f"{result.cycles:,}"),
            ("DPU instructions (issue slots)", f"{result.slots:,.0f}"),
            ("proxy rv32i instructions", f"{result.instructions:,}"),
            ("IPC (slowest DPU)", f"{result.ipc:.3f}"),
            ("DMA MRAM->WRAM / WRAM->MRAM (B)", f"{result.dma_read_bytes:,} / {result.dma_write_bytes:,}"),
            ("slots in runtime routines", f"{100 * result.routine_slots / max(result.slots, 1):.1f} %"),
        ]
    rows.append(("simulation wall time (s)" if device == "sim" else "run wall time (s)", f"{result.wall_s:.2f}"))
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


@app.command()
def kernels(as_json: bool = typer.Option(False, "--json", help="print JSON")) -> None:
    """List the registered kernels with their size meaning, presets, defines and parameters."""
    records = []
    for kernel in list_kernels():
        w = kernel.workload
        records.append({
            "name": w.name or kernel.name, "suite": kernel.root.parent.name, "path": str(kernel.root),
            "summary": (w.__doc__ or "").strip().splitlines()[0] if w.__doc__ else "",
            "size": {"unit": w.size_unit, "presets": dict(w.sizes)},
            "defines": {k: v for k, v in w.defines.items()},
            "define_choices": {k: list(v) for k, v in w.define_choices.items()},
            "flag_groups": {k: list(v) for k, v in w.flag_groups.items()},
            "params": {k: v for k, v in w.params.items()},
            "default_tasklets": w.nr_tasklets,
        })
    if as_json:
        emit_json(records)
        return
    table = Table(title=f"{len(records)} kernels")
    for column in ("name", "suite", "size counts", "presets (small/default/large)", "defines", "params"):
        table.add_column(column)
    for r in records:
        presets = "/".join(f"{v:,}" for v in r["size"]["presets"].values())
        defines = " ".join(k if v is None else f"{k}={v}" for k, v in r["defines"].items())
        params = " ".join(f"{k}={v}" for k, v in r["params"].items())
        table.add_row(r["name"], r["suite"], r["size"]["unit"], presets, defines, params)
    console.print(table)


@app.command()
def passes(as_json: bool = typer.Option(False, "--json", help="print JSON")) -> None:
    """List the pass vocabulary (every transform llvmlite can apply)."""
    if as_json:
        emit_json([{"name": p.name, "scope": "module" if p.module_only else "function", "summary": p.summary}
                    for p in PASSES])
        return
    table = Table(title=f"{len(PASSES)} passes")
    for column in ("pass", "scope", "what it does"):
        table.add_column(column)
    for info in PASSES:
        table.add_row(info.name, "module" if info.module_only else "function", info.summary)
    console.print(table)


def main() -> None:
    """Console-script entry: user errors become one line on stderr and exit code 2."""
    try:
        app()
    except CnmtuneError as exc:
        err_console.print(f"[bold red]error:[/] {escape(str(exc))}", highlight=False, soft_wrap=True)
        sys.exit(exc.exit_code)
