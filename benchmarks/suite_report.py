"""Kernel-suite report: every kernel at its default preset on 1 DPU, across tasklet counts.

For each registered kernel of the prim and pim-ml suites: kernel time at 1, 2, 4, 8, 11 and 16
tasklets (the speedup curve), simulated DPU instructions, IPC, DMA bytes and the share of
issue slots spent in runtime routines (soft multiply/divide/float, services). Compute-bound
kernels should speed up nearly linearly to about 11 tasklets (the revolver pipeline), DMA-bound
ones saturate earlier. Writes suite_report.json and suite_speedup.png into --out (default
benchmarks/results, which git ignores).

    python benchmarks/suite_report.py [--preset default] [--kernels va,red] [--tasklets 1,2,4,8,11,16] [--out DIR]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import script_io
from rich.console import Console
from rich.progress import Progress

from cnmtune.display import Table
from cnmtune.errors import CnmtuneError
from cnmtune.runtime.execute import run_binary
from cnmtune.runtime.registry import list_kernels
from cnmtune.runtime.toolchain import ProxyToolchain, Variant

SUITES = ("prim", "pim-ml")


def measure(kernel, tasklets: list[int], preset: str, toolchain) -> list[dict]:
    """One record per tasklet count (failures recorded with their message, the sweep goes on)."""
    size = kernel.workload.preset(preset)
    rows = []
    for t in tasklets:
        try:
            result = run_binary(toolchain.compile(Variant.of(kernel, "O2", t)), 1, size)
        except CnmtuneError as exc:
            rows.append({"kernel": kernel.name, "tasklets": t, "size": size, "error": str(exc).splitlines()[0]})
            continue
        rows.append({
            "kernel": kernel.name, "tasklets": t, "size": size, "kernel_ms": 1e3 * result.kernel_s,
            "slots": result.slots, "ipc": result.ipc, "dma_bytes": result.dma_read_bytes + result.dma_write_bytes,
            "routine_share": result.routine_slots / max(result.slots, 1.0), "launches": result.launches,
        })
    base = next((r["kernel_ms"] for r in rows if "kernel_ms" in r), None)
    for r in rows:
        if "kernel_ms" in r and base:
            r["speedup"] = base / r["kernel_ms"]
    return rows


def plot(rows: list[dict], tasklets: list[int], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 5.5))
    colors = plt.get_cmap("tab20").colors  # one colour per kernel (the suite has 20)
    for k, name in enumerate(sorted({r["kernel"] for r in rows})):
        points = [(r["tasklets"], r["speedup"]) for r in rows if r["kernel"] == name and "speedup" in r]
        if points:
            ax.plot(*zip(*points), marker="os^D"[k % 4], color=colors[k % len(colors)], label=name)
    ax.plot(tasklets, [min(t, 11) for t in tasklets], color="grey", ls="--", label="revolver bound min(T, 11)")
    ax.set_xlabel("tasklets")
    ax.set_ylabel("speedup over 1 tasklet")
    ax.set_title("kernel suite on 1 simulated DPU (default presets, O2)")
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", default="default")
    parser.add_argument("--kernels", help="comma-separated names (default: the prim and pim-ml suites)")
    parser.add_argument("--tasklets", default="1,2,4,8,11,16")
    script_io.out_option(parser, "suite_report.json and suite_speedup.png")
    args = parser.parse_args()
    tasklets = [int(t) for t in args.tasklets.split(",")]
    wanted = set(args.kernels.split(",")) if args.kernels else None
    kernels = [k for k in list_kernels()
               if (k.name in wanted if wanted else k.root.parent.name in SUITES)]
    console, toolchain, rows = Console(), ProxyToolchain(), []
    with Progress(console=console, transient=True) as progress:
        task = progress.add_task("kernels", total=len(kernels))
        for kernel in kernels:
            progress.update(task, description=kernel.name)
            rows += measure(kernel, tasklets, args.preset, toolchain)
            progress.advance(task)
    table = Table(title=f"kernel suite, 1 DPU, {args.preset} preset, O2")
    for column in ("kernel", "size", *(f"T={t}" for t in tasklets), "IPC@16", "DMA MB", "routines %"):
        table.add_column(column, justify="right" if column != "kernel" else "left")
    for kernel in kernels:
        mine = {r["tasklets"]: r for r in rows if r["kernel"] == kernel.name}
        last = mine.get(max(tasklets), {})
        cells = [f"{mine[t]['speedup']:.2f}x" if "speedup" in mine.get(t, {}) else "fail" for t in tasklets]
        table.add_row(kernel.name, f"{mine[tasklets[0]]['size']:,}", *cells,
                      f"{last.get('ipc', 0):.2f}", f"{last.get('dma_bytes', 0) / 1e6:.1f}",
                      f"{100 * last.get('routine_share', 0):.1f}")
    console.print(table)
    for r in rows:
        if "error" in r:
            console.print(f"[red]{r['kernel']} T={r['tasklets']}: {r['error']}[/]")
    script_io.write_json(args.out / "suite_report.json", rows)
    plot(rows, tasklets, args.out / "suite_speedup.png")
    console.print(f"wrote {args.out / 'suite_report.json'} and {args.out / 'suite_speedup.png'}")


if __name__ == "__main__":
    main()
