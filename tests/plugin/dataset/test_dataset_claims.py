"""Generators sharing one store: claims split the work, a dead generator's claims are taken over."""

from __future__ import annotations

import json
import socket
import sqlite3
import subprocess
import sys
import time

from cnmtune.plugin.dataset.generate import DatasetSpec, compile_unit, generate
from cnmtune.runtime.executor import InlineExecutor
from cnmtune.runtime.registry import find_kernel
from cnmtune.store import Store, defines_key

GRID = dict(kernels=("va",), dpus=(1, 2), tasklets=(1, 2), sizes=("small",))

# One generator in its own process: says it is ready, then waits for the start file so that both
# begin together; a 1 s lease, so the heartbeat must renew it for the claims to hold.
GENERATOR = """
import json, os, sys, time
from cnmtune.plugin.dataset.generate import DatasetSpec, generate
from cnmtune.runtime.executor import InlineExecutor
from cnmtune.store import Store
db, go, pipelines = sys.argv[1], sys.argv[2], int(sys.argv[3])
spec = DatasetSpec(kernels=("va",), pipelines=pipelines, dpus=(1, 2), tasklets=(1, 2), sizes=("small",))
print("ready", flush=True)
while not os.path.exists(go):
    time.sleep(0.005)
with Store(db) as store:
    report = generate(spec, store, InlineExecutor(), lease=1.0)
print(json.dumps(vars(report)))
"""


def rows(db) -> tuple[list, list, list]:
    """Compile keys, run keys and claims of a store, as rows."""
    with sqlite3.connect(db) as conn:
        return tuple(conn.execute(sql).fetchall() for sql in (
            "SELECT kernel, pipeline_id, defines, tasklets FROM compiles",
            "SELECT elf_hash, dpus, tasklets, size, config_hash FROM runs",
            "SELECT unit, host, pid, started FROM claims"))


def test_two_generators_share_the_work(tmp_path):
    db, go = tmp_path / "shared.sqlite", tmp_path / "go"
    Store(db).close()
    procs = [subprocess.Popen([sys.executable, "-c", GENERATOR, str(db), str(go), "8"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(2)]
    assert [proc.stdout.readline() for proc in procs] == ["ready\n"] * 2
    go.touch()
    reports = []
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        reports.append(json.loads(out))

    compiles, runs, claims = rows(db)
    assert len(compiles) == len(set(compiles)) == 8 * 2 and claims == []
    assert len(runs) == len(set(runs)) > 0
    with Store(db) as store:
        binaries = {(c.elf_hash, c.tasklets) for c in store.compiles()}
        assert len(runs) == sum({1: 1, 2: 2}[t] for _, t in binaries)  # every run, once
        assert len(store.training_view()) == 8 * 3
    a, b = reports
    assert a["compiles_done"] + b["compiles_done"] == len(compiles)
    assert a["runs_done"] + b["runs_done"] == len(runs)
    for mine in reports:
        done = mine["compiles_done"] + mine["runs_done"]
        assert 0 < done < len(compiles) + len(runs) and mine["left_to_others"] > 0
        assert not mine["task_failures"]


def test_claims_of_a_dead_generator_are_taken_over_live_ones_left(tmp_path):
    db = tmp_path / "stale.sqlite"
    spec = DatasetSpec(pipelines=4, **GRID)
    defines = defines_key(find_kernel("va").workload.resolve_defines())
    dead = subprocess.Popen(["true"])
    dead.wait()
    dying = subprocess.Popen(["sleep", "60"])  # alive at the start, killed during the generation
    here, past, future = socket.gethostname(), time.time() - 10, time.time() + 3600
    with Store(db) as store, store.batch():  # written by hand, as their owners left them
        store._conn.executemany("INSERT INTO claims VALUES (?, ?, ?, ?, ?)", [
            (compile_unit("va", "O0", defines, 1), here, dead.pid, past - 60, past),
            (compile_unit("va", "O1", defines, 1), here, dying.pid, past, future),
            (compile_unit("va", "O2", defines, 2), "another-host", 4242, past, future)])

    def kill_dying(*_):
        dying.kill()
        dying.wait()

    with Store(db) as store:
        report = generate(spec, store, InlineExecutor(), progress=kill_dying)
    compiles, runs, claims = rows(db)
    assert report.left_to_others == 1 and report.compiles_done == len(compiles) == 4 * 2 - 1
    assert [json.loads(unit)[2:] for unit, *_ in claims] == [["O2", defines, 2]]  # still held

    with sqlite3.connect(db) as conn:  # the other host's generator stopped renewing
        conn.execute("UPDATE claims SET expires = ?", (past,))
    with Store(db) as store:
        report = generate(spec, store, InlineExecutor())
    compiles, _, claims = rows(db)
    assert (report.left_to_others, report.compiles_done, report.task_failures) == (0, 1, [])
    assert len(compiles) == 4 * 2 and claims == []
    with Store(db) as store:
        assert len(store.training_view()) == 4 * 3
