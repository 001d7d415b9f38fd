"""Dataset generation speed: measured on va and gemv, projected to the full L2P grid.

Measured: `generate` for each of --kernels with --pipelines pipelines x the --dpus x --tasklets
grid at --sizes, on --workers local processes, into a fresh store and a fresh build cache:
wall time, samples per second (training samples = compile x grid point), simulations per
second, and the fraction of simulations saved by binary dedup.

Projected (issue 5 target: 20 kernels x 1,004 pipelines x 15 configurations in < 10 h on
2 cores): per kernel of --project-kernels, three measured ingredients,
- compile seconds per variant and the dedup fraction on the L2P grid, from compiling
  --dedup-pipelines pipelines of the L2P set at tasklets 1, 2, 4, 8, 16 (ELF hashes counted,
  weighted by the grid points of each tasklet count: 1, 2, 3, 4, 5 DPU counts);
- simulation seconds per (binary, grid point), from running O0, O2 and one random pipeline
  at 4 DPUs x 8 tasklets, the size preset --sizes (the total input is fixed, so the simulated
  instructions of a run hardly depend on the grid point: measured 45.4 M at (1, 1) and at
  (4, 16) for va -O0);
then core-seconds = 1004 x 5 x compile + 1004 x 15 x (1 - dedup) x simulate, divided by the
worker count and the parallel efficiency measured in the first part.

    python benchmarks/dataset_speed.py [--workers 2] [--json benchmarks/results/dataset_speed.json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.progress import Progress
from rich.table import Table

from cnmtune.passes import pipeline_set
from cnmtune.plugin.dataset.generate import DatasetSpec, generate
from cnmtune.plugin.jobs import CompileJob, RunJob, compile_job, run_job
from cnmtune.runtime.executor import ProcessExecutor
from cnmtune.runtime.registry import expand_kernels, find_kernel
from cnmtune.atomic import atomic_write
from cnmtune.store import Store

L2P_TASKLETS = (1, 2, 4, 8, 16)
POINTS_PER_TASKLETS = {1: 1, 2: 2, 4: 3, 8: 4, 16: 5}  # DPU counts 1,2,4,8,16 with T >= D
SAMPLE_POINTS = ((4, 8),)  # strong scaling: a run's simulation work barely depends on the point
FULL = {"kernels": 20, "pipelines": 1004, "compiles_per_pipeline": 5, "configs": 15}


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


def project_kernel(kernel_name: str, args, executor: ProcessExecutor, progress: Progress) -> dict:
    """Measured compile cost, L2P-grid dedup and simulation cost of one kernel."""
    kernel = find_kernel(kernel_name)
    root = str(kernel.root)
    pipelines = [p.text for p in pipeline_set(args.dedup_pipelines, seed=0)]
    for text in pipelines:
        executor.submit(compile_job, CompileJob(root, text, L2P_TASKLETS))
    compiled = _drain(executor, progress, f"{kernel.name}: compile", len(pipelines))
    ok = [c.record for c in compiled if c.record.ok]
    points = sum(POINTS_PER_TASKLETS[c.tasklets] for c in ok)
    distinct = sum(POINTS_PER_TASKLETS[t] * len({c.elf_hash for c in ok if c.tasklets == t})
                   for t in {c.tasklets for c in ok})
    samples = [text for text in pipelines if text in ("O0", "O2")] + pipelines[4:5]
    by_key = {(c.pipeline, c.tasklets): c for c in ok}
    jobs = 0
    for text in samples:
        for dpus, tasklets in SAMPLE_POINTS:
            rec = by_key.get((text, tasklets))
            if rec is not None:
                executor.submit(run_job, RunJob(root, text, tasklets, rec.elf_hash,
                                                ((dpus, kernel.workload.preset(args.sizes)),),
                                                "calibrated", DatasetSpec.budget, 0))
                jobs += 1
    runs = _drain(executor, progress, f"{kernel.name}: simulate", jobs)
    run_seconds = [r.seconds for r in runs if r.ok]
    return {
        "kernel": kernel.name, "compiles": len(compiled), "compile_failures": len(compiled) - len(ok),
        "compile_seconds": statistics.mean(c.record.seconds for c in compiled),
        "dedup_fraction": 1 - distinct / points if points else 0.0,
        "simulate_seconds": statistics.mean(run_seconds) if run_seconds else None,
        "simulations": len(run_seconds),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kernels", default="va,gemv")
    parser.add_argument("--pipelines", type=int, default=200)
    parser.add_argument("--dpus", default="1,2,4,8")
    parser.add_argument("--tasklets", default="8,16")
    parser.add_argument("--sizes", default="default", help="size preset of every kernel")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--project-kernels", default="prim,pim-ml", help="kernels of the projection ('' skips it)")
    parser.add_argument("--dedup-pipelines", type=int, default=104)
    parser.add_argument("--json", type=Path, help="write the result as JSON here")
    args = parser.parse_args()

    console = Console()
    result: dict = {"measured": [], "projection": None, "args": vars(args) | {"json": str(args.json)}}
    with tempfile.TemporaryDirectory(prefix="cnmtune-cache-") as cache, Progress(console=console,
                                                                                  transient=True) as progress:
        os.environ["CNMTUNE_CACHE_DIR"] = cache  # real compiles: workers inherit the empty cache
        for kernel in args.kernels.split(","):
            result["measured"].append(measure_generation(kernel, args, progress))
        if args.project_kernels:
            start = time.time()
            with ProcessExecutor(args.workers) as executor:
                per_kernel = [project_kernel(k, args, executor, progress)
                              for k in expand_kernels(args.project_kernels.split(","))]
            result["projection"] = _projection(per_kernel, result["measured"], args.workers)
            result["projection"]["measure_seconds"] = time.time() - start

    _print(console, result)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(args.json, (json.dumps(result, indent=2) + "\n").encode())


def _projection(per_kernel: list[dict], measured: list[dict], workers: int) -> dict:
    efficiency = statistics.mean(m["parallel_efficiency"] for m in measured)
    for k in per_kernel:
        sim = k["simulate_seconds"] or 0.0
        k["compile_core_hours"] = FULL["pipelines"] * FULL["compiles_per_pipeline"] * k["compile_seconds"] / 3600
        k["simulate_core_hours"] = FULL["pipelines"] * FULL["configs"] * (1 - k["dedup_fraction"]) * sim / 3600
    compile_h = sum(k["compile_core_hours"] for k in per_kernel)
    simulate_h = sum(k["simulate_core_hours"] for k in per_kernel)
    return {"kernels": per_kernel, "parallel_efficiency": efficiency, "workers": workers,
            "compile_core_hours": compile_h, "simulate_core_hours": simulate_h,
            "wall_hours": (compile_h + simulate_h) / (workers * efficiency), "target_hours": 10}


def _print(console: Console, result: dict) -> None:
    table = Table(title="dataset generation, measured")
    for column in ("kernel", "samples", "simulations", "wall s", "samples/s", "simulations/s",
                   "saved by dedup", "parallel eff.", "failures"):
        table.add_column(column, justify="left" if column in ("kernel", "failures") else "right")
    for m in result["measured"]:
        table.add_row(m["kernel"], str(m["samples"]), str(m["simulations"]), f"{m['wall_seconds']:.0f}",
                      f"{m['samples_per_second']:.2f}", f"{m['simulations_per_second']:.2f}",
                      f"{100 * m['dedup_fraction']:.1f} %", f"{100 * m['parallel_efficiency']:.0f} %",
                      ", ".join(f"{k}: {v}" for k, v in m["failures"].items()) or "-")
    console.print(table)
    projection = result["projection"]
    if not projection:
        return
    table = Table(title=f"projection: {FULL['kernels']} kernels x {FULL['pipelines']} pipelines x "
                        f"{FULL['configs']} configurations on {projection['workers']} cores")
    for column in ("kernel", "compile ms", "dedup", "simulate s / run", "compile core-h", "simulate core-h"):
        table.add_column(column, justify="left" if column == "kernel" else "right")
    for k in projection["kernels"]:
        sim = k["simulate_seconds"]
        table.add_row(k["kernel"], f"{1000 * k['compile_seconds']:.1f}", f"{100 * k['dedup_fraction']:.1f} %",
                      "-" if sim is None else f"{sim:.2f}", f"{k['compile_core_hours']:.2f}",
                      f"{k['simulate_core_hours']:.2f}")
    console.print(table)
    hours = projection["wall_hours"]
    verdict = "[green]met[/]" if hours < projection["target_hours"] else "[red]missed[/]"
    console.print(f"projected wall time: {hours:.1f} h (compile {projection['compile_core_hours']:.1f} "
                  f"core-h + simulate {projection['simulate_core_hours']:.1f} core-h, parallel efficiency "
                  f"{100 * projection['parallel_efficiency']:.0f} %); target < 10 h: {verdict}")


if __name__ == "__main__":
    main()
