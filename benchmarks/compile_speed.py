"""Compile throughput on one core: compile + link + the cost model's features, per variant.

Two workloads on va, each variant new (the toolchain is warm: runtime objects and compiler_rt
are built, and va's IR and one knob process exist before timing):
- random: 20-pass random pipelines (L2P's space, issue 2);
- knobs: the tuner's knob pipelines (O2/O3 with unroll knobs, optimised in the toolchain's
  per-knob-set process) at every tasklet count 1..16 (--knob-tasklets), which changes va's IR.
The features are the ones the tuner scores (`model_features`: the lowered DPU code). Targets:
>= 50 variants per second per core on random pipelines (issue 40), >= 20 on knob pipelines
(issue 17), whose unrolled code takes longer to optimise and generate.

A second table times each stage of a compile apart on --stages other random pipelines (a new
cache: nothing is a hit): LLVM's optimisation and code generation, the link, the lowering
the IRAM rule reads, the features; and what a compile through the toolchain adds to them (the
build cache's files and their accounting, the content keys with the kernel's hash, the ELF's
hash): the same pipeline compiled as the first table compiles it, right after its stages, less
their sum (the stages' ELF is linked at another stack size, so that neither reuses the other's
lowering). LLVM's two stages bound the rate from above: the rate with every stage of cnmtune's
own taking no time; what the random target leaves cnmtune's own stages (20 ms a variant less
LLVM's) is printed next to what they take.

    python benchmarks/compile_speed.py [--count 200] [--length 20] [--knob-tasklets 16] [--stages 100]
        [--json benchmarks/results/compile_speed.json]

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
from cnmtune.runtime.toolchain.layout import read_memory_use

VA = Path(__file__).resolve().parent / "prim" / "va"
TARGETS = {"random": 50, "knobs": 20}  # variants per second per core
STAGES = ("optimize (LLVM)", "codegen (LLVM)", "link", "lowering (IRAM rule)", "features")
BOOKKEEPING = "build cache, keys"  # what ProxyToolchain.compile adds to the stages


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


def stage_times(toolchain: ProxyToolchain, variants: list[Variant]) -> dict[str, float]:
    """Median milliseconds of each stage of a compile, run apart on `variants` (of one
    single-source kernel; none cached before; a variant whose pipeline breaks the program is
    left out): what ``ProxyToolchain.compile`` and the features cost, stage by stage, and what
    the compile adds to its stages (BOOKKEEPING: per variant, the whole compile, as `timed` runs
    it, less the sum)."""
    stages: dict[str, list[float]] = {name: [] for name in (*STAGES, BOOKKEEPING)}
    with tempfile.TemporaryDirectory(prefix="cnmtune-stages-") as tmp:
        for k, variant in enumerate(track(variants, description="stages apart", transient=True)):
            ir = toolchain.frontend(variant, variant.kernel.sources[0])  # cached: the same IR each time
            obj, elf = Path(tmp) / f"{k}.o", Path(tmp) / f"{k}.elf"
            marks = [time.perf_counter()]
            try:
                module = toolchain.optimize(ir, variant.pipeline)
                marks.append(time.perf_counter())
                obj.write_bytes(toolchain.codegen(module))
                marks.append(time.perf_counter())
                # another stack size than the whole compile's below: other ELF bytes, so that
                # neither reuses the lowering the other made (the lowering is kept by content)
                toolchain.link([obj], elf, variant.nr_tasklets, variant.stack_size + 8, variant.label)
                marks.append(time.perf_counter())
                read_memory_use(elf)  # the lowering of the IRAM rule, which the features then reuse
                marks.append(time.perf_counter())
                model_features(elf)
                marks.append(time.perf_counter())
                model_features(toolchain.compile(variant).elf_path)  # as `timed` compiles it
                marks.append(time.perf_counter())
            except Exception:  # as in `timed`: a failed variant
                continue
            parts = [end - begin for begin, end in zip(marks, marks[1:])]
            for name, part in zip(STAGES, parts[:-1]):
                stages[name].append(part)
            stages[BOOKKEEPING].append(parts[-1] - sum(parts[:-1]))
    if not stages[STAGES[0]]:
        raise SystemExit("compile_speed: every pipeline timed stage by stage failed")
    return {name: round(1000 * statistics.median(times), 2) for name, times in stages.items()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=200, help="random pipelines to time")
    parser.add_argument("--length", type=int, default=20, help="passes per random pipeline")
    parser.add_argument("--tasklets", type=int, default=16, help="tasklets of the random workload")
    parser.add_argument("--knob-tasklets", type=int, default=16,
                        help="the knob pipelines are built at every tasklet count from 1 to this")
    parser.add_argument("--seed", type=int, default=1000)
    parser.add_argument("--stages", type=int, default=100, help="random pipelines whose stages are timed apart")
    script_io.json_option(parser, "compile_speed.json")
    args = parser.parse_args()
    if min(args.count, args.stages, args.knob_tasklets) < 1:
        parser.error("--count, --stages and --knob-tasklets need at least 1")

    kernel = Kernel.load(VA)
    knobbed = knob_pipelines()
    with tempfile.TemporaryDirectory(prefix="cnmtune-speed-") as tmp:
        toolchain = ProxyToolchain(BuildCache(Path(tmp)))
        model_features(toolchain.compile(Variant.of(kernel, "O0", args.tasklets)).elf_path)  # warm-up
        toolchain.compile(Variant.of(kernel, knobbed[0], args.tasklets))  # starts a knob process
        random = [Variant.of(kernel, random_pipeline(args.length, seed=args.seed + i), args.tasklets)
                  for i in range(args.count)]
        knobs = [Variant.of(kernel, pipeline, tasklets) for tasklets in range(1, args.knob_tasklets + 1)
                 for pipeline in knobbed
                 if (pipeline, tasklets) != (knobbed[0], args.tasklets)]
        workloads = {"random": timed(toolchain, random, f"{args.length}-pass random pipelines"),
                     "knobs": timed(toolchain, knobs, "knob pipelines x tasklets")}
        others = [Variant.of(kernel, random_pipeline(args.length, seed=args.seed + args.count + i), args.tasklets)
                  for i in range(args.stages)]  # pipelines not timed above: their ELFs are new here too
        stages = stage_times(toolchain, others)
    llvm_ms = stages["optimize (LLVM)"] + stages["codegen (LLVM)"]
    own_ms = sum(stages.values()) - llvm_ms  # cnmtune's: link, lowering, features, build cache
    own_budget_ms = 1000 / TARGETS["random"] - llvm_ms  # what the random target leaves them
    result = {"kernel": "va", "passes_per_pipeline": args.length, "target_per_second": TARGETS,
              "workloads": workloads, "stages_median_ms": stages,
              "llvm_bound_per_second": round(1000 / llvm_ms, 1), "own_stages_ms": round(own_ms, 2),
              "own_stages_budget_ms": round(own_budget_ms, 2), "toolchain": toolchain.identity}
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
    parts = Table(title=f"where a random pipeline's variant goes, stage by stage ({args.stages} variants, medians)")
    for column in ("stage", "ms", "share"):
        parts.add_column(column, justify="left" if column == "stage" else "right")
    total = sum(stages.values())
    for name, ms in stages.items():
        parts.add_row(name, f"{ms:.2f}", f"{100 * ms / total:.0f} %")
    parts.add_row("sum", f"{total:.2f}", "100 %")
    console.print(parts)
    console.print(f"LLVM alone (optimize + codegen, {llvm_ms:.1f} ms) allows at most {1000 / llvm_ms:.0f} variants "
                  "per second per core")
    console.print(f"the random target ({TARGETS['random']} per second: {1000 / TARGETS['random']:.0f} ms a variant) "
                  f"leaves cnmtune's own stages (link, lowering, features, build cache) {own_budget_ms:.1f} ms; "
                  f"they take {own_ms:.1f} ms")
    console.print(f"wrote {script_io.write_json(args.json, result)}")
    return 0 if all(found["variants_per_second"] >= TARGETS[name] for name, found in workloads.items()) else 1


if __name__ == "__main__":
    raise SystemExit(main())
