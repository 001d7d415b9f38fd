"""Cost models by name and by file: ``create_model(kind)`` and ``load_model(path)``."""

from __future__ import annotations

import json
import os
from pathlib import Path

from cnmtune.costmodel.learn.baselines import AnalyticalBaseline, GbtBaseline, RandomBaseline
from cnmtune.costmodel.learn.cost_model import CostModel, L2PCostModel
from cnmtune.costmodel.learn.scorer import Scorer
from cnmtune.errors import ModelError

#: Models that can be created untrained, by kind. L2P networks are trained by `cnmtune model
#: train` (or cnmtune.costmodel.learn.training) and loaded from their ONNX file.
CREATABLE: dict[str, type[CostModel]] = {c.kind: c for c in (GbtBaseline, AnalyticalBaseline, RandomBaseline)}


def create_model(kind: str, **options) -> CostModel:
    """An untrained model of ``kind`` ('gbt', 'analytical', 'random') with its options."""
    if kind not in CREATABLE:
        hint = " (train an L2P model with `cnmtune model train`, then load it)" if kind == "l2p" else ""
        raise ModelError(f"unknown cost model kind {kind!r}{hint}; valid: {', '.join(CREATABLE)}")
    return CREATABLE[kind](**options)


def load_model(path: str | os.PathLike, expect_schema_hash: str | None = None) -> CostModel:
    """The cost model in ``path``, of whichever kind wrote it (ONNX: L2P or GBT; JSON: baselines)."""
    path = Path(path)
    if path.suffix == ".json":
        try:
            kind = json.loads(path.read_text()).get("kind")
        except (OSError, ValueError, AttributeError) as exc:
            raise ModelError(f"{path}: unreadable cost model ({exc})") from None
        classes = {c.kind: c for c in (AnalyticalBaseline, RandomBaseline)}
        if kind not in classes:
            raise ModelError(f"{path}: unknown cost model kind {kind!r}")
        return classes[kind].load(path, expect_schema_hash)
    scorer = Scorer(path, expect_schema_hash=expect_schema_hash)
    if scorer.kind == GbtBaseline.kind:
        return GbtBaseline.from_scorer(scorer)
    return L2PCostModel(scorer)
