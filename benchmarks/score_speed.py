"""ONNX scoring throughput: variants scored per second by the onnxruntime Scorer, one thread.

Scores batches of real feature rows (with --db: the store's samples, tiled to the batch size)
or seeded synthetic rows shaped like them, through `Scorer.predict` (input checks, the ONNX
session, exp of the log outputs). The model is --model, or the paper's default architecture
(12 x 256, untrained: the cost of scoring does not depend on the weights) exported to a
temporary file. Target (issue 6): >= 100,000 variants per second at batch 10,000 on one thread.

    python benchmarks/score_speed.py [--model M.onnx] [--db data.sqlite] [--batch 10000]
        [--threads 1] [--chunk-rows 2048] [--repeats 20] [--json benchmarks/results/score_speed.json]

Exit status: 0 the target met (median batch); 1 missed.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
import script_io
from rich.console import Console

from cnmtune.costmodel import L2PConfig, L2PModel, Scorer, default_schema, export_onnx, load_samples
from cnmtune.costmodel.learn.samples import input_columns
from cnmtune.costmodel.learn.scorer import CHUNK_ROWS
from cnmtune.display import Table


def _rows(db: Path | None, n_columns: int, batch: int, seed: int) -> np.ndarray:
    if db is not None:
        X = load_samples(db).X
    else:  # opcode counts are small non-negative integers; the config columns are log2 values
        X = np.random.default_rng(seed).poisson(3.0, size=(batch, n_columns)).astype(np.float32)
    reps = -(-batch // len(X))
    return np.ascontiguousarray(np.tile(X, (reps, 1))[:batch])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, help="an exported cnmtune model (default: a fresh 12x256)")
    parser.add_argument("--db", type=Path, help="score this store's feature rows")
    parser.add_argument("--batch", type=int, default=10_000)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--chunk-rows", type=int, default=CHUNK_ROWS,
                        help="rows per onnxruntime call inside Scorer.predict (the batch size: one call)")
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    script_io.json_option(parser, "score_speed.json")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="cnmtune-score-") as tmp:
        model_path = args.model
        if model_path is None:
            import torch

            torch.manual_seed(args.seed)
            schema = default_schema()
            model = L2PModel(len(input_columns(schema)), L2PConfig()).eval()
            model_path = export_onnx(model, Path(tmp) / "default.onnx", schema=schema, toolchain_kind="proxy",
                                     llvm_version="n/a", data_hash="untrained")
        scorer = Scorer(model_path, intra_op_threads=args.threads, chunk_rows=args.chunk_rows)
        X = _rows(args.db, len(scorer.columns), args.batch, args.seed)
        scorer.predict(X)  # warm-up: session initialisation and first allocation
        times = []
        for _ in range(args.repeats):
            start = time.perf_counter()
            scorer.predict(X)
            times.append(time.perf_counter() - start)

    best, median = min(times), statistics.median(times)
    result = {
        "model": str(args.model or "default 12x256 (untrained)"), "rows": "store" if args.db else "synthetic",
        "batch": args.batch, "chunk_rows": args.chunk_rows, "threads": args.threads, "columns": X.shape[1],
        "repeats": args.repeats,
        "median_seconds": median, "best_seconds": best,
        "variants_per_second_median": args.batch / median, "variants_per_second_best": args.batch / best,
        "target_per_second": 100_000,
    }
    table = Table(title=f"ONNX scoring, batch {args.batch:,}, {args.threads} thread(s)", show_header=False)
    table.add_row("model", result["model"])
    table.add_row("input columns", str(X.shape[1]))
    table.add_row("rows per onnxruntime call", f"{min(args.chunk_rows, args.batch):,}")
    table.add_row("median batch time (ms)", f"{1000 * median:.2f}")
    table.add_row("variants / second (median)", f"{result['variants_per_second_median']:,.0f}")
    table.add_row("variants / second (best)", f"{result['variants_per_second_best']:,.0f}")
    met = result["variants_per_second_median"] >= result["target_per_second"]
    table.add_row("target", ">= 100,000 / s " + script_io.verdict(met))
    console = Console()
    console.print(table)
    console.print(f"wrote {script_io.write_json(args.json, result)}")
    return 0 if met else 1


if __name__ == "__main__":
    raise SystemExit(main())
