"""Features of ELFs built by the real proxy toolchain: va at O0 and O2, and soft arithmetic.

Kernels hold no ecall: every DPU service is a runtime function the kernel calls by name. The
instruction counts must agree with the toolchain's IRAM rule (cnmtune.runtime.toolchain.layout):
kernel + runtime are charged, soft arithmetic is reported apart.
"""

from __future__ import annotations

import numpy as np
import pytest

from cnmtune.costmodel import Features, default_schema, extract_features, model_features
from cnmtune.costmodel.analysis.elf import load_elf
from cnmtune.runtime.registry import find_kernel
from cnmtune.runtime.target import SimTarget
from cnmtune.runtime.toolchain import Binary, Variant

# benchmarks/prim/va/dpu/task.c. At O0 the static helpers stay functions (main ->
# vector_add through the kernels[] table, vector_add -> add_block); every call to the runtime
# is in vector_add, and calls from any kernel function count. In the block loop: two
# mram_read and one mram_write.
VA_CALLS = {"me": 1, "mem_reset": 1, "barrier_wait": 1, "mem_alloc": 2, "mram_read": 2,
            "mram_write": 1}
VA_WEIGHTED_CALLS = {"me": 1.0, "mem_reset": 1.0, "barrier_wait": 1.0, "mem_alloc": 2.0,
                     "mram_read": 20.0, "mram_write": 10.0}

SOFT_ARITHMETIC = r"""
#include <defs.h>
#include <stdint.h>

__host volatile float f_in[2];
__host volatile float f_out;
__host volatile int32_t i_in[2];
__host volatile int32_t i_out;

int main(void)
{
    f_out = f_in[0] * f_in[1];
    i_out = i_in[0] / i_in[1];
    return 0;
}
"""


@pytest.fixture(scope="module")
def va_o0(toolchain, va) -> Binary:
    """va compiled at O0 with 16 tasklets."""
    return toolchain.compile(Variant.of(va, "O0", 16))


@pytest.fixture(scope="module")
def va_features(va_o0, va_o2) -> dict[str, tuple[Binary, Features]]:
    return {level: (binary, extract_features(binary.elf_path))
            for level, binary in (("O0", va_o0), ("O2", va_o2))}


@pytest.fixture(params=["O0", "O2"])
def va_level(request, va_features) -> tuple[Binary, Features]:
    return va_features[request.param]


def test_va_calls_every_service_by_name(va_level):
    _, f = va_level
    assert f.kernel_calls == VA_CALLS
    assert f.weighted_kernel_calls == VA_WEIGHTED_CALLS
    # The services' ecalls are in the runtime, never in the kernel.
    assert "ecall" not in f.kernel_histogram
    assert {"MRAM_READ", "MRAM_WRITE", "BARRIER_WAIT", "ME"} <= set(f.total_ecalls)
    region = {fn.name: fn.region for fn in f.functions}
    assert all(region[name] == "runtime" for name in VA_CALLS)


def test_va_counts_follow_the_toolchains_iram_rule(va_level):
    binary, f = va_level
    memory = binary.memory
    assert f.iram_instructions == memory.iram_instructions
    assert f.iram_kernel_instructions == memory.kernel_instructions
    assert f.iram_runtime_instructions == memory.runtime_instructions
    assert f.iram_softlib_instructions == memory.softlib_instructions
    assert f.text_instructions == memory.iram_instructions + memory.softlib_instructions


def test_va_configuration_and_footprint(va_level):
    binary, f = va_level
    m = f.footprint
    assert m.nr_tasklets == 16 and m.stack_size == binary.variant.stack_size
    assert m.wram_stack_bytes == 16 * 1024 == binary.memory.wram_stack_bytes
    assert m.wram_host_bytes == binary.memory.wram_host_bytes
    assert m.mram_static_bytes == binary.memory.mram_static_bytes


def test_va_loops_weigh_the_kernel_histogram(va_level):
    _, f = va_level
    assert f.max_loop_depth >= 1 and f.loops >= 1
    assert any(f.weighted_kernel_histogram[m] > f.kernel_histogram[m]
               for m in f.kernel_histogram)


def test_va_vector_fits_the_schema(va_level):
    _, f = va_level
    schema = default_schema()
    v = f.vector(schema)
    assert v.shape == (len(schema),) and not np.isnan(v).any()
    at = dict(zip(schema.names, v))
    assert at["call:mram_read"] == 2 and at["wcall:mram_write"] == 10
    assert at["call:other"] == 0


def test_optimisation_changes_the_kernel(va_features):
    (_, o0), (_, o2) = va_features["O0"], va_features["O2"]
    assert o0.kernel_histogram != o2.kernel_histogram
    # At O0, main picks vector_add with a host-written index: an indirect call.
    assert o0.indirect_calls == 1


@pytest.mark.parametrize("level", ["O0", "O2"])
def test_soft_arithmetic_is_called_by_name_and_not_charged(toolchain, make_kernel, level):
    binary = toolchain.compile(Variant.of(make_kernel(SOFT_ARITHMETIC, "soft"), level, 1))
    f = extract_features(binary.elf_path)
    # zig's compiler_rt names them like libgcc.
    assert f.kernel_calls["__mulsf3"] == 1 and f.kernel_calls["__divsi3"] == 1
    region = {fn.name: fn.region for fn in f.functions}
    assert region["__mulsf3"] == region["__divsi3"] == "softlib"
    assert f.iram_softlib_instructions == binary.memory.softlib_instructions > 0
    assert f.iram_instructions == binary.memory.iram_instructions
    assert f.text_instructions == f.iram_instructions + f.iram_softlib_instructions


def test_va_block_size_is_seen_in_its_allocations(va_level):
    # Two mem_alloc(BLOCK_BYTES = 1024); every DMA moves min(BLOCK_BYTES, what is left): not a
    # constant, so no DMA size.
    _, f = va_level
    assert (f.dma_bytes, f.alloc_bytes) == (0, 2048)


@pytest.mark.parametrize("level", ["O0", "O2"])
def test_block_size_defines_are_features(toolchain, level):
    """gemv's BL changes no opcode count; its DMA and buffer sizes do (2 x 2^BL + 8 bytes)."""
    gemv = find_kernel("gemv")
    features = {bl: model_features(toolchain.compile(Variant.of(gemv, level, 16, {"BL": bl})).elf_path)
                for bl in (7, 10)}
    assert features[7].kernel_histogram == features[10].kernel_histogram
    assert [(f.dma_bytes, f.alloc_bytes) for f in features.values()] == [(128, 264), (1024, 2056)]


def test_host_written_sizes_are_not_constants(toolchain):
    """loop-extract leaves bs's last DMA, ``end - (start + BLOCK_BYTES)``, computed from the
    host-written DPU_INPUT_ARGUMENTS (zero in the ELF's .dpu_host image) and from locals the
    outlined loop updates through their addresses: neither is a constant, so the largest
    constant DMA stays the block (256 bytes), not 0 - 256 as an unsigned word."""
    pipeline = ("mergefunc,constmerge,strip,lower-atomic,loop-rotate,sink,jump-threading,"
                "loop-extract,globalopt,instcombine")
    binary = toolchain.compile(Variant.of(find_kernel("bs"), pipeline, 16))
    image = load_elf(binary.elf_path)
    writable = {s.name for s in image.sections if s.writable and s.alloc}
    assert {".data", ".dpu_host"} <= writable and ".rodata" not in writable
    host = next(s for s in image.sections if s.name == ".dpu_host")
    assert image.constant_word(host.address) is None
    assert model_features(binary.elf_path).dma_bytes == 256


def test_trip_weighted_counts_order_builds_as_the_simulator_does(toolchain):
    """ts at BL=5 on 4 tasklets: O2 keeps the inner loop over the 32-element dot product, whose
    body branches on its counter (`bne j, zero`) and recomputes its bound from a register it does
    not write; O3 unrolls it whole. O2 executes about 1.5x O3's instructions, and the trip-weighted
    kernel counts say so (when the inner branch was read as the exit test, O2's loop counted one
    trip and O2 weighed 0.43x O3)."""
    ts = find_kernel("ts")
    binaries = {level: toolchain.compile(Variant.of(ts, level, 4, {"BL": 5})) for level in ("O2", "O3")}
    executed = {level: SimTarget().run_binary(binary, 1, ts.workload.preset("small")).instructions
                for level, binary in binaries.items()}
    weighted = {level: sum(model_features(binary.elf_path).weighted_kernel_histogram.values())
                for level, binary in binaries.items()}
    assert executed["O2"] > 1.3 * executed["O3"]
    assert weighted["O2"] > 1.3 * weighted["O3"]
