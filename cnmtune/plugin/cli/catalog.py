"""`cnmtune kernels` and `cnmtune passes`: what can be tuned, and with which passes."""

from __future__ import annotations

import typer
from rich.table import Table

from cnmtune.passes import PASSES
from cnmtune.plugin.cli.output import console, emit_json
from cnmtune.runtime.registry import list_kernels


def kernels_command(as_json: bool = typer.Option(False, "--json", help="print JSON")) -> None:
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


def passes_command(as_json: bool = typer.Option(False, "--json", help="print JSON")) -> None:
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
