"""`cnmtune model train / finetune / evaluate` through the command line's entry point (in the test's
process), on a real dataset store."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from cnmtune.costmodel.learn.cost_model import load_model, shipped_model_path
from cnmtune.costmodel.learn.scorer import Scorer
from cnmtune.costmodel.learn.zero_shot import load_trees
from cnmtune.errors import ModelError
from tests.conftest import CliResult, run_cnmtune


def cnmtune(*args: str, cwd: Path | None = None) -> CliResult:
    return run_cnmtune("model", *args, cwd=cwd)


@pytest.fixture(scope="module")
def trained_va(l2p_db, tmp_path_factory) -> tuple[Path, dict]:
    """`model train` on va only (red is left for fine-tuning), a few epochs of the default network."""
    out = tmp_path_factory.mktemp("model-cli") / "va.onnx"
    result = cnmtune("train", "--db", str(l2p_db), "--exclude", "red", "-o", str(out), "--epochs", "4",
                     "--threads", "1", "--json")
    assert result.returncode == 0, result.stderr
    assert re.search(r"^epoch: 4 / 4 \(100 %\), .*, loss train \d+\.\d+  val \d+\.\d+$", result.stderr, re.M), \
        result.stderr  # stderr is not a terminal: plain progress lines, the last with the losses
    return out, json.loads(result.stdout)


def test_train_writes_model_checkpoint_and_test_metrics(trained_va):
    out, record = trained_va
    assert out.is_file() and out.with_suffix(".pt").is_file() and Path(f"{out.with_suffix('.pt')}.json").is_file()
    assert record["onnx"] == str(out) and record["epochs_run"] == 4 and record["targets"] == ["runtime", "speedup"]
    split = record["samples"]
    assert split["train"] > split["val"] == split["test"] > 0
    assert set(record["metrics"]) == {"va", "all"} and record["metrics"]["va"]["samples"] == split["test"]
    scorer = Scorer(out)
    assert scorer.data_hash == record["data_hash"] and scorer.toolchain["kind"] == "proxy"
    assert scorer.toolchain["llvm_version"].count(".") == 2
    assert scorer.metrics["per_kernel"] == record["metrics"]
    assert scorer.metadata["cnmtune.model_config"]["depth"] == 12  # the CLI trains the paper's network


def test_evaluate_prints_a_table_per_kernel(trained_va, l2p_db):
    result = cnmtune("evaluate", str(trained_va[0]), "--db", str(l2p_db))
    assert result.returncode == 0, result.stderr
    for text in ("runtime MAPE %", "runtime R²", "Kendall τ", "top-10 regret %", "va", "red", "all"):
        assert text in result.stdout, text


def test_evaluate_by_size_reports_every_kernel_and_size(trained_va, l2p_db):
    result = cnmtune("evaluate", str(trained_va[0]), "--db", str(l2p_db), "--by-size", "--json")
    assert result.returncode == 0, result.stderr
    record = json.loads(result.stdout)
    by_size = record["metrics_by_size"]
    assert set(by_size) == {"red@4096", "va@4096", "all"}  # l2p_db: both at their small size
    assert by_size["va@4096"] == record["metrics"]["va"]  # one size: the kernel's own figures
    result = cnmtune("evaluate", str(trained_va[0]), "--db", str(l2p_db), "--by-size")
    assert "per kernel and size" in result.stdout and "va@4096" in result.stdout


def test_evaluate_on_the_held_out_rows_of_the_training_split(trained_va, l2p_db):
    """--rows test picks the rows `model train` tested on: the same figures as its own report."""
    result = cnmtune("evaluate", str(trained_va[0]), "--db", str(l2p_db), "--rows", "test", "--by-size", "--json")
    assert result.returncode == 0, result.stderr
    record, trained = json.loads(result.stdout), trained_va[1]["metrics"]["va"]
    va = record["metrics"]["va"]
    assert record["rows"] == "test" and va["samples"] == trained["samples"]
    for metric in ("runtime_mape", "tau"):
        assert va[metric] == pytest.approx(trained[metric], rel=1e-3, abs=1e-4), metric
    assert record["metrics_by_size"]["va@4096"]["samples"] == trained["samples"]
    bad = cnmtune("evaluate", str(trained_va[0]), "--db", str(l2p_db), "--rows", "holdout")
    assert bad.returncode == 2 and "--rows must be all, train, val or test" in bad.stderr


def test_evaluate_writes_plots(trained_va, l2p_db, tmp_path):
    result = cnmtune("evaluate", str(trained_va[0]), "--db", str(l2p_db), "--plot", str(tmp_path / "plots"), "--json")
    assert result.returncode == 0, result.stderr
    written = [Path(p) for p in json.loads(result.stdout)["plots"]]
    assert sorted(p.name for p in written) == ["va_kernels.png", "va_runtime.png", "va_speedup.png"]
    assert all(p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for p in written)


def test_finetune_from_the_onnx_model_then_evaluate(trained_va, l2p_db, tmp_path):
    out = tmp_path / "red.onnx"
    result = cnmtune("finetune", str(trained_va[0]), "--db", str(l2p_db), "--kernel", "red", "--fraction", "0.01",
                     "--epochs", "3", "--threads", "1", "-o", str(out), "--by-size", "--json")
    assert result.returncode == 0, result.stderr
    record = json.loads(result.stdout)
    assert record["base"] == str(trained_va[0].with_suffix(".pt")) and record["tuned_on"] == 8
    assert record["metrics"]["red"]["samples"] == record["evaluated_on"]
    assert record["metrics_by_size"]["red@4096"] == record["metrics"]["red"]  # one size, the samples not tuned on
    assert out.is_file() and out.with_suffix(".pt").is_file()
    result = cnmtune("evaluate", str(out), "--db", str(l2p_db), "--kernels", "red", "--json")
    assert result.returncode == 0, result.stderr
    record = json.loads(result.stdout)
    assert set(record["metrics"]) == {"red", "all"}
    by_config = record["metrics_by_config"]
    configs = [c for c in by_config if c != "all"]
    assert configs and all(c.split()[0][0] == "D" and c.split()[1][0] == "T" for c in configs)
    assert sum(by_config[c]["samples"] for c in configs) == record["metrics"]["red"]["samples"]
    assert by_config["all"]["runtime_mape"] == pytest.approx(record["metrics"]["red"]["runtime_mape"])


@pytest.fixture(scope="module")
def va_with_trees(trained_va, l2p_db, tmp_path_factory) -> tuple[Path, dict]:
    """A copy of the va network with its zero-shot trees (`model trees`, few trees) beside it."""
    folder = tmp_path_factory.mktemp("trees")
    for source in (trained_va[0], trained_va[0].with_suffix(".pt"), Path(f"{trained_va[0].with_suffix('.pt')}.json")):
        shutil.copy(source, folder / source.name)
    result = cnmtune("trees", "--db", str(l2p_db), "--model", str(folder / "va.onnx"), "--max-iter", "50", "--json")
    assert result.returncode == 0, result.stderr
    for target in ("runtime", "speedup"):  # stderr is not a terminal: a plain line as each target's trees end
        assert re.search(rf"^trees {target}: 50 / 50 \(100 %\), .*, val loss \d+\.\d+$", result.stderr, re.M), \
            result.stderr
    return folder / "va.onnx", json.loads(result.stdout)


def test_trees_are_fitted_on_the_rows_the_network_trained_on_and_sit_beside_it(trained_va, va_with_trees, l2p_db):
    network, record = va_with_trees
    trained = trained_va[1]
    assert record["onnx"] == str(network.with_name("va.trees.onnx")) and record["network"] == str(network)
    assert record["samples"] == {part: trained["samples"][part] for part in ("train", "val", "test")}
    assert record["data_hash"] == trained["data_hash"] and set(record["metrics"]) == {"va", "all"}
    assert all(0 < count <= 50 for count in record["trees"])
    trees = load_trees(load_model(network))  # what the tuner loads: the network's own rows, its schema
    assert trees.scorer.kind == "gbt" and trees.scorer.data_hash == trained["data_hash"]
    assert trees.scorer.metrics["per_kernel"] == record["metrics"]
    # the trees of one network beside another are refused: they were not fitted on its rows
    other = network.with_name("other.onnx")
    shutil.copy(shipped_model_path(), other)
    shutil.copy(network.with_name("va.trees.onnx"), other.with_name("other.trees.onnx"))
    with pytest.raises(ModelError, match=r"other.trees.onnx was fitted on other rows than other.onnx was trained on"):
        load_trees(load_model(other))


def test_trees_refuse_rows_the_network_was_not_trained_on(va_with_trees, l2p_db, tmp_path):
    network, _ = va_with_trees
    for name in ("va.onnx", "va.pt"):
        shutil.copy(network.with_name(name), tmp_path / name)
    side = json.loads(network.with_name("va.pt.json").read_text())
    side["meta"]["seed"] = 1  # another split of the same data: not the rows the network learnt from
    (tmp_path / "va.pt.json").write_text(json.dumps(side))
    result = cnmtune("trees", "--db", str(l2p_db), "--model", str(tmp_path / "va.onnx"))
    assert result.returncode == 1 and result.stderr.strip().count("\n") == 0
    assert "va.onnx was trained on other rows than these samples give for its kernels, split 'row' and seed 1" \
        in result.stderr
    assert not (tmp_path / "va.trees.onnx").exists()


def test_a_network_written_over_another_keeps_the_trees_only_if_they_fit_its_rows(va_with_trees, l2p_db, tmp_path):
    network, _ = va_with_trees
    trees = tmp_path / "va.trees.onnx"
    shutil.copy(network.with_name("va.trees.onnx"), trees)
    # trained again on the same rows (va, split and seed 0): the trees still fit them and stay
    result = cnmtune("train", "--db", str(l2p_db), "--exclude", "red", "-o", str(tmp_path / "va.onnx"), "--epochs", "1",
                     "--threads", "1", "--json")
    assert result.returncode == 0, result.stderr
    assert trees.is_file() and "removed" not in result.stderr
    # fine-tuned on red, over the same file: other rows, so the trees go, and the output says so
    result = cnmtune("finetune", str(network), "--db", str(l2p_db), "--kernel", "red", "--epochs", "1",
                     "--threads", "1", "-o", str(tmp_path / "va.onnx"), "--json")
    assert result.returncode == 0, result.stderr
    assert not trees.exists() and f"removed {trees}: its trees were fitted on other rows" in result.stderr


def test_user_errors_are_one_line_and_exit_1_or_for_a_bad_option_2(l2p_db, tmp_path):
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"not a model at all")
    result = cnmtune("evaluate", str(bad), "--db", str(l2p_db))
    assert result.returncode == 1 and result.stderr.strip().count("\n") == 0
    assert "error:" in result.stderr and "not a readable ONNX model" in result.stderr
    result = cnmtune("train", "--db", str(l2p_db), "-o", str(tmp_path / "m.onnx"), "--targets", "latency")
    assert result.returncode == 2 and "--targets" in result.stderr


def test_shipped_names_the_packaged_model_from_any_directory(tmp_path):
    """`shipped` is the model cnmtune ships, wherever it is installed; another name that is no file is one error."""
    import pyarrow.compute
    import pyarrow.parquet

    # 64 va rows of the dataset the shipped model learnt from: features of the model's own schema
    reference = pyarrow.parquet.read_table(shipped_model_path().with_name("reference.parquet"))
    tiny = tmp_path / "va.parquet"
    pyarrow.parquet.write_table(reference.filter(pyarrow.compute.equal(reference["kernel"], "va")).slice(0, 64), tiny)
    result = cnmtune("evaluate", "shipped", "--db", str(tiny), "--json", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    record = json.loads(result.stdout)
    assert record["model"] == str(shipped_model_path()) and record["metrics"]["va"]["samples"] == 64
    result = cnmtune("finetune", "shiped", "--db", str(tiny), "--kernel", "va", "-o", "va.onnx", cwd=tmp_path)
    assert result.returncode == 1 and result.stderr.strip().count("\n") == 0
    assert "no cost model at shiped: neither a file nor 'shipped' (the model cnmtune ships)" in result.stderr
