"""Predictive uncertainty of the L2P network by Monte Carlo dropout, and its calibration.

MC dropout (Gal and Ghahramani 2016): keep the dropout layers sampling at prediction time
and run N stochastic passes; the mean of the log outputs is the prediction, their standard
deviation the uncertainty. BatchNorm stays in eval mode (running statistics), so only the
dropout masks vary between passes. Everything is seeded.

Calibration: the share of true values inside the central ``level`` interval
``mean +- z * std`` (Gaussian in log space). A calibrated model puts 90 % of the truths in
its 90 % interval; ``fit_std_scale`` finds the factor on the std that does so on a
validation set (post-hoc recalibration, applied to held-out data).

This is a torch-side tool: the exported ONNX scorer stays deterministic (eval mode, dropout
off); the tuner ranks by the mean prediction, and uncertainty-aware sampling uses this module.
"""

from __future__ import annotations

from dataclasses import dataclass
from statistics import NormalDist

import numpy as np
import torch
from torch import nn

from cnmtune.costmodel.learn.model import L2PModel


@dataclass(frozen=True, eq=False)
class McPrediction:
    """Mean and standard deviation of the log outputs over the stochastic passes."""

    mean: np.ndarray   # float [n, targets]
    std: np.ndarray    # float [n, targets]
    passes: int
    targets: tuple[str, ...]


def mc_dropout_predict(model: L2PModel, X: np.ndarray, passes: int = 30, seed: int = 0,
                       batch_size: int = 8192) -> McPrediction:
    """N stochastic passes of ``model`` over ``X`` with dropout sampling (BatchNorm in eval)."""
    if passes < 2:
        raise ValueError(f"MC dropout needs at least 2 passes, got {passes}")
    was_training = model.training
    model.eval()
    for module in model.modules():
        if isinstance(module, nn.Dropout):
            module.train()
    generator_state = torch.random.get_rng_state()
    torch.manual_seed(seed)
    try:
        rows = torch.from_numpy(np.ascontiguousarray(X, dtype=np.float32))
        total = np.zeros((len(rows), len(model.config.targets)))
        square = np.zeros_like(total)
        with torch.no_grad():
            for _ in range(passes):
                out = torch.cat([model(rows[i:i + batch_size]) for i in range(0, len(rows), batch_size)]) \
                    if len(rows) else torch.zeros(0, len(model.config.targets))
                values = out.numpy().astype(np.float64)
                total += values
                square += values * values
    finally:
        torch.random.set_rng_state(generator_state)
        model.train(was_training)
    mean = total / passes
    std = np.sqrt(np.maximum(square / passes - mean * mean, 0.0) * passes / (passes - 1))
    return McPrediction(mean, std, passes, model.config.targets)


def _z(level: float) -> float:
    if not 0.0 < level < 1.0:
        raise ValueError(f"interval level must be in (0, 1), got {level}")
    return NormalDist().inv_cdf(0.5 + level / 2.0)


def interval_coverage(true, mean, std, level: float = 0.9, scale: float = 1.0) -> float:
    """Share of ``true`` inside ``mean +- z(level) * scale * std`` (all in the same, log, space)."""
    t, m, s = (np.asarray(a, dtype=np.float64).ravel() for a in (true, mean, std))
    if not t.size == m.size == s.size:
        raise ValueError(f"true, mean and std differ in length: {t.size}, {m.size}, {s.size}")
    if not t.size:
        return float("nan")
    return float(np.mean(np.abs(t - m) <= _z(level) * scale * s))


def fit_std_scale(true, mean, std, level: float = 0.9) -> float:
    """The factor on ``std`` that makes the ``level`` interval cover exactly that share of ``true``."""
    t, m, s = (np.asarray(a, dtype=np.float64).ravel() for a in (true, mean, std))
    if not t.size:
        raise ValueError("no values to calibrate on")
    ratio = np.abs(t - m) / np.maximum(s, 1e-12)
    return float(np.quantile(ratio, level) / _z(level))
