"""A kernel body compiled and launched on one simulated DPU (the tests of faults and ordering)."""

from __future__ import annotations

import pytest

from cnmtune.runtime.sim.device import SimDevice
from cnmtune.runtime.toolchain import Variant

PRELUDE = """
#include <alloc.h>
#include <barrier.h>
#include <defs.h>
#include <mram.h>
#include <stdint.h>
"""


@pytest.fixture
def launch(toolchain, make_kernel):
    """Compile a kernel body and launch it on one simulated DPU."""
    def run(body: str, tasklets: int = 1, budget: int | None = None, pipeline: str = "O0", reference: bool = False,
            launches: int = 1):
        kernel = make_kernel(PRELUDE + body)
        binary = toolchain.compile(Variant.of(kernel, pipeline, tasklets))
        device = SimDevice(1, reference=reference, **({"budget": budget} if budget else {}))
        device.load(binary.elf_path)
        for _ in range(launches):
            device.launch()
        return device
    return run
