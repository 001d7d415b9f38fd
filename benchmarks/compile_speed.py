"""Compile throughput on one core: compile + link + the cost model's features, per variant.

Two workloads on va, each variant new (the toolchain is warm: runtime objects and compiler_rt
are built, and va's IR and one knob process exist before timing):
- random: 20-pass random pipelines (L2P's space, issue 2);
- knobs: the tuner's knob pipelines (O2/O3 with unroll knobs, optimised in the toolchain's
  per-knob-set process) at every tasklet count 1..16, which changes va's IR.
The features are the ones the tuner scores (`model_features`: the lowered DPU code). Targets:
>= 50 variants per second per core on random pipelines (issue 40), >= 20 on knob pipelines
(issue 17), whose unrolled code takes longer to optimise and generate.

    python benchmarks/compile_speed.py [--count 200] [--length 20] [--json benchmarks/results/compile_speed.json]

Exit status: 0 the target met; 1 missed.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import script_io
from rich.console import Console
from rich.progress import track

from cnmtune.costmodel import model_features
from cnmtune.display import Table
from cnmtune.passes import knob_pipelines, random_pipeline
from cnmtune.runtime import Kernel
from cnmtune.runtime.toolchain import BuildCache, ProxyToolchain, Variant

VA = Path(__file__).resolve().parent / "prim" / "va"
TARGETS = {"random": 50, "knobs": 20}  # variants per second per core


def timed(toolchain: ProxyToolchain, variants: list[Variant], label: str) -> dict:
    """Compile, link and extract the model's features of every variant; medians per stage."""
    stages: dict[str, list[float]] = {"compile+link": [], "features": [], "total": []}
    failures = 0
    wall = time.perf_counter()
    for variant in track(variants, description=label, transient=True):
        start = time.perf_counter()
        try:
            binary = toolchain.compile(variant)
        except Exception:  # a pipeline that breaks the program counts as a failed variant
            failures += 1
            continue
        built = time.perf_counter()
        model_features(binary.elf_path)
        done = time.perf_counter()
        stages["compile+link"].append(built - start)
        stages["features"].append(done - built)
        stages["total"].append(done - start)
    wall = time.perf_counter() - wall
    return {"variants": len(variants), "failures": failures, "wall_seconds": round(wall, 3),
            "variants_per_second": round(len(variants) / wall, 2),
            "median_ms": {k: round(1000 * statistics.median(v), 2) for k, v in stages.items() if v}}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=200, help="random pipelines to time")
    parser.add_argument("--length", type=int, default=20, help="passes per random pipeline")
    parser.add_argument("--tasklets", type=int, default=16, help="tasklets of the random workload")
    parser.add_argument("--seed", type=int, default=1000)
    script_io.json_option(parser, "compile_speed.json")
    args = parser.parse_args()

    kernel = Kernel.load(VA)
    knobbed = knob_pipelines()
    with tempfile.TemporaryDirectory(prefix="cnmtune-speed-") as tmp:
        toolchain = ProxyToolchain(BuildCache(Path(tmp)))
        model_features(toolchain.compile(Variant.of(kernel, "O0", args.tasklets)).elf_path)  # warm-up
        toolchain.compile(Variant.of(kernel, knobbed[0], args.tasklets))  # starts a knob process
        random = [Variant.of(kernel, random_pipeline(args.length, seed=args.seed + i), args.tasklets)
                  for i in range(args.count)]
        knobs = [Variant.of(kernel, pipeline, tasklets) for tasklets in range(1, 17) for pipeline in knobbed
                 if (pipeline, tasklets) != (knobbed[0], args.tasklets)]
        workloads = {"random": timed(toolchain, random, f"{args.length}-pass random pipelines"),
                     "knobs": timed(toolchain, knobs, "knob pipelines x tasklets")}
    result = {"kernel": "va", "passes_per_pipeline": args.length, "target_per_second": TARGETS,
              "workloads": workloads, "toolchain": toolchain.identity}
    table = Table(title="compile speed: va, compile + link + model features, one core")
    for column in ("workload", "variants", "failed", "compile ms", "features ms", "per second", "target"):
        table.add_column(column, justify="left" if column in ("workload", "target") else "right")
    for name, found in workloads.items():
        rate, ms = found["variants_per_second"], found["median_ms"]
        table.add_row(name, str(found["variants"]), str(found["failures"]), f"{ms['compile+link']:.1f}",
                      f"{ms['features']:.1f}", f"{rate:.1f}",
                      f">= {TARGETS[name]} " + script_io.verdict(rate >= TARGETS[name]))
    console = Console()
    console.print(table)
    console.print("compile (+ link) and features: medians per variant; per second: all variants over the wall time")
    console.print(f"wrote {script_io.write_json(args.json, result)}")
    return 0 if all(found["variants_per_second"] >= TARGETS[name] for name, found in workloads.items()) else 1


if __name__ == "__main__":
    raise SystemExit(main())
