"""PerfVec for DPUs against exact re-timing: held-out kernels on held-out designs, and speed (issue 42).

Reads the re-timings of a store (`cnmtune dataset retime`), holds out some kernels (every variant
of them) and some designs, trains the PerfVec model on the rest, exports it to ONNX and scores the
held-out programs on the held-out designs with onnxruntime against their exact re-timed cycles:
MAPE, and Kendall's tau over the designs of each program (median). Seen programs on the held-out
designs are reported too. Speed: one held-out program's learned sweep over --speed-points random
designs (program representation, every point's prediction and its transfer pricing) against the
exact re-timing of the first --retime-points of them, on this machine in this run.

    python benchmarks/perfvec_eval.py --db STORE [--holdout-kernels red,gemv] [--holdout-designs 0.2]
        [--epochs 400] [--model DIR] [--json benchmarks/results/perfvec_eval.json]

Targets: held-out MAPE <= 7 %, median tau >= 0.9, learned points/s >= 100 x re-timing's.
Exit status: 0 every target met; 1 one missed.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np
import script_io
from rich.console import Console
from rich.progress import Progress

from cnmtune.costmodel.learn.perfvec import PerfVecConfig, accuracy, train_perfvec
from cnmtune.costmodel.learn.perfvec_onnx import PerfVecScorer, export_perfvec
from cnmtune.display import Table
from cnmtune.plugin.sweep.design import DesignPoint
from cnmtune.plugin.sweep.evaluate import retime_points
from cnmtune.plugin.sweep.learned import learned_sweep
from cnmtune.plugin.sweep.perfvec_data import training_data
from cnmtune.runtime.sim.design_space import sample_designs
from cnmtune.runtime.sim.traces import load_trace_set
from cnmtune.store import Store
from cnmtune.store_retimes import trace_sets

TARGET_MAPE, TARGET_TAU, TARGET_SPEEDUP = 7.0, 0.9, 100.0


def _split(data, args) -> tuple[list[int], list[int], list[int], list[int]]:
    """Indices of the training and held-out programs (by kernel) and designs (seeded)."""
    rng = np.random.default_rng(args.seed)
    kernels = sorted(set(data.kernels))
    if args.holdout_kernels:
        held = {k.strip() for k in args.holdout_kernels.split(",") if k.strip()}
        unknown = held - set(kernels)
        if unknown:
            raise SystemExit(f"--holdout-kernels: {', '.join(sorted(unknown))} not in the store ({', '.join(kernels)})")
    else:
        count = min(len(kernels) - 1, max(1, round(args.holdout_fraction * len(kernels))))
        held = set(rng.choice(kernels, size=count, replace=False).tolist())
    if not held or held == set(kernels):
        raise SystemExit("hold out at least one kernel and train on at least one (the store has "
                         f"{', '.join(kernels)})")
    order = rng.permutation(len(data.designs))
    n_held = max(1, round(args.holdout_designs * len(order)))
    programs = np.arange(len(data.kernels))
    seen = [int(i) for i in programs if data.kernels[i] not in held]
    unseen = [int(i) for i in programs if data.kernels[i] in held]
    return seen, unseen, sorted(order[n_held:].tolist()), sorted(order[:n_held].tolist())


def _scored(scorer: PerfVecScorer, data) -> dict:
    predicted = np.stack([scorer.log_cycles(scorer.program(p), data.designs) for p in data.programs]).astype(np.float64)
    return accuracy(data.cycles, predicted)


def _speed(scorer: PerfVecScorer, directory: str, points: int, retimed: int, seed: int) -> dict:
    trace_set = load_trace_set(Path(directory))
    configs = sample_designs(points, seed=seed + 1_000_003)
    design_points = [DesignPoint((("design", i),), c) for i, c in enumerate(configs)]
    learned = learned_sweep(trace_set, design_points, scorer, confirm=0)
    start = time.perf_counter()
    exact = list(retime_points(trace_set, design_points[:retimed]))
    retime_s = time.perf_counter() - start
    return {"program": trace_set.label, "points": points, "predict_s": learned.predict_seconds,
            "points_per_s": learned.points_per_s, "retimed_points": len(exact), "retime_s": retime_s,
            "retime_points_per_s": len(exact) / retime_s if retime_s else float("inf")}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", type=Path, required=True, help="store with re-timings (cnmtune dataset retime)")
    parser.add_argument("--holdout-kernels", help="kernels held out of training (default: a seeded share)")
    parser.add_argument("--holdout-fraction", type=float, default=0.2, help="share of kernels held out (default 0.2)")
    parser.add_argument("--holdout-designs", type=float, default=0.2, help="share of designs held out (default 0.2)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--epochs", type=int, default=400)
    parser.add_argument("--patience", type=int, default=40)
    parser.add_argument("--dim", type=int, default=64)
    parser.add_argument("--width", type=int, default=128)
    parser.add_argument("--depth", type=int, default=2)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--speed-points", type=int, default=10_000, help="design points of the learned sweep")
    parser.add_argument("--retime-points", type=int, default=200, help="of them, how many are re-timed exactly")
    parser.add_argument("--model", type=Path, help="also keep the trained model here (a directory)")
    script_io.json_option(parser, "perfvec_eval.json")
    args = parser.parse_args()
    with Store(args.db) as store:
        data, _ = training_data(store)
        directories = {u.unit: u.directory for u in trace_sets(store)}
    seen, unseen, train_designs, held_designs = _split(data, args)
    train = data.take(seen, train_designs)
    config = PerfVecConfig(dim=args.dim, width=args.width, depth=args.depth)
    console = Console()
    with Progress(console=console, transient=True) as bar:  # early stopping may end it before --epochs
        task = bar.add_task("training", total=args.epochs)
        result = train_perfvec(train, config, epochs=args.epochs, patience=args.patience, seed=args.seed,
                               threads=args.threads, on_epoch=lambda epoch, _, val: bar.update(
                                   task, completed=epoch + 1, description=f"training (validation loss {val:.4f})"))
    with tempfile.TemporaryDirectory(prefix="cnmtune-perfvec-") as tmp:
        directory = export_perfvec(result.model, args.model or Path(tmp) / "model", data_hash=train.data_hash)
        scorer = PerfVecScorer(directory)
        heldout = _scored(scorer, data.take(unseen, held_designs))
        seen_programs = _scored(scorer, data.take(seen, held_designs))
        speed = _speed(scorer, directories[data.names[unseen[0]]], args.speed_points, args.retime_points, args.seed)
    speedup = speed["points_per_s"] / speed["retime_points_per_s"]
    met = {"mape": heldout["mape"] <= TARGET_MAPE, "tau": heldout["median_tau"] >= TARGET_TAU,
           "speedup": speedup >= TARGET_SPEEDUP}
    table = Table(title=f"PerfVec: {len(seen)} training programs x {len(train_designs)} designs "
                        f"({len(result.train_losses)} epochs, {result.seconds:.0f} s)")
    for column in ("programs", "designs", "pairs", "MAPE %", "median tau"):
        table.add_column(column, justify="left" if column in ("programs", "designs") else "right")
    table.add_row(f"held out ({len(unseen)})", f"held out ({len(held_designs)})", str(heldout["pairs"]),
                  f"{heldout['mape']:.2f}", f"{heldout['median_tau']:.3f}")
    table.add_row(f"seen ({len(seen)})", f"held out ({len(held_designs)})", str(seen_programs["pairs"]),
                  f"{seen_programs['mape']:.2f}", f"{seen_programs['median_tau']:.3f}")
    console.print(table)
    console.print(f"held-out MAPE {heldout['mape']:.2f} % (target <= {TARGET_MAPE:g}: {script_io.verdict(met['mape'])}), "
                  f"median tau {heldout['median_tau']:.3f} (target >= {TARGET_TAU:g}: {script_io.verdict(met['tau'])})",
                  highlight=False)
    console.print(f"{speed['program']}: learned {speed['points_per_s']:,.0f} points/s over {speed['points']:,} points, "
                  f"re-timing {speed['retime_points_per_s']:,.1f} points/s over {speed['retimed_points']}: "
                  f"{speedup:,.0f}x (target >= {TARGET_SPEEDUP:g}x: {script_io.verdict(met['speedup'])})",
                  highlight=False)
    kernels = sorted(set(data.kernels))
    record = {"heldout_mape": heldout["mape"], "heldout_tau": heldout["median_tau"],
              "points_per_s": speed["points_per_s"], "retime_points_per_s": speed["retime_points_per_s"],
              "speedup": speedup, "seen_mape": seen_programs["mape"], "seen_tau": seen_programs["median_tau"],
              "heldout_kernels": sorted({data.kernels[i] for i in unseen}), "kernels": kernels,
              "programs": {"train": len(seen), "heldout": len(unseen)},
              "designs": {"train": len(train_designs), "heldout": len(held_designs)},
              "speed": speed, "config": config.to_dict(), "epochs_run": len(result.train_losses),
              "train_seconds": result.seconds, "targets": {"mape": TARGET_MAPE, "tau": TARGET_TAU,
                                                          "speedup": TARGET_SPEEDUP},
              "meets_targets": met, "model": str(args.model) if args.model else None}
    console.print(f"wrote {script_io.write_json(args.json, record, sort_keys=True)}", highlight=False)
    return 0 if all(met.values()) else 1


if __name__ == "__main__":
    raise SystemExit(main())
