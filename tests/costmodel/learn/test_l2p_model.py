"""The L2P network, its training, checkpoints and transfer fine-tuning, on a real dataset."""

from __future__ import annotations

import copy
import io
import json
import pickle
import random
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch

from cnmtune.costmodel.learn.checkpoint import load_checkpoint, save_checkpoint, sidecar
from cnmtune.costmodel.learn.model import L2PConfig, L2PModel
from cnmtune.costmodel.learn.training import finetune, predict, train
from cnmtune.errors import CnmtuneError, FeatureError, ModelError


def same_weights(a: torch.nn.Module, b: torch.nn.Module, prefix: str = "") -> bool:
    sa, sb = a.state_dict(), b.state_dict()
    names = [k for k in sa if k.startswith(prefix)]
    return bool(names) and all(torch.equal(sa[k], sb[k]) for k in names)


def test_default_architecture_is_the_papers():
    n_inputs = 342
    model = L2PModel(n_inputs)
    assert model.config == L2PConfig(depth=12, width=256, dropout=0.5, residual=True,
                                     targets=("runtime", "speedup"))
    assert len(model.blocks) == 12
    assert all(b.linear.in_features == b.linear.out_features == 256 for b in model.blocks)
    assert all(isinstance(b.norm, torch.nn.BatchNorm1d) and b.drop.p == 0.5 for b in model.blocks)
    dense = lambda n_in: n_in * 256 + 256 + 2 * 256  # Linear + BatchNorm affine
    expected = dense(n_inputs) + 12 * dense(256) + 256 * 2 + 2
    assert sum(p.numel() for p in model.parameters()) == expected
    model.eval()
    assert model(torch.zeros(5, n_inputs)).shape == (5, 2)
    assert L2PModel(n_inputs, L2PConfig(targets=("speedup",))).eval()(torch.zeros(3, n_inputs)).shape == (3, 1)
    with pytest.raises(ValueError, match="targets"):
        L2PConfig(targets=("latency",))


def test_normalisation_is_a_fitted_part_of_the_model():
    model = L2PModel(3, L2PConfig(depth=1, width=8))
    X = np.array([[1.0, 5.0, 10.0], [3.0, 5.0, 30.0]], dtype=np.float32)
    model.normalize.fit(X)
    assert model.normalize.mean.tolist() == [2.0, 5.0, 20.0]
    assert model.normalize.std.tolist() == [1.0, float("inf"), 10.0]  # a constant column is ignored
    assert model.normalize(torch.tensor([[2.0, 7.0, 20.0]])).tolist() == [[0.0, 0.0, 0.0]]
    assert {"normalize.mean", "normalize.std"} <= set(model.state_dict())


def test_training_is_reproducible_with_a_seed(splits, small_config):
    train_set, val_set, _ = splits
    runs = [train(small_config, train_set, val_set, epochs=8, seed=7, threads=1) for _ in range(2)]
    assert same_weights(runs[0].model, runs[1].model)
    assert runs[0].val_losses == runs[1].val_losses
    other = train(small_config, train_set, val_set, epochs=8, seed=8, threads=1)
    assert not same_weights(runs[0].model, other.model)


def test_trained_model_beats_the_mean_on_held_out_data(trained, splits):
    train_set, _, test_set = splits
    predicted = predict(trained.model, test_set.X).log_targets
    model_mse = np.mean((predicted - test_set.y) ** 2, axis=0)
    mean_mse = np.mean((train_set.y.mean(axis=0) - test_set.y) ** 2, axis=0)
    assert np.all(model_mse < 0.5 * mean_mse), (model_mse, mean_mse)


def test_early_stopping_restores_the_best_epoch(trained, splits):
    _, val_set, _ = splits
    assert trained.best_epoch == int(np.argmin(trained.val_losses))
    assert len(trained.train_losses) == len(trained.val_losses) < 200
    predicted = predict(trained.model, val_set.X).log_targets
    assert np.mean((predicted - val_set.y) ** 2) == pytest.approx(min(trained.val_losses), rel=1e-5)
    assert trained.seconds > 0


def test_training_needs_a_validation_set(splits, small_config):
    train_set, val_set, _ = splits
    with pytest.raises(CnmtuneError, match="validation"):
        train(small_config, train_set, val_set.take(np.zeros(len(val_set), dtype=bool)), epochs=1)


def test_checkpoint_round_trip_holds_only_tensors(trained, splits, tmp_path):
    path = save_checkpoint(tmp_path / "model.pt", trained.model, {"data_hash": "abc", "metrics": {"x": 1.5}})
    state = torch.load(path, weights_only=True)  # tensors only: no pickled classes to trust
    assert all(isinstance(v, torch.Tensor) for v in state.values())
    assert json.loads(sidecar(path).read_text())["config"]["width"] == trained.model.config.width
    model, meta = load_checkpoint(path)
    assert meta == {"data_hash": "abc", "metrics": {"x": 1.5}} and model.config == trained.model.config
    assert same_weights(model, trained.model) and not model.training
    X = splits[2].X
    np.testing.assert_array_equal(predict(model, X).log_targets, predict(trained.model, X).log_targets)


def _tensors_and_an_object() -> bytes:
    buffer = io.BytesIO()
    torch.save({"weight": torch.zeros(2), "origin": Path("elsewhere")}, buffer)  # a torch file, not tensors only
    return buffer.getvalue()


@pytest.mark.parametrize("damage, cause", [
    (lambda good: good[:1000], "a damaged torch archive"),
    (lambda good: random.Random(0).randbytes(len(good)), "torch could not unpickle it"),
    (lambda good: pickle.dumps({"weight": [0.0, 1.0]}), "torch could not unpickle it"),  # torch warns on it
    (lambda good: b"", "torch could not unpickle it"),
    (lambda good: _tensors_and_an_object(), "it holds pickled objects, not only tensors"),
], ids=["truncated", "random bytes", "plain pickle", "empty", "pickled object"])
def test_a_corrupt_checkpoint_is_one_line_naming_the_cause_raised_from_torchs_error(tmp_path, damage, cause):
    path = save_checkpoint(tmp_path / "model.pt", L2PModel(4, L2PConfig(depth=1, width=4)))
    path.write_bytes(damage(path.read_bytes()))
    with warnings.catch_warnings(record=True) as caught, pytest.raises(ModelError) as refused:
        warnings.simplefilter("always")
        load_checkpoint(path)
    assert str(refused.value) == f"cannot read checkpoint {path}: not a cnmtune checkpoint ({cause})"
    assert refused.value.__cause__ is not None and not caught  # torch's text is kept for -v; its warnings go


def test_a_checkpoint_without_weights_side_car_or_fitting_tensors_is_refused(tmp_path):
    with pytest.raises(ModelError, match="checkpoint file .*missing.pt does not exist"):
        load_checkpoint(tmp_path / "missing.pt")
    path = save_checkpoint(tmp_path / "model.pt", L2PModel(4, L2PConfig(depth=1, width=4)))
    other = save_checkpoint(tmp_path / "other.pt", L2PModel(5, L2PConfig(depth=1, width=4)))
    path.write_bytes(other.read_bytes())
    with pytest.raises(ModelError, match="its tensors do not fit the network model.pt.json describes"):
        load_checkpoint(path)
    sidecar(path).unlink()
    with pytest.raises(ModelError, match="its side-car model.pt.json does not exist"):
        load_checkpoint(path)


def va_base(samples, depth: int, dropout: float, epochs: int):
    """A small network trained on va for a few epochs: the start of the fine-tuning tests."""
    train_set, val_set, _ = samples.select(["va"]).split(seed=0)
    return train(L2PConfig(depth=depth, width=32, dropout=dropout), train_set, val_set, epochs=epochs, seed=0,
                 threads=1).model


def test_finetune_freezes_the_first_six_blocks_and_reports_metrics(samples):
    base = va_base(samples, depth=8, dropout=0.1, epochs=5)
    before = {k: v.clone() for k, v in base.state_dict().items()}
    red = samples.select(["red"])
    result = finetune(base, red, fraction=0.01, freeze=6, seed=0, epochs=10, threads=1)
    tuned = result.model
    for frozen in ("normalize.", "input.", *(f"blocks.{i}." for i in range(6))):
        assert same_weights(base, tuned, frozen), frozen  # including BatchNorm running statistics
    for trainable in ("blocks.6.", "blocks.7.", "head."):
        assert not same_weights(base, tuned, trainable), trainable
    assert all(torch.equal(before[k], v) for k, v in base.state_dict().items())  # the base is untouched
    assert len(result.tuned_on) == 8 and len(result.evaluated_on) == len(red) - 8
    assert set(result.metrics) == {"red", "all"} and result.metrics["red"]["samples"] == len(red) - 8
    assert {"runtime_mape", "speedup_mape", "tau", "top10_regret"} <= set(result.metrics["red"])
    assert len(result.train_losses) == 10 and not tuned.training


def test_finetune_keeps_batchnorm_statistics_and_drops_dropout_by_default(samples):
    base = va_base(samples, depth=8, dropout=0.5, epochs=3)
    red = samples.select(["red"])
    fixed = finetune(base, red, fraction=0.01, seed=0, epochs=5, threads=1).model
    moving = finetune(base, red, fraction=0.01, seed=0, epochs=5, threads=1, fixed_statistics=False).model
    for name in ("blocks.7.norm.running_mean", "blocks.7.norm.running_var"):
        assert torch.equal(fixed.state_dict()[name], base.state_dict()[name])
        assert not torch.equal(moving.state_dict()[name], base.state_dict()[name])
    assert not same_weights(base, fixed, "blocks.7.linear.")  # the weights still train
    fixed.train()
    assert not any(m.training for m in fixed.modules() if isinstance(m, (torch.nn.BatchNorm1d, torch.nn.Dropout)))
    assert fixed.blocks[7].linear.training


def test_fine_tuning_runs_the_frozen_half_once_and_learns_what_the_whole_network_would(samples):
    """The network is its two halves at every cut (``finish(embed(x, k), k)``); fine-tuning runs
    the frozen half once and trains the rest on its output, and ends with the weights that the
    same epochs through the whole network give, bit for bit."""
    from cnmtune.costmodel.learn.recipe import FINETUNE_LR
    from cnmtune.costmodel.learn.training import finetune_on, torch_threads

    base = va_base(samples, depth=4, dropout=0.1, epochs=3)
    x = torch.from_numpy(samples.X[:16])
    for k in range(len(base.blocks) + 1):
        assert torch.equal(base.finish(base.embed(x, k), k), base(x))
    red = samples.select(["red"]).take(np.arange(12))
    tuned, _ = finetune_on(base, red, freeze=2, seed=4, epochs=6, threads=1)

    with torch_threads(1):  # as finetune_on's threads=1: the same sums in the same order
        torch.manual_seed(4)
        rng = np.random.default_rng(4)
        whole = copy.deepcopy(base).freeze_first(2, statistics=True, dropout=False)
        optimizer = torch.optim.Adam([p for p in whole.parameters() if p.requires_grad], lr=FINETUNE_LR)
        annealing = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=6)
        X, y = torch.from_numpy(red.X), torch.from_numpy(red.y[:, base.config.target_index])
        whole.train()
        for _ in range(6):  # 12 samples: one minibatch an epoch, in a seeded order
            order = torch.from_numpy(rng.permutation(len(red)))
            optimizer.zero_grad()
            torch.nn.functional.mse_loss(whole(X[order]), y[order]).backward()
            optimizer.step()
            annealing.step()
    assert same_weights(tuned, whole)
    assert not same_weights(base, tuned, "blocks.3.")


def test_finetune_on_runtime_only_samples_leaves_the_missing_speedup_out(samples):
    from cnmtune.costmodel.learn.samples import runtime_samples
    from cnmtune.costmodel.learn.training import finetune_on

    base = va_base(samples, depth=4, dropout=0.1, epochs=3)
    red = samples.select(["red"]).take(np.arange(12))
    measured = runtime_samples(red.X, np.exp(red.y[:, 0]), "red", red.pipelines, red.dpus, red.tasklets,
                               red.sizes, red.schema)
    assert np.isnan(measured.y[:, 1]).all() and np.allclose(measured.y[:, 0], red.y[:, 0])
    tuned, losses = finetune_on(base, measured, freeze=2, epochs=30, threads=1)
    assert all(np.isfinite(losses)) and losses[-1] < losses[0]
    error = lambda m: float(np.abs(predict(m, red.X).log_targets[:, 0] - red.y[:, 0]).mean())
    assert error(tuned) < error(base)
    with pytest.raises(CnmtuneError, match="at least 2 samples"):
        finetune_on(base, measured.take(np.arange(1)), freeze=2)
    with pytest.raises(FeatureError, match="one positive, finite time"):
        runtime_samples(red.X[:2], [1.0, 0.0], "red", red.pipelines[:2], red.dpus[:2], red.tasklets[:2],
                        red.sizes[:2], red.schema)


def test_finetune_anneals_its_learning_rate_to_a_standstill(samples):
    """One minibatch an epoch: the steps shrink to nothing by the last epoch (cosine), so the
    tuned model is where the descent settled, not a point of Adam's late oscillation."""
    from cnmtune.costmodel.learn.training import finetune_on

    base = va_base(samples, depth=4, dropout=0.1, epochs=3)
    red = samples.select(["red"]).take(np.arange(16))
    _, losses = finetune_on(base, red, freeze=2, epochs=40, threads=1)
    first, last = abs(losses[1] - losses[0]), abs(losses[-1] - losses[-2])
    assert losses[-1] < losses[0] and last < 0.01 * first
