"""The CostModel base class (scikit-learn's base.py role) and what its implementations share.

The interface, its factory and the L2P implementation are in cnmtune.costmodel.learn.cost_model;
the base class lives here so that the baselines (cnmtune.costmodel.learn.baselines) can derive
from it while cost_model creates them by kind, without an import cycle. Also here: the schema
check every ``load`` makes, and the JSON file of the models that have no ONNX graph.
"""

from __future__ import annotations

import abc
import json
import os
from pathlib import Path
from typing import ClassVar

import numpy as np

from cnmtune.atomic import atomic_write
from cnmtune.costmodel.learn import model_format as fmt
from cnmtune.costmodel.analysis.schema import FeatureSchema
from cnmtune.costmodel.learn.prediction import Prediction
from cnmtune.costmodel.learn.samples import SampleSet
from cnmtune.costmodel.learn.scorer import Scorer
from cnmtune.errors import ModelError

#: Tag of the JSON files of models without an ONNX graph (analytical, random).
JSON_FORMAT = "cnmtune-cost-model-json-1"


class CostModel(abc.ABC):
    """A cost model: predicts log runtime and log speedup of input rows, learns from samples."""

    kind: ClassVar[str]

    @property
    @abc.abstractmethod
    def schema(self) -> FeatureSchema:
        """The feature schema of its input rows (ModelError before it is fitted or loaded)."""

    @abc.abstractmethod
    def predict(self, X: np.ndarray) -> Prediction:
        """Predicted log targets (and their exp) for rows of ``X`` (``samples.input_matrix``)."""

    @abc.abstractmethod
    def update(self, samples: SampleSet, seed: int = 0) -> dict:
        """Learn from measured ``samples``; returns what was done (JSON-safe)."""

    def prepare_update(self) -> None:
        """Check that ``update`` can run (the files it needs), before samples are measured for it."""

    @abc.abstractmethod
    def save(self, path: str | os.PathLike) -> Path:
        """Write the model to ``path`` (atomically, never a pickle); returns the path."""

    @classmethod
    @abc.abstractmethod
    def load(cls, path: str | os.PathLike, expect_schema_hash: str | None = None) -> CostModel:
        """Read a model saved by ``save``; a schema other than ``expect_schema_hash`` is refused."""


def fitted_schema(model: CostModel, schema: FeatureSchema | None) -> FeatureSchema:
    """``schema``, or the ModelError of a model that has none yet."""
    if schema is None:
        raise ModelError(f"the {model.kind} cost model has no feature schema yet: fit or load it first")
    return schema


def load_scorer(path: str | os.PathLike, kind: str, expect_schema_hash: str | None) -> Scorer:
    """The ONNX cost model in ``path``, which must be of ``kind``."""
    scorer = Scorer(path, expect_schema_hash=expect_schema_hash)
    if scorer.kind != kind:
        raise ModelError(f"{path} holds a {scorer.kind} cost model, not a {kind} one")
    return scorer


def json_kind(path: Path) -> str | None:
    """The ``kind`` a JSON cost-model file says it holds."""
    try:
        record = json.loads(path.read_text())
        return record.get("kind") if record.get("format") == JSON_FORMAT else None
    except (OSError, ValueError, AttributeError) as exc:
        raise ModelError(f"{path}: unreadable cost model ({exc})") from None


def save_json(path: str | os.PathLike, kind: str, schema: FeatureSchema, parameters: dict) -> Path:
    """Write a JSON cost model: its kind, feature schema and parameters."""
    record = {"format": JSON_FORMAT, "kind": kind, "schema": schema.to_dict(), "parameters": parameters}
    return atomic_write(path, (json.dumps(record, indent=2, sort_keys=True) + "\n").encode())


def read_json(path: Path, kind: str, expect_schema_hash: str | None) -> tuple[FeatureSchema, dict]:
    """The schema and parameters of a JSON cost model of ``kind``."""
    try:
        record = json.loads(path.read_text())
        if record.get("format") != JSON_FORMAT or record.get("kind") != kind:
            raise ModelError(f"{path} is not a cnmtune {kind} cost model")
        schema = FeatureSchema.from_dict(record["schema"])
        parameters = record["parameters"]
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise ModelError(f"{path}: unreadable cost model ({exc})") from None
    if schema.hash != record["schema"].get("hash"):
        raise ModelError(f"{path}: schema hash {record['schema'].get('hash')} does not match its names "
                         f"({schema.hash}); the file is corrupt")
    fmt.check_schema(path, schema, expect_schema_hash)
    return schema, parameters
