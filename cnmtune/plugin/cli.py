"""The `cnmtune` command line: compile kernels, read features, list passes, compare pipelines."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Optional

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from cnmtune.errors import CnmtuneError
from cnmtune.passes import PASSES, Pipeline, random_pipeline
from cnmtune.runtime import Kernel
from cnmtune.runtime.toolchain import ProxyToolchain, Variant
from cnmtune.runtime.workload import DefineValue

app = typer.Typer(
    help="cnmtune: tune UPMEM DPU kernels with LLVM pass pipelines and a learned cost model.",
    pretty_exceptions_enable=False,
    no_args_is_help=True,
    add_completion=False,
)
console = Console()
err_console = Console(stderr=True)


def parse_defines(items: list[str]) -> dict[str, DefineValue]:
    """Turn ['BL=10', 'INT32'] into {'BL': 10, 'INT32': None}."""
    defines: dict[str, DefineValue] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not key.isidentifier():
            raise CnmtuneError(f"malformed define {item!r}; use -D NAME or -D NAME=VALUE")
        defines[key] = (int(value) if value.lstrip("-").isdigit() else value) if sep else None
    return defines


def _emit_json(payload: object) -> None:
    sys.stdout.write(json.dumps(payload, indent=2, sort_keys=True) + "\n")


@app.command()
def compile(
    kernel_dir: Path = typer.Argument(..., help="kernel directory (dpu/*.c, workload.py)"),
    output: Path = typer.Option(..., "-o", "--output", help="where to write the linked ELF"),
    pipeline: str = typer.Option("O2", "--pipeline", "-p", help="O0..O3, Os, Oz or 'pass,pass,...'"),
    tasklets: Optional[int] = typer.Option(None, "--tasklets", "-t", help="NR_TASKLETS (default: workload's)"),
    define: list[str] = typer.Option([], "-D", help="preprocessor define NAME[=VALUE], repeatable"),
    as_json: bool = typer.Option(False, "--json", help="print a JSON record instead of a table"),
) -> None:
    """Compile a kernel for the DPU proxy and write the ELF."""
    variant = Variant.of(Kernel.load(kernel_dir), Pipeline.parse(pipeline), tasklets, parse_defines(define))
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
        _emit_json(record)
        return
    table = Table(title=f"compiled {variant.label}", show_header=False)
    for key, value in record.items():
        table.add_row(key, str(value))
    console.print(table)


@app.command()
def passes(as_json: bool = typer.Option(False, "--json", help="print JSON")) -> None:
    """List the pass vocabulary (every transform llvmlite can apply)."""
    if as_json:
        _emit_json([{"name": p.name, "scope": "module" if p.module_only else "function", "summary": p.summary}
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
