"""Dataset generation end to end: real compiles, real simulator runs, real SQLite, real Dask."""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cnmtune.costmodel import model_schema
from cnmtune.plugin.dataset.generate import SAMPLING_TOLERANCE, DatasetSpec, define_settings, generate
from cnmtune.runtime.grid import size_ladder
from cnmtune.runtime.registry import find_kernel
from cnmtune.runtime.sim.config import DpuConfig
from cnmtune.runtime.executor import DaskExecutor, InlineExecutor
from cnmtune.store import Status, Store
from tests.conftest import run_cnmtune

REPO = Path(__file__).resolve().parents[3]

# The must-show shape: 2 kernels x 20 pipelines x 4 configurations (DPUs {1,2} x tasklets {2,4}).
KILL_ARGS = ["--kernels", "va,red", "--pipelines", "20", "--dpus", "1,2", "--tasklets", "2,4",
             "--sizes", "65536"]
KILL_SPEC = DatasetSpec(kernels=("va", "red"), pipelines=20, dpus=(1, 2), tasklets=(2, 4), sizes=(65536,))


def snapshot(db: Path) -> dict[str, list[tuple]]:
    """Every row that describes the dataset (ids and wall-clock seconds left out)."""
    with Store(db) as store:
        compiles = sorted((c.kernel, c.pipeline, c.defines, c.tasklets, c.elf_hash, c.status.value,
                           c.error, c.iram_bytes) for c in store.compiles())
        runs = sorted((r.elf_hash, r.dpus, r.tasklets, r.size, r.config_hash, r.status.value, r.cycles,
                       r.kernel_seconds, r.transfer_seconds, r.verified, r.error) for r in store.runs())
        training = sorted((t.kernel, t.pipeline, t.dpus, t.tasklets, t.size, t.kernel_seconds, t.speedup)
                          for t in store.training_view())
        features = sorted(sqlite3.connect(db).execute("SELECT elf_hash, schema_hash, data FROM features"))
    return {"compiles": compiles, "runs": runs, "training": training, "features": features}


def cnmtune_dataset(*args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "cnmtune", "dataset", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "COLUMNS": "200"})


def count_runs(db: Path) -> int:
    if not db.exists():
        return 0
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5) as conn:
            return conn.execute("SELECT COUNT(*) FROM runs").fetchone()[0]
    except sqlite3.OperationalError:  # not migrated yet
        return 0


def test_killed_generation_resumes_to_the_same_rows(tmp_path, dask_client):
    address = dask_client.scheduler.address
    reference = tmp_path / "reference.sqlite"
    with Store(reference) as store:
        report = generate(KILL_SPEC, store, DaskExecutor(dask_client))
    assert report.compiles_done == 2 * 20 * 2 and not report.task_failures
    expected = snapshot(reference)
    total_runs = len(expected["runs"])
    assert total_runs == report.runs_done > 40
    assert len(expected["training"]) == 2 * 20 * 4  # every (compile, config) pair is a sample

    killed = tmp_path / "killed.sqlite"
    proc = cnmtune_dataset("generate", *KILL_ARGS, "--db", str(killed), "--scheduler", address)
    deadline = time.monotonic() + 240
    while count_runs(killed) < 10 and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    partial = count_runs(killed)
    assert 10 <= partial < total_runs, f"kill landed at {partial} of {total_runs} runs"

    resumed = cnmtune_dataset("generate", *KILL_ARGS, "--db", str(killed), "--scheduler", address, "--json")
    out, err = resumed.communicate(timeout=300)
    assert resumed.returncode == 0, err
    assert snapshot(killed) == expected
    with Store(killed) as store:
        stats = store.stats()
    assert stats.generations == 2 and stats.samples == len(expected["training"])


@pytest.fixture(scope="module")
def small_va(tmp_path_factory):
    """va at 2 x 2 configurations (one of them invalid: 1 tasklet < 2 DPUs), 6 pipelines, inline."""
    db = tmp_path_factory.mktemp("dataset") / "va.sqlite"
    spec = DatasetSpec(kernels=("va",), pipelines=6, dpus=(1, 2), tasklets=(1, 2), sizes=("small",))
    with Store(db) as store:
        report = generate(spec, store, InlineExecutor())
    return db, spec, report


def test_every_variant_compiled_featured_and_simulated(small_va):
    db, spec, report = small_va
    assert report.invalid_points == {"tasklets 1 < DPUs 2 (L2P keeps T >= D)": 1}
    assert report.compiles_done == 6 * 2 and report.compile_status == {"ok": 12}
    schema = model_schema()
    with Store(db) as store:
        compiles = store.compiles()
        distinct = {c.elf_hash for c in compiles}
        assert all(store.features(h, schema.hash) is not None for h in distinct)
        assert list(store.features(next(iter(distinct)), schema.hash)) == list(schema.names)
        runs = store.runs()
        # one run per distinct binary and valid point: T=1 -> D=1; T=2 -> D=1,2
        points_per_tasklets = {1: 1, 2: 2}
        binaries = {(c.elf_hash, c.tasklets) for c in compiles}
        assert len(runs) == sum(points_per_tasklets[t] for _, t in binaries)
        assert all(r.ok and r.config_hash == DpuConfig.named("calibrated").hash for r in runs)
        train = store.training_view()
    assert len(train) == 6 * 3 and report.sample_points == 18
    assert report.dedup_fraction == pytest.approx(1 - len(runs) / 18)
    baseline = [t for t in train if t.pipeline == "O0" and t.dpus == 1 and t.tasklets == 1]
    assert len(baseline) == 1 and baseline[0].speedup == pytest.approx(1.0)
    o2 = next(t for t in train if t.pipeline == "O2" and t.dpus == 2 and t.tasklets == 2)
    assert o2.speedup > 2.0  # 2 DPUs, 2 tasklets and O2 beat 1 DPU, 1 tasklet, O0


def test_rerun_skips_everything_recorded(small_va):
    db, spec, _ = small_va
    before = snapshot(db)
    with Store(db) as store:
        report = generate(spec, store, InlineExecutor())
    assert (report.compiles_planned, report.runs_planned) == (0, 0)
    assert snapshot(db) == before


def test_a_new_feature_schema_recompiles_each_binary_once_and_reruns_nothing(small_va, tmp_path):
    """A store made under an older schema: features missing under today's are recorded by
    compiling each binary again; its runs, keyed by the ELF, are kept."""
    db, spec, _ = small_va
    old = tmp_path / "old_schema.sqlite"
    shutil.copy(db, old)
    schema_hash = model_schema().hash
    with sqlite3.connect(old) as conn:
        conn.execute("UPDATE features SET schema_hash = 'an-older-schema'")
    with Store(old) as store:
        distinct = {c.elf_hash for c in store.compiles()}
        runs = store.runs()
        report = generate(spec, store, InlineExecutor())
        assert report.compiles_done == len(distinct) < 12 and report.runs_planned == 0
        assert store.featured(schema_hash) == distinct
        assert store.runs() == runs
        assert len(store.training_view(schema_hash=schema_hash)) == 6 * 3


def test_a_generation_goes_on_from_an_imported_store_and_repeats_no_run(small_va, tmp_path):
    """Another machine's store, exported (compiles and runs) and imported into a new one: the same
    command compiles each binary again for its features, runs nothing, and gives the same dataset."""
    db, spec, _ = small_va
    exports = [tmp_path / "compiles.parquet", tmp_path / "runs.parquet"]
    for table, path in zip(("compiles", "runs"), exports):
        result = run_cnmtune("dataset", "export", str(db), str(path), "--table", table)
        assert result.returncode == 0, result.stderr
    moved = tmp_path / "moved.sqlite"
    result = run_cnmtune("dataset", "import", *map(str, exports), "--db", str(moved), "--json")
    assert result.returncode == 0, result.stderr
    with Store(db) as store:
        compiles, runs = store.compiles(), store.runs()
    assert [(r["table"], r["added"]) for r in json.loads(result.stdout)] == [("compiles", len(compiles)),
                                                                               ("runs", len(runs))]
    with Store(moved) as store:
        assert store.featured(model_schema().hash) == set()
        report = generate(spec, store, InlineExecutor())
    assert report.compiles_done == len({c.elf_hash for c in compiles}) and report.runs_planned == 0
    assert snapshot(moved) == snapshot(db)


def test_timeouts_recorded_excluded_and_retried(tmp_path):
    db = tmp_path / "budget.sqlite"
    tight = DatasetSpec(kernels=("va",), pipelines=2, dpus=(1,), tasklets=(2,), sizes=("small",), budget=500)
    with Store(db) as store:
        report = generate(tight, store, InlineExecutor())
        assert report.run_status == {"timeout": 2}
        assert {r.status for r in store.runs()} == {Status.TIMEOUT}
        assert "500" in store.runs()[0].error
        assert store.training_view() == []
        assert generate(tight, store, InlineExecutor()).runs_planned == 0  # a failure is done
        roomy = DatasetSpec(**{**tight.to_dict(), "budget": 10**9, "retry_failed": True})
        assert generate(roomy, store, InlineExecutor()).run_status == {"ok": 2}
        assert len(store.training_view()) == 2


def test_broken_kernel_records_compile_errors(tmp_path):
    root = tmp_path / "va_broken"
    shutil.copytree(REPO / "benchmarks" / "prim" / "va", root)
    source = next((root / "dpu").glob("*.c"))
    source.write_text(source.read_text() + "\nthis is not C;\n")
    db = tmp_path / "broken.sqlite"
    spec = DatasetSpec(kernels=(str(root),), pipelines=3, dpus=(1,), tasklets=(1, 2), sizes=("small",))
    with Store(db) as store:
        report = generate(spec, store, InlineExecutor())
        compiles = store.compiles()
    assert report.compile_status == {"compile_error": 6} and report.runs_planned == 0
    assert all("this is not C" in c.error or "error:" in c.error for c in compiles)
    assert all(c.elf_hash is None for c in compiles)


def test_cli_stats_and_export(small_va, tmp_path):
    db, _, _ = small_va
    stats = run_cnmtune("dataset", "stats", str(db))
    assert stats.returncode == 0, stats.stderr
    for label in ("duplicate-binary ratio", "samples per second", "run outcomes", "va"):
        assert label in stats.stdout
    out = tmp_path / "va.parquet"
    export = run_cnmtune("dataset", "export", str(db), str(out))
    assert export.returncode == 0, export.stderr
    import pyarrow.parquet

    table = pyarrow.parquet.read_table(out)
    assert table.num_rows == 18 and "speedup" in table.column_names
    assert table.schema.metadata[b"cnmtune.feature_schema_hash"] == model_schema().hash.encode()
    assert sum(name.startswith("f.") for name in table.column_names) == len(model_schema())
    missing = run_cnmtune("dataset", "stats", str(tmp_path / "no.sqlite"))
    assert missing.returncode == 1 and "no store at" in missing.stderr


def test_cli_generate_prints_a_report_with_skipped_rules(tmp_path):
    db = tmp_path / "cli.sqlite"
    result = run_cnmtune("dataset", "generate", "--kernels", "va", "--pipelines", "2", "--dpus", "1,2,4",
                         "--tasklets", "1,2", "--sizes", "small", "--db", str(db), "--workers", "1")
    assert result.returncode == 0, result.stderr
    assert "3 x tasklets N < DPUs N (L2P keeps T >= D)" in result.stdout
    assert "simulations (new / planned)" in result.stdout and "ok: 4" in result.stdout


def test_define_settings_and_size_ladders_of_real_workloads():
    gemv, red = find_kernel("gemv"), find_kernel("red")
    assert define_settings(gemv.workload, 1) == [{}]
    assert define_settings(gemv.workload, 4) == [{}, {"BL": 3}, {"BL": 7}, {"BL": 11}]
    assert define_settings(red.workload, 3) == [{}, {"BL": 3}, {"BL": 11}, {"VERSION": "TREE"},
                                                {"SYNC": "BARRIER"}]
    assert size_ladder(gemv, 4) == [256, 768, 2560, 8192]  # small .. default, log-spaced
    assert size_ladder(find_kernel("spmv"), 3) == [512, 512 * 8, 28924]  # 512 x round(sqrt(28924 / 512))


def test_v2_grid_defines_sampled_runs_and_the_fewest_dpus_baseline(tmp_path):
    """Block sizes varied, tasklets < DPUs kept, 16 DPUs sampled (recorded under their own key,
    trained on because the binary's 1-DPU run verified), a per-DPU bound on the input."""
    spec = DatasetSpec(kernels=("gemv",), pipelines=2, dpus=(1, 16), tasklets=(1, 4),
                       sizes=("small", "default"), define_values=3, tasklets_at_least_dpus=False,
                       per_dpu_limit=0.25, sampled_from=16)
    config = DpuConfig.named("calibrated").hash
    with Store(tmp_path / "v2.sqlite") as store:
        report = generate(spec, store, InlineExecutor())
        assert report.sampling_error["gemv"] <= SAMPLING_TOLERANCE  # checked on 16 DPUs at 8192
        # the default size on 1 DPU is over the bound (a DPU would get all of it)
        assert report.invalid_points == {"a DPU's share of the input above 0.25 of the default size": 6}
        assert report.compiles_done == 2 * 3 * 2 and report.run_status == {"ok": 12 * 3}
        runs = store.runs()
        sampled = [r for r in runs if r.dpus == 16]
        assert len(sampled) == 24 and {r.config_hash for r in sampled} == {config + "+sampled"}
        assert {r.device for r in sampled} == {"sim-sampled"} and not any(r.verified for r in sampled)
        assert all(r.verified and r.config_hash == config for r in runs if r.dpus == 1)
        rows = store.training_view(model_schema().hash)
    assert len(rows) == 36 and all(r.speedup is not None for r in rows)
    assert {r.defines for r in rows} == {"BL=10", "BL=3", "BL=11"}
    assert {r.defines: r.features["dma_bytes"] for r in rows} == {"BL=10": 1024, "BL=3": 8, "BL=11": 2048}
    small = {(r.pipeline, r.defines, r.dpus, r.tasklets): r for r in rows if r.size == 256}
    base = small[("O0", "BL=10", 1, 1)]
    assert base.speedup == pytest.approx(1.0)  # the fastest O0 define at 1 DPU, 1 tasklet
    fast = small[("O1", "BL=10", 16, 4)]
    assert fast.speedup == pytest.approx(base.kernel_seconds / fast.kernel_seconds)
    # at the default size only 16 DPUs are in the grid: the baseline is O0 on 16 DPUs
    assert max(r.speedup for r in rows if r.size == 8192 and r.pipeline == "O0" and r.tasklets == 1) \
        == pytest.approx(1.0)


def test_a_kernel_whose_sampled_runs_are_off_keeps_only_full_runs(tmp_path):
    """bfs's host feeds each level's frontier back: unsimulated DPUs read zeros, so its sampled
    runs are off by more than the tolerance and its 16-DPU points are skipped, with the reason."""
    spec = DatasetSpec(kernels=("bfs",), pipelines=1, dpus=(1, 16), tasklets=(16,), sizes=("small",),
                       sampled_from=16)
    with Store(tmp_path / "bfs.sqlite") as store:
        report = generate(spec, store, InlineExecutor())
        runs = store.runs()
    error = report.sampling_error["bfs"]
    assert error > SAMPLING_TOLERANCE
    assert report.invalid_points == {f"bfs: sampled runs off by {100 * error:.1f} % (> 2 %)": 1}
    assert [(r.dpus, r.device, r.verified) for r in runs] == [(1, "sim", True)]


def test_a_resumed_generation_checks_sampling_from_the_recorded_full_run(tmp_path):
    """The check's full run (every DPU simulated) is recorded when its binary is the store's (O2 in the
    pipelines, compiled by a first generation), and a resume takes it from the store instead of
    simulating it again; the sampled run of the check is never recorded."""
    spec = DatasetSpec(kernels=("va",), pipelines=3, dpus=(1, 16), tasklets=(16,), sizes=("small",),
                       sampled_from=16)
    config = DpuConfig.named("calibrated").hash
    with Store(tmp_path / "va.sqlite") as store:
        first = generate(spec, store, InlineExecutor())  # compiles O0..O2, then runs: the check ran before them
        full = [r for r in store.runs() if r.dpus == 16 and r.config_hash == config]
        assert full == []  # the O2 binary was not the store's yet when the check ran
        again = generate(spec, store, InlineExecutor())
        full = [r for r in store.runs() if r.dpus == 16 and r.config_hash == config]
        assert [(r.tasklets, r.size, r.verified) for r in full] == [(16, 4096, True)]
        recorded_at = full[0]
        third = generate(spec, store, InlineExecutor())
        # the same record, wall seconds included: not simulated again
        assert [r for r in store.runs() if r.dpus == 16 and r.config_hash == config] == [recorded_at]
    assert first.sampling_error == again.sampling_error == third.sampling_error
