"""Baselines the L2P network is measured against, on the same samples and input columns.

- ``GbtBaseline``: gradient-boosted trees (scikit-learn's HistGradientBoostingRegressor), one
  per log target, early stopping on a validation set. Trees need no input transform.
- ``AnalyticalBaseline``: the static prior alone (cnmtune.costmodel.learn.prior), mapped to the log
  targets by a least-squares line per target on the training set (speedup via the kernel's
  mean log baseline in the training set, so it only makes sense in-distribution).
- ``RandomBaseline``: seeded random scores; only its ranking metrics mean anything.

Each is a CostModel (cnmtune.costmodel.learn.base; created by kind with
cnmtune.costmodel.learn.cost_model.create): ``fit(train_set, val_set)`` trains it,
``update(samples)`` refits it on measured samples, ``predict(X) -> Prediction``, and
``save``/``load`` without pickle: the trees as an ONNX tree ensemble (scored by the same
Scorer as L2P models, so a loaded one needs no scikit-learn; cnmtune.costmodel.learn.tree_onnx),
the other two as JSON. scikit-learn and torch (the 'train' extra) are imported where used.
"""

from __future__ import annotations

import copy
import hashlib
import math
import os
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from cnmtune.costmodel.learn import model_format as fmt
from cnmtune.costmodel.analysis.schema import FeatureSchema
from cnmtune.costmodel.learn.base import CostModel, fitted_schema, load_scorer, read_json, save_json
from cnmtune.costmodel.learn.lazy import needs_extra
from cnmtune.costmodel.learn.prediction import Prediction
from cnmtune.costmodel.learn.samples import TARGETS, SampleSet, input_columns
from cnmtune.costmodel.learn.scorer import Scorer
from cnmtune.errors import ModelError


class GbtBaseline(CostModel):
    """One HistGradientBoostingRegressor per log target on the raw input columns."""

    kind = "gbt"

    def __init__(self, max_iter: int = 1000, learning_rate: float = 0.1, max_leaf_nodes: int = 63,
                 seed: int = 0, threads: int | None = 1):
        self.max_iter = max_iter
        self.threads = threads  # OpenMP threads of the tree building (None: all cores)
        self.learning_rate = learning_rate
        self.max_leaf_nodes = max_leaf_nodes
        self.seed = seed
        self.models: list = []
        self.seconds = 0.0
        self.scorer: Scorer | None = None  # a loaded model scores with onnxruntime
        self._schema: FeatureSchema | None = None

    @property
    def schema(self) -> FeatureSchema:
        return fitted_schema(self, self._schema)

    def fit(self, train_set: SampleSet, val_set: SampleSet, chunk: int = 25, patience: int = 4,
            on_chunk: Callable[[str, int, float], None] | None = None) -> GbtBaseline:
        """Fit on ``train_set``, adding ``chunk`` trees at a time; keep the ensemble with the lowest
        ``val_set`` loss, stop after ``patience`` chunks without improvement (or at ``max_iter``);
        ``on_chunk(target, trees, val_loss)`` after each chunk."""
        with needs_extra():
            from threadpoolctl import threadpool_limits

        self._schema, self.scorer = train_set.schema, None
        with threadpool_limits(limits=self.threads, user_api="openmp"):
            return self._fit(train_set, val_set, chunk, patience, on_chunk or (lambda *_: None))

    def _fit(self, train_set: SampleSet, val_set: SampleSet, chunk: int, patience: int,
             on_chunk: Callable[[str, int, float], None]) -> GbtBaseline:
        with needs_extra():
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
                on_chunk(TARGETS[target], model.max_iter, loss)
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
        if self.scorer is not None:
            return self.scorer.predict(X)
        if not self.models:
            raise ModelError("the gradient-boosted trees are not trained: fit or load them first")
        with needs_extra():
            from threadpoolctl import threadpool_limits

        with threadpool_limits(limits=self.threads, user_api="openmp"):
            out = np.column_stack([m.predict(X) for m in self.models]).astype(np.float32)
        return Prediction(out, TARGETS)

    def prepare_update(self) -> None:
        """Check that scikit-learn (the 'train' extra) is there to refit the trees."""
        with needs_extra():
            import sklearn.ensemble  # noqa: F401  (only its presence is checked)

    def update(self, samples: SampleSet, seed: int = 0) -> dict:
        """Refit from scratch on ``samples``, which replace the training data: trees on 3/5 of
        them, early stopping on 1/5 (a 3:1:1 split within every kernel)."""
        train_set, val_set, _ = samples.split(seed)
        if len(train_set) < 2 or not len(val_set):
            raise ModelError(f"refitting the gradient-boosted trees needs at least 2 training and 1 "
                             f"validation sample(s); {len(samples)} samples give {len(train_set)} and {len(val_set)}")
        self.fit(train_set, val_set)
        return {"learnt": "refit", "refit_on": len(train_set), "validated_on": len(val_set),
                "trees": [m.n_iter_ for m in self.models]}

    def save(self, path: str | os.PathLike, data_hash: str = "", metrics: dict | None = None,
             toolchain: dict | None = None) -> Path:
        """The trees as an ONNX tree ensemble with the cost-model metadata (``data_hash``, ``metrics``
        and ``toolchain``, {"kind", "llvm_version"}, of the training data where known)."""
        from cnmtune.costmodel.learn.tree_onnx import tree_ensemble_graph

        if not self.models:
            raise ModelError("the gradient-boosted trees are not trained: nothing to save")
        columns = input_columns(self.schema)
        config = {"max_iter": self.max_iter, "learning_rate": self.learning_rate,
                  "max_leaf_nodes": self.max_leaf_nodes, "seed": self.seed}
        return fmt.write_model(tree_ensemble_graph(self.models, len(columns)), path, schema=self.schema,
                               columns=columns, targets=TARGETS, toolchain_kind=(toolchain or {}).get("kind", ""),
                               llvm_version=(toolchain or {}).get("llvm_version", ""), data_hash=data_hash,
                               metrics=metrics, config=config, kind=self.kind)

    @classmethod
    def load(cls, path: str | os.PathLike, expect_schema_hash: str | None = None) -> GbtBaseline:
        return cls.from_scorer(load_scorer(path, cls.kind, expect_schema_hash))

    @classmethod
    def from_scorer(cls, scorer: Scorer) -> GbtBaseline:
        """A GbtBaseline answering from an ONNX tree ensemble already loaded."""
        config = scorer.metadata[fmt.KEY_CONFIG]
        model = cls(config["max_iter"], config["learning_rate"], config["max_leaf_nodes"], config["seed"])
        model._schema, model.scorer = scorer.schema, scorer
        return model


class AnalyticalBaseline(CostModel):
    """The prior's log total cycles, fitted to each log target by a line (a, b) on training data."""

    kind = "analytical"

    def __init__(self):
        self.coef = np.zeros((len(TARGETS), 2))
        self.prior = None  # AnalyticalPrior over the training columns
        self._schema: FeatureSchema | None = None

    @property
    def schema(self) -> FeatureSchema:
        return fitted_schema(self, self._schema)

    @classmethod
    def static(cls, schema: FeatureSchema) -> AnalyticalBaseline:
        """The prior alone, fitted to nothing: its cycles at the DPU clock as the runtime (a speedup
        of 1 everywhere), the tuner's heuristic without learning."""
        from cnmtune.runtime.sim.config import DpuConfig  # the clock the prior's cycles run at

        model = cls()
        clock_hz = DpuConfig.calibrated().frequency_hz
        model._schema, model.coef[TARGETS.index("runtime")] = schema, (1.0, -math.log(clock_hz))
        model._configure(input_columns(schema))
        return model

    def _log_total(self, X: np.ndarray) -> np.ndarray:
        with needs_extra():
            import torch

        with torch.no_grad():
            return self.prior(torch.from_numpy(np.ascontiguousarray(X, dtype=np.float32)))[:, 2].numpy()

    def _configure(self, columns: tuple[str, ...]) -> None:
        with needs_extra():
            from cnmtune.costmodel.learn.prior import AnalyticalPrior

        self.prior = AnalyticalPrior(len(columns))
        self.prior.configure(columns)

    def fit(self, train_set: SampleSet, val_set: SampleSet | None = None) -> AnalyticalBaseline:
        """Least-squares line from the prior's log total to each log target."""
        self._schema = train_set.schema
        self._configure(train_set.columns)
        x = self._log_total(train_set.X).astype(np.float64)
        design = np.column_stack([x, np.ones_like(x)])
        for i in range(len(TARGETS)):
            self.coef[i] = np.linalg.lstsq(design, train_set.y[:, i].astype(np.float64), rcond=None)[0]
        return self

    def predict(self, X: np.ndarray) -> Prediction:
        """Predicted log targets for rows of ``X``."""
        if self.prior is None:
            raise ModelError("the analytical baseline is not fitted: fit or load it first")
        x = self._log_total(X).astype(np.float64)
        return Prediction(np.column_stack([a * x + b for a, b in self.coef]).astype(np.float32), TARGETS)

    def update(self, samples: SampleSet, seed: int = 0) -> dict:
        """Refit both lines on ``samples`` (from scratch: two parameters per target)."""
        self.fit(samples)
        return {"learnt": "refit", "refit_on": len(samples), "coef": self.coef.tolist()}

    def save(self, path: str | os.PathLike) -> Path:
        """The two lines and the feature schema, as JSON."""
        if self.prior is None:
            raise ModelError("the analytical baseline is not fitted: nothing to save")
        return save_json(path, self.kind, self.schema, {"coef": self.coef.tolist()})

    @classmethod
    def load(cls, path: str | os.PathLike, expect_schema_hash: str | None = None) -> AnalyticalBaseline:
        schema, parameters = read_json(Path(path), cls.kind, expect_schema_hash)
        model = cls()
        model._schema, model.coef = schema, np.asarray(parameters["coef"], dtype=np.float64)
        model._configure(input_columns(schema))
        return model


class RandomBaseline(CostModel):
    """Uniformly random log targets: the ranking a tuner gets without a model."""

    kind = "random"

    def __init__(self, seed: int = 0):
        self.seed = seed
        self._schema: FeatureSchema | None = None

    @property
    def schema(self) -> FeatureSchema:
        return fitted_schema(self, self._schema)

    def fit(self, train_set: SampleSet | None = None, val_set: SampleSet | None = None) -> RandomBaseline:
        """Nothing to learn; remembers the schema of the rows."""
        self._schema = train_set.schema if train_set is not None else self._schema
        return self

    def predict(self, X: np.ndarray) -> Prediction:
        """Seeded random scores, a row's drawn from its own values: the same row (a candidate) scores
        the same in any batch, and the rows of a later batch are not the earlier batch's draws again."""
        key = self.seed.to_bytes(8, "little", signed=True)
        draws = np.array([np.frombuffer(hashlib.blake2b(row.tobytes(), digest_size=8 * len(TARGETS), key=key).digest(),
                                        dtype="<u8") for row in np.ascontiguousarray(X, dtype=np.float32)],
                         dtype=np.uint64).reshape(len(X), len(TARGETS))
        return Prediction((draws / 2.0 ** 64 * 2.0 - 1.0).astype(np.float32), TARGETS)

    def update(self, samples: SampleSet, seed: int = 0) -> dict:
        """Nothing to learn from samples (remembers their schema)."""
        self.fit(samples)
        return {"learnt": "nothing"}

    def save(self, path: str | os.PathLike) -> Path:
        """The seed and the feature schema, as JSON."""
        return save_json(path, self.kind, self.schema, {"seed": self.seed})

    @classmethod
    def load(cls, path: str | os.PathLike, expect_schema_hash: str | None = None) -> RandomBaseline:
        schema, parameters = read_json(Path(path), cls.kind, expect_schema_hash)
        model = cls(int(parameters["seed"]))
        model._schema = schema
        return model
