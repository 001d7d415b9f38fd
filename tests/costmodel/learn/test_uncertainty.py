"""MC-dropout uncertainty and the calibration of its intervals."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from cnmtune.costmodel.learn.model import L2PConfig, L2PModel
from cnmtune.costmodel.learn.uncertainty import fit_std_scale, interval_coverage, mc_dropout_predict


def test_coverage_of_a_calibrated_gaussian_is_the_level():
    rng = np.random.default_rng(0)
    mean = rng.normal(size=20_000)
    std = rng.uniform(0.1, 2.0, size=mean.size)
    true = mean + std * rng.normal(size=mean.size)
    assert interval_coverage(true, mean, std, 0.9) == pytest.approx(0.9, abs=0.01)
    assert interval_coverage(true, mean, std, 0.5) == pytest.approx(0.5, abs=0.01)
    # overconfident by 2x: the 90 % interval holds ~59 %; the fitted scale repairs it
    assert interval_coverage(true, mean, std / 2, 0.9) == pytest.approx(0.59, abs=0.02)
    scale = fit_std_scale(true, mean, std / 2, 0.9)
    assert scale == pytest.approx(2.0, rel=0.05)
    assert interval_coverage(true, mean, std / 2, 0.9, scale) == pytest.approx(0.9, abs=0.005)
    with pytest.raises(ValueError, match="level"):
        interval_coverage(true, mean, std, 1.5)
    with pytest.raises(ValueError, match="differ in length"):
        interval_coverage(true[:3], mean, std)


def test_mc_dropout_is_seeded_and_leaves_the_model_as_it_was():
    torch.manual_seed(0)
    model = L2PModel(6, L2PConfig(depth=2, width=16, dropout=0.5)).eval()
    X = np.random.default_rng(0).normal(size=(50, 6)).astype(np.float32)
    state = torch.random.get_rng_state()
    a, b = mc_dropout_predict(model, X, passes=8, seed=3), mc_dropout_predict(model, X, passes=8, seed=3)
    assert torch.equal(state, torch.random.get_rng_state())  # the global generator is untouched
    np.testing.assert_array_equal(a.mean, b.mean)
    assert a.mean.shape == a.std.shape == (50, 2) and (a.std > 0).all()
    assert not model.training and not any(m.training for m in model.modules())
    c = mc_dropout_predict(model, X, passes=8, seed=4)
    assert not np.array_equal(a.mean, c.mean)
    deterministic = L2PModel(6, L2PConfig(depth=2, width=16, dropout=0.0)).eval()
    assert np.allclose(mc_dropout_predict(deterministic, X, passes=3).std, 0.0, atol=1e-6)
    with pytest.raises(ValueError, match="at least 2 passes"):
        mc_dropout_predict(model, X, passes=1)
