"""How well loop-weighted instruction counts order a kernel's binaries: rank correlation with time.

For each training export given (``cnmtune dataset export``: one row per run, ``f.wop:*`` the
loop-weighted histogram of the binary), per kernel: the median over its (defines, DPUs,
tasklets, size) groups of at least 10 runs of the Spearman correlation between each binary's
loop-weighted instruction count (the sum of its ``wop`` columns) and its kernel time. Only runs
present in every export count, so exports of one dataset under two feature schemas compare on
the same runs. A static count that orders binaries as their times do is what the cost model
starts from; one that charges every loop the same factor ranks unrolled builds, the fast ones,
as the slowest.

    git show fb8ebc0:cnmtune/data/reference.parquet > dpu2.parquet   # schema dpu-2: 10 ** depth
    python benchmarks/loop_weights.py dpu2.parquet cnmtune/data/reference.parquet \\
        [--json benchmarks/results/loop_weights.json]
"""

from __future__ import annotations

import argparse
from collections import defaultdict
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import script_io
from rich.console import Console
from scipy.stats import spearmanr

from cnmtune.display import Table

GROUP = ("kernel", "defines", "dpus", "tasklets", "size")
MIN_GROUP = 10


def weighted_counts(path: Path) -> dict[tuple, tuple[float, float]]:
    """(group key + pipeline) -> (loop-weighted instruction count, kernel seconds) of every run."""
    table = pq.read_table(path)
    columns = [c for c in table.column_names if c.startswith("f.wop:")]
    if not columns:
        raise SystemExit(f"{path}: no f.wop:* columns (a training export of `cnmtune dataset export`?)")
    counts = np.zeros(table.num_rows)
    for c in columns:
        counts += table.column(c).to_numpy(zero_copy_only=False)
    keys = zip(*(table.column(c).to_pylist() for c in (*GROUP, "pipeline")))
    seconds = table.column("kernel_seconds").to_numpy(zero_copy_only=False)
    return {key: (float(w), float(s)) for key, w, s in zip(keys, counts, seconds)}


def correlations(exports: list[dict]) -> dict[str, list[list[float]]]:
    """kernel -> per export, the Spearman rho of every group with varying counts."""
    shared = set.intersection(*(set(e) for e in exports))
    groups: dict[tuple, list[tuple]] = defaultdict(list)
    for key in shared:
        groups[key[:len(GROUP)]].append(key)
    out: dict[str, list[list[float]]] = defaultdict(lambda: [[] for _ in exports])
    for group, keys in groups.items():
        if len(keys) < MIN_GROUP:
            continue
        for j, export in enumerate(exports):
            counts = np.array([export[k][0] for k in keys])
            seconds = np.array([export[k][1] for k in keys])
            if len(np.unique(counts)) > 3:
                out[group[0]][j].append(float(spearmanr(counts, seconds).statistic))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("exports", type=Path, nargs="+", help="training exports (parquet) to compare")
    script_io.json_option(parser, "loop_weights.json")
    args = parser.parse_args()
    per_kernel = correlations([weighted_counts(p) for p in args.exports])
    result = {"exports": [str(p) for p in args.exports], "min_group_runs": MIN_GROUP,
              "median_rho": {k: [float(np.median(r)) if r else None for r in v] for k, v in sorted(per_kernel.items())},
              "groups": {k: len(v[-1]) for k, v in sorted(per_kernel.items())}}
    table = Table(title="Spearman rho of loop-weighted count vs time, median over groups")
    table.add_column("kernel")
    for p in args.exports:
        table.add_column(p.stem, justify="right")
    table.add_column("groups", justify="right")
    for kernel, rhos in sorted(result["median_rho"].items(), key=lambda kv: kv[1][0] if kv[1][0] is not None else 0):
        table.add_row(kernel, *("-" if r is None else f"{r:.2f}" for r in rhos), str(result["groups"][kernel]))
    medians = [np.median([r[j] for r in result["median_rho"].values() if r[j] is not None])
               for j in range(len(args.exports))]
    table.add_row("median", *(f"{m:.2f}" for m in medians), "", style="bold")
    console = Console()
    console.print(table)
    console.print(f"wrote {script_io.write_json(args.json, result, indent=1)}")


if __name__ == "__main__":
    main()
