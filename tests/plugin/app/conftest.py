"""A fresh copy of an example application per test (its Makefile builds into the copy)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


@pytest.fixture
def example(tmp_path):
    """example(name) -> the directory of a copy of examples/<name> without build outputs."""

    def copy(name: str) -> Path:
        root = tmp_path / name
        shutil.copytree(EXAMPLES / name, root, ignore=shutil.ignore_patterns("bin"))
        return root

    return copy
