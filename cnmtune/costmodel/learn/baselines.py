"""Baselines the L2P network is measured against, on the same samples and input columns.

- ``GbtBaseline``: gradient-boosted trees (scikit-learn's HistGradientBoostingRegressor), one
  per log target, early stopping on a validation set. Trees need no input transform.
- ``AnalyticalBaseline``: the static prior alone (cnmtune.costmodel.learn.prior), mapped to the log
  targets by a least-squares line per target on the training set (speedup via the kernel's
  mean log baseline in the training set, so it only makes sense in-distribution).
- ``RandomBaseline``: seeded random scores; only its ranking metrics mean anything.

Each has ``fit(train_set, val_set)`` and ``predict(X) -> Prediction``, like a CostModel.
"""

from __future__ import annotations

import copy
import time

import numpy as np
import torch

from cnmtune.costmodel.learn.prediction import Prediction
from cnmtune.costmodel.learn.prior import AnalyticalPrior
from cnmtune.costmodel.learn.samples import TARGETS, SampleSet


class GbtBaseline:
    """One HistGradientBoostingRegressor per log target on the raw input columns."""

    def __init__(self, max_iter: int = 1000, learning_rate: float = 0.1, max_leaf_nodes: int = 63,
                 seed: int = 0, threads: int | None = 1):
        self.max_iter = max_iter
        self.threads = threads  # OpenMP threads of the tree building (None: all cores)
        self.learning_rate = learning_rate
        self.max_leaf_nodes = max_leaf_nodes
        self.seed = seed
        self.models: list = []
        self.seconds = 0.0

    def fit(self, train_set: SampleSet, val_set: SampleSet, chunk: int = 25, patience: int = 4) -> GbtBaseline:
        """Fit on ``train_set``, adding ``chunk`` trees at a time; keep the ensemble with the lowest
        ``val_set`` loss, stop after ``patience`` chunks without improvement (or at ``max_iter``)."""
        from threadpoolctl import threadpool_limits

        with threadpool_limits(limits=self.threads, user_api="openmp"):
            return self._fit(train_set, val_set, chunk, patience)

    def _fit(self, train_set: SampleSet, val_set: SampleSet, chunk: int, patience: int) -> GbtBaseline:
        from sklearn.ensemble import HistGradientBoostingRegressor

        start = time.perf_counter()
        self.models = []
        for target in range(len(TARGETS)):
            model = HistGradientBoostingRegressor(
                max_iter=chunk, learning_rate=self.learning_rate, max_leaf_nodes=self.max_leaf_nodes,
                early_stopping=False, warm_start=True, random_state=self.seed)
            best, best_model, since = float("inf"), None, 0
            while model.max_iter <= self.max_iter and since < patience:
                model.fit(train_set.X, train_set.y[:, target])
                loss = float(np.mean((model.predict(val_set.X) - val_set.y[:, target]) ** 2))
                if loss < best:
                    best, best_model, since = loss, copy.deepcopy(model), 0
                else:
                    since += 1
                model.set_params(max_iter=model.max_iter + chunk)
            self.models.append(best_model)
        self.seconds = time.perf_counter() - start
        return self

    def predict(self, X: np.ndarray) -> Prediction:
        """Predicted log targets for rows of ``X``."""
        from threadpoolctl import threadpool_limits

        with threadpool_limits(limits=self.threads, user_api="openmp"):
            out = np.column_stack([m.predict(X) for m in self.models]).astype(np.float32)
        return Prediction(out, TARGETS)


class AnalyticalBaseline:
    """The prior's log total cycles, fitted to each log target by a line (a, b) on training data."""

    def __init__(self):
        self.coef = np.zeros((len(TARGETS), 2))
        self.prior: AnalyticalPrior | None = None

    def _log_total(self, X: np.ndarray) -> np.ndarray:
        with torch.no_grad():
            return self.prior(torch.from_numpy(np.ascontiguousarray(X, dtype=np.float32)))[:, 2].numpy()

    def fit(self, train_set: SampleSet, val_set: SampleSet | None = None) -> AnalyticalBaseline:
        """Least-squares line from the prior's log total to each log target."""
        self.prior = AnalyticalPrior(train_set.X.shape[1])
        self.prior.configure(train_set.columns)
        x = self._log_total(train_set.X).astype(np.float64)
        design = np.column_stack([x, np.ones_like(x)])
        for i in range(len(TARGETS)):
            self.coef[i] = np.linalg.lstsq(design, train_set.y[:, i].astype(np.float64), rcond=None)[0]
        return self

    def predict(self, X: np.ndarray) -> Prediction:
        """Predicted log targets for rows of ``X``."""
        x = self._log_total(X).astype(np.float64)
        return Prediction(np.column_stack([a * x + b for a, b in self.coef]).astype(np.float32), TARGETS)


class RandomBaseline:
    """Uniformly random log targets: the ranking a tuner gets without a model."""

    def __init__(self, seed: int = 0):
        self.seed = seed

    def fit(self, train_set: SampleSet | None = None, val_set: SampleSet | None = None) -> RandomBaseline:
        """Nothing to learn."""
        return self

    def predict(self, X: np.ndarray) -> Prediction:
        """Seeded random scores, one per row (same seed, same scores)."""
        rng = np.random.default_rng(self.seed)
        return Prediction(rng.uniform(-1.0, 1.0, size=(len(X), len(TARGETS))).astype(np.float32), TARGETS)
