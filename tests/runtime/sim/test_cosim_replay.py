"""Co-simulation against its own trace: replay reproduces the timing, pricing matches per segment.

The co-simulating source prices each segment itself (with a scalar fast path when the segment
entered one table-charged routine once) and records the trace in columns; these tests pin
both to the definitions: `retime` of the recorded trace gives the co-simulated timing, and the
issue slots of every segment the timing model consumed are exactly (bit for bit) the trace row's
``slots + float(counts @ base + params @ per)``, under a config whose routine costs are all
inexact in binary.
"""

from __future__ import annotations

from dataclasses import replace
from typing import ClassVar

import numpy as np
import pytest

from cnmtune.runtime.registry import find_kernel
from cnmtune.runtime.sim import dpu as dpu_module
from cnmtune.runtime.sim.config import DpuConfig
from cnmtune.runtime.sim.device import SimDevice
from cnmtune.runtime.sim.timing import DpuTimeline, retime, routine_cost_vectors
from cnmtune.runtime.sim.trace import Action
from cnmtune.runtime.toolchain import Variant

# (kernel, pipeline, tasklets, DPUs): DMA-bound (bs), mutex + barriers (hst-l, trns), handshakes and
# perfcounters (red), priced multiplies in most segments and 100 launches (lorq)
CASES = [("bs", "O2", 16, 2), ("hst-l", "O0", 8, 1), ("trns", "O2", 16, 1), ("red", "O2", 16, 2),
         ("lorq", "O2", 8, 1)]


def _inexact(config: DpuConfig) -> DpuConfig:
    """The config with every routine cost moved off the integers (products round in binary)."""
    return config.with_(routine_costs=tuple(replace(c, base=c.base + 0.1234567, per_param=c.per_param + 0.7654321)
                                            for c in config.routine_costs))


def _reference_prices(trace, config: DpuConfig) -> list[float]:
    """The issue slots of each segment of a trace as the timing model defines them."""
    base, per = routine_cost_vectors(config, trace.routines)
    return [slots + float(counts @ base + params @ per) if counts.any() else slots
            for slots, counts, params in zip(trace.slots.tolist(), trace.routine_counts, trace.routine_params)]


class _Recording(DpuTimeline):
    """A DpuTimeline that keeps the slots of every segment its source hands it, in order."""

    timelines: ClassVar[list[_Recording]] = []

    def __init__(self, config, routines, source, dpu=0):
        self.prices: list[float] = []
        step = source.step

        class Source:
            def step(_, tasklet, now, value):
                segment = step(tasklet, now, value)
                self.prices.append(segment.slots)
                return segment

        super().__init__(config, routines, Source(), dpu)
        _Recording.timelines.append(self)


@pytest.fixture(scope="module", params=CASES, ids=lambda case: "-".join(map(str, case)))
def cosimulated(request, toolchain):
    """(device, the recorded prices of each DPU of each launch, in launch and DPU order)."""
    name, pipeline, tasklets, dpus = request.param
    kernel = find_kernel(name)
    variant = Variant.of(kernel, pipeline, tasklets)
    binary = toolchain.compile(variant)
    device = SimDevice(dpus, _inexact(DpuConfig.calibrated()))
    workload = kernel.workload(kernel.workload.preset("small"), dpus, tasklets, dict(variant.defines), 0)
    device.load(binary.elf_path)
    inputs = workload.inputs()
    _Recording.timelines = []
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(dpu_module, "DpuTimeline", _Recording)
        outputs = workload.execute(device, inputs)
    workload.verify(outputs, workload.reference(inputs))
    return device, [timeline.prices for timeline in _Recording.timelines]


def test_replay_reproduces_the_cosimulated_timing(cosimulated):
    device, _ = cosimulated
    config = device.config
    for record in device.launches:
        for timing, trace in zip(record.timings, record.traces):
            again = retime(trace, config)
            assert again.cycles == timing.cycles
            assert (again.dma_read_bytes, again.dma_write_bytes, again.dma_transfers) == \
                   (timing.dma_read_bytes, timing.dma_write_bytes, timing.dma_transfers)
            assert np.array_equal(again.instructions, timing.instructions)
            for field in ("slots", "issue_cycles", "dma_wait_cycles", "sync_wait_cycles"):
                assert np.allclose(getattr(again, field), getattr(timing, field), rtol=1e-12, atol=1e-6), field


def test_cosimulated_slots_are_the_per_segment_prices(cosimulated):
    device, recorded = cosimulated
    config = device.config
    assert len(recorded) == sum(len(record.traces) for record in device.launches)
    prices = iter(recorded)
    entered = 0
    for record in device.launches:
        for timing, trace in zip(record.timings, record.traces):
            assert next(prices) == _reference_prices(trace, config)  # exact, not approximate
            totals = np.zeros(len(timing.slots))
            np.add.at(totals, trace.tasklet, np.array(_reference_prices(trace, config), dtype=np.float64))
            assert np.allclose(timing.slots, totals, rtol=1e-12)
            assert int(timing.instructions.sum()) == trace.instructions_total
            for t in np.unique(trace.tasklet).tolist():  # every booted tasklet ran to its stop
                assert trace.action[trace.tasklet == t][-1] == Action.STOP
            entered += int(trace.routine_counts.any(axis=1).sum())
    assert entered  # the priced-routine paths were exercised
