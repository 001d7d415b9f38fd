"""The CostModel interface of the tuning loop (TVM meta_schedule's CostModel role).

Every model maps input rows (``samples.input_matrix``: a feature vector under its schema plus
the configuration columns) to predicted log targets, learns from measured samples, and is saved
without pickle: the L2P network and the gradient-boosted trees as ONNX files with cnmtune
metadata (scored by onnxruntime, ``Scorer``), the analytical and random baselines as JSON.

- ``predict(X) -> Prediction``; ``update(samples) -> dict`` (what it learnt, JSON-safe);
  ``save(path)``; ``load(path, expect_schema_hash)`` refuses a model of another feature schema.
- cnmtune.costmodel.learn.models: ``create_model(kind)`` by name, ``load_model(path)`` by file.
"""

from __future__ import annotations

import abc
import json
import os
import shutil
from pathlib import Path
from typing import ClassVar

import numpy as np

from cnmtune.atomic import atomic_write
from cnmtune.costmodel.analysis.schema import FeatureSchema
from cnmtune.costmodel.learn.prediction import Prediction
from cnmtune.costmodel.learn.samples import SampleSet
from cnmtune.costmodel.learn.scorer import Scorer
from cnmtune.errors import ModelError, SchemaMismatch

#: Tag of the JSON files of models without an ONNX graph (analytical, random).
JSON_FORMAT = "cnmtune-cost-model-json-1"


class CostModel(abc.ABC):
    """A cost model: predicts log runtime and log speedup of input rows, learns from samples."""

    kind: ClassVar[str]
    schema: FeatureSchema | None = None  # of the rows it was trained on or loaded with

    @abc.abstractmethod
    def predict(self, X: np.ndarray) -> Prediction:
        """Predicted log targets (and their exp) for rows of ``X``."""

    @abc.abstractmethod
    def update(self, samples: SampleSet, seed: int = 0) -> dict:
        """Learn from measured ``samples``; returns what was done (JSON-safe)."""

    def prepare_update(self) -> None:
        """Check that ``update`` can run (the files it needs), before samples are measured for it."""

    @abc.abstractmethod
    def save(self, path: str | os.PathLike) -> Path:
        """Write the model to ``path`` (atomically); returns the path."""

    @classmethod
    @abc.abstractmethod
    def load(cls, path: str | os.PathLike, expect_schema_hash: str | None = None) -> CostModel:
        """Read a model saved by ``save``; a schema other than ``expect_schema_hash`` is refused."""


def check_schema(path: Path, schema: FeatureSchema, expect_schema_hash: str | None) -> None:
    """Refuse a model whose feature schema is not the expected one."""
    if expect_schema_hash is not None and expect_schema_hash != schema.hash:
        raise SchemaMismatch(f"{path}: model feature schema {schema.hash} ({schema.version}) "
                             f"!= expected {expect_schema_hash}")


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
    check_schema(path, schema, expect_schema_hash)
    return schema, parameters


class L2PCostModel(CostModel):
    """The exported L2P network: scored by onnxruntime; ``update`` fine-tunes its torch checkpoint
    (X.pt beside X.onnx) as L2P's transfer does (the first half of the blocks, at most 6, frozen)
    and the model then answers from the fine-tuned network."""

    kind = "l2p"

    def __init__(self, scorer: Scorer):
        self.scorer, self.path, self.schema = scorer, scorer.path, scorer.schema
        self._base = None  # the checkpoint's torch model, once loaded
        self.tuned = None  # the fine-tuned torch model after update()

    @classmethod
    def load(cls, path: str | os.PathLike, expect_schema_hash: str | None = None) -> L2PCostModel:
        return cls(Scorer(path, expect_schema_hash=expect_schema_hash))

    @property
    def checkpoint(self) -> Path:
        """The training checkpoint beside the ONNX file."""
        return self.path.with_suffix(".pt")

    def predict(self, X: np.ndarray) -> Prediction:
        if self.tuned is None:
            return self.scorer.predict(X)
        from cnmtune.costmodel.learn.training import predict

        return predict(self.tuned, X)

    def prepare_update(self) -> None:
        """Load the checkpoint and check it is this model's (same training data)."""
        if self._base is not None:
            return
        from cnmtune.costmodel.learn.checkpoint import load_checkpoint

        if not self.checkpoint.is_file():
            raise ModelError(f"fine-tuning needs the training checkpoint of {self.path} at {self.checkpoint} "
                             "(`cnmtune model train` writes it beside the ONNX file)")
        base, meta = load_checkpoint(self.checkpoint)
        if meta.get("data_hash") != self.scorer.data_hash:
            raise ModelError(f"{self.checkpoint} is not the checkpoint of {self.path}: training data hash "
                             f"{meta.get('data_hash')} != {self.scorer.data_hash}")
        self._base = base

    def update(self, samples: SampleSet, seed: int = 0) -> dict:
        from cnmtune.costmodel.learn.model import TRANSFER_FROZEN
        from cnmtune.costmodel.learn.training import finetune_on

        self.prepare_update()
        frozen = min(TRANSFER_FROZEN, self._base.config.depth // 2)
        start = self._base if self.tuned is None else self.tuned
        self.tuned, _ = finetune_on(start, samples, frozen, seed=seed)
        return {"checkpoint": str(self.checkpoint), "samples": len(samples), "frozen_blocks": frozen}

    def save(self, path: str | os.PathLike) -> Path:
        path = Path(path)
        if self.tuned is None:
            if path.resolve() != self.path.resolve():
                shutil.copyfile(self.path, path)
            return path
        from cnmtune.costmodel.learn.checkpoint import save_checkpoint
        from cnmtune.costmodel.learn.onnx_export import export_onnx

        # the fine-tuned weights go beside the graph too, so the saved model can be updated again
        save_checkpoint(path.with_suffix(".pt"), self.tuned, {"data_hash": self.scorer.data_hash})
        toolchain = self.scorer.toolchain
        return export_onnx(self.tuned, path, schema=self.schema, toolchain_kind=toolchain["kind"],
                           llvm_version=toolchain["llvm_version"], data_hash=self.scorer.data_hash,
                           metrics=self.scorer.metrics)
