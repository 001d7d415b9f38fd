"""PrIM group A kernels (spmv, sel, uni, ts, bfs): every kernel at its `small` preset, verified.

Each kernel runs for pipelines {O0, O2} x tasklets {1, 2, 16} x DPUs {1, 4} on the simulator
(run_binary verifies against the workload's numpy reference). Combinations a workload refuses
with a KernelError (e.g. WRAM limits) are skipped with that message.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from cnmtune.errors import KernelError
from cnmtune.runtime import Kernel
from cnmtune.runtime.execute import run_binary
from cnmtune.runtime.toolchain import Variant

PRIM = Path(__file__).resolve().parents[2] / "benchmarks" / "prim"
NAMES = ("spmv", "sel", "uni", "ts", "bfs")


@pytest.fixture(scope="module")
def kernels() -> dict[str, Kernel]:
    return {name: Kernel.load(PRIM / name) for name in NAMES if (PRIM / name / "workload.py").exists()}


def _run(toolchain, kernel, pipeline, tasklets, dpus, defines=None, size=None, **params):
    size = kernel.workload.preset("small") if size is None else size
    try:
        kernel.workload(size, dpus, tasklets, defines, **params)
    except KernelError as exc:
        pytest.skip(str(exc))
    binary = toolchain.compile(Variant.of(kernel, pipeline, tasklets, defines))
    return run_binary(binary, dpus, size)


@pytest.mark.parametrize("dpus", [1, 4])
@pytest.mark.parametrize("tasklets", [1, 2, 16])
@pytest.mark.parametrize("pipeline", ["O0", "O2"])
@pytest.mark.parametrize("name", NAMES)
def test_small_preset_verifies(toolchain, kernels, name, pipeline, tasklets, dpus):
    if name not in kernels:
        pytest.skip(f"{name} not written yet")
    result = _run(toolchain, kernels[name], pipeline, tasklets, dpus)
    assert result.verified and result.launches >= 1


# ---------------------------------------------------------------- odd shapes, defines, files

ODD = [("sel", 1001, {"BL": 3}, 5), ("sel", 7777, {"BL": 11}, 11), ("uni", 1001, {"BL": 3}, 5),
       ("uni", 13, {"BL": 9}, 24), ("ts", 1000, {"BL": 6}, 5), ("ts", 300, {"BL": 3}, 3),
       ("spmv", 1001, {}, 5), ("spmv", 7, {}, 16), ("bfs", 100, {}, 5), ("bfs", 130, {}, 1)]


@pytest.mark.parametrize("name,size,defines,tasklets", ODD,
                         ids=[f"{n}-{s}-{'-'.join(f'{k}={v}' for k, v in d.items())}-{t}" for n, s, d, t in ODD])
def test_odd_shapes_verify(toolchain, kernels, name, size, defines, tasklets):
    assert _run(toolchain, kernels[name], "O2", tasklets, 3, defines, size).verified


def test_workloads_refuse_what_does_not_fit(kernels):
    with pytest.raises(KernelError):
        kernels["sel"].workload(100, 1, 16, {"BL": 11})  # 2 x 2 KiB per tasklet
    with pytest.raises(KernelError):
        kernels["ts"].workload(1000, 1, 16, {"BL": 9})  # 6 x 512 B per tasklet
    with pytest.raises(KernelError):
        kernels["ts"].workload(1000, 1, 4, query_len=100)  # not a multiple of 64
    with pytest.raises(KernelError):
        kernels["ts"].workload(1000, 1, 4, {"BL": 3}, query_len=2)  # windows with a zero deviation


def test_ts_pads_the_series_as_prim(kernels):
    """n rounds up to DPUs x tasklets x m; the padding continues i mod 127 and is evaluated."""
    work = kernels["ts"].workload(100, 2, 4)  # shorter than the query: 2 x 4 x 256 positions
    series = work.inputs()["series"]
    assert series.size == 2048 and (series == np.arange(2048) % 127).all()
    assert work.reference(work.inputs())["min_index"][0] < 1024 - 256  # on DPU 0, before its last m


def test_repeated_runs_on_one_device(toolchain, kernels):
    """WRAM and MRAM persist across runs: each host program must reinitialise what it uses."""
    from cnmtune.runtime.sim.device import SimDevice
    for name in NAMES:
        kernel = kernels[name]
        binary = toolchain.compile(Variant.of(kernel, "O2", 4))
        work = kernel.workload(kernel.workload.preset("small"), 2, 4)
        device = SimDevice(2)
        device.load(binary.elf_path)
        inputs = work.inputs()
        for _ in range(2):
            work.verify(work.execute(device, inputs), work.reference(inputs))


def test_spmv_reference_is_exact_and_reads_matrix_market(toolchain, kernels, tmp_path):
    import numpy as np
    from cnmtune.runtime.sim.device import SimDevice
    path = tmp_path / "m.mtx"
    path.write_text("%%MatrixMarket matrix coordinate pattern symmetric\n% comment\n5 5 6\n"
                    "1 1\n2 1\n3 2\n4 4\n5 3\n5 5\n")
    rounding = tmp_path / "r.mtx"  # row 0 sums to 0 in float32 in column order (1 is lost), 1 exactly
    rounding.write_text("%%MatrixMarket matrix coordinate real general\n3 3 5\n1 1 1e8\n1 2 1.0\n1 3 -1e8\n"
                        "2 2 0.1\n3 1 0.3\n")
    kernel = kernels["spmv"]
    binary = toolchain.compile(Variant.of(kernel, "O2", 4))
    for kwargs, size in (({}, 300), ({"matrix": str(path)}, 12), ({"matrix": str(rounding)}, 6)):
        work = kernel.workload(size, 3, 4, **kwargs)
        inputs = work.inputs()
        device = SimDevice(3)
        device.load(binary.elf_path)
        got, want = work.execute(device, inputs)["y"], work.reference(inputs)["y"]
        assert np.array_equal(got, want)  # bit-exact: same float32 operations in the same order
    assert kernel.workload(12, 1, 1, matrix=str(path)).inputs()["rowptr"][5] == 9  # 6 entries + 3 mirrored
    work = kernel.workload(6, 1, 1, matrix=str(rounding))
    assert work.reference(work.inputs())["y"][:3].tolist() == [0.0, np.float32(0.1), np.float32(0.3)]


def test_bfs_reads_edge_lists(toolchain, kernels, tmp_path):
    import numpy as np
    path = tmp_path / "g.txt"
    path.write_text("# a path 0-1-2-3 and an island 5-6\n8 8 5\n0 1\n1 2\n2 3\n5 6\n6 5\n")
    kernel = kernels["bfs"]
    work = kernel.workload(70, 2, 4, graph=str(path))
    inputs = work.inputs()
    assert work.reference(inputs)["levels"][:8].tolist() == [1, 2, 3, 4, 0, 0, 0, 0]
    from cnmtune.runtime.sim.device import SimDevice
    binary = toolchain.compile(Variant.of(kernel, "O2", 4))
    device = SimDevice(2)
    device.load(binary.elf_path)
    assert np.array_equal(work.execute(device, inputs)["levels"], work.reference(inputs)["levels"])
