"""The SQLite dataset store: records, upserts, views, stats, export, crashes, migration."""

from __future__ import annotations

import csv
import multiprocessing
import sqlite3
import subprocess
from dataclasses import replace

import pytest

from cnmtune.errors import SchemaMismatch
from cnmtune.store_schema import MIGRATIONS
from cnmtune.store import (
    SCHEMA_VERSION,
    ClaimOwner,
    CompileRecord,
    RunRecord,
    Status,
    Store,
    StoreError,
    defines_key,
)

CFG = "cfg0"


@pytest.fixture
def store(tmp_path):
    with Store(tmp_path / "data.db") as s:
        yield s


def _ok_compile(kernel, pipeline, elf, tasklets=1, defines=""):
    return CompileRecord(kernel, pipeline, defines, tasklets, elf, Status.OK, seconds=0.5,
                         iram_bytes=1024)


def _ok_run(elf, dpus, tasklets, size, seconds, cfg=CFG, kernel="va", defines=""):
    return RunRecord(kernel, elf, dpus, tasklets, size, cfg, Status.OK, cycles=int(seconds * 1e6),
                     kernel_seconds=seconds, transfer_seconds=0.01, verified=True, seconds=0.2,
                     device="sim", defines=defines)


def test_open_sets_wal_and_version(tmp_path):
    with Store(tmp_path / "a.db") as s:
        assert s.version == SCHEMA_VERSION
        assert s._conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert s._conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1


def test_pipeline_ids_idempotent_on_canonical_text(store):
    a = store.add_pipeline("O2")
    assert store.add_pipeline("-O2") == a
    b = store.add_pipeline("sroa,instcombine")
    assert store.add_pipeline(" sroa , instcombine ") == b
    assert store.add_pipeline("-sroa -instcombine") == b
    assert a != b


def test_compile_round_trip_and_upsert(store):
    rec = _ok_compile("va", "sroa,instcombine", "e1", tasklets=4, defines=defines_key({"N": 8}))
    store.record_compile(rec)
    assert store.find_compile("va", "sroa, instcombine", "N=8", 4) == rec
    assert store.find_compile("va", "sroa,instcombine", "N=8", 8) is None
    failed = CompileRecord("va", "sroa,instcombine", "N=8", 4, None, Status.IRAM_OVERFLOW,
                           "needs 5000 instructions, IRAM holds 4096", 0.3)
    store.record_compile(failed)
    store.record_compile(failed)
    assert store.find_compile("va", "sroa,instcombine", "N=8", 4) == failed
    assert len(store.compiles()) == 1
    assert not failed.ok and rec.ok


def test_compiles_for_elf(store):
    store.record_compile(_ok_compile("va", "O2", "same"))
    store.record_compile(_ok_compile("va", "O3", "same"))
    assert [c.pipeline for c in store.compiles_for_elf("same")] == ["O2", "O3"]


def test_run_round_trip_and_upsert(store):
    run = _ok_run("e1", 4, 16, 1024, 0.25)
    store.record_run(run)
    assert store.find_run("va", "", "e1", 4, 16, 1024, CFG) == run
    assert store.find_run("va", "", "e1", 4, 16, 1024, "other") is None
    bad = RunRecord("va", "e1", 4, 16, 1024, CFG, Status.FAULT, error="DMA out of MRAM bounds")
    store.record_run(bad)
    store.record_run(bad)
    assert store.find_run("va", "", "e1", 4, 16, 1024, CFG) == bad
    assert len(store.runs()) == 1
    assert run.ok and not bad.ok


def test_features_round_trip_and_upsert(store):
    assert store.features("e1", "s1") is None
    store.record_features("e1", "s1", {"insns": 10, "loads": 2.5})
    assert store.features("e1", "s1") == {"insns": 10.0, "loads": 2.5}
    assert list(store.features("e1", "s1")) == ["insns", "loads"]
    store.record_features("e1", "s1", {"insns": 11})
    assert store.features("e1", "s1") == {"insns": 11.0}
    assert store.features("e1", "s2") is None


def _populate(store):
    store.record_compile(_ok_compile("va", "O0", "base"))
    store.record_compile(_ok_compile("va", "O2", "fast", tasklets=16))
    store.record_compile(_ok_compile("va", "O3", "fast", tasklets=16))  # identical binary
    store.record_compile(CompileRecord("va", "Oz", "", 16, None, Status.COMPILE_ERROR, "bad"))
    store.record_compile(_ok_compile("gemv", "O2", "g2", tasklets=16))
    store.record_compile(_ok_compile("gemv", "O1", "g1", tasklets=16))
    store.record_run(_ok_run("base", 1, 1, 1024, 2.0))
    store.record_run(_ok_run("fast", 4, 16, 1024, 0.25))
    store.record_run(_ok_run("fast", 4, 16, 4096, 1.0))  # no baseline at this size
    store.record_run(_ok_run("g2", 4, 16, 1024, 0.5, kernel="gemv"))  # no gemv baseline at all
    store.record_run(RunRecord("gemv", "g1", 4, 16, 1024, CFG, Status.WRONG_RESULT,
                               kernel_seconds=0.1, error="mismatch at 3"))
    store.record_run(RunRecord("va", "fast", 8, 16, 1024, CFG, Status.TIMEOUT, error="budget"))
    store.record_features("fast", "s1", {"insns": 100, "dma": 3})
    store.record_features("base", "s1", {"insns": 300, "dma": 9})


def test_training_view_speedup_and_exclusion(store):
    _populate(store)
    rows = store.training_view()
    keys = {(r.kernel, r.pipeline, r.dpus, r.tasklets, r.size): r for r in rows}
    assert set(keys) == {
        ("va", "O0", 1, 1, 1024), ("va", "O2", 4, 16, 1024), ("va", "O3", 4, 16, 1024),
        ("va", "O2", 4, 16, 4096), ("va", "O3", 4, 16, 4096), ("gemv", "O2", 4, 16, 1024),
    }
    assert keys[("va", "O0", 1, 1, 1024)].speedup == pytest.approx(1.0)
    assert keys[("va", "O2", 4, 16, 1024)].speedup == pytest.approx(8.0)
    assert keys[("va", "O3", 4, 16, 1024)].speedup == pytest.approx(8.0)
    assert keys[("va", "O2", 4, 16, 4096)].speedup is None
    assert keys[("gemv", "O2", 4, 16, 1024)].speedup is None
    assert all(r.features is None for r in rows)


def test_training_view_with_features(store):
    _populate(store)
    rows = store.training_view("s1")
    assert {r.elf_hash for r in rows} == {"base", "fast"}
    assert all(r.features["insns"] in (100.0, 300.0) for r in rows)
    assert store.training_view("nope") == []


def test_stats(store):
    _populate(store)
    st = store.stats()
    assert (st.pipelines, st.compiles, st.runs, st.features) == (5, 6, 6, 2)
    assert st.compiles_per_kernel == {"gemv": 2, "va": 4}
    assert st.runs_per_kernel == {"gemv": 2, "va": 4}
    assert st.compile_status == {"compile_error": 1, "ok": 5}
    assert st.run_status == {"ok": 4, "timeout": 1, "wrong_result": 1}
    assert st.distinct_elfs == 4
    assert st.duplicate_binary_ratio == pytest.approx(1 - 4 / 5)


def test_stats_empty(store):
    st = store.stats()
    assert st.compiles == 0 and st.duplicate_binary_ratio == 0.0


def test_export_csv(store, tmp_path):
    _populate(store)
    out = store.export(tmp_path / "train.csv", schema_hash="s1")
    with open(out, newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == len(store.training_view("s1"))
    assert {"kernel", "pipeline", "speedup", "kernel_seconds", "f.insns", "f.dma"} <= set(rows[0])
    fast = next(r for r in rows if r["pipeline"] == "O2" and r["size"] == "1024")
    assert float(fast["speedup"]) == pytest.approx(8.0) and float(fast["f.insns"]) == 100.0
    store.export(tmp_path / "compiles.csv", table="compiles")
    with open(tmp_path / "compiles.csv", newline="") as fh:
        comp = list(csv.DictReader(fh))
    assert len(comp) == 6 and {r["status"] for r in comp} == {"ok", "compile_error"}
    store.export(tmp_path / "runs.csv", table="runs")
    assert len((tmp_path / "runs.csv").read_text().splitlines()) == 7
    assert not list(tmp_path.glob("*.tmp"))


def test_export_rejects_bad_names(store, tmp_path):
    with pytest.raises(StoreError, match=r"\.csv or \.parquet"):
        store.export(tmp_path / "x.json")
    with pytest.raises(StoreError, match="unknown table"):
        store.export(tmp_path / "x.csv", table="models")
    assert not list(tmp_path.glob("x.*"))


def test_export_parquet(store, tmp_path):
    import pyarrow.parquet as pq  # a dependency of cnmtune

    _populate(store)
    store.export(tmp_path / "t.parquet")
    table = pq.read_table(tmp_path / "t.parquet")
    assert table.num_rows == len(store.training_view())
    assert "speedup" in table.column_names


def test_export_parquet_without_pyarrow(store, tmp_path, monkeypatch):
    import builtins

    real_import = builtins.__import__

    def fake_import(name, *args, **kwargs):
        if name.startswith("pyarrow"):
            raise ImportError(f"No module named {name!r}")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", fake_import)
    with pytest.raises(StoreError, match="'pyarrow'"):
        store.export(tmp_path / "t.parquet")
    assert not list(tmp_path.glob("t.*"))


def test_crash_in_batch_leaves_no_rows(store):
    store.record_compile(_ok_compile("va", "O0", "keep"))
    with pytest.raises(RuntimeError, match="crash"), store.batch():
        store.record_compile(_ok_compile("va", "O2", "lost"))
        store.record_run(_ok_run("lost", 1, 1, 8, 1.0))
        store.record_features("lost", "s", {"a": 1})
        raise RuntimeError("crash")
    assert [c.elf_hash for c in store.compiles()] == ["keep"]
    assert store.runs() == [] and store.features("lost", "s") is None
    store.record_run(_ok_run("keep", 1, 1, 8, 1.0))  # the store is usable afterwards
    assert len(store.runs()) == 1


def test_crash_is_invisible_to_another_connection(tmp_path):
    path = tmp_path / "c.db"
    with Store(path) as a, Store(path) as b:
        with pytest.raises(KeyboardInterrupt), a.batch():
            a.record_run(_ok_run("x", 1, 1, 8, 1.0))
            assert b.find_run("va", "", "x", 1, 1, 8, CFG) is None  # uncommitted
            raise KeyboardInterrupt
        assert b.runs() == []


def _die_mid_batch(path: str) -> None:
    import os

    with Store(path) as s, s.batch():
        for i in range(50):
            s.record_run(_ok_run(f"dead-{i}", 1, 1, i, 1.0))
        os._exit(3)  # the process dies without committing or rolling back


def test_killed_process_leaves_no_rows(tmp_path):
    path = str(tmp_path / "killed.db")
    Store(path).close()
    proc = multiprocessing.get_context("fork").Process(target=_die_mid_batch, args=(path,))
    proc.start()
    proc.join(timeout=60)
    assert proc.exitcode == 3
    with Store(path) as s:
        assert s.runs() == []
        s.record_run(_ok_run("alive", 1, 1, 1, 1.0))  # the lock was released
        assert len(s.runs()) == 1


def _writer(path: str, worker: int, n: int) -> None:
    with Store(path) as s:
        for i in range(n):
            s.record_run(_ok_run(f"w{worker}-{i}", 1, 1, i, 0.001 * (i + 1)))


def test_two_processes_write_concurrently(tmp_path):
    path = str(tmp_path / "conc.db")
    ctx = multiprocessing.get_context("fork")
    procs = [ctx.Process(target=_writer, args=(path, w, 200)) for w in range(2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=120)
    assert [p.exitcode for p in procs] == [0, 0]
    with Store(path) as s:
        assert s.stats().runs == 400
        assert len({r.elf_hash for r in s.runs()}) == 400


V1_SCHEMA = """
CREATE TABLE pipelines (id INTEGER PRIMARY KEY, text TEXT NOT NULL UNIQUE);
CREATE TABLE compiles (id INTEGER PRIMARY KEY, kernel TEXT NOT NULL,
  pipeline_id INTEGER NOT NULL REFERENCES pipelines(id), defines TEXT NOT NULL,
  tasklets INTEGER NOT NULL, elf_hash TEXT, status TEXT NOT NULL,
  error TEXT NOT NULL DEFAULT '', seconds REAL NOT NULL DEFAULT 0,
  UNIQUE (kernel, pipeline_id, defines, tasklets));
CREATE TABLE features (elf_hash TEXT NOT NULL, schema_hash TEXT NOT NULL,
  data TEXT NOT NULL, PRIMARY KEY (elf_hash, schema_hash));
CREATE TABLE runs (id INTEGER PRIMARY KEY, elf_hash TEXT NOT NULL,
  dpus INTEGER NOT NULL, tasklets INTEGER NOT NULL, size INTEGER NOT NULL,
  config_hash TEXT NOT NULL, cycles INTEGER, kernel_seconds REAL,
  transfer_seconds REAL, verified INTEGER NOT NULL DEFAULT 0, status TEXT NOT NULL,
  error TEXT NOT NULL DEFAULT '', seconds REAL NOT NULL DEFAULT 0,
  UNIQUE (elf_hash, dpus, tasklets, size, config_hash));
INSERT INTO pipelines (id, text) VALUES (1, 'O2');
INSERT INTO compiles (kernel, pipeline_id, defines, tasklets, elf_hash, status, seconds)
  VALUES ('va', 1, '', 16, 'old', 'ok', 1.5);
INSERT INTO runs (elf_hash, dpus, tasklets, size, config_hash, cycles, kernel_seconds,
  transfer_seconds, verified, status) VALUES ('old', 4, 16, 64, 'cfg0', 1000, 0.5, 0.1, 1, 'ok');
PRAGMA user_version = 1;
"""


def _dead_pid() -> int:
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def test_claims_share_units_between_owners(store):
    a = ClaimOwner.this_process()
    b = ClaimOwner(a.host, a.pid, a.started + 1)  # two writers of one process differ by start
    assert store.claim(["u1", "u2"], a, 60) == ["u1", "u2"]
    assert store.claim(["u1", "u2", "u3"], b, 60) == ["u3"]
    assert store.claim(["u1"], a, 60) == ["u1"]  # an owner re-claims its own unit
    store.release(a, ["u1", "u3"])  # u3 is b's: it stays b's
    assert store.claim(["u1", "u3"], b, 60) == ["u1", "u3"]
    assert store.claim(["u1", "u2", "u3"], a, 60) == ["u2"]


def test_stale_claims_are_taken_over_live_ones_kept(store):
    me = ClaimOwner.this_process()
    dead_here = ClaimOwner(me.host, _dead_pid(), 1.0)
    elsewhere = ClaimOwner("another-host", 1, 2.0)  # its pid means nothing here
    assert store.claim(["dead", "expired", "live"], dead_here, 60) == ["dead", "expired", "live"]
    store.release(dead_here, ["expired", "live"])
    store.claim(["expired"], elsewhere, -1)  # a lease already over
    store.claim(["live"], elsewhere, 60)
    assert store.claim(["dead", "expired", "live"], me, 60) == ["dead", "expired"]
    store.renew(elsewhere, -1)  # its heartbeat stopped long ago
    assert store.claim(["live"], me, 60) == ["live"]
    owners = store._conn.execute("SELECT DISTINCT host, pid, started FROM claims").fetchall()
    assert owners == [(me.host, me.pid, me.started)]


def _claimer(path: str, units: list[str], out) -> None:
    owner = ClaimOwner.this_process()
    with Store(path) as s:
        out.put(sum((s.claim([u], owner, 60) for u in units), []))


def test_two_processes_claim_each_unit_once(tmp_path):
    path = str(tmp_path / "claims.db")
    Store(path).close()
    units = [f"u{i}" for i in range(300)]
    ctx = multiprocessing.get_context("fork")
    out = ctx.Queue()
    procs = [ctx.Process(target=_claimer, args=(path, units, out)) for _ in range(2)]
    for proc in procs:
        proc.start()
    got = [out.get(timeout=60), out.get(timeout=60)]
    for proc in procs:
        proc.join(timeout=60)
    assert sorted(got[0] + got[1]) == sorted(units)


def test_migration_from_version_1(tmp_path):
    path = tmp_path / "old.db"
    conn = sqlite3.connect(path)
    conn.executescript(V1_SCHEMA)
    conn.close()
    with Store(path) as s:
        assert s.version == SCHEMA_VERSION
        old = s.find_compile("va", "O2", "", 16)
        assert old == CompileRecord("va", "O2", "", 16, "old", Status.OK, "", 1.5, None)
        run = s.find_run("va", "", "old", 4, 16, 64, "cfg0")
        assert run.device == "" and run.verified and run.kernel_seconds == 0.5
        assert run.link_hash == ""  # which link model priced its transfer time was not recorded
        s.record_run(replace(run, transfer_seconds=0.25, link_hash="link1"))  # a run again, relinked
        assert s.find_run("va", "", "old", 4, 16, 64, "cfg0") == replace(run, transfer_seconds=0.25,
                                                                         link_hash="link1")
        s.record_compile(_ok_compile("va", "O3", "new", tasklets=16))  # new columns work
        assert s.find_compile("va", "O3", "", 16).iram_bytes == 1024
        assert s.claim(["unit"], ClaimOwner.this_process(), 60) == ["unit"]  # a claims table
    with Store(path) as s:  # reopening does not migrate again
        assert s.version == SCHEMA_VERSION and len(s.compiles()) == 2


def test_a_run_is_of_a_kernel_and_its_defines_not_of_a_binary_alone(store):
    """gemv and mlp build the same binary; their host programs, and so their times, differ."""
    store.record_compile(_ok_compile("gemv", "O2", "shared", tasklets=16, defines="BL=8"))
    store.record_compile(_ok_compile("mlp", "O2", "shared", tasklets=16, defines="BL=8"))
    store.record_run(_ok_run("shared", 4, 16, 1024, 0.5, kernel="gemv", defines="BL=8"))
    assert store.find_run("mlp", "BL=8", "shared", 4, 16, 1024, CFG) is None
    store.record_run(_ok_run("shared", 4, 16, 1024, 1.5, kernel="mlp", defines="BL=8"))
    store.record_run(_ok_run("shared", 4, 16, 1024, 9.0, kernel="mlp", defines="BL=8", cfg="other"))
    assert store.find_run("gemv", "BL=8", "shared", 4, 16, 1024, CFG).kernel_seconds == 0.5
    assert store.find_run("mlp", "BL=8", "shared", 4, 16, 1024, CFG).kernel_seconds == 1.5
    assert store.find_run("mlp", "BL=10", "shared", 4, 16, 1024, CFG) is None
    with_params = RunRecord("mlp", "shared", 4, 16, 1024, CFG, Status.OK, kernel_seconds=3.0, verified=True,
                            defines="BL=8", params="layers=5")
    store.record_run(with_params)
    assert store.find_run("mlp", "BL=8", "shared", 4, 16, 1024, CFG, "layers=5") == with_params
    assert {(r.kernel, r.config_hash, r.kernel_seconds) for r in store.training_view()} == \
        {("gemv", CFG, 0.5), ("mlp", CFG, 1.5), ("mlp", "other", 9.0)}  # not the run with parameters
    assert set(store.run_keys(CFG)) == {("gemv", "BL=8", "shared", 4, 16, 1024), ("mlp", "BL=8", "shared", 4, 16, 1024)}
    assert store.stats().runs_per_kernel == {"gemv": 1, "mlp": 3}


def test_migration_to_version_5_keys_runs_by_kernel_and_drops_those_of_shared_binaries(tmp_path):
    path = tmp_path / "v4.db"
    conn = sqlite3.connect(path)
    conn.executescript(V1_SCHEMA)
    conn.close()
    conn = sqlite3.connect(path)
    for statement in (s for migration in MIGRATIONS[1:4] for s in migration):
        conn.execute(statement)
    conn.executescript("""
    INSERT INTO compiles (kernel, pipeline_id, defines, tasklets, elf_hash, status) VALUES
      ('gemv', 1, 'BL=8', 16, 'shared', 'ok'), ('mlp', 1, 'BL=8', 16, 'shared', 'ok'),
      ('hst-l', 1, 'BL=8', 16, 'twice', 'ok'), ('hst-l', 1, 'BL=9', 16, 'twice', 'ok');
    INSERT INTO runs (elf_hash, dpus, tasklets, size, config_hash, kernel_seconds, verified, status, device) VALUES
      ('shared', 4, 16, 64, 'cfg0', 0.5, 1, 'ok', 'sim'), ('twice', 4, 16, 64, 'cfg0', 0.5, 1, 'ok', 'sim'),
      ('nobody', 4, 16, 64, 'cfg0', 0.5, 1, 'ok', 'sim');
    PRAGMA user_version = 4;
    """)
    conn.close()
    with Store(path) as s:
        assert s.version == SCHEMA_VERSION
        assert [(r.kernel, r.defines, r.elf_hash, r.device) for r in s.runs()] == [("va", "", "old", "")]
        assert s.find_run("va", "", "old", 4, 16, 64, "cfg0").kernel_seconds == 0.5


def test_newer_schema_is_refused(tmp_path):
    path = tmp_path / "new.db"
    conn = sqlite3.connect(path)
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    conn.close()
    with pytest.raises(SchemaMismatch, match="schema version"):
        Store(path)


def test_not_a_database_is_a_clear_error(tmp_path):
    path = tmp_path / "junk.db"
    path.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(StoreError, match="cannot open store"):
        Store(path)
