"""Top-level options and the kernel list, through the command line's entry point (`run_cnmtune`, in
the test's process; `python -m cnmtune` itself once)."""

from __future__ import annotations

import importlib.metadata
import io
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import run_cnmtune as cnmtune


def test_version_prints_the_package_version():
    result = subprocess.run([sys.executable, "-m", "cnmtune", "--version"], capture_output=True, text=True,
                            timeout=300)
    assert result.returncode == 0, result.stderr
    assert result.stdout == f"cnmtune {importlib.metadata.version('cnmtune')}\n"


@pytest.fixture(scope="module")
def tiny_store(tmp_path_factory) -> Path:
    """`dataset generate` on a one-point grid: va, O0..O3 at 1 DPU x 1 tasklet, small size."""
    db = tmp_path_factory.mktemp("basics") / "tiny.sqlite"
    result = cnmtune("dataset", "generate", "-k", "va", "--db", str(db), "--pipelines", "4", "--dpus", "1",
                     "--tasklets", "1", "--sizes", "small", "-j", "1")
    assert result.returncode == 0, result.stderr
    return db


def test_quiet_drops_progress_bars_and_notes_but_keeps_results(tiny_store, tmp_path):
    args = ("dataset", "generate", "-k", "va", "--pipelines", "4", "--dpus", "1", "--tasklets", "1", "--sizes",
            "small", "-j", "1")
    quiet = cnmtune("-q", *args, "--db", str(tmp_path / "quiet.sqlite"))  # work whose progress would print
    assert quiet.returncode == 0 and quiet.stderr == "", quiet.stderr
    assert "dataset generation on" in quiet.stdout and "compiles (new / planned)" in quiet.stdout
    loud_csv, quiet_csv = tmp_path / "loud.csv", tmp_path / "quiet.csv"
    loud = cnmtune("dataset", "export", str(tiny_store), str(loud_csv), "--table", "runs")
    assert loud.returncode == 0 and loud.stdout.strip() == f"wrote {loud_csv}", loud.stderr
    quiet = cnmtune("-q", "dataset", "export", str(tiny_store), str(quiet_csv), "--table", "runs")
    assert quiet.returncode == 0 and quiet.stdout == "", quiet.stderr
    assert quiet_csv.read_text() == loud_csv.read_text() and loud_csv.read_text().count("\n") > 1


def test_kernels_fit_80_columns_with_summaries():
    result = cnmtune("kernels", columns=80)
    assert result.returncode == 0, result.stderr
    assert "…" not in result.stdout
    assert max(len(line) for line in result.stdout.splitlines()) <= 80
    assert _column(result.stdout, "va", 1) == "VA: element-wise vector addition (PrIM), cnmtune's own implementation."
    records = {r["name"]: r for r in json.loads(cnmtune("kernels", "--json").stdout)}
    assert records["va"]["summary"] == "VA: element-wise vector addition (PrIM), cnmtune's own implementation."
    assert all(record["summary"] for record in records.values())
    # every summary wraps between its words: none splits one (`arithmetic-throughp` / `ut`)
    assert {name: _column(result.stdout, name, 1) for name in records} == {n: r["summary"] for n, r in records.items()}


def _column(table: str, row: str, column: int) -> str:
    """The text of one cell of a rich table with lines between rows: the cells of the row whose
    first cell starts with `row`, joined over the lines it wraps to."""
    rows, current = [], []
    for line in table.splitlines():
        if line.startswith("│"):
            current.append([cell.strip() for cell in line.split("│")[1:-1]])
        elif current:
            rows.append(current)
            current = []
    found = next(lines for lines in rows if lines[0][0] == row)
    return " ".join(cells[column] for cells in found if cells[column])


def test_progress_lines_come_every_interval_and_when_a_phase_ends():
    from rich.console import Console

    from cnmtune.plugin.cli.output import ProgressLines

    now = [0.0]
    log, terminal = io.StringIO(), io.StringIO()
    to_log = ProgressLines(Console(file=log, force_terminal=False, width=200), interval=60, clock=lambda: now[0])
    to_terminal = ProgressLines(Console(file=terminal, force_terminal=True, width=200), interval=60)
    always = io.StringIO()  # a caller without bars asks for the lines on a terminal too
    to_always = ProgressLines(Console(file=always, force_terminal=True, width=200), interval=60,
                              clock=lambda: now[0], always=True)
    for second, done in ((0, 0), (30, 10), (61, 20), (90, 30), (125, 40), (126, 50), (127, 50)):
        now[0] = second
        to_log("simulate", done, 50, f"seen {done}" if done % 20 else "")
        to_terminal("simulate", done, 50)
        to_always("simulate", done, 50)
    assert log.getvalue().splitlines() == [
        "simulate: 20 / 50 (40 %), 0.3/s, elapsed 0:01:01, eta 0:01:31",
        "simulate: 40 / 50 (80 %), 0.3/s, elapsed 0:02:05, eta 0:00:31",
        "simulate: 50 / 50 (100 %), 0.4/s, elapsed 0:02:06, seen 50",
    ]
    assert terminal.getvalue() == ""  # the bars show it there
    assert len(always.getvalue().splitlines()) == 3 and "simulate: 50 / 50 (100 %)" in always.getvalue()


def test_on_a_terminal_the_bar_is_the_phase_under_way_never_a_finished_one():
    from rich.console import Console
    from rich.progress import Progress

    from cnmtune.plugin.cli.output import PhaseBars, ProgressLines

    terminal = Console(file=io.StringIO(), force_terminal=True, width=100)
    with Progress(console=terminal, transient=True) as bar:
        progress = PhaseBars(bar, ProgressLines(terminal))
        progress("compile", 16, 16)
        progress("round 2: fine-tune", 0, None)  # how long it takes is not known: a pulsing bar
        assert [(task.description, task.total) for task in bar.tasks] == [("round 2: fine-tune", None)]
        progress("round 2: fine-tune", 3, 3)
        progress("round 2: run", 1, 4)
        assert [(task.description, task.completed, task.total) for task in bar.tasks] == [("round 2: run", 1, 4)]


def test_a_generation_into_a_log_file_prints_progress_lines(tmp_path):
    result = cnmtune("dataset", "generate", "-k", "va", "--db", str(tmp_path / "log.sqlite"), "--pipelines", "2",
                     "--dpus", "1", "--tasklets", "1", "--sizes", "small", "-j", "1")
    assert result.returncode == 0, result.stderr
    assert "compile: 2 / 2 (100 %)" in result.stderr
    assert re.search(r"^simulate: (\d) / \1 \(100 %\)", result.stderr, re.M)
    lines = [line for line in result.stderr.splitlines() if line.startswith(("compile", "simulate"))]
    assert all(line.startswith(("compile: ", "simulate: ")) for line in lines), result.stderr  # no bars at the end
    assert [line.split(",")[0] for line in lines].count("compile: 2 / 2 (100 %)") == 1
