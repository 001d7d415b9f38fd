"""Group B PrIM kernels (mlp, nw, hst-s, hst-l, trns): end-to-end runs on the simulator.

Every kernel is compiled at O0 and O2 for 1, 2 and 16 tasklets and run on 1 and 4 DPUs at its
`small` preset; run_binary verifies the outputs against the workload's numpy reference. A
combination the workload itself refuses (KernelError from its constructor, e.g. a tasklet
count its WRAM budget cannot hold) is skipped with that message.
"""

from __future__ import annotations

import functools
from pathlib import Path

import pytest

from cnmtune.errors import KernelError
from cnmtune.runtime import Kernel
from cnmtune.runtime.execute import run_binary
from cnmtune.runtime.sim.device import SimDevice
from cnmtune.runtime.toolchain import Variant

PRIM = Path(__file__).resolve().parents[2] / "benchmarks" / "prim"
NAMES = ("mlp", "nw", "hst-s", "hst-l", "trns")


@functools.cache
def _kernel(name: str) -> Kernel:
    return Kernel.load(PRIM / name)


def _refused(kernel: Kernel, dpus: int, tasklets: int, defines: dict | None = None) -> str | None:
    """The workload's own KernelError for this combination, if it refuses it."""
    try:
        kernel.workload(kernel.workload.preset("small"), dpus, tasklets, defines)
    except KernelError as exc:
        return str(exc)
    return None


@pytest.mark.parametrize("dpus", (1, 4))
@pytest.mark.parametrize("tasklets", (1, 2, 16))
@pytest.mark.parametrize("pipeline", ("O0", "O2"))
@pytest.mark.parametrize("name", NAMES)
def test_small_run_verifies(toolchain, name, pipeline, tasklets, dpus):
    kernel = _kernel(name)
    reason = _refused(kernel, dpus, tasklets)
    if reason is not None:
        pytest.skip(reason)
    binary = toolchain.compile(Variant.of(kernel, pipeline, tasklets))
    result = run_binary(binary, dpus, kernel.workload.preset("small"))
    assert result.verified
    assert result.launches >= 1


def _run_with(toolchain, name, pipeline, tasklets, dpus, size, defines, **params):
    """Run one variant with non-default defines and workload keywords; verify it."""
    kernel = _kernel(name)
    binary = toolchain.compile(Variant.of(kernel, pipeline, tasklets, defines))
    workload = kernel.workload(size, dpus, tasklets, dict(binary.variant.defines), 0, **params)
    device = SimDevice(dpus)
    device.load(binary.elf_path)
    inputs = workload.inputs()
    workload.verify(workload.execute(device, inputs), workload.reference(inputs))
    return device


@pytest.mark.parametrize("name, tasklets, dpus, size, defines, params", [
    ("mlp", 3, 3, 151, {"BL": 5}, {"n_cols": 150}),  # odd row counts, several blocks per row
    ("nw", 13, 3, 96, {"BL": 16, "BL_IN": 4}, {"penalty": 3}),  # several blocks per DPU
    ("nw", 5, 2, 64, {"BL": 16, "BL_IN": 4}, {"random_sequences": 1}),  # BLOSUM62 scores of random sequences
    ("hst-s", 5, 3, 3001, {"BL": 5}, {"bins": 64}),  # odd pixel counts per DPU
    ("hst-l", 8, 2, 777, {"BL": 6, "NR_HISTO": 4}, {"bins": 128}),  # four shared histograms
    ("trns", 5, 2, 3, {}, {"m": 3, "n": 5, "strips": 3}),  # two rounds, one DPU idle in the last
])
def test_non_default_configuration_verifies(toolchain, name, tasklets, dpus, size, defines, params):
    device = _run_with(toolchain, name, "O2", tasklets, dpus, size, defines, **params)
    assert device.times.launches >= 1


def test_mlp_inputs_are_prims():
    """PrIM's weights and input (non-negative, mostly zero); at 151 x 150 every output is non-zero."""
    import numpy as np
    work = _kernel("mlp").workload(151, 3, 3, {"BL": 5}, 0, n_cols=150)
    inputs = work.inputs()
    flat = np.arange(151 * 150)
    for layer in range(3):
        assert np.array_equal(inputs[f"W{layer}"].ravel(), np.where(flat % 100 >= 98, (layer + flat) % 2, 0))
    cols = np.arange(150)
    assert np.array_equal(inputs["x"], np.where(cols % 50 >= 48, cols % 2, 0))
    assert (work.reference(inputs)["y"] > 0).all()


def test_launch_counts(toolchain):
    assert _run_with(toolchain, "mlp", "O2", 2, 2, 16, {}).times.launches == 3  # one per layer
    assert _run_with(toolchain, "nw", "O2", 2, 2, 64, {"BL": 16}).times.launches == 7  # 2 * 4 - 1
    assert _run_with(toolchain, "trns", "O2", 2, 2, 2, {}, strips=3).times.launches == 4  # 2 rounds


@pytest.mark.parametrize("name, tasklets, defines, params, message", [
    ("mlp", 13, {"BL": 11}, {}, "WRAM"),
    ("nw", 16, {"BL": 32, "BL_IN": 16}, {}, None),  # fits: no refusal
    ("nw", 24, {"BL": 32, "BL_IN": 16}, {}, "WRAM"),
    ("nw", 16, {"BL": 8, "BL_IN": 16}, {}, "multiple of BL_IN"),
    ("hst-s", 4, {}, {"bins": 4096}, "WRAM"),
    ("hst-s", 1, {}, {"bins": 3}, "even"),
    ("hst-l", 2, {"NR_HISTO": 4}, {}, "NR_HISTO"),
    ("trns", 16, {}, {"m": 32, "n": 8}, "WRAM"),
    ("trns", 1, {}, {"m": 300}, "1..256"),
])
def test_workload_refuses_what_does_not_fit(name, tasklets, defines, params, message):
    kernel = _kernel(name)
    size = kernel.workload.preset("small")
    if message is None:
        kernel.workload(size, 1, tasklets, defines, 0, **params)
        return
    with pytest.raises(KernelError, match=message):
        kernel.workload(size, 1, tasklets, defines, 0, **params)


def test_nw_scores_are_prims_unless_random_sequences():
    """PrIM builds every score from a zeroed array: BLOSUM62[0][0] = 4; random_sequences=1 does not."""
    scores = _kernel("nw").workload(32, 1, 13).inputs()["scores"]
    assert scores.shape == (32, 32) and (scores == 4).all()
    assert len(set(_kernel("nw").workload(32, 1, 13, random_sequences=1).inputs()["scores"].ravel())) > 1


def test_nw_size_must_be_a_multiple_of_bl():
    with pytest.raises(KernelError, match="multiple of BL"):
        _kernel("nw").workload(100, 1, 13)
