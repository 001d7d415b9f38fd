"""The kernels of benchmarks/unseen (issue 40's ablation): each verifies at its `small` preset on
1 and 4 DPUs with two tasklet counts and at an odd shape (real compile, real simulator), and
none of them is in a suite that dataset generation or training reads."""

from __future__ import annotations

from pathlib import Path

import pytest

from cnmtune.runtime import Kernel
from cnmtune.runtime.execute import run_binary
from cnmtune.runtime.registry import SUITES, expand_kernels, find_kernel, kernel_dirs
from cnmtune.runtime.toolchain import Variant

UNSEEN = Path(__file__).resolve().parents[2] / "benchmarks" / "unseen"
NAMES = ("stencil", "prefix-max", "bitonic", "gather")


@pytest.fixture(scope="module")
def kernels() -> dict[str, Kernel]:
    return {name: Kernel.load(UNSEEN / name) for name in NAMES}


def _run(toolchain, kernel, tasklets, dpus, size, defines=None, params=None):
    binary = toolchain.compile(Variant.of(kernel, "O2", tasklets, defines))
    return run_binary(binary, dpus, size, params=params)


@pytest.mark.parametrize("dpus", [1, 4])
@pytest.mark.parametrize("tasklets", [3, 16])
@pytest.mark.parametrize("name", NAMES)
def test_small_preset_verifies(toolchain, kernels, name, tasklets, dpus):
    kernel = kernels[name]
    result = _run(toolchain, kernel, tasklets, dpus, kernel.workload.preset("small"))
    assert result.verified and result.launches == (2 if name == "prefix-max" else 1)


@pytest.mark.parametrize("name", NAMES)
def test_odd_shape_verifies(toolchain, kernels, name):
    """A size that fills no block, DPU or run evenly, with the smallest DMA block."""
    assert _run(toolchain, kernels[name], 5, 3, 1001, {"BL": 3}).verified


def test_gather_small_table_verifies(toolchain, kernels):
    """An odd table size: its last entry is the low half of a zero-padded word."""
    assert _run(toolchain, kernels["gather"], 4, 2, 999, params={"table": 7}).verified


def test_no_suite_holds_them(kernels, monkeypatch):
    monkeypatch.delenv("CNMTUNE_KERNEL_PATH", raising=False)
    suite_names = {name.lower() for name in expand_kernels(list(SUITES))}
    assert suite_names and not suite_names & {kernels[name].name for name in NAMES}
    assert not any(directory.parent == UNSEEN for directory in kernel_dirs())
    assert all(find_kernel(UNSEEN / name).name == name for name in NAMES)  # found by path only
