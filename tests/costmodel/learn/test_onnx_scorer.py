"""ONNX export (BatchNorm folded, dynamic batch, metadata) and the onnxruntime Scorer."""

from __future__ import annotations

import io

import numpy as np
import onnx
import pytest
import torch

from cnmtune.costmodel.learn import model_format as fmt
from cnmtune.costmodel.learn.model import L2PConfig, L2PModel
from cnmtune.costmodel.learn.onnx_export import export_onnx, fold_batchnorm
from cnmtune.costmodel.learn.metrics import kendall_tau, mape
from cnmtune.costmodel.learn.samples import TARGETS, input_columns
from cnmtune.costmodel.learn.scorer import Scorer
from cnmtune.costmodel.learn.training import predict, train
from cnmtune.errors import FeatureError, ModelError, SchemaMismatch

METRICS = {"per_kernel": {"va": {"runtime_mape": 12.5, "tau": None}}}


@pytest.fixture(scope="module")
def exported(trained, samples, tmp_path_factory):
    path = tmp_path_factory.mktemp("onnx") / "model.onnx"
    return export_onnx(trained.model, path, schema=samples.schema, toolchain_kind="proxy",
                       llvm_version="22.1.0", data_hash="d" * 64, metrics=METRICS)


def test_folding_batchnorm_keeps_the_function(trained, splits):
    folded = fold_batchnorm(trained.model)
    assert not any(isinstance(m, torch.nn.BatchNorm1d) for m in folded.modules())
    assert any(isinstance(m, torch.nn.BatchNorm1d) for m in trained.model.modules())  # a copy was folded
    X = torch.from_numpy(splits[2].X)
    with torch.no_grad():
        np.testing.assert_allclose(folded(X).numpy(), trained.model.eval()(X).numpy(), atol=1e-5)


def test_graph_has_no_batchnorm_and_a_dynamic_batch(exported):
    graph = onnx.load(exported)
    ops = {node.op_type for node in graph.graph.node}
    assert "BatchNormalization" not in ops and "Gemm" in ops
    assert [o.version for o in graph.opset_import if o.domain in ("", "ai.onnx")] == [fmt.OPSET]
    (inp,), (out,) = graph.graph.input, graph.graph.output
    assert (inp.name, out.name) == ("features", "log_targets")
    assert inp.type.tensor_type.shape.dim[0].dim_param and out.type.tensor_type.shape.dim[0].dim_param
    assert not [p for p in exported.parent.iterdir() if p.name.startswith(".")]  # no temp file left


def test_onnx_agrees_with_torch_on_the_test_set(exported, trained, splits):
    test_set = splits[2]
    scorer = Scorer(exported)
    onnx_out = scorer.predict(test_set.X)
    torch_out = predict(trained.model, test_set.X)
    np.testing.assert_allclose(onnx_out.log_targets, torch_out.log_targets, atol=1e-4, rtol=1e-4)
    np.testing.assert_allclose(onnx_out.runtime_s, np.exp(onnx_out.log_targets[:, 0]), rtol=1e-6)
    np.testing.assert_allclose(onnx_out.speedup, np.exp(onnx_out.log_targets[:, 1]), rtol=1e-6)
    assert scorer.predict(test_set.X[:1]).log_targets.shape == (1, 2)  # any batch size


def test_chunked_scoring_gives_the_rows_of_one_call(exported, splits):
    X = splits[2].X[:100]
    whole = Scorer(exported, chunk_rows=len(X)).predict(X).log_targets
    for chunk in (1, 7, 64):
        np.testing.assert_allclose(Scorer(exported, chunk_rows=chunk).predict(X).log_targets, whole, atol=1e-6)
    with pytest.raises(ValueError, match="chunk_rows"):
        Scorer(exported, chunk_rows=0)


def test_metadata_round_trip(exported, samples):
    scorer = Scorer(exported, expect_schema_hash=samples.schema.hash)
    assert scorer.schema == samples.schema and scorer.columns == input_columns(samples.schema)
    assert scorer.targets == ("runtime", "speedup")
    assert scorer.toolchain == {"kind": "proxy", "llvm_version": "22.1.0"}
    assert scorer.data_hash == "d" * 64 and scorer.metrics == METRICS
    assert scorer.metadata[fmt.KEY_VERSION] == "0.1.0"
    assert scorer.metadata[fmt.KEY_CONFIG]["width"] == 128


def test_single_target_model(samples, splits, tmp_path):
    train_set, val_set, test_set = splits
    model = train(L2PConfig(depth=1, width=16, dropout=0.0, targets=("speedup",)), train_set, val_set,
                  epochs=2, threads=1).model
    path = export_onnx(model, tmp_path / "speedup.onnx", schema=samples.schema, toolchain_kind="proxy",
                       llvm_version="22.1.0", data_hash=train_set.data_hash)
    prediction = Scorer(path).predict(test_set.X)
    assert prediction.runtime_s is None and prediction.speedup.shape == (len(test_set),)


@pytest.mark.parametrize("damage", ["random", "truncated", "empty"])
def test_corrupt_file_is_one_clear_error(exported, tmp_path, damage):
    data = exported.read_bytes()
    bad = tmp_path / "bad.onnx"
    bad.write_bytes({"random": np.random.default_rng(0).bytes(4096), "truncated": data[:len(data) // 2],
                     "empty": b""}[damage])
    with pytest.raises(ModelError, match=r"bad\.onnx is not a readable ONNX model"):
        Scorer(bad)


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # the legacy exporter announces itself
def test_missing_file_and_foreign_onnx_are_refused(tmp_path):
    with pytest.raises(ModelError, match="cannot read cost model"):
        Scorer(tmp_path / "missing.onnx")
    buffer = io.BytesIO()
    torch.onnx.export(torch.nn.Linear(3, 2), (torch.zeros(1, 3),), buffer, dynamo=False)
    (tmp_path / "plain.onnx").write_bytes(buffer.getvalue())
    with pytest.raises(ModelError, match="not a cnmtune L2P model"):
        Scorer(tmp_path / "plain.onnx")


def test_wrong_schema_hash_names_both_hashes(exported, samples):
    with pytest.raises(SchemaMismatch, match=f"{samples.schema.hash}.*not 0123456789abcdef"):
        Scorer(exported, expect_schema_hash="0123456789abcdef")


def _largest_weight(model: onnx.ModelProto) -> onnx.TensorProto:
    return max(model.graph.initializer, key=lambda t: np.prod(t.dims))


def test_flipped_weight_bytes_are_refused(exported, tmp_path):
    """200 bytes flipped inside the weights: the file still parses, the graph digest does not match."""
    model = onnx.load(exported)
    weights = _largest_weight(model)
    raw = bytearray(onnx.numpy_helper.to_array(weights).tobytes())
    middle = len(raw) // 2
    raw[middle:middle + 200] = bytes(b ^ 0xFF for b in raw[middle:middle + 200])
    array = np.frombuffer(bytes(raw), dtype=onnx.numpy_helper.to_array(weights).dtype).reshape(weights.dims)
    weights.CopyFrom(onnx.numpy_helper.from_array(array, weights.name))
    damaged = tmp_path / "damaged.onnx"
    damaged.write_bytes(model.SerializeToString())
    with pytest.raises(ModelError, match=r"damaged\.onnx: its weights or graph differ .* the file is damaged"):
        Scorer(damaged)


def test_a_prediction_that_is_not_a_finite_positive_time_is_refused(exported, splits, tmp_path):
    """A sealed model whose weights blow up (not damage: a bad model) is stopped at predict, named."""
    model = onnx.load(exported)
    weights = _largest_weight(model)
    weights.CopyFrom(onnx.numpy_helper.from_array(onnx.numpy_helper.to_array(weights) * np.float32(1e30),
                                                  weights.name))
    fmt.seal(model, tmp_path / "wild.onnx")
    scorer = Scorer(tmp_path / "wild.onnx")
    with pytest.raises(ModelError, match=r"wild\.onnx: predicted log targets .* not a finite positive time"):
        scorer.predict(splits[2].X[:8])


def test_bad_inputs_are_refused(exported, splits):
    scorer = Scorer(exported)
    X = splits[2].X[:4].copy()
    with pytest.raises(SchemaMismatch, match=f"expects \\[n, {X.shape[1]}\\]"):
        scorer.predict(X[:, :-1])
    X[2, 5] = np.nan
    with pytest.raises(FeatureError, match=f"row 2: input column {scorer.columns[5]} is nan"):
        scorer.predict(X)
    X[2, 5] = np.inf
    with pytest.raises(FeatureError, match="is inf"):
        scorer.predict(X)


def test_export_refuses_a_model_of_another_width(samples, tmp_path):
    with pytest.raises(SchemaMismatch, match="model has 5 inputs"):
        export_onnx(L2PModel(5, L2PConfig(depth=1, width=4)), tmp_path / "m.onnx", schema=samples.schema,
                    toolchain_kind="proxy", llvm_version="22.1.0", data_hash="")


def test_a_model_of_other_input_columns_is_refused_naming_them(samples, tmp_path, monkeypatch):
    """A model exported before the launches input (its last column) is told to be trained again."""
    from cnmtune.costmodel.learn import onnx_export

    columns = input_columns(samples.schema)
    monkeypatch.setattr(onnx_export, "input_columns", lambda schema: columns[:-1])
    model = L2PModel(len(columns) - 1, L2PConfig(depth=1, width=4))
    model.configure(columns[:-1])
    path = export_onnx(model.eval(), tmp_path / "old.onnx", schema=samples.schema, toolchain_kind="proxy",
                       llvm_version="22.1.0", data_hash="")
    with pytest.raises(ModelError, match=r"old.onnx: its input columns are not this cnmtune's for feature schema "
                                         r"\w+ \(without cfg:log2_launches\); train the model again"):
        Scorer(path)


# -- the int8 companion -------------------------------------------------------------------------

def test_int8_companion_keeps_the_contract_and_scores_close(exported, trained, samples):
    from cnmtune.costmodel.learn.onnx_export import int8_path, quantize_model

    path = quantize_model(exported)
    assert path == int8_path(exported) and path.name == "model.int8.onnx"
    fp32 = Scorer(exported)
    int8 = Scorer(path, expect_schema_hash=fp32.schema.hash)
    assert fp32.quantization is None
    assert int8.quantization["scheme"] == "dynamic-int8" and int8.quantization["source"] == "model.onnx"
    for attribute in ("schema", "columns", "targets", "toolchain", "data_hash", "metrics"):
        assert getattr(int8, attribute) == getattr(fp32, attribute), attribute
    graph = onnx.load(path)
    ops = {node.op_type for node in graph.graph.node}
    assert "MatMulInteger" in ops or "DynamicQuantizeLinear" in ops
    assert path.stat().st_size < exported.stat().st_size
    # What the tuner relies on: the same ranking and nearly the same accuracy. A bound on the worst
    # row does not hold for dynamic quantisation (activation scales follow the batch): on the
    # shipped model the largest log difference over the 164,471 reference rows is 0.19 (median 0.013).
    # This fixture's small model, trained for a few epochs, has medians of 0.019-0.039 over seeds 0-3
    # of its store: the bound asks for "close" (under 5 %), the ranking and the MAPE for the rest.
    a, b = fp32.predict(samples.X), int8.predict(samples.X)
    true = np.exp(samples.y[:, TARGETS.index("runtime")].astype(np.float64))
    assert kendall_tau(a.runtime_s, b.runtime_s) >= 0.93
    assert np.median(np.abs(a.log_targets - b.log_targets)) < 0.05
    assert mape(true, b.runtime_s) - mape(true, a.runtime_s) < 2.5  # percentage points
    with pytest.raises(ModelError, match="already quantised"):
        quantize_model(path, path.with_name("again.onnx"))


def test_quantize_refuses_foreign_files(tmp_path):
    from cnmtune.costmodel.learn.onnx_export import quantize_model

    (tmp_path / "junk.onnx").write_bytes(b"junk")
    with pytest.raises(ModelError, match="cannot read the ONNX model"):
        quantize_model(tmp_path / "junk.onnx")
