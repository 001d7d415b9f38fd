"""The pretrained model shipped in cnmtune/data: loads under the current schema and scores sanely."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import cnmtune
from cnmtune.costmodel.learn.checkpoint import load_checkpoint
from cnmtune.costmodel.learn.recipe import SHIPPED_HELD_OUT
from cnmtune.costmodel.analysis.schema import default_schema
from cnmtune.costmodel.learn.scorer import Scorer
from cnmtune.costmodel.learn.training import predict

DATA = Path(cnmtune.__file__).parent / "data"


@pytest.fixture(scope="module", params=["l2p.onnx", "l2p.int8.onnx"])
def scorer(request) -> Scorer:
    return Scorer(DATA / request.param, expect_schema_hash=default_schema().hash)


def test_shipped_model_records_what_it_was_trained_on(scorer):
    meta = json.loads((DATA / "l2p.pt.json").read_text())["meta"]
    assert meta["data_hash"] == scorer.data_hash
    assert not set(SHIPPED_HELD_OUT) & set(meta["kernels"]) and len(meta["kernels"]) == 16
    assert scorer.toolchain["kind"] == "proxy" and scorer.metadata["cnmtune.model_config"]["depth"] == 12
    assert (scorer.quantization is None) == (scorer.path.name == "l2p.onnx")


def test_shipped_model_scores_reference_rows_in_a_sane_range(scorer, samples):
    """The test store's va and red rows are built like the reference dataset's (small size)."""
    prediction = scorer.predict(samples.X)
    true = np.exp(samples.y[:, 0].astype(np.float64))
    ratio = prediction.runtime_s / true
    assert np.all((ratio > 0.2) & (ratio < 5.0)), (ratio.min(), ratio.max())
    assert np.median(np.abs(np.log(ratio))) < np.log(1.25)


def test_shipped_checkpoint_matches_the_onnx_model(samples):
    model, meta = load_checkpoint(DATA / "l2p.pt")
    assert meta["schema"]["hash"] == default_schema().hash
    onnx_out = Scorer(DATA / "l2p.onnx").predict(samples.X[:64]).log_targets
    np.testing.assert_allclose(onnx_out, predict(model, samples.X[:64]).log_targets, atol=1e-4, rtol=1e-4)
