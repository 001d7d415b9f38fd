"""One conformance suite over every CostModel kind (scikit-learn's estimator checks, TVM's
CostModel interface): fit on a real tiny dataset, predict, save/load without pickle, refuse
another feature schema, learn from new samples; then what is particular to the L2P network
(its checkpoint, fine-tuning as the tuner does it) and to the tree ensemble (scored like
scikit-learn by onnxruntime), and scoring without the 'train' extra."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from cnmtune.costmodel.learn.checkpoint import save_checkpoint
from cnmtune.costmodel.learn.cost_model import KINDS, CostModel, L2PCostModel, create, load_model
from cnmtune.costmodel.learn.onnx_export import export_onnx
from cnmtune.costmodel.learn.samples import TARGETS
from cnmtune.errors import ModelError, SchemaMismatch

SUFFIX = {"l2p": ".onnx", "gbt": ".onnx", "analytical": ".json", "random": ".json"}
#: Small enough to fit in seconds on the test dataset.
OPTIONS = {"l2p": {"config": {"depth": 2, "width": 128, "dropout": 0.1}, "epochs": 100, "patience": 20},
           "gbt": {"max_iter": 50}, "analytical": {}, "random": {}}


@pytest.fixture(scope="module")
def fitted_once(splits) -> dict[str, CostModel]:
    """One model of every kind fitted on the training split (early stopping on validation)."""
    train_set, val_set, _ = splits
    return {kind: create(kind, **OPTIONS[kind]).fit(train_set, val_set) for kind in KINDS}


@pytest.fixture
def fitted(request, fitted_once) -> CostModel:
    """A fresh copy of the fitted model of the parametrized kind (tests may update it)."""
    return copy.deepcopy(fitted_once[request.param])


def test_every_kind_is_in_the_suite():
    assert tuple(KINDS) == ("l2p", "gbt", "analytical", "random")


@pytest.mark.parametrize("kind", tuple(SUFFIX))
def test_an_unfitted_model_says_so(kind, splits):
    model = create(kind, **OPTIONS[kind])
    assert model.kind == kind and isinstance(model, CostModel)
    with pytest.raises(ModelError, match="fit or load"):
        model.schema
    if kind != "random":  # random scores need nothing
        with pytest.raises(ModelError, match="fit or load"):
            model.predict(splits[2].X)


@pytest.mark.parametrize("fitted", KINDS, indirect=True)
def test_predict_shape_dtype_and_positive_times(fitted, splits):
    test_set = splits[2]
    prediction = fitted.predict(test_set.X)
    assert prediction.log_targets.shape == (len(test_set), len(TARGETS))
    assert prediction.log_targets.dtype == np.float32
    assert np.isfinite(prediction.runtime_s).all() and (prediction.runtime_s > 0).all()
    assert fitted.schema.hash == test_set.schema.hash


@pytest.mark.parametrize("fitted", KINDS, indirect=True)
def test_save_load_round_trip_without_pickle(fitted, splits, tmp_path):
    path = fitted.save(tmp_path / f"saved{SUFFIX[fitted.kind]}")
    head = path.read_bytes()[:2]
    assert head != b"\x80\x04" and head != b"\x80\x05"  # not a pickle
    loaded = load_model(path, expect_schema_hash=fitted.schema.hash)
    assert type(loaded) is type(fitted) and type(fitted).load(path).kind == fitted.kind
    X = splits[2].X
    # the L2P graph has its BatchNorm folded into the Linear layers: float32 rounding differs
    atol = 1e-4 if fitted.kind == "l2p" else 1e-5
    np.testing.assert_allclose(loaded.predict(X).log_targets, fitted.predict(X).log_targets, atol=atol)


@pytest.mark.parametrize("fitted", KINDS, indirect=True)
def test_another_feature_schema_is_refused_on_load(fitted, tmp_path):
    path = fitted.save(tmp_path / f"saved{SUFFIX[fitted.kind]}")
    with pytest.raises(SchemaMismatch, match="reads feature schema"):
        load_model(path, expect_schema_hash="0" * 16)
    with pytest.raises(SchemaMismatch, match="reads feature schema"):
        type(fitted).load(path, expect_schema_hash="0" * 16)


@pytest.mark.parametrize("fitted", KINDS, indirect=True)
def test_update_learns_from_samples(fitted, splits):
    _, val_set, test_set = splits
    before = fitted.predict(test_set.X).log_targets
    report = fitted.update(val_set, seed=0)
    after = fitted.predict(test_set.X).log_targets
    assert isinstance(report, dict) and json.loads(json.dumps(report)) == report
    assert after.shape == before.shape and np.isfinite(after).all()
    if fitted.kind != "random":  # random has nothing to learn
        assert not np.array_equal(after, before)


@pytest.mark.parametrize("fitted", KINDS, indirect=True)
def test_a_loaded_model_updates_too(fitted, splits, tmp_path):
    _, val_set, test_set = splits
    loaded = load_model(fitted.save(tmp_path / f"saved{SUFFIX[fitted.kind]}"))
    before = loaded.predict(test_set.X).log_targets
    report = loaded.update(val_set, seed=0)
    assert isinstance(report, dict)
    if fitted.kind != "random":
        assert not np.array_equal(loaded.predict(test_set.X).log_targets, before)


def test_unknown_kinds_are_refused_by_name(tmp_path):
    with pytest.raises(ModelError, match="unknown cost model kind 'nope'; valid: l2p, gbt, analytical, random"):
        create("nope")
    path = tmp_path / "m.json"
    path.write_text(json.dumps({"format": "cnmtune-cost-model-json-1", "kind": "nope"}))
    with pytest.raises(ModelError, match="unknown cost model kind 'nope'"):
        load_model(path)
    path.write_text("{not json")
    with pytest.raises(ModelError, match="unreadable cost model"):
        load_model(path)
    with pytest.raises(ModelError, match="cannot read cost model"):
        load_model(tmp_path / "missing.onnx")


def _exported(trained, samples, path, data_hash):
    return export_onnx(trained.model, path, schema=samples.schema, toolchain_kind="proxy", llvm_version="22.1.0",
                       data_hash=data_hash)


def test_l2p_update_needs_its_own_checkpoint(splits, trained, samples, tmp_path):
    path = _exported(trained, samples, tmp_path / "m.onnx", "d" * 64)
    model = L2PCostModel.load(path)
    assert model.data_hash == "d" * 64 and model.toolchain == {"kind": "proxy", "llvm_version": "22.1.0"}
    with pytest.raises(ModelError, match="needs the training checkpoint"):
        model.update(splits[1])
    save_checkpoint(path.with_suffix(".pt"), trained.model, {"data_hash": "e" * 64})
    with pytest.raises(ModelError, match="is not the checkpoint of"):
        model.update(splits[1])


def test_l2p_update_is_the_tuners_fine_tuning(splits, trained, samples, tmp_path):
    """update = finetune_on(checkpoint, samples, min(6, depth // 2), seed), then torch answers."""
    from cnmtune.costmodel.learn.training import finetune_on, predict

    train_set, val_set, test_set = splits
    path = _exported(trained, samples, tmp_path / "l2p.onnx", train_set.data_hash)
    save_checkpoint(path.with_suffix(".pt"), trained.model, {"data_hash": train_set.data_hash})
    model = L2PCostModel.load(path)
    report = model.update(val_set, seed=3)
    assert report == {"checkpoint": str(path.with_suffix(".pt")), "samples": len(val_set), "frozen_blocks": 1}
    tuned, _ = finetune_on(trained.model, val_set, 1, seed=3)
    np.testing.assert_array_equal(model.predict(test_set.X).log_targets, predict(tuned, test_set.X).log_targets)


def test_a_fine_tuned_l2p_model_saves_its_checkpoint_and_updates_again(splits, trained, samples, tmp_path):
    train_set, val_set, test_set = splits
    path = _exported(trained, samples, tmp_path / "l2p.onnx", train_set.data_hash)
    save_checkpoint(path.with_suffix(".pt"), trained.model, {"data_hash": train_set.data_hash})
    model = L2PCostModel.load(path)
    copied = L2PCostModel.load(model.save(tmp_path / "copy.onnx"))  # unchanged: copied with its checkpoint
    assert copied.checkpoint.is_file() and copied.update(val_set)["samples"] == len(val_set)
    model.update(val_set)
    saved = L2PCostModel.load(model.save(tmp_path / "tuned.onnx"))
    assert saved.checkpoint.is_file() and saved.data_hash == train_set.data_hash
    np.testing.assert_allclose(saved.predict(test_set.X).log_targets, model.predict(test_set.X).log_targets,
                               atol=1e-4)
    assert saved.update(val_set)["samples"] == len(val_set)


def test_a_file_of_another_kind_is_refused_by_the_class(splits, tmp_path):
    train_set, val_set, _ = splits
    path = create("gbt", max_iter=25).fit(train_set, val_set).save(tmp_path / "gbt.onnx")
    with pytest.raises(ModelError, match="holds a gbt cost model, not a l2p one"):
        L2PCostModel.load(path)


def test_the_tree_ensemble_scores_like_scikit_learn(splits, tmp_path):
    train_set, val_set, test_set = splits
    gbt = create("gbt", max_iter=50).fit(train_set, val_set)
    loaded = load_model(gbt.save(tmp_path / "gbt.onnx"))
    assert loaded.scorer is not None and loaded.scorer.kind == "gbt"
    X = np.concatenate([train_set.X, val_set.X, test_set.X])  # thresholds are hit exactly on training rows
    np.testing.assert_allclose(loaded.predict(X).log_targets, gbt.predict(X).log_targets, atol=1e-5)


SCORE_WITHOUT_TRAIN = """
import sys
for name in ("torch", "sklearn", "threadpoolctl"):
    sys.modules[name] = None  # as if the 'train' extra were not installed
import numpy as np
from cnmtune.costmodel.learn.cost_model import create, load_model
from cnmtune.errors import MissingExtra
X = np.load(sys.argv[3])
for path in sys.argv[1:3]:
    model = load_model(path)
    assert np.isfinite(model.predict(X).runtime_s).all()
try:
    model.update(None)
except MissingExtra as exc:
    print(exc)
"""


def test_scoring_needs_no_train_extra_and_learning_names_it(splits, trained, samples, tmp_path):
    train_set, val_set, test_set = splits
    l2p = _exported(trained, samples, tmp_path / "l2p.onnx", train_set.data_hash)
    save_checkpoint(l2p.with_suffix(".pt"), trained.model, {"data_hash": train_set.data_hash})
    gbt = create("gbt", max_iter=25).fit(train_set, val_set).save(tmp_path / "gbt.onnx")
    np.save(tmp_path / "X.npy", test_set.X)
    result = subprocess.run([sys.executable, "-c", SCORE_WITHOUT_TRAIN, str(gbt), str(l2p), str(tmp_path / "X.npy")],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "this needs torch, which comes with the 'train' extra: pip install 'cnmtune[train]'"


def test_a_model_of_the_proxy_schema_is_refused_with_the_way_to_a_current_one():
    """Models trained before the DPU schema read proxy features; the tuner expects model_schema()."""
    from cnmtune.costmodel.analysis.schema import default_schema, model_schema
    from cnmtune.costmodel.learn.model_format import check_schema

    with pytest.raises(SchemaMismatch, match=r"reads feature schema proxy-6 .*omit --model.*cnmtune model train"):
        check_schema("old.onnx", default_schema(), model_schema().hash)
    check_schema("current.onnx", model_schema(), model_schema().hash)  # accepted


def test_preload_imports_a_module_in_the_background_and_ignores_a_missing_one():
    """A tune loads torch while it compiles; a module that is not installed is left to its first use."""
    probe = ("import sys, threading; from cnmtune.costmodel.learn.lazy import preload; "
             "preload('torch'); preload('no_such_module_cnmtune'); "
             "[t.join() for t in threading.enumerate() if t.name.startswith('preload-')]; "
             "print('torch' in sys.modules, 'no_such_module_cnmtune' in sys.modules)")
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert (result.returncode, result.stdout.strip(), result.stderr) == (0, "True False", "")


def test_a_process_that_exits_while_a_preload_imports_prints_nothing(tmp_path):
    """A tune that fails before torch has loaded exits with its one error line: the import
    under way meets the interpreter's shutdown (concurrent.futures then refuses to register its exit
    hook), and that is not the user's error."""
    slow = "import time\ntime.sleep(0.5)\nimport concurrent.futures.thread\n"  # what torch comes to
    (tmp_path / "slow_module_cnmtune.py").write_text(slow)
    probe = ("import sys; from cnmtune.costmodel.learn.lazy import preload; "
             "assert 'concurrent.futures.thread' not in sys.modules; preload('slow_module_cnmtune')")
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120,
                            env={**os.environ, "PYTHONPATH": str(tmp_path)})
    assert (result.returncode, result.stderr) == (0, "")
