"""The score role of a tune: predict every candidate's kernel time with the cost model, adapt the
model to this kernel and size on the tune's measured runs (L2P's transfer), the static prior
that shares the model's picks while the model is zero-shot on the kernel, and pipelines ranked
by a score."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from cnmtune.costmodel.analysis.schema import FeatureSchema
from cnmtune.costmodel.learn.baselines import AnalyticalBaseline
from cnmtune.costmodel.learn.cost_model import SHIPPED_MODEL, CostModel, create, model_path
from cnmtune.costmodel.learn.cost_model import load_model as load_cost_model
from cnmtune.costmodel.learn.metrics import mape
from cnmtune.costmodel.learn.recipe import FINETUNE_LR
from cnmtune.costmodel.learn.samples import input_matrix, runtime_samples
from cnmtune.errors import MissingExtra, ModelError
from cnmtune.plugin.tune.report import Candidate

# gemv small, 4 DPUs, 5 rounds of 6 runs: 1.36x with 100 epochs, 1.37x with 300, 1.36x with 1000 (6, 12 and
# 42 s of fine-tuning); one torch thread: the tune's worker processes have the other cores
ADAPT_EPOCHS = 100
# The fewest epochs of a fine-tuning that goes on from the last fine-tuned network (every one after a tune's
# first, for the share of ADAPT_EPOCHS that the new runs are of all: Search.adapt): make demo's va, 10 epochs
# 0.17-0.23 s against 1.2 s for 100. Its learning rate is cut by the same share: Adam's first steps are about the
# rate in size whatever the gradient, so a fit the last fine-tuning annealed would be undone (make demo at the
# full rate: MAPE on the runs it learnt from 5.3 -> 6.4 % on va, 4.3 -> 6.4 % on gemv; at the cut rate 2.6 ->
# 2.3 % and 1.8 -> 1.7 %).
SHORT_EPOCHS = 10


#: Models without learning that --model names instead of a file (the ablation's baselines): the
#: static analytical prior, seeded random scores ('random:SEED'). The tuner never adapts them.
BASELINES = ("analytical", "random")


# While a learned model has not been fine-tuned on the kernel's runs, this share of the runs a round takes
# from the model's ranking goes to the static analytical prior's ranking instead (and the prior orders
# the best run's neighbours in each dimension first, select.ranked_neighbours): zero-shot, the two miss
# different kernels (MODEL.md, "Zero-shot ranking": a first 10 of the network's top 8 and the prior's top 2
# holds a variant within 5 % of the best on 15 of 20 held-out kernels, the network's top 10 on 12, the
# prior's on 6; the network's zero-shot trees, which rank in its place until then, 17, missing bs, where
# the prior holds the best).
PRIOR_SHARE = 0.2


def load_model(model: str | None, schema: FeatureSchema) -> tuple[Path, CostModel]:
    """The cost model `model` names: a file, 'shipped' (the default), or a baseline of BASELINES
    ('analytical', 'random' or 'random:SEED'), checked against `schema`."""
    kind, colon, seed = (model or "").partition(":")
    if kind in BASELINES and not Path(model).is_file():
        if kind == "analytical" and not colon:
            return Path(model), AnalyticalBaseline.static(schema)
        if kind == "random" and (not colon or seed.isdigit()):
            return Path(model), create("random", seed=int(seed or 0))
        raise ModelError(f"cost model {model!r}: the baselines are 'analytical', 'random' and 'random:SEED' "
                         "(SEED a non-negative integer)")
    path = model_path(model or SHIPPED_MODEL, "pass --model M.onnx (see `cnmtune model train`), analytical "
                                               "or random[:SEED]")
    return path, load_cost_model(path, expect_schema_hash=schema.hash)


def predict(model: CostModel, path: Path, candidates: Sequence[Candidate], features: Sequence[dict[str, float]],
            size: int, declared: Sequence[tuple[int, int]], schema: FeatureSchema) -> np.ndarray:
    """Set every candidate's predicted time (``size``: the nominal size; ``declared``: each one's
    processed size and DPU launches per run); returns the model's input rows (one per candidate)."""
    X = input_matrix(features, [c.dpus for c in candidates], [c.tasklets for c in candidates],
                     [size] * len(candidates), [processed for processed, _ in declared],
                     [launches for _, launches in declared], schema)
    predicted = model.predict(X).runtime_s
    if predicted is None:
        raise ModelError(f"{path} predicts no runtime; the tuner ranks by predicted kernel time")
    for c, p in zip(candidates, predicted):
        c.predicted_s = float(p)
    return X


def adapt(model: CostModel, X: np.ndarray, measured: Sequence[Candidate], kernel: str, size: int,
          schema: FeatureSchema, seed: int, epochs: int = ADAPT_EPOCHS, restart: bool = True) -> dict:
    """Fine-tune `model` for `epochs` from its training checkpoint (`restart`; else from its last
    fine-tuned network, at a learning rate cut by epochs / ADAPT_EPOCHS) on the measured kernel
    times of `measured` (input rows `X`; L2P's transfer, the first layers frozen): the model the
    next round scores with. Returns its MAPE on them before and after, and the epochs; a model
    without its checkpoint raises ModelError."""
    model.prepare_update()
    data = runtime_samples(X, [c.measured_s for c in measured], kernel, [c.pipeline for c in measured],
                           [c.dpus for c in measured], [c.tasklets for c in measured], [size] * len(measured), schema)
    true = np.array([c.measured_s for c in measured])
    before = model.predict(X).runtime_s
    lr = None if restart else FINETUNE_LR * epochs / ADAPT_EPOCHS
    learnt = model.update(data, seed=seed, restart=restart, epochs=epochs, threads=1, lr=lr)
    after = model.predict(X).runtime_s
    return {"samples": len(measured), "checkpoint": learnt.get("checkpoint"), "mape_before": mape(true, before),
            "mape_after": mape(true, after), "epochs": epochs}


def load_prior(schema: FeatureSchema) -> AnalyticalBaseline | None:
    """The static analytical prior over `schema`'s features (the second opinion of PRIOR_SHARE);
    None without torch, the 'train' extra it is written in."""
    try:
        return AnalyticalBaseline.static(schema)
    except MissingExtra:
        return None


def interleave(first: Sequence[Candidate], second: Sequence[Candidate], count: int, slots: int) -> list[Candidate]:
    """`count` distinct candidates, `first`'s best and `second`'s alternately until `second` has had
    `slots` of them (or has none left), then `first`'s."""
    queues = iter(first), iter(second)
    chosen: dict[int, Candidate] = {}
    while len(chosen) < count:
        from_second = slots > 0 and len(chosen) % 2 == 1
        c = next((c for c in queues[from_second] if id(c) not in chosen), None)
        if c is None and from_second:
            slots = 0
        elif c is None:
            break
        else:
            chosen[id(c)] = c
            slots -= from_second
    return list(chosen.values())


def ranked_pipelines(candidates: Sequence[Candidate], score: Callable[[Candidate], float]) -> list[str]:
    """The pipelines that name `candidates` (one per binary: pipelines giving the same binary are
    one choice) by their best candidate's score, lowest first."""
    return list(dict.fromkeys(c.pipeline for c in sorted(candidates, key=score)))
