"""Optional extras: tuning with the shipped model needs none of them; a command that needs a
missing one says which extra to install, in one line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from cnmtune.extras import EXTRA_OF

HEAVY = tuple(EXTRA_OF)  # torch, sklearn, dask, distributed, matplotlib, pyarrow, ...


def cnmtune_without(missing: tuple[str, ...], *args: str, tmp_path: Path) -> subprocess.CompletedProcess:
    """Run `cnmtune ARGS` (and every worker process it spawns) as if `missing` were not installed."""
    site = tmp_path / "site"
    site.mkdir(exist_ok=True)
    # sys.modules[name] = None makes `import name` raise ModuleNotFoundError, as when it is absent
    (site / "sitecustomize.py").write_text(
        "import sys\n" + "".join(f"sys.modules[{m!r}] = None\n" for m in missing))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")]),
           "COLUMNS": "200"}
    return subprocess.run([sys.executable, "-m", "cnmtune", *args], capture_output=True, text=True,
                          env=env, timeout=300)


def test_training_without_torch_names_the_extra(tmp_path):
    result = cnmtune_without(("torch",), "model", "train", "--db", str(tmp_path / "none.sqlite"),
                             "--output", str(tmp_path / "m.onnx"), tmp_path=tmp_path)
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 1, result.stderr
    assert lines == ["error: this needs torch, which comes with the 'train' extra: "
                     "pip install 'cnmtune[train]'"]


def test_tuning_with_the_shipped_model_needs_no_extra(tmp_path):
    # two rounds: the second one would fine-tune the model
    result = cnmtune_without(HEAVY, "tune", "va", "--size", "small", "--pipelines", "4", "--top-k", "2",
                             "--dpus", "4", "--tasklets", "4,16", "--rounds", "2", "--workers", "1", "--no-save",
                             "--json", tmp_path=tmp_path)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["chosen"]["status"] == "verified" and report["candidates"] >= 2
    # the search goes on with the model as shipped: fine-tuning it needs torch, and the report says so
    assert "needs torch" in report["finetune"]["skipped"]


@pytest.mark.parametrize("module, extra", sorted(EXTRA_OF.items()))
def test_every_optional_module_names_an_extra_of_the_project(module, extra):
    from importlib.metadata import metadata

    extras = metadata("cnmtune").get_all("Provides-Extra")
    assert extra in extras
