"""Group C kernels: PrIM SCAN-SSA and SCAN-RSS, and the PIM-ML workloads LiRQ, LiRnQ, LoRQ and
LoRnQ. Each runs end to end on the simulator at its `small` preset for pipelines O0/O2 x
tasklets 1/2/16 x DPUs 1/4 and must verify; a few non-default defines and params also run.
Combinations a workload refuses (KernelError, e.g. WRAM limits) are skipped."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from cnmtune.errors import CnmtuneError, KernelError
from cnmtune.runtime import Kernel
from cnmtune.runtime.execute import run_binary
from cnmtune.runtime.sim.device import SimDevice
from cnmtune.runtime.toolchain import Variant

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"
KERNELS = {
    "scan-ssa": BENCH / "prim" / "scan-ssa",
    "scan-rss": BENCH / "prim" / "scan-rss",
    "lirq": BENCH / "pim-ml" / "lirq",
    "lirnq": BENCH / "pim-ml" / "lirnq",
    "lorq": BENCH / "pim-ml" / "lorq",
    "lornq": BENCH / "pim-ml" / "lornq",
}


@pytest.fixture(scope="module")
def kernels() -> dict[str, Kernel]:
    return {name: Kernel.load(path) for name, path in KERNELS.items()}


def _run(toolchain, kernel, pipeline, tasklets, dpus, defines=None, size=None):
    size = kernel.workload.preset("small") if size is None else size
    # PIM-ML: a few gradient steps keep the tests fast (each step is one launch)
    params = {"iterations": 3} if "iterations" in kernel.workload.params else {}
    try:
        kernel.workload(size, dpus, tasklets, defines, **params)  # refusals come from the workload itself
    except KernelError as exc:
        pytest.skip(f"{kernel.name} refuses this combination: {exc}")
    binary = toolchain.compile(Variant.of(kernel, pipeline, tasklets, defines or {}))
    return run_binary(binary, dpus, size, params=params)


@pytest.mark.parametrize("dpus", [1, 4])
@pytest.mark.parametrize("tasklets", [1, 2, 16])
@pytest.mark.parametrize("pipeline", ["O0", "O2"])
@pytest.mark.parametrize("name", list(KERNELS))
def test_small_verifies(toolchain, kernels, name, pipeline, tasklets, dpus):
    result = _run(toolchain, kernels[name], pipeline, tasklets, dpus)
    assert result.verified


# ------------------------------------------------------------------------------------- SCAN


@pytest.mark.parametrize("defines", [{"INT32": None}, {"FLOAT": None}, {"DOUBLE": None}, {"CHAR": None, "BL": 8},
                                     {"SHORT": None, "BL": 9}, {"UINT64": None}, {"BL": 3}, {"BL": 11}],
                         ids=lambda d: ",".join(f"{k}={v}" for k, v in d.items()))
@pytest.mark.parametrize("name", ["scan-ssa", "scan-rss"])
def test_scan_variants(toolchain, kernels, name, defines):
    result = _run(toolchain, kernels[name], "O2", 5, 3, defines, size=2999)
    assert result.verified and result.launches == 2


@pytest.mark.parametrize("name", ["scan-ssa", "scan-rss"])
def test_scan_of_bytes_at_the_default_block_overflows_iram(toolchain, kernels, name):
    """PrIM's full unroll of 1,024 one-byte elements per block does not fit the DPU's IRAM."""
    with pytest.raises(CnmtuneError, match="IRAM overflow"):
        toolchain.compile(Variant.of(kernels[name], "O2", 5, {"CHAR": None}))


@pytest.mark.parametrize("name", ["scan-ssa", "scan-rss"])
def test_scan_refuses_tasklets_beyond_wram(kernels, name):
    with pytest.raises(KernelError, match="do not fit in WRAM"):
        kernels[name].workload(4096, 1, 16, {"BL": 11})


# ------------------------------------------------------------------------------------ PIM-ML
PIMML = ["lirq", "lirnq", "lorq", "lornq"]


@pytest.mark.parametrize("name", PIMML)
def test_pimml_float_verifies(toolchain, kernels, name):
    result = _run(toolchain, kernels[name], "O2", 4, 2, {"FLOAT": None}, size=48)
    assert result.verified and result.launches == 3  # one launch per gradient step


@pytest.mark.parametrize("name", PIMML)
def test_pimml_params_and_bl(toolchain, kernels, name):
    """Other features, iterations and BL through the workload's keywords, on a SimDevice."""
    kernel = kernels[name]
    binary = toolchain.compile(Variant.of(kernel, "O2", 3, {"BL": 7}))
    workload = kernel.workload(101, 3, 3, {"BL": 7}, iterations=4, n_features=6, learning_rate=0.01)
    device = SimDevice(3)
    device.load(binary.elf_path)
    inputs = workload.inputs()
    assert inputs["X"].shape == (101, 6)
    outputs = workload.execute(device, inputs)
    workload.verify(outputs, workload.reference(inputs))
    assert len(device.launches) == 4


@pytest.mark.parametrize("name", PIMML)
def test_pimml_weights_move_and_match_the_model(kernels, name):
    """The replayed training changes the weights (the update never divides by zero)."""
    workload = kernels[name].workload(300, 2, 4, {"FLOAT": None}, iterations=5)
    assert workload.iterations == 5
    w = workload.reference(workload.inputs())["W"]
    assert np.all(np.isfinite(w)) and not np.allclose(w, 1.0)


def test_pimml_refusals(kernels):
    with pytest.raises(KernelError, match="at most 13 tasklets"):
        kernels["lorq"].workload(256, 1, 16)
    with pytest.raises(KernelError, match="n_features must be even"):
        kernels["lirq"].workload(256, 1, 4, n_features=5)
    with pytest.raises(KernelError, match="n_features must be even"):
        kernels["lirnq"].workload(256, 1, 4, n_features=18)
    assert kernels["lirq"].workload(256, 1, 4, n_features=24).n == 24
    with pytest.raises(KernelError, match="raise BL"):
        kernels["lirnq"].workload(256, 1, 4, {"BL": 6})
    assert kernels["lirq"].workload(8192, 1, 4).iterations == 100
