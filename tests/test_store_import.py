"""Importing another store's compiles and runs: every field back as it was, the store's own kept,
one clear error for a file that is not such an export, nothing added by a failed import."""

from __future__ import annotations

import csv
from dataclasses import replace

import pytest

from cnmtune.store import CompileRecord, RunRecord, Status, Store, StoreError
from cnmtune.store_import import import_table

CFG = "cfg0"
COMPILES = [
    CompileRecord("va", "O2", "", 16, "a" * 64, Status.OK, seconds=0.5, iram_bytes=1024),
    CompileRecord("va", "sroa,licm", "BL=8", 4, "b" * 64, Status.OK, seconds=0.25, iram_bytes=960),
    CompileRecord("va", "O3", "", 16, None, Status.IRAM_OVERFLOW, "5000 instructions > 4096", 0.75),
    CompileRecord("gemv", "O0", "", 1, None, Status.COMPILE_ERROR, "x.c:3: error: expected ';'"),
]
RUNS = [
    RunRecord("va", "a" * 64, 4, 16, 1024, CFG, Status.OK, 123456, 1.5e-3, 2e-4, True, "", 0.2, "sim",
              link_hash="link0"),
    RunRecord("va", "b" * 64, 64, 4, 1024, CFG + "+sampled", Status.OK, 99, 1e-3, None, False, "", 0.1,
              "sim-sampled", "BL=8"),
    RunRecord("mlp", "a" * 64, 4, 16, 1024, CFG, Status.FAULT, error="stack overflow", params="layers=3"),
    RunRecord("va", "a" * 64, 1, 1, 1024, CFG, Status.TIMEOUT, error="budget"),
]


@pytest.fixture
def exported(tmp_path):
    """The compiles and runs above, exported by a store to Parquet and to CSV."""
    with Store(tmp_path / "source.sqlite") as source:
        for rec in COMPILES:
            source.record_compile(rec)
        for rec in RUNS:
            source.record_run(rec)
        return {suffix: (source.export(tmp_path / f"compiles{suffix}", table="compiles"),
                         source.export(tmp_path / f"runs{suffix}", table="runs"))
                for suffix in (".parquet", ".csv")}


@pytest.mark.parametrize("suffix", [".parquet", ".csv"])
def test_an_import_gives_back_every_record_as_it_was(exported, tmp_path, suffix):
    with Store(tmp_path / "copy.sqlite") as store:
        reports = [import_table(store, path) for path in exported[suffix]]
        assert [(r.table, r.added, r.kept) for r in reports] == [("compiles", 4, 0), ("runs", 4, 0)]
        assert store.compiles() == COMPILES
        assert store.runs() == RUNS
        assert [r.added for r in (import_table(store, path) for path in exported[suffix])] == [0, 0]
        assert store.compiles() == COMPILES and store.runs() == RUNS


def test_the_stores_own_records_are_kept(exported, tmp_path):
    mine = RunRecord("va", "a" * 64, 4, 16, 1024, CFG, Status.OK, 7, 7e-3, 0.0, True, "", 0.1, "upmem-hw")
    with Store(tmp_path / "mine.sqlite") as store:
        store.record_run(mine)
        report = import_table(store, exported[".parquet"][1])
        assert (report.added, report.kept) == (3, 1)
        assert store.find_run("va", "", "a" * 64, 4, 16, 1024, CFG) == mine


def test_a_file_that_is_not_such_an_export_is_one_error_and_adds_nothing(exported, tmp_path):
    with exported[".csv"][1].open(newline="") as fh:
        rows = list(csv.reader(fh))
    bad_status, bad_int, no_kernel_column = (tmp_path / n for n in ("status.csv", "int.csv", "columns.csv"))
    for path, content in ((bad_status, [rows[0], rows[1], [*rows[2][:6], "finished", *rows[2][7:]]]),
                          (bad_int, [rows[0], [*rows[1][:2], "four", *rows[1][3:]]]),
                          (no_kernel_column, [row[1:] for row in rows])):
        with path.open("w", newline="") as fh:
            csv.writer(fh).writerows(content)
    with Store(tmp_path / "target.sqlite") as store:
        with pytest.raises(StoreError, match=r"status.csv, line 3: status = 'finished' is not a status \(ok, "):
            import_table(store, bad_status)
        with pytest.raises(StoreError, match=r"int.csv, line 2: dpus = 'four' is not an integer"):
            import_table(store, bad_int)
        with pytest.raises(StoreError, match=r"columns.csv is not a compiles or runs export: its columns are elf_hash, "):
            import_table(store, no_kernel_column)
        with pytest.raises(StoreError, match="no file"):
            import_table(store, tmp_path / "missing.parquet")
        with pytest.raises(StoreError, match="use a .csv or .parquet file"):
            import_table(store, tmp_path / "source.sqlite")
        (tmp_path / "cut.parquet").write_bytes(exported[".parquet"][1].read_bytes()[:200])
        with pytest.raises(StoreError, match="cut.parquet: not a readable Parquet file"):
            import_table(store, tmp_path / "cut.parquet")
        assert store.runs() == [] and store.compiles() == []


def test_a_runs_export_from_before_link_hashes_imports_with_the_link_model_unknown(exported, tmp_path):
    old = tmp_path / "old-runs.csv"
    with open(exported[".csv"][1], newline="") as src, open(old, "w", newline="") as dst:
        rows = list(csv.DictReader(src))
        writer = csv.DictWriter(dst, [k for k in rows[0] if k != "link_hash"])
        writer.writeheader()
        writer.writerows({k: v for k, v in row.items() if k != "link_hash"} for row in rows)
    with Store(tmp_path / "copy.sqlite") as store:
        assert import_table(store, old).added == len(RUNS)
        assert store.runs() == [replace(r, link_hash="") for r in RUNS]
