"""Design-sweep speed: 3 DpuConfig parameters x 3 kernels from stored traces (issue 7, part 4).

Records each kernel's run once into a trace store (timed separately, not part of the target),
then times what a later `cnmtune sweep` does: load the stored traces from disk and price the
full factorial grid (3 levels of frequency_mhz, revolver and dma_beta: 27 design points per
kernel) by checked re-timing. Target: < 60 s for the three kernels.

    python benchmarks/sweep_speed.py [--kernels va,red,gemv] [--size default] [--dpus 4]
        [--traces DIR] [--json benchmarks/results/sweep_speed.json]

Exit status: 0 the target met; 1 missed.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import script_io
from rich.console import Console

from cnmtune.display import Table
from cnmtune.plugin.sweep.design import design_points
from cnmtune.plugin.sweep.evaluate import sweep_trace_set
from cnmtune.runtime.sim.traces import load_trace_set, obtain_trace_set
from cnmtune.runtime.registry import find_kernel
from cnmtune.runtime.sim.config import DpuConfig
from cnmtune.runtime.toolchain import ProxyToolchain, Variant

GRID = {"frequency_mhz": (267.0, 350.0, 400.0), "revolver": (8, 11, 14), "dma_beta": (0.25, 0.5, 1.0)}
TARGET_S = 60.0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kernels", default="va,red,gemv")
    parser.add_argument("--size", default="default", help="a preset or a number (each kernel's own unit)")
    parser.add_argument("--dpus", type=int, default=4)
    parser.add_argument("--traces", type=Path, help="trace store (default: a temporary directory)")
    script_io.json_option(parser, "sweep_speed.json")
    args = parser.parse_args()
    kernels = [k.strip() for k in args.kernels.split(",") if k.strip()]
    base = DpuConfig.calibrated()
    points = design_points(base, GRID)
    toolchain = ProxyToolchain()
    with tempfile.TemporaryDirectory(prefix="cnmtune-sweep-") as tmp:
        root = args.traces or Path(tmp)
        directories, recording = {}, {}
        for name in kernels:
            kernel = find_kernel(name)
            size = kernel.workload.size_of(args.size, what="--size")
            start = time.perf_counter()
            trace_set, _ = obtain_trace_set(Variant.of(kernel, "O2"), args.dpus, size, root=root, toolchain=toolchain)
            recording[name] = time.perf_counter() - start
            directories[name] = trace_set.directory
        rows = []
        start = time.perf_counter()
        for name in kernels:
            t0 = time.perf_counter()
            trace_set = load_trace_set(directories[name])
            loaded = time.perf_counter() - t0
            result = sweep_trace_set(trace_set, points, toolchain=toolchain)
            methods = result.to_dict()["methods"]
            rows.append({"kernel": name, "size": trace_set.size, "dpus": trace_set.dpus,
                         "segments": sum(len(t) for launch in trace_set.launches for t in launch.traces),
                         "points": len(points), "load_s": loaded, "sweep_s": result.seconds,
                         "record_s": recording[name], "methods": methods,
                         "most_important": result.most_important})
        total = time.perf_counter() - start
    table = Table(title=f"sweep of {len(GRID)} parameters ({len(points)} points) x {len(kernels)} kernels "
                        "from stored traces")
    for column in ("kernel", "size", "DPUs", "segments", "load s", "sweep s", "retimed", "re-executed",
                   "most important", "recording s (not timed)"):
        table.add_column(column, justify="left" if column in ("kernel", "most important") else "right")
    for r in rows:
        table.add_row(r["kernel"], f"{r['size']:,}", str(r["dpus"]), f"{r['segments']:,}", f"{r['load_s']:.2f}",
                      f"{r['sweep_s']:.2f}", str(r["methods"]["retimed"] + r["methods"]["recorded"]),
                      str(r["methods"]["re-executed"]), r["most_important"], f"{r['record_s']:.2f}")
    console = Console()
    console.print(table)
    met = total < TARGET_S
    console.print(f"total from stored traces: {total:.2f} s (target < {TARGET_S:.0f} s: {script_io.verdict(met)})",
                  highlight=False)
    record = {"grid": {k: list(v) for k, v in GRID.items()}, "kernels": rows, "total_s": total,
              "target_s": TARGET_S, "meets_target": met}
    console.print(f"wrote {script_io.write_json(args.json, record, sort_keys=True)}", highlight=False)
    return 0 if met else 1


if __name__ == "__main__":
    raise SystemExit(main())
