"""cnmtune's Adam and schedules against torch.optim's: the same weights and rates, bit for bit."""

from __future__ import annotations

import math
import subprocess
import sys

import pytest
import torch

from cnmtune.costmodel.learn.adam import Adam, Plateau, cosine_rates


def network() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(6, 16), torch.nn.BatchNorm1d(16), torch.nn.ReLU(),
                               torch.nn.Linear(16, 2)).train()


def step(model: torch.nn.Module, optimizer, x: torch.Tensor, y: torch.Tensor) -> None:
    optimizer.zero_grad()
    torch.nn.functional.mse_loss(model(x), y).backward()
    optimizer.step()


@pytest.mark.parametrize("weight_decay", [0.0, 0.01])
@pytest.mark.parametrize("foreach", [True, False])
def test_adam_with_cosine_annealing_gives_torchs_weights_bit_for_bit(weight_decay, foreach):
    torch.manual_seed(1)
    batches = [(torch.randn(32, 6), torch.randn(32, 2)) for _ in range(40)]
    ours, theirs = network(), network()
    for model in (ours, theirs):  # no gradient, so no update: left alone by both
        model[0].bias.requires_grad_(False)
    frozen = ours[0].bias.clone()

    adam = Adam(ours.parameters(), lr=3e-3, weight_decay=weight_decay)
    for (x, y), rate in zip(batches, cosine_rates(3e-3, len(batches))):
        adam.lr = rate
        step(ours, adam, x, y)

    reference = torch.optim.Adam(theirs.parameters(), lr=3e-3, weight_decay=weight_decay, foreach=foreach)
    annealing = torch.optim.lr_scheduler.CosineAnnealingLR(reference, T_max=len(batches))
    for x, y in batches:
        step(theirs, reference, x, y)
        annealing.step()

    assert torch.equal(ours[0].bias, frozen)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    for name, value in ours.state_dict().items():
        assert torch.equal(value, theirs.state_dict()[name]), name


def test_cosine_rates_are_cosine_annealings_rates():
    rates = list(cosine_rates(3e-3, 25))
    reference = torch.optim.Adam([torch.zeros(1, requires_grad=True)], lr=3e-3)
    annealing = torch.optim.lr_scheduler.CosineAnnealingLR(reference, T_max=25)
    expected = []
    for _ in range(25):
        expected.append(reference.param_groups[0]["lr"])
        reference.step()
        annealing.step()
    assert rates == expected
    assert rates[0] == 3e-3 and all(a > b > 0 for a, b in zip(rates, rates[1:]))
    assert math.isclose(list(cosine_rates(1.0, 10))[5], 0.5, rel_tol=1e-12)  # half way down


def test_plateau_reduces_the_rate_as_reduce_lr_on_plateau_does():
    losses = [1.0, 0.9, 0.95, 0.9, 0.91, 0.9, 0.89995, float("nan"), 0.5, 0.6, 0.7, 0.8, 0.9] + [1.0] * 30
    ours = Adam([torch.zeros(1, requires_grad=True)], lr=1e-2)
    plateau = Plateau(ours, factor=0.5, patience=2, min_lr=1e-3)
    reference = torch.optim.Adam([torch.zeros(1, requires_grad=True)], lr=1e-2)
    scheduler = torch.optim.lr_scheduler.ReduceLROnPlateau(reference, factor=0.5, patience=2, min_lr=1e-3)
    rates = []
    for loss in losses:
        plateau.step(loss)
        scheduler.step(loss)
        assert ours.lr == reference.param_groups[0]["lr"]
        rates.append(ours.lr)
    assert rates[0] == 1e-2 and rates[-1] == 1e-3  # halved at each plateau, down to the floor
    assert len(set(rates)) == 5


def test_fine_tuning_leaves_torch_dynamo_unloaded():
    """What cnmtune's Adam is for: torch.optim imports torch._dynamo at a first step (1-2.3 s)."""
    probe = """
import sys
import numpy as np
from cnmtune.costmodel.analysis.schema import model_schema
from cnmtune.costmodel.learn.model import L2PConfig, L2PModel
from cnmtune.costmodel.learn.samples import input_columns, runtime_samples
from cnmtune.costmodel.learn.training import finetune_on

rng = np.random.default_rng(0)
schema = model_schema()
X = rng.random((24, len(input_columns(schema)))).astype(np.float32)
model = L2PModel(X.shape[1], L2PConfig(depth=8, width=32))
model.fit_normalizer(X)
runs = runtime_samples(X, rng.uniform(1e-4, 1e-3, 24), "va", ["O2"] * 24, [64] * 24, [2] * 24, [4096] * 24, schema)
tuned, losses = finetune_on(model, runs, epochs=4, threads=1)
print(len(losses), "torch._dynamo" in sys.modules)
"""
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert (result.returncode, result.stdout.strip()) == (0, "4 False"), result.stderr
