"""benchmarks/reproduce_l2p.py in its --quick mode on the small test store (its main() in the test's
process): every part runs and reports."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import CliResult, run_script

SCRIPT = Path(__file__).resolve().parents[3] / "benchmarks" / "reproduce_l2p.py"


def test_quick_reproduction_writes_json_pngs_and_a_headline_table(l2p_db, tmp_path):
    result = run_script(SCRIPT, "--data", str(l2p_db), "--out", str(tmp_path), "--quick", "--fresh", "--pairwise",
                        "va,red")
    assert result.returncode == 0, result.stderr[-2000:]
    record = json.loads((tmp_path / "reproduce_l2p.json").read_text())
    assert record["quick"] and record["kernels"] == ["red", "va"]
    indist = record["in_distribution"]
    assert {"global_row", "global_binary", "per_kernel_row", "gbt_row", "gbt_binary", "random_row", "mc_dropout",
            "int8"} <= set(indist)
    assert set(indist["per_kernel_row"]["per_kernel"]) == {"red", "va"}
    assert 0.0 <= indist["mc_dropout"]["runtime"]["coverage90_raw"] <= 1.0
    transfer = record["transfer"]
    assert transfer["protocol"] == "leave-one-kernel-out" and set(transfer["per_kernel"]) == {"red", "va"}
    assert transfer["per_kernel"]["va"]["trained_on"] == ["red"]
    assert set(transfer["fraction_sweep"]["va"]) == {"0.001", "0.005", "0.01", "0.05", "0.1"}
    zeroshot = record["zeroshot"]
    assert set(zeroshot["per_kernel"]) == {"red", "va"} and zeroshot["kernels"] == 2
    for kernel in zeroshot["per_kernel"].values():  # the largest size on the most DPUs there
        assert kernel["variants"] > 10 and kernel["dpus"] >= 1
        for ranking in (kernel["network"], kernel["gbt"], kernel["blend"], kernel["heuristic"]):
            assert -1 <= ranking["tau"] <= 1 and ranking["top10_within"] == (ranking["top10_regret"] <= 0.05)
    for arm in ("network", "gbt", "blend", "heuristic"):
        assert zeroshot[arm]["top10_within"] == sum(k[arm]["top10_within"] for k in zeroshot["per_kernel"].values())
    # two kernels, two folds: each kernel's blend weighs the prior by the errors on the other one
    weights = {k["blend"]["prior_weight"] for k in zeroshot["per_kernel"].values()}
    assert all(0 <= w <= 1 for w in weights) and 0 <= zeroshot["blend"]["prior_weight_all_folds"] <= 1
    assert len(record["pairwise"]["with_transfer"]) == 2 and record["ablation"]["split"] == "binary"
    assert record["times_seconds"] and all(Path(p).is_file() for p in record["pngs"])
    assert {Path(p).name for p in record["pngs"]} >= {"l2p_fig4_per_kernel_row.png", "l2p_fig5_transfer.png",
                                                      "l2p_fig6_no_transfer.png", "l2p_fig8_9_times.png",
                                                      "l2p_fraction_sweep.png", "l2p_loo_transfer.png"}
    assert "headline numbers" in result.stdout and "transfer" in result.stdout and "zero-shot" in result.stdout


def _transfer(l2p_db, out: Path, cache: Path, *options: str) -> CliResult:
    return run_script(SCRIPT, "--data", str(l2p_db), "--out", str(out), "--quick", "--fresh", "--parts", "transfer",
                      "--cache", str(cache), *options)


def test_folds_split_over_runs_share_the_cache(l2p_db, tmp_path):
    cache = tmp_path / "cache"
    part = _transfer(l2p_db, tmp_path / "part", cache, "--folds", "2", "--fractions", "none")
    assert part.returncode == 0, part.stderr[-2000:]
    record = json.loads((tmp_path / "part" / "reproduce_l2p.json").read_text())["transfer"]
    assert record["folds"] == [["va"]] and set(record["per_kernel"]) == {"va"}
    assert record["fraction_sweep"] == {} and len(list(cache.glob("*.pt"))) == 1
    assert "epoch: 3 / 3 (100 %)" in part.stdout  # a line per training, also where no bar draws

    whole = _transfer(l2p_db, tmp_path / "whole", cache, "--fractions", "0.05")
    assert whole.returncode == 0, whole.stderr[-2000:]
    combined = json.loads((tmp_path / "whole" / "reproduce_l2p.json").read_text())["transfer"]
    assert combined["folds"] == [["red"], ["va"]] and len(list(cache.glob("*.pt"))) == 2
    # fold 2's model came from the cache: its recorded training time is the first run's
    assert combined["train_seconds"][1] == record["train_seconds"][0]
    assert combined["per_kernel"]["va"]["with_transfer"] == record["per_kernel"]["va"]["with_transfer"]
    assert set(combined["fraction_sweep"]["red"]) == {"0.05"}
    # transfer per size: 1 % of each of the target's sizes, at least 8 rows
    assert set(combined["per_size"]) == {"red", "va"} and all(
        group["tuned_on"] >= 8 for sizes in combined["per_size"].values() for group in sizes.values())
    assert combined["summary"]["one_size"]["runtime_mape_all"] > 0.0
    assert "1 % of one size" in whole.stdout

    # the zero-shot ranking scores each kernel with the same fold networks: nothing trains again
    zeroshot = run_script(SCRIPT, "--data", str(l2p_db), "--out", str(tmp_path / "zeroshot"), "--quick", "--parts",
                          "zeroshot", "--cache", str(cache))
    assert zeroshot.returncode == 0, zeroshot.stderr[-2000:]
    assert "epoch:" not in zeroshot.stdout and len(list(cache.glob("*.pt"))) == 2
    assert "zero-shot va" in zeroshot.stdout
    # the trees of each fold are kept beside the networks, as ONNX, and read back the next time
    assert len(list(cache.glob("gbt-without-*.onnx"))) == 2
    first = json.loads((tmp_path / "zeroshot" / "reproduce_l2p.json").read_text())["zeroshot"]
    trees = run_script(SCRIPT, "--data", str(l2p_db), "--out", str(tmp_path / "trees"), "--quick", "--parts",
                       "zeroshot", "--zeroshot-models", "gbt", "--cache", str(cache))
    assert trees.returncode == 0, trees.stderr[-2000:]
    again = json.loads((tmp_path / "trees" / "reproduce_l2p.json").read_text())["zeroshot"]
    assert "network" not in again and "blend" not in again and len(list(cache.glob("gbt-without-*.onnx"))) == 2
    assert again["gbt"] == first["gbt"] and again["heuristic"] == first["heuristic"]
    for kernel, found in again["per_kernel"].items():  # read back as ONNX: the same order, float32 sums
        fitted = first["per_kernel"][kernel]["gbt"]
        assert {k: v for k, v in found["gbt"].items() if k != "runtime_mape"} == \
            {k: v for k, v in fitted.items() if k != "runtime_mape"}
        assert found["gbt"]["runtime_mape"] == pytest.approx(fitted["runtime_mape"], rel=1e-4)

    wrong = _transfer(l2p_db, tmp_path / "wrong", cache, "--folds", "3")
    assert wrong.returncode != 0 and "there are folds 1..2" in wrong.stderr
