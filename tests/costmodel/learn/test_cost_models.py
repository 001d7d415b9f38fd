"""One conformance suite over every CostModel (scikit-learn's estimator checks, TVM's CostModel
interface): fit on a real tiny dataset, predict, save/load without pickle, refuse another feature
schema, learn from new samples."""

from __future__ import annotations

import numpy as np
import pytest

from cnmtune.costmodel.learn.checkpoint import save_checkpoint
from cnmtune.costmodel.learn.cost_model import CostModel, L2PCostModel
from cnmtune.costmodel.learn.models import create_model, load_model
from cnmtune.costmodel.learn.onnx_export import export_onnx
from cnmtune.costmodel.learn.samples import TARGETS
from cnmtune.errors import ModelError, SchemaMismatch

KINDS = ("l2p", "gbt", "analytical", "random")
SUFFIX = {"l2p": ".onnx", "gbt": ".onnx", "analytical": ".json", "random": ".json"}


@pytest.fixture
def fitted(request, splits, trained, samples, tmp_path) -> CostModel:
    """A trained model of the parametrized kind (L2P: exported with its checkpoint, then loaded)."""
    kind = request.param
    train_set, val_set, _ = splits
    if kind == "l2p":
        path = export_onnx(trained.model, tmp_path / "l2p.onnx", schema=samples.schema, toolchain_kind="proxy",
                           llvm_version="22.1.0", data_hash=train_set.data_hash)
        save_checkpoint(path.with_suffix(".pt"), trained.model, {"data_hash": train_set.data_hash})
        return L2PCostModel.load(path)
    options = {"max_iter": 50} if kind == "gbt" else {}
    return create_model(kind, **options).fit(train_set, val_set)


@pytest.mark.parametrize("fitted", KINDS, indirect=True)
def test_predict_shape_dtype_and_positive_times(fitted, splits):
    test_set = splits[2]
    prediction = fitted.predict(test_set.X)
    assert prediction.log_targets.shape == (len(test_set), len(TARGETS))
    assert prediction.log_targets.dtype == np.float32
    assert np.isfinite(prediction.runtime_s).all() and (prediction.runtime_s > 0).all()
    assert fitted.schema is not None and fitted.schema.hash == test_set.schema.hash


@pytest.mark.parametrize("fitted", KINDS, indirect=True)
def test_save_load_round_trip_without_pickle(fitted, splits, tmp_path):
    path = fitted.save(tmp_path / f"saved{SUFFIX[fitted.kind]}")
    head = path.read_bytes()[:2]
    assert head != b"\x80\x04" and head != b"\x80\x05"  # not a pickle
    loaded = load_model(path, expect_schema_hash=fitted.schema.hash)
    assert type(loaded) is type(fitted)
    X = splits[2].X
    np.testing.assert_allclose(loaded.predict(X).log_targets, fitted.predict(X).log_targets, atol=1e-5)


@pytest.mark.parametrize("fitted", KINDS, indirect=True)
def test_another_feature_schema_is_refused_on_load(fitted, tmp_path):
    path = fitted.save(tmp_path / f"saved{SUFFIX[fitted.kind]}")
    with pytest.raises(SchemaMismatch, match="model feature schema"):
        load_model(path, expect_schema_hash="0" * 16)


@pytest.mark.parametrize("fitted", KINDS, indirect=True)
def test_update_learns_from_samples(fitted, splits):
    _, val_set, test_set = splits
    before = fitted.predict(test_set.X).log_targets
    report = fitted.update(val_set, seed=0)
    after = fitted.predict(test_set.X).log_targets
    assert isinstance(report, dict) and after.shape == before.shape and np.isfinite(after).all()
    if fitted.kind in ("l2p", "gbt", "analytical"):  # random has nothing to learn
        assert not np.array_equal(after, before)


def test_l2p_update_needs_its_own_checkpoint(splits, trained, samples, tmp_path):
    path = export_onnx(trained.model, tmp_path / "m.onnx", schema=samples.schema, toolchain_kind="proxy",
                       llvm_version="22.1.0", data_hash="d" * 64)
    model = L2PCostModel.load(path)
    with pytest.raises(ModelError, match="needs the training checkpoint"):
        model.update(splits[1])
    save_checkpoint(path.with_suffix(".pt"), trained.model, {"data_hash": "e" * 64})
    with pytest.raises(ModelError, match="is not the checkpoint of"):
        model.update(splits[1])


def test_a_fine_tuned_l2p_model_saves_its_checkpoint_and_updates_again(splits, trained, samples, tmp_path):
    train_set, val_set, test_set = splits
    path = export_onnx(trained.model, tmp_path / "l2p.onnx", schema=samples.schema, toolchain_kind="proxy",
                       llvm_version="22.1.0", data_hash=train_set.data_hash)
    save_checkpoint(path.with_suffix(".pt"), trained.model, {"data_hash": train_set.data_hash})
    model = L2PCostModel.load(path)
    model.update(val_set)
    saved = L2PCostModel.load(model.save(tmp_path / "tuned.onnx"))
    assert saved.checkpoint.is_file()
    np.testing.assert_allclose(saved.predict(test_set.X).log_targets, model.predict(test_set.X).log_targets,
                               atol=1e-4)
    assert saved.update(val_set)["samples"] == len(val_set)


def test_unknown_kinds_are_refused_by_name():
    with pytest.raises(ModelError, match="unknown cost model kind 'nope'; valid: gbt, analytical, random"):
        create_model("nope")
    with pytest.raises(ModelError, match="cnmtune model train"):
        create_model("l2p")


def test_the_tree_ensemble_scores_like_scikit_learn(splits, tmp_path):
    train_set, val_set, test_set = splits
    gbt = create_model("gbt", max_iter=50).fit(train_set, val_set)
    loaded = load_model(gbt.save(tmp_path / "gbt.onnx"))
    assert loaded.scorer is not None and loaded.scorer.kind == "gbt"
    X = np.concatenate([train_set.X, val_set.X, test_set.X])  # thresholds are hit exactly on training rows
    np.testing.assert_allclose(loaded.predict(X).log_targets, gbt.predict(X).log_targets, atol=1e-5)
