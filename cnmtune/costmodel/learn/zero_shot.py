"""The zero-shot trees of an L2P network: gradient-boosted trees fitted on exactly the rows the
network was trained on, kept beside it as ``X.trees.onnx`` for a network ``X.onnx``.

On kernels it never saw, the trees rank variants better than the network (MODEL.md, "Zero-shot
ranking": a variant within 5 % of the best in the top 10 on 17 of 20 held-out kernels against
the network's 12), and the network learns better from a kernel's first runs (fine-tuning; the
trees only refit from scratch). So the tuner ranks with the trees until it first fine-tunes the
network on the kernel's runs (cnmtune.plugin.tune.search.Search.ranker).

- ``trees_path(network)``: where a network's trees live.
- ``training_rows(samples, network)``: the training, validation and test rows of a network (its
  loaded Scorer), from its checkpoint's side-car (kernels, split, seed), checked against the
  training data's hash sealed in its ONNX metadata.
- ``load_trees(network)``: the trees beside a network loaded from X.onnx, None when it has none;
  trees of other rows or another feature schema are refused (ModelError).
- ``drop_stale_trees(network, data_hash)``: what `model train` and `finetune` do to the trees
  beside the network they write: keep them if they were fitted on its rows, else remove them.
"""

from __future__ import annotations

import json
from pathlib import Path

from cnmtune.costmodel.learn import model_format as fmt
from cnmtune.costmodel.learn.baselines import GbtBaseline
from cnmtune.costmodel.learn.cost_model import L2PCostModel
from cnmtune.costmodel.learn.samples import SampleSet
from cnmtune.costmodel.learn.scorer import Scorer
from cnmtune.errors import ModelError


def trees_path(network: str | Path) -> Path:
    """``X.trees.onnx`` for the network ``X.onnx``."""
    return fmt.companion_path(network, fmt.TREES_SUFFIX)


def training_rows(samples: SampleSet, network: Scorer) -> tuple[SampleSet, SampleSet, SampleSet]:
    """The train, validation and test sets the network loaded in ``network`` was trained and tested
    on: its kernels, split and seed from the side-car of its checkpoint (X.pt.json); rows whose
    hash is not the one in the network's metadata (other data, another export) are refused."""
    from cnmtune.costmodel.learn.checkpoint import sidecar  # torch: the 'train' extra the trees need anyway

    side = sidecar(network.path.with_suffix(".pt"))
    try:
        meta = json.loads(side.read_text())["meta"]
        kernels, split, seed = meta["kernels"], meta["split"], int(meta["seed"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ModelError(f"{side}: cannot read which rows {network.path.name} was trained on ({exc}); the trees "
                         "need the checkpoint side-car that `cnmtune model train` writes") from None
    parts = samples.select(kernels).split(seed, by_binary=split == "binary")
    if parts[0].data_hash != network.data_hash:
        raise ModelError(f"{network.path.name} was trained on other rows than these samples give for its kernels, "
                         f"split '{split}' and seed {seed} (training data hash {network.data_hash[:16]}, these "
                         f"{parts[0].data_hash[:16]}): pass the dataset it was trained on")
    return parts


def load_trees(network: L2PCostModel) -> GbtBaseline | None:
    """The zero-shot trees beside a network loaded from its ONNX file, or None when there are none;
    trees of another feature schema, or fitted on other rows than the network, raise ModelError."""
    path = trees_path(network.path)
    if not path.is_file():
        return None
    trees = GbtBaseline.load(path, expect_schema_hash=network.schema.hash)
    if trees.scorer.data_hash != network.data_hash:
        raise ModelError(f"{path} was fitted on other rows than {network.path.name} was trained on (training "
                         f"data hash {trees.scorer.data_hash[:16]}, the network's {network.data_hash[:16]}): fit "
                         "them again with `cnmtune model trees`")
    return trees


def drop_stale_trees(network: str | Path, data_hash: str) -> Path | None:
    """Remove the trees beside ``network`` unless they were fitted on the rows ``data_hash`` names
    (a network written over one trained on other rows, or unreadable trees); the path removed."""
    path = trees_path(network)
    if not path.is_file():
        return None
    try:
        if Scorer(path).data_hash == data_hash:
            return None
    except ModelError:
        pass
    path.unlink()
    return path
