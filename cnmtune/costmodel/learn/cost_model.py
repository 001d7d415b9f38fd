"""The CostModel interface of the tuning loop (TVM meta_schedule's CostModel role).

Every model maps input rows (``samples.input_matrix``: a feature vector under its schema plus
the configuration columns) to predicted log targets, learns from measured samples, and is saved
without pickle: the L2P network and the gradient-boosted trees as ONNX files with cnmtune
metadata (scored by onnxruntime, ``Scorer``), the analytical and random baselines as JSON.

- ``CostModel`` (defined in cnmtune.costmodel.learn.base): ``schema``; ``predict(X) ->
  Prediction``; ``update(samples, seed) -> dict`` (what it learnt, JSON-safe); ``save(path)``;
  ``load(path, expect_schema_hash)`` refuses a model of another feature schema.
- ``create(kind, **options)``: an untrained model by name ('l2p', 'gbt', 'analytical', 'random').
- ``load_model(path, expect_schema_hash)``: the model in a file, of whichever kind wrote it.
- ``model_path(name)``: the file a command's model argument names: a path, or 'shipped'.
- ``L2PCostModel``: the L2P network. Scoring a loaded file needs only onnxruntime; torch is
  imported by ``fit``, ``update`` and saving a changed network (the 'train' extra).
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from cnmtune.atomic import atomic_write
from cnmtune.costmodel.learn import model_format as fmt
from cnmtune.costmodel.learn.base import CostModel, fitted_schema, json_kind, load_scorer
from cnmtune.costmodel.learn.baselines import AnalyticalBaseline, GbtBaseline, RandomBaseline
from cnmtune.costmodel.learn.lazy import needs_extra
from cnmtune.costmodel.learn.prediction import Prediction
from cnmtune.costmodel.learn.recipe import MODEL_DEFAULTS, TRAIN_DEFAULTS
from cnmtune.costmodel.learn.samples import SampleSet
from cnmtune.costmodel.learn.scorer import Scorer
from cnmtune.costmodel.analysis.schema import FeatureSchema
from cnmtune.errors import ModelError

__all__ = ["CostModel", "L2PCostModel", "KINDS", "SHIPPED_MODEL", "create", "load_model", "model_path",
           "shipped_model_path"]

#: The name every command that takes a model file accepts for the model cnmtune ships.
SHIPPED_MODEL = "shipped"


class L2PCostModel(CostModel):
    """The L2P network. Loaded from X.onnx it is scored by onnxruntime; ``update`` fine-tunes its
    torch checkpoint (X.pt beside X.onnx) as L2P's transfer does (the first half of the blocks,
    at most 6, frozen), and the model then answers from the fine-tuned network. ``fit`` trains
    a new network (as ``cnmtune model train`` does)."""

    kind = "l2p"

    def __init__(self, config: dict | None = None, *, seed: int = 0, threads: int | None = 1,
                 toolchain: dict | None = None, **train_options):
        """An untrained network: ``config`` holds L2PConfig fields (default: recipe.MODEL_DEFAULTS),
        ``train_options`` keyword arguments of ``training.train`` (default: recipe.TRAIN_DEFAULTS);
        ``toolchain`` ({"kind", "llvm_version"}) names the compiler of the training binaries."""
        self.config = {**MODEL_DEFAULTS, **(config or {})}
        self.train_options = {**TRAIN_DEFAULTS, **train_options}
        self.seed, self.threads = seed, threads
        self.toolchain: dict = toolchain or {"kind": "", "llvm_version": ""}
        self.data_hash = ""  # sha256 of the training data (SampleSet.data_hash)
        self.metrics: dict = {}  # recorded at export
        self.scorer: Scorer | None = None  # the loaded ONNX file, while no torch network is newer
        self.path: Path | None = None  # that file
        self.network = None  # the torch L2PModel trained or fine-tuned in this process
        self._base = None  # the loaded file's training checkpoint, once read
        self._schema: FeatureSchema | None = None

    @property
    def schema(self) -> FeatureSchema:
        return fitted_schema(self, self._schema)

    @property
    def checkpoint(self) -> Path | None:
        """The training checkpoint beside the loaded ONNX file (None for a model not loaded)."""
        return None if self.path is None else self.path.with_suffix(".pt")

    @classmethod
    def load(cls, path: str | os.PathLike, expect_schema_hash: str | None = None) -> L2PCostModel:
        return cls.from_scorer(load_scorer(path, cls.kind, expect_schema_hash))

    @classmethod
    def from_scorer(cls, scorer: Scorer) -> L2PCostModel:
        """An L2PCostModel answering from an exported network already loaded."""
        model = cls(toolchain=scorer.toolchain)
        model.config = scorer.metadata[fmt.KEY_CONFIG]  # as trained, not the defaults of a new one
        model.scorer, model.path, model._schema = scorer, scorer.path, scorer.schema
        model.data_hash, model.metrics = scorer.data_hash, scorer.metrics
        return model

    def fit(self, train_set: SampleSet, val_set: SampleSet) -> L2PCostModel:
        """Train a new network on ``train_set`` with early stopping on ``val_set``."""
        with needs_extra():
            from cnmtune.costmodel.learn.model import L2PConfig
            from cnmtune.costmodel.learn.training import train

        result = train(L2PConfig.from_dict(self.config), train_set, val_set, seed=self.seed,
                       threads=self.threads, **self.train_options)
        self.network, self._base, self.scorer, self.path = result.model, None, None, None
        self._schema, self.data_hash, self.metrics = train_set.schema, train_set.data_hash, {}
        return self

    def predict(self, X: np.ndarray) -> Prediction:
        if self.network is not None:
            with needs_extra():
                from cnmtune.costmodel.learn.training import predict

            return predict(self.network, X)
        if self.scorer is None:
            raise ModelError("the L2P network is not trained: fit or load it first")
        return self.scorer.predict(X)

    def prepare_update(self) -> None:
        """Load the checkpoint of the loaded file and check it is its own (same training data)."""
        if self.network is not None or self._base is not None:
            return
        if self.scorer is None:
            raise ModelError("the L2P network is not trained: fit or load it first")
        with needs_extra():
            from cnmtune.costmodel.learn.checkpoint import load_checkpoint

        if not self.checkpoint.is_file():
            raise ModelError(f"fine-tuning needs the training checkpoint of {self.path} at {self.checkpoint} "
                             "(`cnmtune model train` writes it beside the ONNX file)")
        base, meta = load_checkpoint(self.checkpoint)
        if meta.get("data_hash") != self.data_hash:
            raise ModelError(f"{self.checkpoint} is not the checkpoint of {self.path}: training data hash "
                             f"{meta.get('data_hash')} != {self.data_hash}")
        self._base = base

    def update(self, samples: SampleSet, seed: int = 0, restart: bool = False, epochs: int | None = None,
               threads: int | None = None, lr: float | None = None) -> dict:
        """Fine-tune on ``samples`` (training.finetune_on, for ``epochs`` from learning rate ``lr``:
        default its own, on ``threads`` torch threads); a second update goes on from the first, or
        with ``restart`` from the training checkpoint again."""
        self.prepare_update()
        with needs_extra():
            from cnmtune.costmodel.learn.model import TRANSFER_FROZEN
            from cnmtune.costmodel.learn.training import finetune_on

        start = self._base if self.network is None or restart else self.network
        frozen = min(TRANSFER_FROZEN, start.config.depth // 2)
        given = {"epochs": epochs, "lr": lr}
        self.network, _ = finetune_on(start, samples, frozen, seed=seed, threads=threads,
                                      **{name: value for name, value in given.items() if value is not None})
        checkpoint = self.checkpoint
        return {"checkpoint": None if checkpoint is None else str(checkpoint), "samples": len(samples),
                "frozen_blocks": frozen}

    def save(self, path: str | os.PathLike) -> Path:
        """The network as ONNX at ``path`` and its training checkpoint beside it (``.pt``), so the
        saved model can be updated again; an unchanged loaded model is copied with its checkpoint."""
        path = Path(path)
        if self.network is None:
            if self.scorer is None:
                raise ModelError("the L2P network is not trained: nothing to save")
            if path.resolve() != self.path.resolve():
                self._copy_to(path)
            return path
        with needs_extra():
            from cnmtune.costmodel.learn.checkpoint import save_checkpoint
            from cnmtune.costmodel.learn.onnx_export import export_onnx

        save_checkpoint(path.with_suffix(".pt"), self.network, {"data_hash": self.data_hash})
        return export_onnx(self.network, path, schema=self.schema, toolchain_kind=self.toolchain["kind"],
                           llvm_version=self.toolchain["llvm_version"], data_hash=self.data_hash,
                           metrics=self.metrics)

    def _copy_to(self, path: Path) -> None:
        """Copy the loaded file and, when there is one, its checkpoint (weights and JSON side-car)."""
        weights = path.with_suffix(".pt")
        for source, target in ((self.checkpoint, weights),
                               (self.checkpoint.with_name(self.checkpoint.name + ".json"),
                                weights.with_name(weights.name + ".json"))):
            if source.is_file():
                atomic_write(target, source.read_bytes())
        atomic_write(path, self.path.read_bytes())


#: Every cost model by kind.
KINDS: dict[str, type[CostModel]] = {c.kind: c for c in (L2PCostModel, GbtBaseline, AnalyticalBaseline,
                                                          RandomBaseline)}


def create(kind: str, **options) -> CostModel:
    """An untrained model of ``kind`` ('l2p', 'gbt', 'analytical', 'random') with its options."""
    if kind not in KINDS:
        raise ModelError(f"unknown cost model kind {kind!r}; valid: {', '.join(KINDS)}")
    return KINDS[kind](**options)


def load_model(path: str | os.PathLike, expect_schema_hash: str | None = None) -> CostModel:
    """The cost model in ``path``, of whichever kind wrote it (ONNX: l2p or gbt; JSON: analytical
    or random); a feature schema other than ``expect_schema_hash`` is refused (SchemaMismatch)."""
    path = Path(path)
    try:
        with path.open("rb") as file:
            is_json = file.read(1) == b"{"
    except OSError as exc:
        raise ModelError(f"cannot read cost model {path}: {exc.strerror or exc}") from None
    if is_json:
        kind = json_kind(path)
        if kind not in KINDS:
            raise ModelError(f"{path}: unknown cost model kind {kind!r}; valid: {', '.join(KINDS)}")
        return KINDS[kind].load(path, expect_schema_hash)
    scorer = Scorer(path, expect_schema_hash=expect_schema_hash)
    model_class = {c.kind: c for c in (L2PCostModel, GbtBaseline)}.get(scorer.kind)
    if model_class is None:
        raise ModelError(f"{path}: unknown ONNX cost model kind {scorer.kind!r}")
    return model_class.from_scorer(scorer)


def shipped_model_path() -> Path:
    """The pretrained model shipped with cnmtune (cnmtune/data/l2p.onnx), wherever it is installed."""
    return Path(__file__).resolve().parents[2] / "data" / "l2p.onnx"


def model_path(name: str | os.PathLike, advice: str = "") -> Path:
    """The model file ``name`` gives: an existing file, else ``SHIPPED_MODEL`` for the shipped model;
    anything else raises ModelError (``advice`` ends its message)."""
    path = Path(name)
    if not path.is_file() and str(name) == SHIPPED_MODEL:
        path = shipped_model_path()
    if not path.is_file():
        raise ModelError(f"no cost model at {path}: neither a file nor '{SHIPPED_MODEL}' (the model cnmtune ships)"
                         + (f"; {advice}" if advice else ""))
    return path
