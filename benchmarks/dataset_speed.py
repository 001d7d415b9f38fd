"""Dataset generation speed: measured on small kernels, projected to reference dataset v2.

Measured: `generate` for each of --kernels with --pipelines pipelines x the --dpus x --tasklets
grid at --sizes, on --workers local processes, into a fresh store and a fresh build cache:
wall time, samples per second (training samples = compile x grid point), simulations per
second, the fraction of simulations saved by binary dedup, and the parallel efficiency (busy
seconds of the workers / their wall seconds).

Projected (issue 17 target: reference dataset v2 in <= 10 h on 2 cores): the v2 spec (every
--project-kernels kernel; --project-pipelines pipelines of the L2P set plus the knob
pipelines; sizes ladder:4 from the small preset to the default; each tuned define at the default
and --define-values - 1 other values; DPUs 1,4,16,64 x tasklets 1..16 without L2P's T >= D rule;
points where a DPU gets more than --per-dpu-limit of the default input skipped; runs from
--sampled-from DPUs on simulate the first and last DPU) is planned exactly as `generate` plans
it (cnmtune.plugin.dataset.generate.plan_kernel), with the same sampling check, whose time
counts, and per kernel two measured ingredients price it:
- compile seconds per variant, and the dedup fraction and compile failures of every
  (define setting, tasklets) group, from compiling --dedup-pipelines pipelines of the spec's
  set in every group;
- simulation seconds of every distinct (DPUs, size) point (the sampled ones only where the
  kernel passes the sampling check of `generate`), the mean of O0, O2 and one random
  pipeline at the default defines and the largest tasklet count that has the point (tasklets and
  block size change what each instruction costs more than how many there are);
then core-seconds = sum over groups of pipelines x (compile + (1 - failures) x (1 - dedup) x
sum of the group's point costs), divided by the worker count and the measured parallel
efficiency.

    python benchmarks/dataset_speed.py [--workers 2] [--json benchmarks/results/dataset_speed.json]

Exit status: 0 the projection meets the target (or none was asked for); 1 it misses.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import script_io
from rich.console import Console
from rich.progress import Progress

from cnmtune.display import Table
from cnmtune.plugin.dataset.generate import (SAMPLED, DatasetSpec, drop_inexact_sampling, generate, pipeline_texts,
                                             plan_kernel, sampling_error)
from cnmtune.plugin.jobs import CompileJob, RunJob, compile_job, run_job
from cnmtune.runtime.executor import ProcessExecutor
from cnmtune.runtime.registry import expand_kernels
from cnmtune.store import Status, Store

TARGET_HOURS = 10


def _ints(text: str) -> tuple[int, ...]:
    return tuple(int(x) for x in text.split(","))


def measure_generation(kernel: str, args, progress: Progress) -> dict:
    """Generate one kernel's dataset into a fresh store; the figures of that run."""
    spec = DatasetSpec(kernels=(kernel,), pipelines=args.pipelines, dpus=_ints(args.dpus),
                       tasklets=_ints(args.tasklets), sizes=(args.sizes,))
    with tempfile.TemporaryDirectory(prefix="cnmtune-dataset-") as tmp:
        task = progress.add_task(f"{kernel}: generate", total=None)
        with Store(Path(tmp) / "data.sqlite") as store, ProcessExecutor(args.workers) as executor:
            report = generate(spec, store, executor,
                              lambda phase, done, total: progress.update(
                                  task, description=f"{kernel}: {phase}", completed=done, total=total))
            stats = store.stats()
            busy = sum(r.seconds for r in store.runs()) + sum(c.seconds for c in store.compiles())
    return {
        "kernel": kernel, "wall_seconds": report.seconds, "samples": stats.samples,
        "compiles": report.compiles_done, "simulations": report.runs_done,
        "samples_per_second": stats.samples / report.seconds,
        "simulations_per_second": report.runs_done / report.seconds,
        "dedup_fraction": report.dedup_fraction,
        "parallel_efficiency": busy / (report.seconds * args.workers),
        "failures": {**{f"compile {k}": v for k, v in report.compile_status.items() if k != "ok"},
                     **{f"run {k}": v for k, v in report.run_status.items() if k != "ok"}},
    }


def _drain(executor: ProcessExecutor, progress: Progress, description: str, total: int) -> list:
    task = progress.add_task(description, total=total)
    out = []
    for outcome in executor.results():
        if outcome.ok:
            out.extend(outcome.value)
        progress.advance(task)
    return out


def project_spec(args) -> DatasetSpec:
    """Reference dataset v2 as the command line sets it."""
    return DatasetSpec(kernels=tuple(expand_kernels(args.project_kernels.split(","))),
                       pipelines=args.project_pipelines, dpus=_ints(args.project_dpus),
                       tasklets=_ints(args.project_tasklets), sizes=tuple(args.project_sizes.split(",")),
                       knobs=True, define_values=args.define_values, tasklets_at_least_dpus=False,
                       per_dpu_limit=args.per_dpu_limit, sampled_from=args.sampled_from)


def project_kernel(kernel_name: str, spec: DatasetSpec, args, executor: ProcessExecutor,
                   progress: Progress) -> dict:
    """One kernel's part of the v2 spec, priced by measured compiles and simulations."""
    plan = plan_kernel(spec, kernel_name)
    check_start = time.perf_counter()
    error = sampling_error(spec, plan)
    check_s = time.perf_counter() - check_start
    drop_inexact_sampling(spec, plan, error)
    root = str(plan.kernel.root)
    measured = pipeline_texts(replace(spec, pipelines=args.dedup_pipelines))
    tasklets_of: dict[str, list[int]] = {}
    for key, tasklets in sorted(plan.points):
        tasklets_of.setdefault(key, []).append(tasklets)
    for key, counts in tasklets_of.items():
        for text in measured:
            executor.submit(compile_job, CompileJob(root, text, tuple(counts), plan.settings[key]))
    compiled = [c.record for c in _drain(executor, progress, f"{kernel_name}: compile",
                                          len(tasklets_of) * len(measured))]
    default_key = next(iter(plan.settings))  # the workload's own defines come first
    groups = {}
    for group in plan.points:
        recs = [c for c in compiled if (c.defines, c.tasklets) == group]
        ok = [c for c in recs if c.ok]
        groups[group] = {"usable": len(ok) / len(recs) if recs else 0.0,
                         "dedup": 1 - len({c.elf_hash for c in ok}) / len(ok) if ok else 0.0}
    binaries = {(c.pipeline, c.tasklets): c for c in compiled if c.ok and c.defines == default_key}
    samples = [text for text in measured if text in ("O0", "O2")] + measured[4:5]
    where: dict[tuple[int, int], int] = {}  # point -> the largest tasklet count with it
    for (key, tasklets), points in plan.points.items():
        for point in points:
            if key == default_key:
                where[point] = max(where.get(point, 0), tasklets)
    jobs = 0
    for (dpus, size), tasklets in sorted(where.items()):
        device = SAMPLED if spec.sampled_from is not None and dpus >= spec.sampled_from else "sim"
        for text in samples:
            rec = binaries.get((text, tasklets))
            if rec is not None:
                executor.submit(run_job, RunJob(root, text, tasklets, rec.elf_hash, ((dpus, size),), spec.sim_config,
                                                spec.budget, 0, device=device))
                jobs += 1
    runs = _drain(executor, progress, f"{kernel_name}: simulate", jobs)
    cost: dict[tuple[int, int], list[float]] = {}
    for r in runs:
        if r.status is Status.OK:  # a sampled run is not verified
            cost.setdefault((r.dpus, r.size), []).append(r.seconds)
    point_seconds = {p: statistics.mean(v) for p, v in cost.items()}
    unpriced = sorted(p for p in where if p not in point_seconds)
    compile_s = statistics.mean(c.seconds for c in compiled) if compiled else 0.0
    pipelines = len(pipeline_texts(spec))
    compile_core_s, simulate_core_s = 0.0, check_s
    for group, points in plan.points.items():
        g = groups[group]
        compile_core_s += pipelines * compile_s
        simulate_core_s += pipelines * g["usable"] * (1 - g["dedup"]) * sum(
            point_seconds.get(p, 0.0) for p in points)
    variants = sum(len(points) for points in plan.points.values())
    return {
        "kernel": kernel_name, "define_settings": len(plan.settings), "groups": len(plan.points),
        "compiles": pipelines * len(plan.points), "samples": pipelines * variants,
        "points": len(where), "skipped_points": plan.invalid, "unpriced_points": unpriced,
        "sampling_error": error,
        "compile_seconds": compile_s,
        "usable": statistics.mean(g["usable"] for g in groups.values()) if groups else 0.0,
        "dedup_fraction": statistics.mean(g["dedup"] for g in groups.values()) if groups else 0.0,
        "point_seconds": {f"{d}x{s}": v for (d, s), v in sorted(point_seconds.items())},
        "compile_core_hours": compile_core_s / 3600, "simulate_core_hours": simulate_core_s / 3600,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kernels", default="va,gemv", help="kernels of the measured generation ('' skips it)")
    parser.add_argument("--pipelines", type=int, default=40)
    parser.add_argument("--dpus", default="1,2,4")
    parser.add_argument("--tasklets", default="4,16")
    parser.add_argument("--sizes", default="small", help="size preset of every measured kernel")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--project-kernels", default="prim,pim-ml", help="kernels of the projection ('' skips it)")
    parser.add_argument("--project-pipelines", type=int, default=40, help="L2P pipelines of v2 (the knob ones come on top)")
    parser.add_argument("--project-sizes", default="ladder:4")
    parser.add_argument("--project-dpus", default="1,4,16,64")
    parser.add_argument("--project-tasklets", default="1,2,4,8,16")
    parser.add_argument("--define-values", type=int, default=3)
    parser.add_argument("--per-dpu-limit", type=float, default=1 / 16)
    parser.add_argument("--sampled-from", type=int, default=16)
    parser.add_argument("--dedup-pipelines", type=int, default=12, help="pipelines compiled per group to measure")
    script_io.json_option(parser, "dataset_speed.json")
    args = parser.parse_args()

    console = Console()
    result: dict = {"measured": [], "projection": None, "args": vars(args) | {"json": str(args.json)}}
    with tempfile.TemporaryDirectory(prefix="cnmtune-cache-") as cache, Progress(console=console,
                                                                                  transient=True) as progress:
        os.environ["CNMTUNE_CACHE_DIR"] = cache  # real compiles: workers inherit the empty cache
        for kernel in filter(None, args.kernels.split(",")):
            result["measured"].append(measure_generation(kernel, args, progress))
        if args.project_kernels:
            spec = project_spec(args)
            start = time.time()
            with ProcessExecutor(args.workers) as executor:
                per_kernel = [project_kernel(k, spec, args, executor, progress) for k in spec.kernels]
            result["projection"] = _projection(spec, per_kernel, result["measured"], args.workers)
            result["projection"]["measure_seconds"] = time.time() - start

    _print(console, result)
    console.print(f"wrote {script_io.write_json(args.json, result)}")
    projection = result["projection"]
    return 1 if projection and projection["wall_hours"] > projection["target_hours"] else 0


def _projection(spec: DatasetSpec, per_kernel: list[dict], measured: list[dict], workers: int) -> dict:
    efficiency = statistics.mean(m["parallel_efficiency"] for m in measured) if measured else 1.0
    compile_h = sum(k["compile_core_hours"] for k in per_kernel)
    simulate_h = sum(k["simulate_core_hours"] for k in per_kernel)
    return {"spec": spec.to_dict(), "pipelines": len(pipeline_texts(spec)), "kernels": per_kernel,
            "samples": sum(k["samples"] for k in per_kernel), "compiles": sum(k["compiles"] for k in per_kernel),
            "parallel_efficiency": efficiency, "efficiency_measured": bool(measured), "workers": workers,
            "compile_core_hours": compile_h, "simulate_core_hours": simulate_h,
            "wall_hours": (compile_h + simulate_h) / (workers * efficiency), "target_hours": TARGET_HOURS}


def _table(title: str, columns: tuple[str, ...]) -> Table:
    """A table whose first column (the kernel) is left-aligned and never wrapped."""
    table = Table(title=title)
    for k, column in enumerate(columns):
        table.add_column(column, justify="left" if k == 0 else "right", no_wrap=k == 0)
    return table


def _print(console: Console, result: dict) -> None:
    if result["measured"]:
        table = _table("dataset generation, measured",
                       ("kernel", "samples", "sims", "wall s", "samples/s", "sims/s", "dedup", "eff."))
        for m in result["measured"]:
            table.add_row(m["kernel"], str(m["samples"]), str(m["simulations"]), f"{m['wall_seconds']:.0f}",
                          f"{m['samples_per_second']:.1f}", f"{m['simulations_per_second']:.1f}",
                          f"{100 * m['dedup_fraction']:.0f}%", f"{100 * m['parallel_efficiency']:.0f}%")
        console.print(table)
        for m in result["measured"]:
            if m["failures"]:
                console.print(f"[yellow]{m['kernel']}: failures "
                              f"{', '.join(f'{k}: {v}' for k, v in m['failures'].items())}[/]")
    projection = result["projection"]
    if not projection:
        return
    spec = projection["spec"]
    console.print(f"projection of reference dataset v2: {len(projection['kernels'])} kernels x "
                  f"{projection['pipelines']} pipelines, sizes {','.join(spec['sizes'])}, DPUs "
                  f"{','.join(map(str, spec['dpus']))} (sampled from {spec['sampled_from']}), tasklets "
                  f"{','.join(map(str, spec['tasklets']))}, on {projection['workers']} cores")
    plan = _table("what each kernel asks (sampling error: sampled vs full run)",
                  ("kernel", "defines", "samples", "points", "sampling error", "usable", "dedup"))
    cost = _table("what it costs (costliest point: DPUs x size)",
                  ("kernel", "compile ms", "costliest s", "at", "compile h", "simulate h"))
    for k in projection["kernels"]:
        at, seconds = max(k["point_seconds"].items(), key=lambda kv: kv[1], default=("-", 0.0))
        error = "-" if k["sampling_error"] is None else f"{100 * k['sampling_error']:.2f} %"
        plan.add_row(k["kernel"], str(k["define_settings"]), f"{k['samples']:,}", str(k["points"]), error,
                     f"{100 * k['usable']:.0f} %", f"{100 * k['dedup_fraction']:.1f} %")
        cost.add_row(k["kernel"], f"{1000 * k['compile_seconds']:.0f}", f"{seconds:.2f}", at,
                     f"{k['compile_core_hours']:.2f}", f"{k['simulate_core_hours']:.2f}")
    console.print(plan)
    console.print(cost)
    for k in projection["kernels"]:
        if k["unpriced_points"]:
            console.print(f"[yellow]{k['kernel']}: no simulation priced points {k['unpriced_points']} (counted as 0)[/]")
    hours = projection["wall_hours"]
    verdict = script_io.verdict(hours <= projection["target_hours"])
    efficiency = f"{100 * projection['parallel_efficiency']:.0f} %" + ("" if projection["efficiency_measured"]
                                                                       else " (assumed: nothing measured)")
    console.print(f"projected wall time: {hours:.1f} h for {projection['samples']:,} samples of "
                  f"{projection['compiles']:,} compiles (compile {projection['compile_core_hours']:.1f} "
                  f"core-h + simulate {projection['simulate_core_hours']:.1f} core-h, parallel efficiency "
                  f"{efficiency}); target <= {projection['target_hours']} h: {verdict}")


if __name__ == "__main__":
    raise SystemExit(main())
