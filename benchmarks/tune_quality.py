"""Tuner quality on the embedded simulator: the gain over PrIM's default build, or the regret against
exhaustive search.

Gains (the default): every kernel (default: the prim and pim-ml suites) at its default preset on
one rank (64 DPUs, or the most the size allows), tuned with `cnmtune tune`'s code path under a run
budget: the chosen variant's measured kernel time against the default build (O2, the workload's
defines and tasklets, verified), what the gain comes from (pipeline or knob, define, tasklets),
the geometric mean and how many kernels reach 1.3x. The tasklet grid always holds the workload's
own count, so the default build is PrIM's.

Exhaustive (``--exhaustive``): every candidate of the first population (pipelines x tasklets) is
also run, for the regret of the choice, its rank and the tuner's wall time against running
everything.

Sampled exhaustive (``--explore N``, with the gains mode): after each tune, N points drawn
uniformly from its whole space (pipelines x tuned-define choices x tasklets) are built and run in
full, verified (cnmtune.plugin.tune.explore; no screening): the tuned choice against the sample's best and the tuner's time
against the sample's (targets: within 5 %, >= 10x less time).

Each kernel runs at ``--size``, or at its own size given as ``KERNEL:SIZE`` in ``--kernels``.

    python benchmarks/tune_quality.py [--kernels prim,pim-ml] [--size default] [--pipelines 100]
        [--top-k 10] [--rounds 5] [--no-adapt] [--max-runs 60] [--budget-s 300] [--dpus 64] [--exhaustive | --explore 1000] [--model M.onnx] [--workers 2]
        [--json benchmarks/results/tune_quality.json]

Exit status: 0 every kernel meets the targets of --exhaustive or --explore (regret <= 5 %, >= 10x
less time; the gains mode has none); 1 one misses them (a kernel that failed misses them).
"""

from __future__ import annotations

import argparse
import math
import sys
import time

import script_io
from rich.console import Console
from rich.progress import Progress

from cnmtune.display import Table
from cnmtune.errors import CnmtuneError
from cnmtune.plugin.tune import TUNE_TASKLETS, TuneSpec, explore, tune
from cnmtune.runtime.executor import make_executor
from cnmtune.runtime.registry import expand_kernels, find_kernel

REGRET, FASTER = 0.05, 10.0  # targets of --exhaustive and --explore: the choice within 5 %, >= 10x less time


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kernels", default="prim,pim-ml", help="kernels or suites, KERNEL:SIZE for a size of its own")
    parser.add_argument("--pipelines", type=int, default=100)
    parser.add_argument("--top-k", type=int, default=10)
    parser.add_argument("--size", default="default", help="size preset (or element count) of every kernel")
    parser.add_argument("--dpus", help="DPU counts (default: one rank, or the most the size allows)")
    parser.add_argument("--tasklets", default=",".join(map(str, TUNE_TASKLETS)), help="tasklet counts (the kernel's own is added)")
    parser.add_argument("--max-runs", type=int, default=60, help="runs per kernel (gains mode)")
    parser.add_argument("--budget-s", type=float, help="seconds of runs per kernel (gains mode; default: no limit)")
    parser.add_argument("--exhaustive", action="store_true", help="regret against running every candidate")
    parser.add_argument("--explore", type=int, default=0, help="also run this many points sampled from the space")
    parser.add_argument("--model", help="cost model .onnx (default: the shipped model)")
    parser.add_argument("--rounds", type=int, default=5, help="rounds of the search at most (tune --rounds)")
    parser.add_argument("--no-adapt", action="store_true", help="never fine-tune the model (tune --no-adapt)")
    parser.add_argument("--workers", type=int, default=2)
    script_io.json_option(parser, "tune_quality.json")
    args = parser.parse_args()

    size = _size(args.size)
    rows = []
    console = Console(width=None if sys.stdout.isatty() else 160)  # a log file gets the whole table
    items = [item for part in args.kernels.split(",") for item in _expand(part)]
    with make_executor(args.workers) as executor, Progress(console=console, transient=True) as bar:
        for item in items:
            kernel, _, own_size = item.partition(":")
            task = bar.add_task(kernel, total=None)
            own = find_kernel(kernel).workload.nr_tasklets
            tasklets = tuple(sorted({*map(int, args.tasklets.split(",")), own}))
            spec = TuneSpec(kernel, size=_size(own_size) if own_size else size, pipelines=args.pipelines,
                            top_k=args.top_k, model=args.model, exhaustive=args.exhaustive,
                            rounds=args.rounds, adapt=not args.no_adapt, tasklets=tasklets,
                            dpus=tuple(map(int, args.dpus.split(","))) if args.dpus else None,
                            max_runs=None if args.exhaustive else args.max_runs,
                            budget_s=None if args.exhaustive else args.budget_s,
                            tune_defines=not args.exhaustive)
            start = time.perf_counter()
            try:
                report = tune(spec, executor, None, lambda phase, done, total, t=task, k=kernel: bar.update(
                    t, description=f"{k}: {phase}", completed=done, total=total)).to_dict()
            except CnmtuneError as exc:  # one kernel's failure is a row, not the end of the benchmark
                report = {"kernel": kernel, "error": str(exc)}
            report["wall_s"] = time.perf_counter() - start
            if args.explore and "error" not in report:
                # every point run, verified on every DPU: no screening, no run limit, no budget
                full = TuneSpec(**{**spec.__dict__, "screen": False, "max_runs": None, "budget_s": None})
                sample = explore(full, executor, args.explore, 0, lambda phase, done, total, t=task, k=kernel:
                                 bar.update(t, description=f"{k}: explore {phase}", completed=done, total=total))
                best = sample.best
                report["explore"] = {"points": sample.points, "space_points": sample.space_points,
                                     "runs": len(sample.runs), "seconds": sum(sample.seconds.values()),
                                     "best": best.to_dict() if best else None}
            rows.append(report)
            bar.remove_task(task)
            _write(args, rows)  # after every kernel: a long run keeps what it has measured
    console.print(_exhaustive_table(args, rows) if args.exhaustive else _gains_table(args, rows))
    met = True
    if args.exhaustive:
        met &= _targets(console, "tuner vs exhaustive search", rows, _exhaustive_outcome)
    else:
        console.print(_gains_summary(rows))
    if args.explore:
        console.print(_explore_table(rows))
        met &= _targets(console, "tuned choice vs the sample", rows, _explore_outcome)
    console.print(f"wrote {args.json}")
    return 0 if met else 1


def _expand(part: str) -> list[str]:
    name, sep, own_size = part.partition(":")
    return [f"{k}{sep}{own_size}" for k in expand_kernels([name])]


def _ms(seconds: float | None) -> str:
    return f"{seconds * 1e3:,.3f}" if seconds else "-"


def _gains_table(args: argparse.Namespace, rows: list[dict]) -> Table:
    table = Table(title=f"tuned vs the default build: {args.pipelines} pipelines + knobs, {args.rounds} rounds "
                        f"of {args.top_k}, at most {args.max_runs} runs per kernel",
                  caption="tau: the model's Kendall tau on the runs of the first round / of the last (after "
                          "fine-tuning on the runs before it)")
    for column in ("kernel", "size", "DPUs", "default ms", "tuned ms", "speedup", "gain from", "runs", "tau",
                   "tune s"):
        table.add_column(column, justify="left" if column in ("kernel", "gain from") else "right")
    for r in rows:
        if "error" in r:
            table.add_row(r["kernel"], "-", "-", "-", "-", "-", f"error: {r['error'][:60]}", "-", "-",
                          f"{r['wall_s']:.0f}")
            continue
        chosen, default = r["chosen"], r["default"]
        taus = [s["model_kendall_tau"] for s in r["stages"][:1] + r["stages"][1:][-1:]]
        table.add_row(r["kernel"], f"{r['size']:,}", str(default["dpus"] if default else "-"),
                      _ms(default and default["measured_s"]), _ms(chosen and chosen["measured_s"]),
                      f"{r['speedup_vs_default']:.2f}x" if r["speedup_vs_default"] else "-",
                      ", ".join(r["wins"]) or "(the default build)", str(len(r["runs"])),
                      " / ".join("-" if t is None else f"{t:.2f}" for t in taus) or "-", f"{r['wall_s']:.0f}")
    return table


def _gains_summary(rows: list[dict]) -> str:
    speedups = [r["speedup_vs_default"] for r in rows if r.get("speedup_vs_default")]
    if not speedups:
        return "no kernel tuned"
    geomean = math.exp(sum(math.log(s) for s in speedups) / len(speedups))
    return (f"geometric mean speedup over the default build: {geomean:.2f}x over {len(speedups)} kernels; "
            f">= 1.3x: {sum(s >= 1.3 for s in speedups)}; failed: {len(rows) - len(speedups)}")


def _explore_outcome(r: dict) -> tuple[float, float] | None:
    """(regret, times less time) of the tuned choice against --explore's sample; None without a sample."""
    ex = r.get("explore")
    if not ex or not ex["best"] or not r["chosen"]:
        return None
    return r["chosen"]["measured_s"] / ex["best"]["measured_s"] - 1, ex["seconds"] / sum(r["seconds"].values())


def _exhaustive_outcome(r: dict) -> tuple[float, float] | None:
    """(regret, times less time) of the tuner against running every candidate; None where it has none."""
    if "error" in r or r["exhaustive"]["regret"] is None:
        return None
    return r["exhaustive"]["regret"], r["exhaustive"]["tuner_speedup"]


def _targets(console: Console, what: str, rows: list[dict], outcome) -> bool:
    """Print how many kernels meet both targets by `outcome`; whether all do."""
    met = sum(1 for r in rows if (o := outcome(r)) is not None and o[0] <= REGRET and o[1] >= FASTER)
    console.print(f"{what}: kernels meeting both targets (regret <= {100 * REGRET:g} %, >= {FASTER:g}x less "
                  f"time): {met} of {len(rows)}: {script_io.verdict(met == len(rows))}")
    return met == len(rows)


def _explore_table(rows: list[dict]) -> Table:
    table = Table(title="the tuned choice vs a uniform sample of the whole space (every sampled point run)",
                  caption="every sampled point is a full run, verified, as an exhaustive search makes it (the "
                          "tuner screens on two DPUs and confirms its best on all); the sample is built after "
                          "the tune, so its compiles that the tune made are build-cache hits")
    for column in ("kernel", "sampled", "of", "sample best ms", "tuned ms", "regret", "tune s", "sample s", "faster"):
        table.add_column(column, justify="left" if column == "kernel" else "right")
    for r in rows:
        outcome = _explore_outcome(r)
        if outcome is None:
            continue
        ex, (regret, faster) = r["explore"], outcome
        table.add_row(r["kernel"], str(ex["points"]), str(ex["space_points"]), _ms(ex["best"]["measured_s"]),
                      _ms(r["chosen"]["measured_s"]), f"{100 * regret:+.1f} %", f"{sum(r['seconds'].values()):.0f}",
                      f"{ex['seconds']:.0f}", f"{faster:.1f}x")
    return table


def _exhaustive_table(args: argparse.Namespace, rows: list[dict]) -> Table:
    table = Table(title=f"tuner vs exhaustive search: {args.pipelines} pipelines + knobs, top-{args.top_k}")
    for column in ("kernel", "size", "candidates", "chosen", "regret", "rank", "tuner s", "exhaustive s", "faster",
                   "vs default", "model MAPE", "tau"):
        table.add_column(column, justify="left" if column in ("kernel", "chosen") else "right")
    for r in rows:
        if "error" in r:
            table.add_row(r["kernel"], *["-"] * 10, f"error: {r['error'][:40]}")
            continue
        ex, chosen = r["exhaustive"], r["chosen"]
        table.add_row(r["kernel"], str(r["size"]), str(r["candidates"]),
                      f"{chosen['pipeline'][:28]} D{chosen['dpus']} T{chosen['tasklets']}" if chosen else "-",
                      f"{100 * ex['regret']:.2f} %" if ex["regret"] is not None else "-", str(ex["chosen_rank"]),
                      f"{ex['tuner_seconds']:.1f}", f"{ex['exhaustive_seconds']:.1f}", f"{ex['tuner_speedup']:.1f}x",
                      f"{r['speedup_vs_default']:.2f}x" if r["speedup_vs_default"] else "-",
                      f"{ex['mape']:.1f} %", f"{ex['kendall_tau']:.2f}")
    return table


def _size(text: str) -> int | str:
    return int(text) if text.isdigit() else text


def _write(args: argparse.Namespace, rows: list[dict]) -> None:
    script_io.write_json(args.json, {"args": vars(args) | {"json": str(args.json)}, "kernels": rows})


if __name__ == "__main__":
    raise SystemExit(main())
