"""The fixed input layers of the L2P network: log of counts and the analytical prior, in torch and ONNX."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from cnmtune.costmodel.learn.checkpoint import load_checkpoint, save_checkpoint
from cnmtune.costmodel.learn.model import L2PConfig, L2PModel
from cnmtune.costmodel.learn.onnx_export import export_onnx
from cnmtune.costmodel.learn.prior import (
    DMA_ASSUMED_BYTES,
    DMA_BETA,
    DMA_READ_ALPHA,
    DMA_WRITE_ALPHA,
    PRIOR_COLUMNS,
    ROUTINE_SLOTS,
    AnalyticalPrior,
    LogCounts,
)
from cnmtune.costmodel.learn.samples import CONFIG_COLUMNS, input_columns
from cnmtune.costmodel.analysis.schema import default_schema, dpu_schema
from cnmtune.costmodel.learn.scorer import Scorer
from cnmtune.costmodel.learn.training import predict, train

COLUMNS = input_columns(default_schema())


def row(dpus: int, tasklets: int, size: int, launches: int = 1, **features: float) -> torch.Tensor:
    x = torch.zeros(1, len(COLUMNS))
    for name, value in {**features, "cfg:log2_dpus": math.log2(dpus), "cfg:log2_tasklets": math.log2(tasklets),
                        "cfg:log2_size": math.log2(size), "cfg:log2_processed_size": math.log2(size),
                        "cfg:log2_launches": math.log2(launches)}.items():
        x[0, COLUMNS.index(name)] = value
    return x


def test_log_counts_leaves_the_configuration_columns_alone():
    layer = LogCounts(len(COLUMNS))
    layer.configure(COLUMNS)
    x = row(4, 16, 1024, launches=8, **{"op:add": 99.0, "wop:add": 1e6})
    out = layer(x)[0]
    assert out[COLUMNS.index("op:add")].item() == pytest.approx(math.log(100.0))
    assert out[COLUMNS.index("wop:add")].item() == pytest.approx(math.log1p(1e6))
    assert out[-5:].tolist() == pytest.approx([2.0, 4.0, 10.0, 10.0, 3.0])
    assert layer(-x)[0, COLUMNS.index("op:add")].item() == 0.0  # negative counts are clamped
    default = LogCounts(len(COLUMNS))  # without names: the contract puts the configuration last
    assert torch.equal(default.mask, layer.mask)


def test_prior_follows_the_revolver_and_dma_formulas():
    prior = AnalyticalPrior(len(COLUMNS))
    prior.configure(COLUMNS)
    features = {"wop:add": 1000.0, "wop:lw": 500.0, "wcall:__mulsi3": 10.0, "wcall:mram_read": 4.0,
                "op:add": 7.0}  # op: (static, not loop-weighted) does not count
    # the call instructions themselves are in wop (here: left out); wcall adds the routine's slots,
    # none for mram_read, whose DPU instruction (ldma) is the call's
    slots = 1000 + 500 + 10 * ROUTINE_SLOTS["__mulsi3"]
    dma = 4 * (DMA_READ_ALPHA + DMA_BETA * DMA_ASSUMED_BYTES)
    for dpus, tasklets in ((1, 1), (2, 4), (4, 16)):
        compute, log_dma, total = prior(row(dpus, tasklets, 4096, **features))[0].tolist()
        assert compute == pytest.approx(math.log((slots + 1) * 4096 / (dpus * tasklets) * max(tasklets, 11)), rel=1e-5)
        assert log_dma == pytest.approx(math.log1p(dma) + math.log(4096 / dpus), rel=1e-5)
        assert total == pytest.approx(math.log(math.exp(compute) + math.exp(log_dma)), rel=1e-5)
    # up to 11 tasklets each one more fills the revolver pipeline; from 11 on it is full
    c = [prior(row(1, t, 4096, **features))[0, 0].item() for t in (1, 2, 8, 16, 32)]
    assert c[0] > c[1] > c[2] > c[3] == pytest.approx(c[2] - math.log(11 / 8), rel=1e-5)
    assert c[4] == pytest.approx(c[3], rel=1e-5)
    with pytest.raises(ValueError, match="cfg:log2_dpus"):
        prior.configure(COLUMNS[:-len(CONFIG_COLUMNS)])


def test_prior_counts_the_dpu_schemas_ldma_and_sdma_as_transfers():
    """In the DPU schema a transfer is an instruction (an SDK ELF's, a lowered proxy ELF's inline
    mram_read/mram_write): wop:ldma prices as the proxy schema's wcall:mram_read, plus its slot."""
    columns = input_columns(dpu_schema())
    prior = AnalyticalPrior(len(columns))
    prior.configure(columns)
    x = torch.zeros(1, len(columns))
    for name, value in {"wop:add": 1000.0, "wop:ldma": 4.0, "wop:sdma": 2.0, "cfg:log2_dpus": 2.0,
                        "cfg:log2_tasklets": 4.0, "cfg:log2_processed_size": 12.0}.items():
        x[0, columns.index(name)] = value
    compute, log_dma, _ = prior(x)[0].tolist()
    dma = 4 * (DMA_READ_ALPHA + DMA_BETA * DMA_ASSUMED_BYTES) + 2 * (DMA_WRITE_ALPHA + DMA_BETA * DMA_ASSUMED_BYTES)
    assert log_dma == pytest.approx(math.log1p(dma) + math.log(4096 / 4), rel=1e-5)
    assert compute == pytest.approx(math.log((1006 + 1) * 4096 / (4 * 16) * 16), rel=1e-5)


def test_block_prior_prices_dma_at_the_kernels_block_size():
    """The calls of a streaming loop scale as 256 / B: per byte, alpha / B + beta."""
    fixed, block = AnalyticalPrior(len(COLUMNS)), AnalyticalPrior(len(COLUMNS), block_size=True)
    fixed.configure(COLUMNS)
    block.configure(COLUMNS)
    features = {"wop:add": 1000.0, "wcall:mram_read": 4.0}
    for unknown_or_assumed in (0.0, float(DMA_ASSUMED_BYTES)):
        x = row(4, 16, 4096, **features, dma_bytes=unknown_or_assumed)
        assert torch.allclose(block(x), fixed(x))
    x = row(4, 16, 4096, **features, dma_bytes=2048.0)
    dma = 4 * DMA_ASSUMED_BYTES / 2048 * (DMA_READ_ALPHA + DMA_BETA * 2048)
    assert block(x)[0, 1].item() == pytest.approx(math.log1p(dma) + math.log(4096 / 4), rel=1e-5)
    assert block(x)[0, 1] < fixed(x)[0, 1]  # larger blocks: fewer DMA setups per byte
    with pytest.raises(ValueError, match="dma_bytes"):
        block.configure(tuple(c for c in COLUMNS if c != "dma_bytes"))


@pytest.fixture(scope="module")
def extended(splits):
    """A small model with both fixed input layers (the prior at the kernel's block size), trained
    a few epochs."""
    train_set, val_set, _ = splits
    config = L2PConfig(depth=2, width=32, dropout=0.1, log_inputs=True, prior=True, block_prior=True)
    return train(config, train_set, val_set, epochs=5, seed=0, threads=1).model


def test_fixed_layers_add_no_parameters_and_widen_the_first_layer(extended, samples):
    n = len(samples.columns)
    assert extended.input.linear.in_features == n + len(PRIOR_COLUMNS)
    assert extended.normalize.mean.shape == (n + len(PRIOR_COLUMNS),)
    plain = L2PModel(n, L2PConfig(depth=2, width=32, dropout=0.1))
    added = sum(p.numel() for p in extended.parameters()) - sum(p.numel() for p in plain.parameters())
    assert added == len(PRIOR_COLUMNS) * 32  # only the wider input Linear
    assert {"log_counts.mask", "prior.weights"} <= set(extended.state_dict())


def test_exported_graph_with_fixed_layers_matches_torch(extended, samples, splits, tmp_path):
    path = export_onnx(extended, tmp_path / "ext.onnx", schema=samples.schema, toolchain_kind="proxy",
                       llvm_version="22.1.0", data_hash="x")
    scorer = Scorer(path)
    assert scorer.columns == samples.columns  # the input contract does not change
    test_set = splits[2]
    np.testing.assert_allclose(scorer.predict(test_set.X).log_targets, predict(extended, test_set.X).log_targets,
                               atol=1e-4, rtol=1e-4)
    assert scorer.metadata["cnmtune.model_config"]["prior"] is True


def test_checkpoint_keeps_the_fixed_layers_and_old_configs_load(extended, splits, tmp_path):
    save_checkpoint(tmp_path / "ext.pt", extended)
    loaded, _ = load_checkpoint(tmp_path / "ext.pt")
    np.testing.assert_array_equal(predict(loaded, splits[2].X).log_targets, predict(extended, splits[2].X).log_targets)
    old = L2PConfig.from_dict({"depth": 12, "width": 256, "dropout": 0.5, "residual": True,
                               "targets": ["runtime", "speedup"]})
    assert not old.log_inputs and not old.prior and not old.block_prior
