"""A fresh copy of an example application per test (its Makefile builds into the copy)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


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
