"""Compile throughput: 20-pass random pipelines on va, compile + link + features, one core.

The toolchain is warm (runtime objects, compiler_rt and va's -O0 IR are built once before
timing); every timed pipeline is new, so each one runs the passes, code generation, the link
and feature extraction for real. Target (issue 2): >= 20 per second per core.

    python benchmarks/compile_speed.py [--count 200] [--length 20] [--json out/compile_speed.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.progress import track
from rich.table import Table

from cnmtune.costmodel import extract_features
from cnmtune.passes import random_pipeline
from cnmtune.runtime import Kernel
from cnmtune.runtime.toolchain import BuildCache, ProxyToolchain, Variant
from cnmtune.atomic import atomic_write

VA = Path(__file__).resolve().parent / "prim" / "va"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=200, help="pipelines to time")
    parser.add_argument("--length", type=int, default=20, help="passes per pipeline")
    parser.add_argument("--tasklets", type=int, default=16)
    parser.add_argument("--seed", type=int, default=1000)
    parser.add_argument("--json", type=Path, help="write the result as JSON here")
    args = parser.parse_args()

    kernel = Kernel.load(VA)
    with tempfile.TemporaryDirectory(prefix="cnmtune-speed-") as tmp:
        toolchain = ProxyToolchain(BuildCache(Path(tmp)))
        extract_features(toolchain.compile(Variant.of(kernel, "O0", args.tasklets)).elf_path)  # warm-up
        stages = {"compile+link": [], "features": [], "total": []}
        failures = 0
        pipelines = [random_pipeline(args.length, seed=args.seed + i) for i in range(args.count)]
        wall = time.perf_counter()
        for pipeline in track(pipelines, description="compiling", transient=True):
            start = time.perf_counter()
            try:
                binary = toolchain.compile(Variant.of(kernel, pipeline, args.tasklets))
            except Exception:  # a pipeline that breaks the program counts as a failed variant
                failures += 1
                continue
            built = time.perf_counter()
            extract_features(binary.elf_path)
            done = time.perf_counter()
            stages["compile+link"].append(built - start)
            stages["features"].append(done - built)
            stages["total"].append(done - start)
        wall = time.perf_counter() - wall

    rate = args.count / wall
    result = {
        "kernel": "va", "pipelines": args.count, "passes_per_pipeline": args.length, "failures": failures,
        "wall_seconds": round(wall, 3), "variants_per_second": round(rate, 2), "target_per_second": 20,
        "median_ms": {k: round(1000 * statistics.median(v), 2) for k, v in stages.items() if v},
        "toolchain": toolchain.identity,
    }
    table = Table(title="compile speed: va, random pipelines, one core")
    table.add_column("measure")
    table.add_column("value", justify="right")
    table.add_row("pipelines x passes", f"{args.count} x {args.length}")
    for stage, ms in result["median_ms"].items():
        table.add_row(f"median {stage} (ms)", f"{ms:.1f}")
    table.add_row("failed variants", str(failures))
    table.add_row("variants / second", f"{rate:.1f}")
    table.add_row("target", ">= 20 / s / core " + ("[green]met[/]" if rate >= 20 else "[red]missed[/]"))
    Console().print(table)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(args.json, (json.dumps(result, indent=2) + "\n").encode())


if __name__ == "__main__":
    main()
