"""`cnmtune offload` read at 80 columns: tables that wrap instead of cutting cells; -q drops notes."""

from __future__ import annotations

import re

from tests.conftest import CliResult, run_cnmtune


def cnmtune(*args: str) -> CliResult:
    return run_cnmtune(*args, columns=80)


def test_offload_tables_fit_80_columns(tmp_path):
    header = tmp_path / "offload.h"
    args = ("offload", "va,red", "--size", "small", "--sizes", "small,1048576", "--dpus", "4,64", "--tasklets", "16",
            "--repeats", "1", "--bisect", "1", "--emit-header", str(header))
    shown, quiet = cnmtune(*args), cnmtune("-q", *args)
    assert shown.returncode == quiet.returncode == 0, shown.stderr
    assert "…" not in shown.stdout
    lines = shown.stdout.splitlines()
    # the note of the header written is one line (its path is copied whole); everything else fits 80 columns
    assert lines[-1] == f"wrote {header}"
    assert max(len(line) for line in lines[:-1]) <= 80
    for kernel in ("va", "red"):  # each names its one CPU baseline
        assert re.search(rf"{kernel}: CPU \((native C|numpy reference)\) vs CNM across sizes", shown.stdout)
    assert "offload decisions" in shown.stdout
    # every size of the sweep in full (a bisection may add one between), the requested one marked, each
    # with its choice
    sizes = [row.split("│")[1].strip() for row in lines if row.startswith("│ ") and row.count("│") == 9]
    sizes = [size for size in sizes if size[:1].isdigit()]
    assert sizes.count("4,096") == sizes.count("1,048,576") == 2 and sizes[-1] == "1,048,576"
    assert shown.stdout.count("--size") == 2 and shown.stdout.count("-> C") == len(sizes)
    # -q drops the note, not the results
    assert "wrote" not in quiet.stdout and "offload decisions" in quiet.stdout
