"""The PrIM kernels (va, red, bs, gemv): real compiles, host/DPU layouts, host-side shapes.

Every kernel compiles at O0 and O2 for 1, 2 and 16 tasklets. The sizes of the `__host`
symbols in the ELF must match what the host side pushes and pulls. inputs() and reference()
must agree in shape for a few DPU/tasklet counts. Each kernel also runs end to end on the
simulator (SimDevice) at its small size, and with non-default defines, and must verify.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from elftools.elf.elffile import ELFFile

from cnmtune.errors import KernelError
from cnmtune.runtime import Kernel
from cnmtune.runtime.sim.device import SimDevice
from cnmtune.runtime.toolchain import Variant

PRIM = Path(__file__).resolve().parents[2] / "benchmarks" / "prim"
NAMES = ("va", "red", "bs", "gemv")
# bytes of DPU_INPUT_ARGUMENTS, and of one DPU_RESULTS entry (None: no DPU_RESULTS)
HOST_LAYOUT = {"va": (16, None), "red": (8, 16), "bs": (24, None), "gemv": (16, None)}


@pytest.fixture(scope="module")
def kernels() -> dict[str, Kernel]:
    return {name: Kernel.load(PRIM / name) for name in NAMES}


def _symbols(path) -> dict[str, tuple[int, int]]:
    with open(path, "rb") as handle:
        symtab = ELFFile(handle).get_section_by_name(".symtab")
        return {s.name: (s["st_value"], s["st_size"]) for s in symtab.iter_symbols()}


# ---------------------------------------------------------------- compiles


@pytest.mark.parametrize("tasklets", [1, 2, 16])
@pytest.mark.parametrize("level", ["O0", "O2"])
@pytest.mark.parametrize("name", NAMES)
def test_kernel_compiles(toolchain, kernels, name, level, tasklets):
    binary = toolchain.compile(Variant.of(kernels[name], level, tasklets))
    symbols = _symbols(binary.elf_path)
    assert "main" in symbols and "__sys_used_mram_end" in symbols
    args_bytes, result_bytes = HOST_LAYOUT[name]
    assert symbols["DPU_INPUT_ARGUMENTS"][1] == args_bytes
    if result_bytes is not None:
        assert symbols["DPU_RESULTS"][1] == result_bytes * tasklets
    assert binary.memory.wram_stack_bytes == tasklets * 1024
    assert 0 < binary.memory.kernel_instructions


RED_VARIANTS = [
    {"VERSION": "TREE"},
    {"VERSION": "TREE", "SYNC": "BARRIER"},
    {"PERF": 1},
    {"BL": 3},
    {"BL": 11},
    *({t: None} for t in ("INT32", "UINT32", "UINT64", "FLOAT", "DOUBLE", "CHAR", "SHORT")),
]


@pytest.mark.parametrize("tasklets", [3, 16])
@pytest.mark.parametrize("defines", RED_VARIANTS, ids=lambda d: ",".join(f"{k}={v}" for k, v in d.items()))
def test_red_variants_compile(toolchain, kernels, defines, tasklets):
    binary = toolchain.compile(Variant.of(kernels["red"], "O2", tasklets, defines))
    assert _symbols(binary.elf_path)["DPU_RESULTS"][1] == 16 * tasklets


def test_red_tree_hand_uses_handshakes_and_single_does_not(toolchain, kernels):
    tree = _symbols(toolchain.compile(Variant.of(kernels["red"], "O2", 16, {"VERSION": "TREE"})).elf_path)
    single = _symbols(toolchain.compile(Variant.of(kernels["red"], "O2", 16)).elf_path)
    assert "handshake_notify" in tree and "handshake_wait_for" in tree
    assert "handshake_notify" not in single


@pytest.mark.parametrize("name,bl", [("bs", 3), ("bs", 11), ("gemv", 3), ("gemv", 11)])
def test_block_size_extremes_compile(toolchain, kernels, name, bl):
    assert toolchain.compile(Variant.of(kernels[name], "O2", 8, {"BL": bl})).memory.kernel_instructions > 0


@pytest.mark.parametrize("defines", [{"VERSION": "FOO"}, {"SYNC": "HANDS"}, {"BL": 12}])
def test_red_rejects_unknown_define_values(kernels, defines):
    with pytest.raises(KernelError):
        Variant.of(kernels["red"], "O2", 16, defines)


def test_presets(kernels):
    for name in NAMES:
        sizes = kernels[name].workload.sizes
        assert set(sizes) == {"small", "default", "large"}
        assert sizes["small"] < sizes["default"] < sizes["large"]


# ---------------------------------------------------------------- host side


@pytest.mark.parametrize("dpus,tasklets", [(1, 1), (4, 16), (3, 5)])
@pytest.mark.parametrize("name", NAMES)
def test_inputs_and_reference_agree(kernels, name, dpus, tasklets):
    cls = kernels[name].workload
    work = cls(cls.preset("small"), dpus, tasklets)
    inputs = work.inputs()
    expected = work.reference(inputs)
    assert all(isinstance(a, np.ndarray) for a in (*inputs.values(), *expected.values()))
    again = cls(cls.preset("small"), dpus, tasklets).inputs()
    assert all(np.array_equal(inputs[k], again[k]) for k in inputs)  # seeded
    if name == "red":
        assert inputs["A"].shape == (work.size,) and expected["total"].shape == (1,)
        assert inputs["A"].dtype == expected["total"].dtype == np.int64
    elif name == "bs":
        queries = inputs["queries"]
        assert inputs["array"].shape == (work.size,) and inputs["array"].dtype == np.int64
        assert queries.size >= work.size // 8 and queries.size % (dpus * tasklets) == 0
        assert expected["found"].shape == queries.shape and expected["found"].dtype == np.int64
        assert expected["largest_found"].tolist() == [expected["found"].max()]  # PrIM's result
    elif name == "gemv":
        assert inputs["A"].shape == (work.size, 64) and inputs["x"].shape == (64,)
        assert expected["y"].shape == (work.size,) and expected["y"].dtype == np.uint32
    else:
        assert expected["C"].shape == inputs["A"].shape


@pytest.mark.parametrize("define", ["INT32", "UINT32", "UINT64", "FLOAT", "DOUBLE", "CHAR", "SHORT"])
def test_red_types(kernels, define):
    cls = kernels["red"].workload
    work = cls(1000, 4, 16, {define: None})
    inputs = work.inputs()
    total = work.reference(inputs)["total"]
    assert inputs["A"].dtype == total.dtype and total.shape == (1,)
    if total.dtype.kind == "f":  # the double sum, rounded to the element type
        assert total[0] == total.dtype.type(inputs["A"].astype(np.float64).sum())
    else:  # wrap-around: equal modulo 2^bits
        bits = 8 * total.dtype.itemsize
        want = sum(int(v) for v in inputs["A"]) % (1 << bits)
        assert int(total.astype(np.uint64 if bits == 64 else np.int64)[0]) % (1 << bits) == want


def test_red_reference_wraps(kernels):
    work = kernels["red"].workload(3, 1, 1)
    big = np.iinfo(np.int64).max
    assert work.reference({"A": np.array([big, 1, 5], np.int64)})["total"][0] == np.iinfo(np.int64).min + 5


def test_bs_reference_marks_absent_queries(kernels):
    work = kernels["bs"].workload(256, 24, 16)  # 32 queries wanted, 384 after rounding: some above 256
    inputs = work.inputs()
    found = work.reference(inputs)["found"]
    queries = inputs["queries"]
    assert queries.size == 384
    assert found[0] == -1  # PrIM's query 0 is never found
    assert np.array_equal(found[1:257], queries[1:257] - 1) and (found[257:] == -1).all()
    assert work.reference({"array": inputs["array"], "queries": np.array([257, 0, 256])})["found"].tolist() == [-1, -1, 255]


def test_bs_refuses_arrays_below_one_search_span(kernels):
    """PrIM's DPU reads the block 2^BL elements before the array's end for every query."""
    kernels["bs"].workload(256, 1, 16)
    with pytest.raises(KernelError, match="at least 2\\^BL = 256"):
        kernels["bs"].workload(255, 1, 16)
    with pytest.raises(KernelError, match="2048"):
        kernels["bs"].workload(2047, 1, 16, {"BL": 11})


def test_gemv_columns_and_wraparound(kernels):
    cls = kernels["gemv"].workload
    work = cls(10, 4, 16, n_cols=7)
    inputs = work.inputs()
    assert inputs["A"].shape == (10, 7) and inputs["x"].shape == (7,)
    a = np.full((2, 3), 0xFFFFFFFF, np.uint32)
    x = np.array([1, 1, 2], np.uint32)
    assert work.reference({"A": a, "x": x})["y"].tolist() == [(4 * 0xFFFFFFFF) % 2**32] * 2
    starts, counts = work.row_split()
    assert counts == [3, 3, 2, 2] and starts == [0, 3, 6, 8]


# ---------------------------------------------------------------- end to end on the simulator


E2E = [("va", {}), ("red", {}), ("red", {"VERSION": "TREE"}),
       ("red", {"VERSION": "TREE", "SYNC": "BARRIER"}), ("red", {"DOUBLE": None}), ("red", {"CHAR": None}),
       ("bs", {}), ("gemv", {})]
E2E_IDS = [f"{n}-{'-'.join(map(str, d.values())) or 'default'}" for n, d in E2E]


@pytest.mark.parametrize("tasklets", [1, 16])
@pytest.mark.parametrize("dpus", [1, 4])
@pytest.mark.parametrize("name,defines", E2E, ids=E2E_IDS)
def test_end_to_end_on_simulator(toolchain, kernels, name, defines, dpus, tasklets):
    kernel = kernels[name]
    binary = toolchain.compile(Variant.of(kernel, "O2", tasklets, defines))
    work = kernel.workload(kernel.workload.preset("small"), dpus, tasklets, defines)
    inputs = work.inputs()
    device = SimDevice(dpus)
    device.load(binary.elf_path)
    work.verify(work.execute(device, inputs), work.reference(inputs))


@pytest.mark.parametrize("name,size,kwargs", [("gemv", 13, {"n_cols": 5}), ("gemv", 7, {"n_cols": 300}),
                                               ("bs", 256, {}), ("bs", 1000, {}), ("red", 13, {})])
def test_odd_shapes_on_simulator(toolchain, kernels, name, size, kwargs):
    kernel = kernels[name]
    binary = toolchain.compile(Variant.of(kernel, "O2", 4))
    work = kernel.workload(size, 4, 4, **kwargs)
    inputs = work.inputs()
    device = SimDevice(4)
    device.load(binary.elf_path)
    work.verify(work.execute(device, inputs), work.reference(inputs))


VARIANTS = [("red", {"VERSION": "TREE"}, 3), ("red", {"VERSION": "TREE"}, 5), ("red", {"VERSION": "TREE"}, 24),
            ("red", {"VERSION": "TREE", "SYNC": "BARRIER"}, 5), ("red", {"PERF": 1}, 16),
            ("red", {"BL": 3}, 16), ("red", {"BL": 11}, 16), ("red", {"FLOAT": None}, 16),
            ("red", {"SHORT": None}, 7), ("red", {"UINT32": None}, 16), ("red", {"UINT64": None}, 16),
            ("bs", {"BL": 3}, 16), ("bs", {"BL": 11}, 8), ("bs", {}, 24),
            ("gemv", {"BL": 3}, 16), ("gemv", {"BL": 11}, 12), ("gemv", {}, 3)]


@pytest.mark.parametrize("name,defines,tasklets", VARIANTS,
                         ids=[f"{n}-{','.join(f'{k}={v}' for k, v in d.items())}-{t}" for n, d, t in VARIANTS])
def test_variants_on_simulator_twice(toolchain, kernels, name, defines, tasklets):
    """Non-default defines and odd tasklet counts, launched twice on one device (WRAM persists)."""
    kernel = kernels[name]
    binary = toolchain.compile(Variant.of(kernel, "O2", tasklets, defines))
    work = kernel.workload(kernel.workload.preset("small") + 5, 3, tasklets, defines)
    inputs = work.inputs()
    device = SimDevice(3)
    device.load(binary.elf_path)
    for _ in range(2):
        work.verify(work.execute(device, inputs), work.reference(inputs))
    if defines.get("PERF"):
        raw = device.copy_from(0, "DPU_RESULTS", 16 * tasklets)
        cycles = np.frombuffer(raw, np.uint64).reshape(tasklets, 2)[:, 1]
        assert (cycles > 0).all()
