"""The simulator microbenchmarks of benchmarks/micro: each verifies on the simulator at a tiny
size for 1 and 16 tasklets and shows the behaviour it exists to measure; plus the analysis
helpers of benchmarks/micro_sim.py on synthetic data."""

from __future__ import annotations

import importlib
import importlib.util
import math
from pathlib import Path

import numpy as np
import pytest

from cnmtune.errors import KernelError
from cnmtune.runtime import Kernel
from cnmtune.runtime.execute import run_binary
from cnmtune.runtime.sim.config import DpuConfig
from cnmtune.runtime.toolchain import Variant

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"
MICRO = BENCH / "micro"


def _module(kernel: Kernel):
    return importlib.import_module(kernel.workload.__module__)


@pytest.fixture(scope="module")
def micro_sim():
    spec = importlib.util.spec_from_file_location("micro_sim_under_test", BENCH / "micro_sim.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def arith() -> Kernel:
    return Kernel.load(MICRO / "arith")


@pytest.fixture(scope="module")
def dma() -> Kernel:
    return Kernel.load(MICRO / "dma_latency")


@pytest.fixture(scope="module")
def stream() -> Kernel:
    return Kernel.load(MICRO / "stream")


def _run(toolchain, kernel, tasklets, defines, size):
    return run_binary(toolchain.compile(Variant.of(kernel, "O2", tasklets, defines)), 1, size)


# ----------------------------------------------------------------------------------- arith
ARITH_N = 4096  # INT32: 16 blocks of 1 KiB, one round at 16 tasklets


def test_arith_int32_add_scales_to_the_revolver_limit(toolchain, arith):
    """Verified at 1 and 16 tasklets; 16 tasklets give >= 8x the throughput (PrIM's cycles)."""
    parse = _module(arith).parse_log
    one = _run(toolchain, arith, 1, {"INT32": None, "ADD": None}, ARITH_N)
    many = _run(toolchain, arith, 16, {"INT32": None, "ADD": None}, ARITH_N)
    c1, c16 = parse(one.log), parse(many.log)
    assert c1["elements"] == c16["elements"] == ARITH_N
    assert c1["cycles"] / c16["cycles"] >= 8
    assert one.cycles / many.cycles >= 4  # whole launch, DMA and barriers included
    assert one.dma_read_bytes == one.dma_write_bytes == ARITH_N * 4


def test_arith_div_and_float_mul_verify_and_cost_more_than_add(toolchain, arith):
    parse = _module(arith).parse_log
    add = parse(_run(toolchain, arith, 16, {"INT32": None, "ADD": None}, ARITH_N).log)["cycles"]
    div = parse(_run(toolchain, arith, 16, {"INT32": None, "DIV": None}, ARITH_N).log)["cycles"]
    fmul = parse(_run(toolchain, arith, 1, {"FLOAT": None, "MUL": None}, 1024).log)["cycles"]
    fadd1 = parse(_run(toolchain, arith, 1, {"INT32": None, "ADD": None}, 1024).log)["cycles"]
    assert div > 2 * add
    assert fmul > 5 * fadd1


def test_arith_host_semantics_and_define_checks(arith):
    c_divide = _module(arith).c_divide
    a = np.array([-7, 7, -6, 6, np.iinfo(np.int32).min, np.iinfo(np.int32).max], np.int32)
    assert c_divide(a, np.int32(3)).tolist() == [int(x / 3) for x in a.tolist()]  # truncation, as C
    with pytest.raises(KernelError, match="at most one element type"):
        arith.workload.resolve_defines({"INT32": None, "FLOAT": None})
    with pytest.raises(KernelError, match="at most one operation"):
        arith.workload.resolve_defines({"ADD": None, "DIV": None})
    w = arith.workload(64, 1, 1, {"INT64": None, "DIV": None})
    assert (w.type_name, w.op, int(w.scalar)) == ("INT64", "DIV", 64)  # PrIM's: elements per DPU
    x = w.inputs()["X"]
    assert x.dtype == np.int64 and 0 <= x.min() and x.max() < 2**31  # PrIM's rand() values


# ------------------------------------------------------------------------------ dma_latency
@pytest.mark.parametrize("mode", ["READ", "WRITE"])
def test_dma_latency_grows_with_transfer_size(toolchain, dma, mode):
    module = _module(dma)
    transfers = 32
    small = _run(toolchain, dma, 1, {"TRANSFER": 8, mode: None}, transfers)
    large = _run(toolchain, dma, 1, {"TRANSFER": 2048, mode: None}, transfers)
    lat8, lat2048 = (module.latency(module.parse_log(r.log)) for r in (small, large))
    assert 0 < lat8 < lat2048
    assert large.cycles > small.cycles
    moved = large.dma_write_bytes if mode == "WRITE" else large.dma_read_bytes
    assert moved == transfers * 2048
    # one tasklet, one DMA at a time: 2040 more bytes cost at least 2040 * beta / 2 cycles more
    assert lat2048 - lat8 > 0.25 * 2040


@pytest.mark.parametrize("mode", ["READ", "WRITE"])
def test_dma_latency_verifies_with_16_tasklets_and_queues(toolchain, dma, mode):
    module = _module(dma)
    one = _run(toolchain, dma, 1, {"TRANSFER": 1024, mode: None}, 64)
    many = _run(toolchain, dma, 16, {"TRANSFER": 1024, mode: None}, 64)
    rows = module.parse_log(many.log)
    assert [r["tasklet"] for r in rows] == list(range(16))
    assert sum(r["transfers"] for r in rows) == 64
    # the tasklets share one DMA engine: each transfer waits behind the others
    assert module.latency(rows) > 4 * module.latency(module.parse_log(one.log))
    assert many.cycles < one.cycles  # but the engine is kept busy


def test_dma_latency_read_checksum_is_real(toolchain, dma):
    """The host's check depends on the data: a different seed gives a different checksum."""
    w0 = dma.workload(16, 1, 1, {"TRANSFER": 64}, seed=0)
    w1 = dma.workload(16, 1, 1, {"TRANSFER": 64}, seed=1)
    r0, r1 = (w.reference(w.inputs())["checksum"] for w in (w0, w1))
    assert r0[0, 0] != r1[0, 0]


# ----------------------------------------------------------------------------------- stream
STREAM_N = 4096  # uint64: 32 blocks of 1 KiB per array


@pytest.mark.parametrize("op", ["COPY", "SCALE", "ADD", "TRIAD"])
def test_stream_verifies_at_1_and_16_tasklets(toolchain, stream, op):
    module = _module(stream)
    bw = {}
    for t in (1, 16):
        result = _run(toolchain, stream, t, {op: None}, STREAM_N)
        report = module.parse_log(result.log)
        assert report["bytes"] == STREAM_N * 8
        reads = 2 if op in ("ADD", "TRIAD") else 1
        assert result.dma_read_bytes == reads * STREAM_N * 8 and result.dma_write_bytes == STREAM_N * 8
        bw[t] = module.BYTES_MOVED[op] * report["bytes"] / report["cycles"]
    engine = 1.0 / DpuConfig.calibrated().dma_beta  # bytes per cycle the one DMA engine can move (default config)
    assert bw[16] <= engine * 1.001
    if op == "COPY":
        assert 1.0 < bw[16] / bw[1] < 4.0  # DMA only: the engine saturates with very few tasklets
    elif op == "ADD":
        assert bw[16] / bw[1] >= 5  # compute-bound at first, then close to the engine's rate
    else:
        assert bw[16] / bw[1] >= 8  # 64-bit multiply in WRAM: the revolver pipeline scales to 11 tasklets


# --------------------------------------------------------------------------- micro_sim helpers
def test_fit_line_and_shape_checks_on_synthetic_results(micro_sim):
    sizes = list(micro_sim.DMA_SIZES)
    fit = micro_sim.fit_line(sizes, [77 + 0.5 * s for s in sizes])
    assert fit["alpha"] == pytest.approx(77) and fit["beta"] == pytest.approx(0.5) and fit["r2"] == pytest.approx(1)

    def arith_rows(saturate_at):
        return [{"type": "INT32", "op": "ADD", "tasklets": t, "mops": 5.0 * min(t, saturate_at)}
                for t in micro_sim.ARITH_TASKLETS]

    dma = [{"mode": "READ", "transfer": s, "latency_cycles": 77 + 0.5 * s, "run_cycles_per_transfer": 700 + 0.5 * s}
           for s in sizes]
    good = micro_sim.check_shapes({"arith": arith_rows(11), "dma": dma})
    assert good and all(c["passed"] for c in good)
    bad = {c["name"]: c["passed"] for c in micro_sim.check_shapes({"arith": arith_rows(4)})}
    assert bad["arith INT32 ADD saturates at 11 tasklets"]  # flat after 4: 16 and 11 agree
    assert not bad["arith INT32 ADD rises ~linearly up to 11 tasklets"]
    early = {c["name"]: c["passed"] for c in micro_sim.check_shapes({"arith": arith_rows(8)})}
    assert not early["arith every type/op still rising from 8 to 11 tasklets"]  # a revolver of 8, not 11
    noisy = [dict(r, latency_cycles=r["latency_cycles"] * (1 + 0.8 * math.sin(k))) for k, r in enumerate(dma)]
    checks = {c["name"]: c["passed"] for c in micro_sim.check_shapes({"dma": noisy})}
    assert not checks["DMA read latency linear in size (in-DPU perfcounter)"]
