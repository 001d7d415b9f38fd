"""`cnmtune compile`, `features` and `compare`: build a kernel variant and read its static features."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Optional

import typer

from cnmtune.atomic import atomic_write
from cnmtune.display import Table
from cnmtune.errors import OutputError, UsageError
from cnmtune.passes import random_pipeline
from cnmtune.plugin.cli.options import DEFINES, parse_defines, parse_pipeline
from cnmtune.plugin.cli.output import console, emit_json, note, print_pipeline_legend
from cnmtune.plugin.compare import SUMMARY_ROWS, comparison_record, comparison_table, compile_all, plot_histograms
from cnmtune.runtime.registry import find_kernel
from cnmtune.runtime.toolchain import ProxyToolchain, Variant


def compile_command(
    kernel_dir: str = typer.Argument(..., help="kernel name (see `cnmtune kernels`) or directory"),
    output: Path = typer.Option(..., "-o", "--output", help="where to write the linked ELF"),
    pipeline: str = typer.Option("O2", "--pipeline", "-p",
                                 help="O0..O3, Os, Oz or 'pass,pass,...', with knobs: 'O2,unroll-count=4'"),
    tasklets: Optional[int] = typer.Option(None, "--tasklets", "-t", help="NR_TASKLETS (default: workload's)"),
    define: list[str] = DEFINES,
    as_json: bool = typer.Option(False, "--json", help="print a JSON record instead of a table"),
) -> None:
    """Compile a kernel for the DPU proxy and write the ELF."""
    kernel = find_kernel(kernel_dir)
    variant = Variant.of(kernel, parse_pipeline(pipeline), tasklets, parse_defines(define, kernel))
    if not output.parent.is_dir():  # as a compiler: a typo in -o must not leave new directories behind
        raise OutputError(f"cannot write {output}: no directory {output.parent}")
    binary = ProxyToolchain().compile(variant)
    try:
        shutil.copyfile(binary.elf_path, output)
    except OSError as exc:  # a directory in its place, no permission
        raise OutputError(f"cannot write {output}: {exc.strerror}") from None
    memory = binary.memory
    record = {
        "variant": variant.label, "elf": str(output), "elf_hash": binary.elf_hash,
        "toolchain": binary.toolchain, "seconds": round(binary.seconds, 4), "cached": binary.cached,
        "iram_dpu_instructions": memory.iram_dpu_instructions,
        "iram_instructions": memory.iram_instructions, "kernel_instructions": memory.kernel_instructions,
        "runtime_instructions": memory.runtime_instructions, "softlib_instructions": memory.softlib_instructions,
        "wram_static_bytes": memory.wram_static_bytes, "mram_static_bytes": memory.mram_static_bytes,
    }
    if as_json:
        emit_json(record)
        return
    table = Table(title=f"compiled {variant.label}", show_header=False)
    table.add_column(no_wrap=True)
    table.add_column(overflow="fold")  # hashes and toolchain ids whole at 80 columns
    for key, value in record.items():
        table.add_row(key, str(value))
    console.print(table)


def features_command(
    elf: Path = typer.Argument(..., help="a linked DPU-proxy ELF (from `cnmtune compile`) or a real UPMEM DPU ELF"),
    as_json: bool = typer.Option(False, "--json", help="print the full feature record as JSON"),
    underlying: bool = typer.Option(False, "--underlying",
                                    help="DPU ELFs: count shorthands (move, jeq, jump, ...) as the operation they encode"),
    lowered: bool = typer.Option(False, "--lowered",
                                 help="proxy ELFs: the features of the DPU code the UPMEM compiler would emit "
                                      "(lowering model), in the DPU schema of real DPU ELFs"),
) -> None:
    """Static features of an ELF: opcode histogram, runtime calls, loops, footprints."""
    from cnmtune.costmodel import extract_features
    from cnmtune.costmodel.analysis.schema import schema_for

    found = extract_features(elf, shorthands=not underlying, lowered=lowered)
    schema = schema_for(found.schema_version, found.loop_weight)
    dpu_code = _lowered(elf, found) if lowered else None
    if as_json:
        record = found.to_dict()
        record["feature_schema"] = {"version": schema.version, "hash": schema.hash, "columns": len(schema)}
        if dpu_code is not None:
            record["lowered"] = dpu_code
        emit_json(record)
        return
    summary = Table(title=f"{elf.name}: {found.machine}, schema {schema.version} ({schema.hash})", show_header=False)
    for label, attr in SUMMARY_ROWS:
        summary.add_row(label, str(found.scalar(attr)))
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
    if dpu_code is not None:
        _print_lowered(dpu_code)


def _lowered(elf: Path, found) -> dict:
    """The lowering model's view of a proxy ELF; a real DPU ELF is DPU code already."""
    from cnmtune.costmodel.analysis.lowering import lowered_summary

    if found.toolchain != "proxy":
        raise UsageError(f"{elf}: --lowered applies to proxy ELFs; this one already holds DPU code")
    return lowered_summary(elf)


def _print_lowered(dpu_code: dict) -> None:
    sizes = Table(title="as DPU code (lowering model)")
    for column in ("code", "rv32i", "DPU"):
        sizes.add_column(column, justify="left" if column == "code" else "right")
    for label, key in (("kernel", "kernel"), ("IRAM (kernel + runtime)", "iram")):
        sizes.add_row(label, str(dpu_code[f"{key}_rv32_instructions"]), str(dpu_code[f"{key}_dpu_instructions"]))
    console.print(sizes)


def compare_command(
    kernel_dir: str = typer.Argument(..., help="kernel name (see `cnmtune kernels`) or directory"),
    pipeline: list[str] = typer.Option([], "--pipeline", "-p", metavar="PIPELINE", help="pipeline to compare, repeatable"),
    random: int = typer.Option(0, "--random", help="also compare N seeded random pipelines"),
    random_length: int = typer.Option(10, "--random-length", help="passes per random pipeline"),
    seed: int = typer.Option(0, "--seed", help="seed of the first random pipeline"),
    tasklets: Optional[int] = typer.Option(None, "--tasklets", "-t", help="NR_TASKLETS (default: workload's)"),
    define: list[str] = DEFINES,
    plot: Optional[Path] = typer.Option(None, "--plot", help="write a PNG bar chart of the histograms"),
    json_out: Optional[Path] = typer.Option(None, "--json-out", help="write the records as JSON here"),
    as_json: bool = typer.Option(False, "--json", help="print JSON instead of a table"),
) -> None:
    """Compile one kernel under several pipelines and compare their static features."""
    pipelines = [parse_pipeline(text) for text in pipeline]
    pipelines += [random_pipeline(random_length, seed=seed + k) for k in range(random)]
    if not pipelines:
        raise UsageError("nothing to compare: give --pipeline P (repeatable) and/or --random N")
    kernel = find_kernel(kernel_dir)
    defines = parse_defines(define, kernel)
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
    ids = {pipeline: f"P{i}" for i, pipeline in enumerate(dict.fromkeys(item.pipeline for item in compiled), 1)}
    console.print(comparison_table(compiled, ids))
    for item in compiled:
        console.print(f"  {ids[item.pipeline]}: ELF {item.binary.elf_hash[:16]}, "
                      f"{'cached' if item.binary.cached else 'compiled'} in {item.binary.seconds * 1000:.0f} ms",
                      highlight=False)
    print_pipeline_legend(ids)
    for path in (p for p in (plot, json_out) if p):
        note(f"wrote {path}")
