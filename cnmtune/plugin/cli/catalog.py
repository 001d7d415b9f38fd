"""`cnmtune kernels` and `cnmtune passes`: what can be tuned, and with which passes."""

from __future__ import annotations

import typer

from cnmtune.display import Table
from cnmtune.passes import PASSES
from cnmtune.passes.knobs import KNOBS
from cnmtune.plugin.cli.output import console, emit_json
from cnmtune.runtime.registry import list_kernels
from cnmtune.runtime.workload import define_text


def kernels_command(as_json: bool = typer.Option(False, "--json", help="print JSON")) -> None:
    """List the registered kernels with their size meaning, presets, defines and parameters."""
    records = []
    for kernel in list_kernels():
        w = kernel.workload
        records.append({
            "name": w.name or kernel.name, "suite": kernel.root.parent.name, "path": str(kernel.root),
            "summary": w.summary(),
            "size": {"unit": w.size_unit, "presets": dict(w.sizes)},
            "defines": {k: v for k, v in w.defines.items()},
            "define_choices": {k: list(v) for k, v in w.define_choices.items()},
            "tuned_defines": list(w.tuned_defines),
            "flag_groups": {k: list(v) for k, v in w.flag_groups.items()},
            "params": {k: v for k, v in w.params.items()},
            "default_tasklets": w.nr_tasklets,
        })
    if as_json:
        emit_json(records)
        return
    table = Table(title=f"{len(records)} kernels", show_lines=True,
                  caption="*: a define that only changes speed; `cnmtune tune` searches its choices")
    # every cell wraps (long words fold) so nothing is cut to an ellipsis at 80 columns
    for column, ratio in (("kernel", 0), ("summary", 3), ("size: what it counts; presets", 2),
                          ("defines; parameters", 2)):
        table.add_column(column, overflow="fold", no_wrap=not ratio, ratio=ratio or None)
    for r in records:
        presets = " / ".join(f"{name} {size:,}" for name, size in r["size"]["presets"].items())
        # a define the tuner searches is marked *
        defines = " ".join(define_text(k, v) + "*" * (k in r["tuned_defines"]) for k, v in r["defines"].items())
        params = " ".join(f"{k}={v}" for k, v in r["params"].items())
        table.add_row(f"{r['name']}\n({r['suite']})", r["summary"], f"{r['size']['unit']}; {presets}",
                      "; ".join(text for text in (defines, params) if text))
    console.print(table)


def passes_command(as_json: bool = typer.Option(False, "--json", help="print JSON")) -> None:
    """List the pass vocabulary (every transform llvmlite can apply) and the LLVM knobs a pipeline
    may set (name=value, e.g. O2,unroll-count=4)."""
    if as_json:
        emit_json([{"name": p.name, "scope": "module" if p.module_only else "function", "summary": p.summary}
                   for p in PASSES]
                  + [{"name": k.name, "scope": "knob", "range": f"{k.low}..{k.high}",
                      "summary": k.doc, "source": k.source} for k in KNOBS.values()])
        return
    table = Table(title=f"{len(PASSES)} passes")
    for column in ("pass", "scope", "what it does"):
        table.add_column(column)
    for info in PASSES:
        table.add_row(info.name, "module" if info.module_only else "function", info.summary)
    console.print(table)
    knobs = Table(title=f"{len(KNOBS)} LLVM knob(s): name=value in a pipeline, e.g. O2,unroll-count=4")
    for column in ("knob", "values", "what it does"):
        knobs.add_column(column)
    for knob in KNOBS.values():
        knobs.add_row(knob.name, f"{knob.low}..{knob.high}", knob.doc)
    console.print(knobs)
