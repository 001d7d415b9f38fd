"""The score role of a tune: rank every candidate by the cost model's predicted kernel time, and
optionally adapt the model to this kernel first on a few measured candidates (L2P's transfer)."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from cnmtune.costmodel.analysis.schema import FeatureSchema
from cnmtune.costmodel.learn.cost_model import CostModel
from cnmtune.costmodel.learn.cost_model import load_model as load_cost_model
from cnmtune.costmodel.learn.samples import input_matrix, runtime_samples
from cnmtune.errors import CnmtuneError, ModelError
from cnmtune.plugin.tune.report import Candidate


def default_model_path() -> Path:
    """The pretrained model shipped with cnmtune (cnmtune/data/l2p.onnx)."""
    return Path(__file__).resolve().parents[2] / "data" / "l2p.onnx"


def load_model(model: str | None, schema: FeatureSchema) -> tuple[Path, CostModel]:
    """The cost model at `model` (default: the shipped one), checked against `schema`."""
    path = Path(model) if model else default_model_path()
    if not path.is_file():
        raise ModelError(f"no cost model at {path}: pass --model M.onnx (see `cnmtune model train`)")
    return path, load_cost_model(path, expect_schema_hash=schema.hash)


def score(model: CostModel, path: Path, candidates: Sequence[Candidate], features: Sequence[dict[str, float]],
          size: int, schema: FeatureSchema) -> np.ndarray:
    """Set every candidate's predicted time; returns the model's input rows (one per candidate)."""
    X = input_matrix(features, [c.dpus for c in candidates], [c.tasklets for c in candidates],
                     [size] * len(candidates), schema)
    predicted = model.predict(X).runtime_s
    if predicted is None:
        raise ModelError(f"{path} predicts no runtime; the tuner ranks by predicted kernel time")
    for c, p in zip(candidates, predicted):
        c.predicted_s = float(p)
    return X


def finetune(model: CostModel, candidates: Sequence[Candidate], X: np.ndarray, samples: int,
             measure: Callable[[list[Candidate]], None], kernel: str, size: int, schema: FeatureSchema,
             seed: int) -> tuple[dict, list[Candidate]]:
    """Run `samples` candidates spread over the predicted-faster half, update the model on their
    measured times (the L2P network: its checkpoint fine-tuned as in L2P's transfer) and re-score
    every candidate. Returns the report and the candidates that were run."""
    from cnmtune.costmodel.learn.metrics import mape

    model.prepare_update()  # before any run: a model that cannot learn says so now
    order = np.argsort([c.predicted_s for c in candidates], kind="stable")
    half = order[: max(samples, (len(order) + 1) // 2)]
    picks = half[np.unique(np.linspace(0, len(half) - 1, samples).round().astype(int))]
    tuned_on = [candidates[i] for i in picks]
    measure(tuned_on)
    rows = [i for i in picks if candidates[i].measured_s is not None]
    if len(rows) < 2:
        raise CnmtuneError(f"{kernel}: fine-tuning needs at least 2 verified runs; {len(rows)} of {len(picks)} verified")
    measured = [candidates[i] for i in rows]
    data = runtime_samples(X[rows], [c.measured_s for c in measured], kernel, [c.pipeline for c in measured],
                           [c.dpus for c in measured], [c.tasklets for c in measured], [size] * len(rows), schema)
    true = np.array([c.measured_s for c in measured])
    before = np.array([c.predicted_s for c in measured])
    learnt = model.update(data, seed=seed)
    for c, p in zip(candidates, model.predict(X).runtime_s):
        c.predicted_s = float(p)
    report = {"samples": len(rows), "runs_failed": len(picks) - len(rows), "checkpoint": learnt.get("checkpoint"),
              "mape_before": mape(true, before), "mape_after": mape(true, np.array([c.predicted_s for c in measured]))}
    return report, tuned_on
