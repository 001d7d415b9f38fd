"""Screening runs against full runs: the kernel time of the sampled-DPU simulator next to the full one.

For every kernel (default: the prim and pim-ml suites) at --size (default: its default preset),
built at -O2 with the workload's defines and tasklets, and every DPU count of --dpus: one full
run (every DPU simulated, verified) and one screening run (cnmtune.runtime.sampled: only the
first and the last DPU simulated, nothing verified), as the tuner makes them from 16 DPUs on. The
table gives both kernel times, the screening run's error and how much less wall time it took;
where the error is not zero, the slowest DPU is neither the first nor the last (work that depends
on the data, or a partitioning that loads the middle DPUs most).

    python benchmarks/sampled_accuracy.py [--kernels prim,pim-ml] [--dpus 16,64] [--size default]
        [--json benchmarks/results/sampled_accuracy.json]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

import script_io
from rich.console import Console
from rich.progress import Progress

from cnmtune.display import Table
from cnmtune.errors import CnmtuneError
from cnmtune.runtime.registry import expand_kernels, find_kernel
from cnmtune.runtime.target import SampledSimTarget, SimTarget
from cnmtune.runtime.toolchain import ProxyToolchain, Variant


def measure(kernel_name: str, dpus: int, size: str) -> dict:
    """One kernel on `dpus` DPUs: the full run and the screening run of its default build."""
    kernel = find_kernel(kernel_name)
    total = kernel.workload.size_of(size)
    binary = ProxyToolchain().compile(Variant.of(kernel, "O2", kernel.workload.nr_tasklets))
    row = {"kernel": kernel.name, "size": total, "dpus": dpus, "tasklets": kernel.workload.nr_tasklets}
    for name, target in (("full", SimTarget()), ("screened", SampledSimTarget())):
        start = time.perf_counter()
        try:
            result = target.run_binary(binary, dpus, total)
        except CnmtuneError as exc:
            return {**row, "error": f"{name} run: {exc}"}
        row[f"{name}_s"], row[f"{name}_wall_s"] = result.kernel_s, time.perf_counter() - start
    row["error_pct"] = 100 * (row["screened_s"] / row["full_s"] - 1)
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kernels", default="prim,pim-ml")
    parser.add_argument("--dpus", default="16,64")
    parser.add_argument("--size", default="default", help="size preset (or element count) of every kernel")
    script_io.json_option(parser, "sampled_accuracy.json", "the rows")
    args = parser.parse_args()
    console = Console(width=None if sys.stdout.isatty() else 140)
    rows = []
    kernels = expand_kernels(args.kernels.split(","))
    counts = [int(d) for d in args.dpus.split(",")]
    with Progress(console=console, transient=True) as bar:
        task = bar.add_task("runs", total=len(kernels) * len(counts))
        for kernel in kernels:
            for dpus in counts:
                bar.update(task, description=f"{kernel} on {dpus} DPUs")
                rows.append(measure(kernel, dpus, args.size))
                bar.advance(task)
                # after every row: a long run keeps what it measured
                script_io.write_json(args.json, {"args": vars(args) | {"json": str(args.json)}, "rows": rows})
    table = Table(title=f"screening runs (first and last DPU) vs full runs, -O2, {args.size} sizes")
    for column in ("kernel", "size", "DPUs", "full ms", "screened ms", "error", "full wall s", "screened wall s",
                   "less wall"):
        table.add_column(column, justify="left" if column == "kernel" else "right")
    for r in rows:
        if "error" in r:
            table.add_row(r["kernel"], f"{r['size']:,}", str(r["dpus"]), r["error"][:60], *["-"] * 5)
            continue
        table.add_row(r["kernel"], f"{r['size']:,}", str(r["dpus"]), f"{1e3 * r['full_s']:,.3f}",
                      f"{1e3 * r['screened_s']:,.3f}", f"{r['error_pct']:+.2f} %", f"{r['full_wall_s']:.1f}",
                      f"{r['screened_wall_s']:.1f}", f"{r['full_wall_s'] / r['screened_wall_s']:.1f}x")
    console.print(table)
    ok = [r for r in rows if "error" not in r]
    if ok:
        exact = sum(abs(r["error_pct"]) < 0.01 for r in ok)
        console.print(f"{exact} of {len(ok)} runs exact (< 0.01 %); mean |error| "
                      f"{statistics.mean(abs(r['error_pct']) for r in ok):.2f} %, largest "
                      f"{max(abs(r['error_pct']) for r in ok):.2f} %; wall time "
                      f"{sum(r['full_wall_s'] for r in ok) / sum(r['screened_wall_s'] for r in ok):.1f}x less")


if __name__ == "__main__":
    main()
