"""The benchmark scripts as a user's clone runs them: the shipped hardware rows, --data, where the
scripts write, exit statuses, and calibrate_sim leaving the tracked calibrated.py alone."""

from __future__ import annotations

import csv
import fnmatch
import hashlib
import json
import runpy
import subprocess
import tomllib
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from rich.console import Console

from cnmtune.passes import knob_pipelines
from cnmtune.runtime.sim import calibration
from cnmtune.runtime.sim.config import DpuConfig
from tests.conftest import CliResult, load_script, run_script

REPO = Path(__file__).resolve().parents[1]
BENCH = REPO / "benchmarks"
CALIBRATED = REPO / "cnmtune" / "runtime" / "sim" / "calibrated.py"
COLUMNS = ["benchmark", "num_dpus", "size_param", "kernel_ms", "cpu_to_dpu_ms", "dpu_to_cpu_ms", "dpu_to_dpu_ms"]


def _script(name: str):
    """A benchmark script imported as a module."""
    return load_script(BENCH / f"{name}.py")


def _run(name: str, *args: str) -> CliResult:
    """`python benchmarks/NAME.py ARGS...`, its main() run in this process."""
    return run_script(BENCH / f"{name}.py", *args)


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


# -------------------------------------------------------------------------------- validate_sim
def _validation_record(bench: str, dpus: int, size: int, cpu_to_dpu: tuple[float, float, int],
                       inter: tuple[float, float, int] | None = None) -> dict:
    """A row as validate_sim.simulate records it: each step's (simulated ms, measured ms, bytes per DPU)."""
    record = {"benchmark": bench, "fitted": True, "dpus": dpus, "size": size, "kernel_ms": 1.0, "kernel_ms_real": 1.1}
    steps = {"cpu_to_dpu_ms": cpu_to_dpu, "dpu_to_cpu_ms": (1.0, 1.0, 8), "dpu_to_dpu_ms": inter}
    for column, step in steps.items():
        simulated, measured, nbytes = step or (0.0, None, 0)
        to_dpu = column == "cpu_to_dpu_ms"
        record |= {column: simulated, column + "_real": measured, column + "_bytes_to": nbytes if to_dpu else 0,
                   column + "_bytes_from": 0 if to_dpu else nbytes}
    return record


def test_validate_sim_checks_one_design_point_named_as_cnmtune_sweep_names_it(tmp_path):
    validate_sim = _script("validate_sim")
    config, changed = validate_sim.design_config(["launch_overhead_us=130", "dma_overhead=45"])
    calibrated = DpuConfig.calibrated()
    assert changed == {"launch_overhead_us": 130.0, "dma_overhead": 45.0}
    assert config.launch_overhead_s == pytest.approx(130e-6) and config.dma_engine_overhead == 45.0
    assert config.hash != calibrated.hash and config.xfer_call_s == calibrated.xfer_call_s
    assert validate_sim.design_config([]) == (calibrated, {})
    for bad, says in ((["bogus=1"], "unknown design parameter 'bogus'"), (["launch_overhead_us=1,2"], "one value"),
                      (["dma_overhead=1", "dma_overhead=2"], "given twice")):
        result = _run("validate_sim", "--skip-micro", "--out", str(tmp_path), *(f"--param={b}" for b in bad))
        assert result.returncode == 2 and "Traceback" not in result.stderr and says in result.stderr
    assert not any(tmp_path.iterdir())  # refused before anything ran or was written


def test_validate_sim_finds_the_least_mape_line_exactly():
    validate_sim = _script("validate_sim")
    assert validate_sim.best_line([1, 2, 3], [2.0, 3.0, 4.0]) == (pytest.approx(1.0), pytest.approx(1.0),
                                                                pytest.approx([0, 0, 0]))
    assert validate_sim.best_line([8, 8, 8], [1.0, 2.0, 4.0]) == (1.0, 0.0, pytest.approx([0.0, 0.5, 0.75]))
    rng = np.random.default_rng(41)
    x, y = rng.uniform(1, 100, 6), rng.uniform(1, 10, 6)
    best = sum(validate_sim.best_line(list(x), list(y))[2])
    grid = min(float(np.sum(np.abs(a + b * x - y) / y))
               for a in np.linspace(-10, 10, 201) for b in np.linspace(-0.2, 0.2, 201))
    assert best <= grid + 1e-12 and best > 0


def test_validate_sim_splits_each_kernel_error_into_a_fixed_part_and_a_slope():
    """Real times 0.5 ms + 2 us per element per DPU, simulated 0.2 ms + 2.2 us: the split finds both
    lines exactly; MLP's work is n x n per DPU, and a real row off its line shows in line %. MLP's
    rows, all but one on their simulated times, ask for the launch overhead they were priced with."""
    validate_sim = _script("validate_sim")
    records = [{"benchmark": "VA", "size": size, "dpus": dpus, "kernel_ms_real": 0.5 + 2e-3 * size / dpus,
                "kernel_ms": 0.2 + 2.2e-3 * size / dpus, "launches": 1}
               for size, dpus in ((1000, 1), (4000, 4), (8000, 4), (8000, 16))]
    records += [{"benchmark": "MLP", "size": n, "dpus": 4, "kernel_ms": 1.0 + 1e-3 * n * n / 4, "launches": 3,
                 "kernel_ms_real": 1.0 + 1e-3 * n * n / 4 * (1.2 if n == 64 else 1)} for n in (32, 64, 128, 256)]
    split = validate_sim.kernel_split(records, launch_ms=0.12)
    assert split["VA"] == {"fixed_ms_real": pytest.approx(0.5), "fixed_ms_sim": pytest.approx(0.2),
                           "slope_ratio": pytest.approx(1.1), "line_mape_real": pytest.approx(0.0, abs=1e-9),
                           "launch_ms_asked": pytest.approx(validate_sim.best_launch_ms(records[:4], 0.12))}
    assert split["MLP"]["fixed_ms_real"] == pytest.approx(1.0) and split["MLP"]["slope_ratio"] == pytest.approx(1.0)
    assert split["MLP"]["line_mape_real"] == pytest.approx(100 * (0.2 * 1.024 / 2.2288) / 4)  # the n=64 row alone
    assert split["MLP"]["launch_ms_asked"] == pytest.approx(0.12)
    console = Console(width=80, record=True)
    console.print(validate_sim.split_table(split, 0.12))
    text = console.export_text()
    assert max(map(len, text.splitlines())) <= 80 and "\u2026" not in text
    assert "0.500" in text and "0.200" in text and "1.100" in text and "launch ms" in text


def test_validate_sim_finds_the_launch_overhead_a_workloads_rows_ask_for():
    """The overhead of least MAPE when each launch costs L instead of the priced 0.1 ms: rows that
    all ask for 0.25 ms a launch (1, 2 and 3 launches) get 0.25; otherwise the median of what each
    row asks for, weighted by its launches over its real time; never below 0."""
    validate_sim = _script("validate_sim")

    def row(sim, asked, launches):
        return {"kernel_ms": sim, "kernel_ms_real": sim + launches * (asked - 0.1), "launches": launches}

    assert validate_sim.best_launch_ms([row(1.0, 0.25, 1), row(2.0, 0.25, 2), row(0.9, 0.25, 3)], 0.1) \
        == pytest.approx(0.25)
    # weights: 3 / 1.3 for the 0.2-ms row against 1 / 1.3 + 1 / 1.6 for the other two
    mixed = [row(1.0, 0.4, 1), row(1.0, 0.2, 3), row(1.0, 0.7, 1)]
    assert validate_sim.best_launch_ms(mixed, 0.1) == pytest.approx(0.2)
    errors = {overhead: sum(abs(r["kernel_ms"] + r["launches"] * (overhead - 0.1) - r["kernel_ms_real"])
                            / r["kernel_ms_real"] for r in mixed) for overhead in (0.15, 0.2, 0.25, 0.4)}
    assert min(errors, key=errors.get) == 0.2
    assert validate_sim.best_launch_ms([row(1.0, 0.02, 1), row(1.0, -0.05, 2)], 0.1) == 0.0


def test_validate_sim_reports_each_direction_next_to_its_floor():
    """Transfer MAPE per direction and workload, each next to the floor: the least-MAPE line in the
    bytes per (workload, DPU count) group of at least 3 rows; a direction a workload does not
    measure is '-', and the table reads at 80 columns."""
    validate_sim = _script("validate_sim")
    records = [_validation_record("VA", 4, n, (1.2 * (1 + n / 1000), 1 + n / 1000, n)) for n in (1000, 2000, 4000)]
    records += [_validation_record("VA", 1, 5000, (6.0, 5.0, 5000)),  # alone at 1 DPU: not in the floor
                *(_validation_record("MLP", 4, n, (2.0, 2.0, n), inter=(0.5, m, n)) for n, m in
                  ((256, 0.3), (512, 0.5), (1024, 0.3)))]
    summary, floors = validate_sim.summarise(records), validate_sim.floor(records)
    assert summary["cpu_to_dpu_ms"]["VA"] == pytest.approx(20.0) and summary["cpu_to_dpu_ms"]["MLP"] == 0.0
    assert summary["dpu_to_dpu_ms"]["VA"] is None
    assert summary["dpu_to_dpu_ms"]["MLP"] == pytest.approx(100 * (2 / 3 + 0 + 2 / 3) / 3)
    assert floors["cpu_to_dpu_ms"]["VA"] == {"floor": pytest.approx(0.0), "rows": 3,
                                             "simulated_on_rows": pytest.approx(20.0)}
    # MLP's Inter-DPU: 0.3, 0.5, 0.3 ms at 256, 512, 1024 B; the best line misses only the 512-B row by 0.2 / 0.5
    assert floors["dpu_to_dpu_ms"]["MLP"]["floor"] == pytest.approx(100 * 0.4 / 3)
    assert floors["dpu_to_dpu_ms"]["VA"] is None and floors["dpu_to_dpu_ms"]["all"]["rows"] == 3
    console = Console(width=80, record=True)
    console.print(validate_sim.transfer_table(summary, floors))
    text = console.export_text()
    assert max(map(len, text.splitlines())) <= 80 and "\u2026" not in text
    rows = {cells[0]: cells[1:] for cells in (line.translate({ord("│"): " ", ord("┃"): " "}).split()
                                             for line in text.splitlines()) if cells}
    assert rows["workload"] == ["CPU->DPU", "floor", "DPU->CPU", "floor", "Inter-DPU", "floor"]
    assert rows["VA"] == ["20.0", "0.0", "0.0", "0.0", "-", "-"] and rows["MLP"][-2:] == ["44.4", "13.3"]


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
    assert fit["data"] == [{"file": calibration.FITTED_CSV,
                            "sha256": hashlib.sha256((data / calibration.FITTED_CSV).read_bytes()).hexdigest()}]
    assert set(fit["fields"]) == {k.name for k in calibration.KERNEL_KNOBS} | set(calibration.TRANSFER_FIELDS)
    assert set(fit["transfer_ranges"]) == set(calibration.TRANSFER_FIELDS)
    assert set(fit["after"]["kernel"]) == {"GEMV", "all"}
    assert "unchanged" in result.stdout
    # the kernel constants alone: the transfer constants kept, with their ranges (calibrated.py needs them)
    result = _run("calibrate_sim", "--data", str(data), "--out", str(out), "--rounds", "1", "--fit", "kernel",
                  "--start", "calibrated")
    assert result.returncode == 0, result.stderr[-2000:]
    kernel_only = json.loads(out.read_text())
    kept = {name: getattr(DpuConfig.calibrated(), name) for name in calibration.TRANSFER_FIELDS}
    assert {name: kernel_only["fields"][name] for name in kept} == kept
    assert set(kernel_only["transfer_ranges"]) == set(calibration.TRANSFER_FIELDS)


def test_apply_writes_the_module_that_calibrated_loads(tmp_path):
    calibrate_sim = _script("calibrate_sim")
    assert calibrate_sim.MODULE == CALIBRATED
    errors = {"kernel": {"all": 10.0}, "cpu_to_dpu": {"all": 30.0}, "dpu_to_cpu": {"all": 20.0},
              "dpu_to_dpu": {"all": 8.0}}
    fields = {name: 1.5 + k for k, name in enumerate(calibrate_sim.FITTED_FIELDS)}
    fields["xfer_host_cached_fraction"] = 0.25  # a fraction
    ranges = {"xfer_call_s": [1.0, 2.0]}
    fit = {"data": [{"file": "rows.csv", "sha256": "ab" * 32}], "date": "2026-01-02", "groups": ["kernel", "transfers"],
           "before": errors, "after": errors, "fields": fields, "transfer_ranges": ranges}
    module = tmp_path / "calibrated.py"
    calibrate_sim.apply(fit, module)
    loaded = runpy.run_path(str(module))
    assert loaded["FIELDS"] == fields and "rows.csv (sha256 abababababababab), 2026-01-02" in loaded["__doc__"]
    assert loaded["TRANSFER_RANGES"] == {"xfer_call_s": (1.0, 2.0)} and "8.0 %" in loaded["__doc__"]
    assert all(getattr(replace(DpuConfig(), **loaded["FIELDS"]), k) == v for k, v in fields.items())
    calibrate_sim.apply({**fit, "groups": ["transfers"]}, module)  # the kernel constants of an earlier fit
    assert "Kernel constants kept from an earlier fit (kernel_ms MAPE 10.0 %)" in runpy.run_path(str(module))["__doc__"]
    calibrate_sim.apply({**fit, "groups": ["kernel"]}, module)
    assert "10.0 % fitted; transfer constants kept" in runpy.run_path(str(module))["__doc__"]


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


# ------------------------------------------------------------------ PrIM's CPU-DPU microbenchmark
PRIM_CPU_DPU = REPO.parent / "shared" / "prim-benchmarks" / "Microbenchmarks" / "CPU-DPU"


def test_prim_cpu_dpu_prints_the_apps_bandwidths_next_to_prims_published_ones(tmp_path):
    """PrIM's CPU-DPU app, unmodified, at 1 MiB per DPU, serial and parallel at 4 DPUs and serial at 1 (the
    1-DPU run of --sizes): serial copies go DPU by DPU (the same GB/s at 1 and 4 DPUs), one
    dpu_push_xfer to 4 DPUs beats four copies (writing by 1.5x with the calibrated constants: a 1 MiB
    copy's host buffer is cache-resident, the push's 4 MiB less so; the calibration rows show
    1.8-2.5x at 4-17 MB per DPU), reading MRAM is slower than writing it, and the 1-DPU serial rows
    stand next to PrIM's values, tagged UNCONFIRMED."""
    if not (PRIM_CPU_DPU / "Makefile").is_file():
        pytest.skip(f"PrIM's CPU-DPU microbenchmark is not at {PRIM_CPU_DPU} (a checkout of "
                    "github.com/CMU-SAFARI/prim-benchmarks beside the repository)")
    out = tmp_path / "cpu_dpu.json"
    result = _run("prim_cpu_dpu", "--dpus", "4", "--modes", "serial,parallel", "--elements", "131072",
                  "--sizes", "131072", "--out", str(out))
    rows = {(r["mode"], r["direction"], r["dpus"]): r for r in json.loads(out.read_text())["rows"]}
    assert len(rows) == 6 and all(r["gbps"] > 0 and r["bytes_per_dpu"] == 1 << 20 for r in rows.values())
    for direction in ("CPU-DPU", "DPU-CPU"):
        assert rows["serial", direction, 4]["gbps"] == pytest.approx(rows["serial", direction, 1]["gbps"], rel=0.05)
        assert rows["parallel", direction, 4]["gbps"] > 1.25 * rows["serial", direction, 4]["gbps"]
    assert rows["serial", "DPU-CPU", 1]["gbps"] < rows["serial", "CPU-DPU", 1]["gbps"]
    compared = [r for r in rows.values() if r["within"] is not None]
    assert [(r["direction"], r["published_gbps"], r["published_tag"]) for r in compared] == \
        [("CPU-DPU", 0.33, "U"), ("DPU-CPU", 0.12, "U")]
    assert all(r["mode"] == "serial" and r["dpus"] == 1 for r in compared)
    assert all(r["error_pct"] == pytest.approx(100 * (r["gbps"] / r["published_gbps"] - 1)) for r in compared)
    assert result.returncode == (0 if all(r["within"] for r in compared) else 1), result.stderr[-2000:]
    assert "PrIM GB/s" in result.stdout and "0.33 [U] at 32 MiB" in result.stdout and "UNCONFIRMED" in result.stdout


def test_prim_cpu_dpu_without_a_prim_checkout_is_one_usage_error(tmp_path):
    result = _run("prim_cpu_dpu", "--prim", str(tmp_path))
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "Microbenchmarks/CPU-DPU/Makefile" in result.stderr and "prim-benchmarks" in result.stderr


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
    # after a change to one arm, that arm alone runs again; the others are read from the earlier run
    again = tmp_path / "again.json"
    common = ("--kernels", "va", "--size", "small", "--dpus", "4", "--seeds", "1", "--pipelines", "4")
    result = _run("tune_ablation", *common, "--budgets", "2,4", "--arms", "heuristic", "--reuse", str(out),
                  "--json", str(again))
    assert result.returncode == 0, result.stderr[-2000:]
    merged = json.loads(again.read_text())
    assert list(merged["arms"]) == ["heuristic", "model-static", "random"]
    for label in ("model-static", "random:0"):
        assert merged["kernels"]["va"]["tunes"][label]["times"] == tunes[label]["times"]
        assert merged["arms"][label.split(":")[0]] == data["arms"][label.split(":")[0]]
    assert merged["kernels"]["va"]["tunes"]["heuristic"]["times"] == tunes["heuristic"]["times"]  # deterministic
    result = _run("tune_ablation", *common, "--budgets", "2,3", "--arms", "heuristic", "--reuse", str(out))
    assert result.returncode == 2 and "run with other budgets than this run" in result.stderr
    # no arm run: the tables of the earlier runs, a later file's tune replacing an earlier one's
    tables = tmp_path / "tables.json"
    result = _run("tune_ablation", *common, "--budgets", "2,4", "--arms", "", "--reuse", str(out), "--reuse",
                  str(again), "--json", str(tables))
    assert result.returncode == 0 and "va heuristic:" not in result.stdout and "per arm" in result.stdout
    assert json.loads(tables.read_text())["kernels"]["va"]["tunes"] == merged["kernels"]["va"]["tunes"]


def test_tune_ablation_refuses_an_unknown_arm():
    result = _run("tune_ablation", "--kernels", "va", "--arms", "model,oracle")
    assert result.returncode == 2 and "unknown arm(s) oracle" in result.stderr


# ---------------------------------------------------------------------------- link equivalence
def test_link_equivalence_counts_identical_and_declined_builds(tmp_path):
    out = tmp_path / "links.json"
    result = _run("link_equivalence", "--kernels", "va,bs", "--pipelines", "O2", "--tasklets", "4", "--json", str(out))
    assert result.returncode == 0, result.stderr[-2000:]
    record = json.loads(out.read_text())
    assert record["counts"] == {"same": 1, "declined": 1, "differs": 0}
    (outcome,) = record["builds"]["bs"].values()  # bs prints a string literal: mergeable, ld.lld's to link
    assert outcome.startswith("declined: section .rodata.str1")
    assert "1 identical, 1 linked by ld.lld instead, 0 different: met" in result.stdout


# ---------------------------------------------------------------------------- compile speed
def test_compile_speed_times_each_stage_and_the_bound_llvm_sets(tmp_path):
    out = tmp_path / "speed.json"
    result = _run("compile_speed", "--count", "3", "--knob-tasklets", "1", "--stages", "3", "--json", str(out))
    assert result.returncode in (0, 1), result.stderr[-2000:]
    record = json.loads(out.read_text())
    met = all(found["variants_per_second"] >= record["target_per_second"][name]
              for name, found in record["workloads"].items())
    assert result.returncode == (0 if met else 1)
    # the knob pipelines at 1 tasklet; the first was built (at 16) before the timing
    workloads = record["workloads"]
    assert workloads["random"]["variants"] == 3 and workloads["knobs"]["variants"] == len(knob_pipelines())
    stages = record["stages_median_ms"]
    assert list(stages) == ["optimize (LLVM)", "codegen (LLVM)", "link", "lowering (IRAM rule)", "features",
                            "build cache, keys"]
    assert all(ms > 0 for name, ms in stages.items() if name != "build cache, keys")  # a difference: may be < 0
    llvm = stages["optimize (LLVM)"] + stages["codegen (LLVM)"]
    assert record["llvm_bound_per_second"] == round(1000 / llvm, 1)
    assert "allows at most" in result.stdout
    assert record["own_stages_ms"] == pytest.approx(sum(stages.values()) - llvm, abs=0.02)
    assert record["own_stages_budget_ms"] == pytest.approx(1000 / record["target_per_second"]["random"] - llvm, abs=0.02)
    assert "leaves cnmtune's own stages (link, lowering, features, build cache)" in " ".join(result.stdout.split())
