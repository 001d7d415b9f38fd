"""Tuner quality: top-k choice vs exhaustive search, per kernel, on the embedded simulator.

For each kernel, `cnmtune tune KERNEL --pipelines N --top-k K --exhaustive` (the Python API,
same code path): every candidate (distinct binary x DPU count) is also run, so the report has
the regret of the tuner's choice (its measured time over the exhaustive best, minus 1), the
rank of the choice among all candidates, and the tuner's wall time against the exhaustive
search's (compile + features + running every candidate). Targets (issue 7): chosen within 5 %
of the exhaustive best and the tuner >= 10x faster, for at least 5 PrIM kernels.

Each kernel runs at ``--size``, or at its own size given as ``KERNEL:SIZE`` in ``--kernels``
(a preset name or an element count): exhaustive search at PrIM-sized inputs costs thousands of
simulations, so slow kernels can be measured at a smaller size.

    python benchmarks/tune_quality.py [--kernels gemv:4096,va,red,bs:32768,hst-s] [--pipelines 200]
        [--top-k 10] [--size default] [--model M.onnx] [--finetune-samples N] [--workers 2]
        [--json benchmarks/results/tune_quality.json]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from rich.console import Console
from rich.progress import Progress
from rich.table import Table

from cnmtune.atomic import atomic_write
from cnmtune.plugin.tune import TuneSpec, tune
from cnmtune.runtime.executor import make_executor


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kernels", default="gemv,va,red,bs,hst-s")
    parser.add_argument("--pipelines", type=int, default=200)
    parser.add_argument("--top-k", type=int, default=10)
    parser.add_argument("--size", default="default", help="size preset (or element count) of every kernel")
    parser.add_argument("--dpus", default="1,2,4,8,16")
    parser.add_argument("--tasklets", default="1,2,4,8,16")
    parser.add_argument("--model", help="cost model .onnx (default: the shipped model)")
    parser.add_argument("--finetune-samples", type=int, default=0,
                        help="fine-tune the model on this many measured candidates first (tune --finetune-samples)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--json", type=Path, help="write the result as JSON here")
    args = parser.parse_args()

    size = _size(args.size)
    rows = []
    console = Console(width=None if sys.stdout.isatty() else 160)  # a log file gets the whole table
    with make_executor(args.workers) as executor, Progress(console=console, transient=True) as bar:
        for item in args.kernels.split(","):
            kernel, _, own_size = item.partition(":")
            task = bar.add_task(kernel, total=None)
            spec = TuneSpec(kernel, size=_size(own_size) if own_size else size, pipelines=args.pipelines,
                            top_k=args.top_k, model=args.model, exhaustive=True,
                            finetune_samples=args.finetune_samples,
                            dpus=tuple(map(int, args.dpus.split(","))),
                            tasklets=tuple(map(int, args.tasklets.split(","))))
            report = tune(spec, executor, None, lambda phase, done, total, t=task, k=kernel: bar.update(
                t, description=f"{k}: {phase}", completed=done, total=total))
            rows.append(report.to_dict())
            bar.remove_task(task)
            if args.json:  # after every kernel: a long run keeps what it has measured
                _write(args, rows)

    table = Table(title=f"tuner vs exhaustive search: {args.pipelines} pipelines, top-{args.top_k}")
    for column in ("kernel", "size", "candidates", "chosen", "regret", "rank", "tuner s", "exhaustive s", "faster",
                   "vs O2/16", "model MAPE", "tau"):
        table.add_column(column, justify="left" if column in ("kernel", "chosen") else "right")
    met = 0
    for r in rows:
        ex, chosen = r["exhaustive"], r["chosen"]
        good = ex["regret"] is not None and ex["regret"] <= 0.05 and ex["tuner_speedup"] >= 10
        met += good
        table.add_row(r["kernel"], str(r["size"]), str(r["candidates"]),
                      f"{chosen['pipeline'][:28]} D{chosen['dpus']} T{chosen['tasklets']}" if chosen else "-",
                      f"{100 * ex['regret']:.2f} %" if ex["regret"] is not None else "-", str(ex["chosen_rank"]),
                      f"{ex['tuner_seconds']:.1f}", f"{ex['exhaustive_seconds']:.1f}", f"{ex['tuner_speedup']:.1f}x",
                      f"{r['speedup_vs_default']:.2f}x" if r["speedup_vs_default"] else "-",
                      f"{ex['mape']:.1f} %", f"{ex['kendall_tau']:.2f}")
    console.print(table)
    console.print(f"kernels meeting both targets (regret <= 5 %, >= 10x faster): {met} of {len(rows)}")


def _size(text: str) -> int | str:
    return int(text) if text.isdigit() else text


def _write(args: argparse.Namespace, rows: list[dict]) -> None:
    atomic_write(args.json, (json.dumps({"args": vars(args) | {"json": str(args.json)}, "kernels": rows},
                                        indent=2) + "\n").encode())


if __name__ == "__main__":
    main()
