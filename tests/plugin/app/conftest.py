"""A fresh copy of an example application, or of one of PrIM's, per test (its Makefile builds
into the copy). PrIM's applications are read from ../shared/prim-benchmarks beside the repository
(other people's code, test input only); tests that use them skip without it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cnmtune.plugin.cli import app as cli

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
PRIM = Path(__file__).resolve().parents[3].parent / "shared" / "prim-benchmarks"


@pytest.fixture
def example(tmp_path):
    """example(name) -> the directory of a copy of examples/<name> without build outputs, next to a
    copy of examples/common (its Makefile and sources use ../common)."""

    def copy(name: str) -> Path:
        root = tmp_path / "examples" / name
        shutil.copytree(EXAMPLES / name, root, ignore=shutil.ignore_patterns("bin"))
        if not (common := tmp_path / "examples" / "common").exists():
            shutil.copytree(EXAMPLES / "common", common)
        return root

    return copy


@pytest.fixture
def prim_app(tmp_path):
    """prim_app(name) -> the directory of a copy of PrIM's application `name` without build outputs."""

    def copy(name: str) -> Path:
        if not (PRIM / name / "Makefile").is_file():
            pytest.skip(f"PrIM's {name} is not at {PRIM}/{name} (a checkout of github.com/CMU-SAFARI/"
                        "prim-benchmarks beside the repository)")
        root = tmp_path / "prim" / name
        shutil.copytree(PRIM / name, root, ignore=shutil.ignore_patterns("bin"))
        return root

    return copy


@pytest.fixture
def run_app():
    """run_app(root, *options, args=()) -> the JSON record of `cnmtune app run ROOT OPTIONS --json -- ARGS`,
    asserting that cnmtune and the host program exited 0."""

    def run(root: Path, *options: str, args: tuple[str, ...] = ()) -> dict:
        done = CliRunner().invoke(cli, ["app", "run", str(root), *options, "--json", "--", *args],
                                  env={"COLUMNS": "200"})
        assert done.exit_code == 0, done.output
        record = json.loads(done.stdout)
        assert record["returncode"] == 0, record["stdout"] + record["stderr"]
        return record

    return run
