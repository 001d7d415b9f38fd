"""The autotuner on real compiles, a real ONNX model (trained here) and real simulator runs."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from cnmtune.costmodel import L2PConfig, default_schema, export_onnx, load_samples, train
from cnmtune.costmodel import L2PModel
from cnmtune.costmodel.learn.checkpoint import save_checkpoint
from cnmtune.costmodel.learn.samples import input_columns
from cnmtune.errors import ModelError
from cnmtune.plugin.tune import TuneSpec, tune
from cnmtune.runtime.executor import InlineExecutor
from cnmtune.store import Store

GRID = {"dpus": (1, 2, 4), "tasklets": (1, 4, 16)}


@pytest.fixture(scope="module")
def model(l2p_db, tmp_path_factory):
    """A small L2P network trained on the va/red dataset of the session, exported to ONNX, with
    its checkpoint beside it (m.pt, for fine-tuning)."""
    samples = load_samples(l2p_db)
    train_set, val_set, _ = samples.split(0)
    result = train(L2PConfig(depth=2, width=64, dropout=0.1), train_set, val_set, epochs=60, patience=15,
                   seed=0, threads=1)
    path = tmp_path_factory.mktemp("tuner") / "m.onnx"
    save_checkpoint(path.with_suffix(".pt"), result.model, {"data_hash": train_set.data_hash})
    return export_onnx(result.model, path, schema=default_schema(), toolchain_kind="proxy",
                       llvm_version="test", data_hash=train_set.data_hash)


@pytest.fixture(scope="module")
def exhaustive(model, tmp_path_factory):
    db = tmp_path_factory.mktemp("tuner-db") / "tune.sqlite"
    spec = TuneSpec("va", size="small", pipelines=12, top_k=3, model=str(model), exhaustive=True, **GRID)
    with Store(db) as store:
        report = tune(spec, InlineExecutor(), store)
    return db, spec, report


def test_top_k_is_run_and_the_best_verified_is_chosen(exhaustive):
    _, spec, report = exhaustive
    assert len(report.top) == 3
    assert [c.predicted_s for c in report.top] == sorted(c.predicted_s for c in report.top)
    assert all(c.status == "verified" and c.measured_s > 0 for c in report.top)
    assert report.chosen is min(report.top, key=lambda c: c.measured_s)
    assert "O2" in report.default.pipelines and (report.default.tasklets, report.default.dpus) == (16, 4)
    assert report.default.measured_s > 0 and report.speedup_vs_default > 0
    assert set(report.seconds) == {"compile", "features", "scoring", "execution"}
    # 12 pipelines (O2 among them) x 3 tasklet counts; candidates are distinct (ELF, DPUs) pairs
    assert report.variants >= report.candidates and report.compile_failures == 0


def test_exhaustive_search_measures_everything_and_the_regret(exhaustive):
    db, _, report = exhaustive
    ex = report.exhaustive
    assert ex["measured"] == report.candidates
    best = ex["best"]["measured_s"]
    assert ex["regret"] == pytest.approx(report.chosen.measured_s / best - 1) and ex["regret"] >= 0
    assert 1 <= ex["chosen_rank"] <= report.candidates
    assert ex["exhaustive_seconds"] > 0 and ex["tuner_seconds"] > 0
    with Store(db) as store:  # every run is recorded, so the best is a recorded verified run
        runs = {(r.elf_hash, r.dpus): r for r in store.runs()}
    assert len(runs) == report.candidates  # the default (O2, 16 tasklets, 4 DPUs) is one of them
    assert runs[(ex["best"]["elf_hash"], ex["best"]["dpus"])].kernel_seconds == best


def test_a_second_tune_reuses_recorded_runs(exhaustive, model):
    db, spec, first = exhaustive
    again = TuneSpec(**{**spec.__dict__, "exhaustive": False})
    with Store(db) as store:
        report = tune(again, InlineExecutor(), store)
    measured = {id(c) for c in report.top} | {id(report.default)}
    assert report.executed == 0 and report.reused == len(measured)
    assert report.chosen.measured_s == first.chosen.measured_s


def test_finetune_samples_adapt_the_model_before_the_top_k(exhaustive, model):
    db, spec, first = exhaustive
    adapted = TuneSpec(**{**spec.__dict__, "exhaustive": False, "finetune_samples": 6})
    with Store(db) as store:  # the exhaustive run recorded every candidate: runs are reused
        report = tune(adapted, InlineExecutor(), store)
    ft = report.finetune
    assert ft["samples"] == 6 and ft["runs_failed"] == 0 and ft["checkpoint"] == str(model.with_suffix(".pt"))
    assert ft["mape_after"] < ft["mape_before"]  # the model learnt the measured times
    assert "fine-tuning" in report.seconds and report.executed == 0
    before = {(c.elf_hash, c.dpus): c.predicted_s for c in first.top}
    assert any(before.get((c.elf_hash, c.dpus)) not in (None, c.predicted_s) for c in report.top) or \
        [(c.elf_hash, c.dpus) for c in report.top] != [(c.elf_hash, c.dpus) for c in first.top]
    assert [c.predicted_s for c in report.top] == sorted(c.predicted_s for c in report.top)
    # the choice is the fastest verified run, the fine-tuning runs included
    assert report.chosen.measured_s <= min(c.measured_s for c in report.top)
    assert report.chosen.measured_s >= first.exhaustive["best"]["measured_s"]


def test_finetune_samples_need_the_checkpoint_of_the_model(model, tmp_path):
    alone = tmp_path / "alone.onnx"
    alone.write_bytes(model.read_bytes())
    spec = TuneSpec("va", size="small", pipelines=4, top_k=2, model=str(alone), finetune_samples=4, **GRID)
    with pytest.raises(ModelError, match="needs the training checkpoint of .*alone.onnx at .*alone.pt"):
        tune(spec, InlineExecutor())
    stranger = L2PModel(len(input_columns(default_schema())), L2PConfig(depth=2, width=64))
    save_checkpoint(tmp_path / "alone.pt", stranger, {"data_hash": "0" * 64})
    with pytest.raises(ModelError, match="is not the checkpoint of .*training data hash 0+ !="):
        tune(spec, InlineExecutor())


def test_missing_model_is_one_clear_error(tmp_path):
    with pytest.raises(ModelError, match="no cost model at .*nope.onnx"):
        tune(TuneSpec("va", size="small", model=str(tmp_path / "nope.onnx")), InlineExecutor())


def test_cli_tune_json(model):
    result = subprocess.run(
        [sys.executable, "-m", "cnmtune", "tune", "va", "--size", "small", "--pipelines", "6", "--dpus", "1,2",
         "--tasklets", "2,4", "--top-k", "2", "--model", str(model), "--json", "--workers", "1"],
        capture_output=True, text=True, env={**os.environ, "COLUMNS": "200"}, timeout=300)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert len(report["top"]) == 2 and report["chosen"]["status"] == "verified"
    # the default build (O2, 16 tasklets) is compiled and run for reference even off the grid
    assert (report["default"]["tasklets"], report["default"]["dpus"]) == (16, 2)
    assert report["default"]["measured_s"] > 0 and report["speedup_vs_default"] > 0


def test_tuning_on_upmem_without_an_sdk_says_what_is_missing(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "CNMTUNE_UPMEM_SDK"}
    result = subprocess.run(
        [sys.executable, "-m", "cnmtune", "tune", "va", "--size", "small", "--device", "upmem-hw",
         "--sdk-dir", str(tmp_path / "no-sdk")],
        capture_output=True, text=True, env={**env, "COLUMNS": "200"}, timeout=120)
    assert result.returncode == 2
    assert "dpu-upmem-dpurte-clang" in result.stderr and "Traceback" not in result.stderr
    bad = subprocess.run([sys.executable, "-m", "cnmtune", "tune", "va", "--device", "gpu"],
                         capture_output=True, text=True, env={**env, "COLUMNS": "200"}, timeout=120)
    assert bad.returncode == 2 and "unknown device 'gpu'" in bad.stderr
