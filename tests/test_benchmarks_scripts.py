"""The benchmark scripts as a user's clone runs them: the shipped hardware rows, --data, where the
scripts write, exit statuses, and calibrate_sim leaving the tracked calibrated.py alone."""

from __future__ import annotations

import csv
import fnmatch
import hashlib
import importlib.util
import json
import os
import runpy
import subprocess
import sys
import tomllib
from dataclasses import replace
from pathlib import Path

import pytest

from cnmtune.runtime.sim import calibration
from cnmtune.runtime.sim.config import DpuConfig

REPO = Path(__file__).resolve().parents[1]
BENCH = REPO / "benchmarks"
CALIBRATED = REPO / "cnmtune" / "runtime" / "sim" / "calibrated.py"
COLUMNS = ["benchmark", "num_dpus", "size_param", "kernel_ms", "cpu_to_dpu_ms", "dpu_to_cpu_ms", "dpu_to_dpu_ms"]


def _script(name: str):
    """A benchmark script imported as a module (its siblings importable, as when it runs)."""
    sys.path.insert(0, str(BENCH))
    try:
        spec = importlib.util.spec_from_file_location(f"{name}_under_test", BENCH / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(BENCH))
    return module


def _run(name: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(BENCH / f"{name}.py"), *args], capture_output=True, text=True,
                          timeout=600, check=False, env={**os.environ, "COLUMNS": "200"})


# ------------------------------------------------------------------------- the shipped rows
@pytest.mark.parametrize("name, count, workloads", [
    (calibration.FITTED_CSV, 62, {"VA", "RED", "BS", "GEMV"}),
    (calibration.VALIDATION_CSV, 30, {"MLP", "SCAN-SSA"}),
])
def test_shipped_rows_load_with_the_documented_columns(name, count, workloads):
    path = calibration.DATA / name
    with open(path, newline="") as handle:
        assert next(csv.reader(handle)) == COLUMNS
    rows = calibration.load_rows(path)
    assert len(rows) == count and {r.benchmark for r in rows} == workloads
    assert {r.nr_dpus for r in rows} <= {1, 4, 16, 64} and all(r.kernel_ms > 0 for r in rows)
    readme = (calibration.DATA / "README.md").read_text()
    assert all(f"| {column} |" in readme for column in COLUMNS)
    assert "uPIMulator" in readme and name in readme


def test_shipped_rows_are_package_data():
    patterns = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]["cnmtune"]
    shipped = [p.relative_to(REPO / "cnmtune").as_posix() for p in calibration.DATA.iterdir()]
    assert {calibration.FITTED_CSV, calibration.VALIDATION_CSV, "README.md"} <= {Path(p).name for p in shipped}
    assert all(any(fnmatch.fnmatch(p, pattern) for pattern in patterns) for p in shipped)


# ------------------------------------------------------------------------------------ --data
@pytest.mark.parametrize("script", ["validate_sim", "calibrate_sim"])
def test_data_without_the_csvs_is_one_usage_error_naming_what_to_pass(script, tmp_path):
    result = _run(script, "--data", str(tmp_path / "nowhere"))
    assert result.returncode == 2 and "Traceback" not in result.stderr
    error = result.stderr.strip().splitlines()[-1]
    assert "--data" in error and calibration.FITTED_CSV in error and calibration.VALIDATION_CSV in error


# ------------------------------------------------------------------------------- calibrate_sim
def test_calibrate_without_apply_writes_the_fit_and_leaves_calibrated_py(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    with open(calibration.DATA / calibration.FITTED_CSV, newline="") as handle:
        rows = list(csv.DictReader(handle))
    gemv = [r for r in rows if r["benchmark"] == "GEMV" and r["num_dpus"] == "4"]
    tiny = sorted(gemv, key=lambda r: int(r["size_param"]))[:2]  # two rows that simulate in seconds
    with open(data / calibration.FITTED_CSV, "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=COLUMNS)
        writer.writeheader()
        writer.writerows(tiny)
    before = CALIBRATED.read_bytes()
    out = tmp_path / "fit.json"
    result = _run("calibrate_sim", "--data", str(data), "--out", str(out), "--rounds", "1")
    assert result.returncode == 0, result.stderr[-2000:]
    assert CALIBRATED.read_bytes() == before
    fit = json.loads(out.read_text())
    assert fit["data"] == {"file": calibration.FITTED_CSV,
                           "sha256": hashlib.sha256((data / calibration.FITTED_CSV).read_bytes()).hexdigest()}
    assert set(fit["fields"]) == {k.name for k in calibration.KERNEL_KNOBS + calibration.TRANSFER_KNOBS}
    assert set(fit["after"]["kernel"]) == {"GEMV", "all"}
    assert "unchanged" in result.stdout


def test_apply_writes_the_module_that_calibrated_loads(tmp_path):
    calibrate_sim = _script("calibrate_sim")
    assert calibrate_sim.MODULE == CALIBRATED
    errors = {"kernel": {"all": 10.0}, "cpu_to_dpu": {"all": 30.0}, "dpu_to_cpu": {"all": 20.0}}
    fields = {name: 1.5 + k for k, name in enumerate(calibrate_sim.FITTED_FIELDS)}
    fit = {"data": {"file": "rows.csv", "sha256": "ab" * 32}, "date": "2026-01-02", "before": errors,
           "after": errors, "fields": fields}
    module = tmp_path / "calibrated.py"
    calibrate_sim.apply(fit, module)
    loaded = runpy.run_path(str(module))
    assert loaded["FIELDS"] == fields and "rows.csv (sha256 abababababababab), 2026-01-02" in loaded["__doc__"]
    assert all(getattr(replace(DpuConfig(), **loaded["FIELDS"]), k) == v for k, v in fields.items())


# ----------------------------------------------------------------------- outputs, exit status
def test_the_default_results_folder_is_ignored_by_git():
    script_io = _script("script_io")
    assert script_io.RESULTS == BENCH / "results"
    ignored = subprocess.run(["git", "check-ignore", "-q", str(script_io.RESULTS / "any.json")], cwd=REPO,
                             check=False)
    assert ignored.returncode == 0


def test_a_missed_target_exits_1_and_writes_where_asked(tmp_path):
    out = tmp_path / "speed.json"
    # 16 elements spend the run in per-launch setup: a few M instructions per second, not 15 M
    result = _run("sim_speed", "--va-size", "16", "--nw-size", "64", "--json", str(out))
    assert result.returncode == 1, result.stderr[-2000:]
    assert "missed" in result.stdout
    assert [case["kernel"] for case in json.loads(out.read_text())["cases"]] == ["va", "nw"]


# --------------------------------------------------------------------------- PrIM arithmetic
def test_prim_status_marks_are_explained():
    micro_sim = _script("micro_sim")
    assert {status for _, status in micro_sim.PRIM_ARITH.values()} <= set(micro_sim.PRIM_STATUS)
    legend = micro_sim.status_legend()
    assert all(f"({status})" in legend for status in micro_sim.PRIM_STATUS)


def test_validate_sim_and_prim_arith_agree_on_div():
    """validate_sim's microbenchmarks (micro_sim's element count) and prim_arith (2^16 elements)
    divide by the same operand, so a division costs the same in both."""
    micro_sim, prim_arith = _script("micro_sim"), _script("prim_arith")
    config = DpuConfig.calibrated()
    validate = micro_sim.run_arith(config, types=("INT32",), ops=("DIV",), tasklets=(16,))
    prim = prim_arith.rows(prim_arith.ELEMENTS, config, types=("INT32",), ops=("DIV",))
    assert validate[0]["elements"] != prim_arith.ELEMENTS
    assert validate[0]["mops"] == pytest.approx(prim[0]["mops"], rel=0.01)


# --------------------------------------------------------------------------- tune ablation
def test_tune_ablation_reads_each_arms_best_run_within_every_budget(tmp_path):
    out = tmp_path / "ablation.json"
    result = _run("tune_ablation", "--kernels", "va", "--size", "small", "--dpus", "4", "--budgets", "2,4",
                  "--arms", "model-static,random,heuristic", "--seeds", "1", "--pipelines", "4", "--json", str(out))
    assert result.returncode == 0, result.stderr[-2000:]
    assert "va heuristic:" in result.stdout and "per arm, the geometric mean" in result.stdout
    data = json.loads(out.read_text())
    assert list(data["arms"]) == ["model-static", "random", "heuristic"]
    for arm in data["arms"].values():
        assert list(arm["kernels"]) == ["va"] and list(arm["geomean"]) == ["2", "4"] and arm["failed"] == 0
        speedups = [arm["kernels"]["va"][b] for b in ("2", "4")]
        assert 1.0 <= speedups[0] <= speedups[1] and arm["geomean"]["4"] == pytest.approx(speedups[1])
    tunes = data["kernels"]["va"]["tunes"]
    assert list(tunes) == ["model-static", "random:0", "heuristic"]
    assert all(len(t["times"]) <= 4 and t["finetune"] is None for t in tunes.values())
    # whichever arm found the best run needed at most the largest budget to come within 2 % of it
    assert min(t["runs_to_2pct"] or 5 for t in tunes.values()) <= 4


def test_tune_ablation_refuses_an_unknown_arm():
    result = _run("tune_ablation", "--kernels", "va", "--arms", "model,oracle")
    assert result.returncode == 2 and "unknown arm(s) oracle" in result.stderr
