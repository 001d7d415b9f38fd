"""The simulator charges DPU instructions (the lowering model's slots), not rv32i ones: real
compiles, real simulator runs."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from cnmtune.dpu import slots as dpu_slots
from cnmtune.runtime import Kernel
from cnmtune.runtime.execute import run_binary
from cnmtune.runtime.sim.config import DpuConfig
from cnmtune.runtime.sim.image import ProgramImage
from cnmtune.runtime.toolchain import ProxyToolchain, Variant

BENCH = Path(__file__).resolve().parents[3] / "benchmarks"


@pytest.fixture(scope="module")
def toolchain() -> ProxyToolchain:
    return ProxyToolchain()


def test_the_image_carries_the_lowered_weights(toolchain):
    binary = toolchain.compile(Variant.of(Kernel.load(BENCH / "micro" / "arith"), "O2", 16,
                                          {"INT64": None, "ADD": None}))
    image = ProgramImage.load(binary.elf_path)
    weights = image.dpu_slots.weights
    assert len(weights) == len(image.text) // 4 and weights.dtype == np.int8
    assert (weights == 0).any() and (weights == 2).any()  # fused pairs, and the index induction
    assert binary.memory.iram_dpu_instructions == image.dpu_slots.iram_instructions


def test_outputs_are_unchanged_only_times_change(toolchain):
    """VA verified under the lowering and under one slot per rv32i word: the same program runs,
    only the DPU charge differs (and with it the config hash that keys stored times)."""
    binary = toolchain.compile(Variant.of(Kernel.load(BENCH / "prim" / "va"), "O2", 16))
    lowered, lowered_hash = run_binary(binary, 2, 8192), DpuConfig().hash
    model, identity = dpu_slots.installed_slot_model()

    def ones(elf: bytes, name: str) -> dpu_slots.DpuSlots:
        words = model(elf, name).weights
        return dpu_slots.DpuSlots(np.ones_like(words), len(words))

    dpu_slots.install_slot_model(ones, lambda: "one-per-rv32i-word")
    try:
        rv32, rv32_hash = run_binary(binary, 2, 8192), DpuConfig().hash
    finally:
        dpu_slots.install_slot_model(model, identity)
    assert rv32.verified and lowered.verified
    assert rv32.instructions == lowered.instructions
    assert rv32.slots != lowered.slots and rv32.cycles != lowered.cycles
    assert rv32_hash != lowered_hash


def test_mulsi3_costs_n_plus_6_in_the_routine(toolchain):
    """__mulsi3 as the SDK's mul32.c: N + 6 instructions, N the bit length of the smaller unsigned
    operand (the call instruction itself is the kernel's). 31-bit data times 3 (N = 2) and times
    2^20 (N = 21): 8 and 27 slots per multiply; the other routines (DMA, barriers) are the same."""
    kernel = Kernel.load(BENCH / "micro" / "arith")
    n, per_call = 1024, {}
    for scalar in (3, 1 << 20):
        binary = toolchain.compile(Variant.of(kernel, "O2", 1, {"INT32": None, "MUL": None, "SCALAR": scalar}))
        result = run_binary(binary, 1, n, DpuConfig())
        assert result.verified
        per_call[scalar] = result.routine_slots / n
    assert per_call[1 << 20] - per_call[3] == pytest.approx(19, abs=0.01)
    assert 8 <= per_call[3] < 8.3
