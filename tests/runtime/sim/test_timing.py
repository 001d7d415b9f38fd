"""The timing model: revolver issue, DMA latency and engine sharing, synchronisation, re-timing."""

from __future__ import annotations

import numpy as np
import pytest

from cnmtune.runtime.sim.config import DpuConfig
from cnmtune.runtime.sim.device import SimDevice
from cnmtune.runtime.sim.timing import DpuTimeline, retime
from cnmtune.runtime.sim.trace import Action, Segment, Trace
from cnmtune.runtime.toolchain import Variant

NO_ROUTINES = np.zeros(0, dtype=np.int64)
CONFIG = DpuConfig(pipeline_depth=0)


def seg(t: int, slots: int, action: Action, arg0: int = 0, arg1: int = 0) -> Segment:
    return Segment(t, slots, slots, NO_ROUTINES, NO_ROUTINES, 0, action, arg0, arg1)


def program(n: int, work: list[tuple[int, Action, int]]) -> Trace:
    """Tasklet 0 boots the others (as crt0 does), then every tasklet runs `work` and stops."""
    segments = []
    for t in range(n):
        if t + 1 < n:
            segments.append(seg(t, 0, Action.BOOT, t + 1))
        segments += [seg(t, slots, action, arg) for slots, action, arg in work]
        segments.append(seg(t, 0, Action.STOP))
    return Trace.from_segments((), segments)


@pytest.mark.parametrize("tasklets, expected", [(1, 11 * 1000), (11, 11 * 1000), (16, 16 * 1000), (22, 22 * 1000)])
def test_revolver_issue_rate(tasklets, expected):
    timing = retime(program(tasklets, [(1000, Action.PERF_GET, 0)]), CONFIG)
    assert timing.cycles == pytest.approx(expected, rel=1e-6)
    assert timing.slots.sum() == 1000 * tasklets


def test_dma_latency_is_alpha_plus_beta_bytes():
    cfg = DpuConfig(pipeline_depth=0, dma_read_alpha=77, dma_write_alpha=61, dma_beta=0.5)
    read = retime(program(1, [(0, Action.DMA_READ, 2048)]), cfg)
    write = retime(program(1, [(0, Action.DMA_WRITE, 2048)]), cfg)
    assert read.cycles == 77 + 1024 and write.cycles == 61 + 1024
    assert read.dma_read_bytes == 2048 and write.dma_write_bytes == 2048


def test_one_dma_engine_is_shared():
    cfg = DpuConfig(pipeline_depth=0, dma_read_alpha=100, dma_beta=1.0)
    timing = retime(program(4, [(0, Action.DMA_READ, 1000)]), cfg)
    # the four requests queue on the engine: the last starts after 3 x 1000 cycles of occupancy
    assert timing.cycles == 3 * 1000 + 100 + 1000
    assert timing.dma_transfers == 4


@pytest.mark.parametrize("computing, expected", [(15, 16_000 * 1.0 + 3_000), (1, 16_000)])
def test_dma_transfers_share_the_wram_port_with_issue(computing, expected):
    """While the engine transfers, the DPU issues at most 1 - wram_dma_share per cycle: 15 tasklets
    computing 1,000 slots each issue 12,000 slots in the 16,000 cycles of a transfer (0.75 per
    cycle), the last 3,000 after it at the full rate; one tasklet, bound by the revolver at 1/11,
    does not feel the port."""
    cfg = DpuConfig(pipeline_depth=0, dma_read_alpha=0, dma_beta=1.0, wram_dma_share=0.25)
    n = computing + 1
    segments = [seg(t, 0, Action.BOOT, t + 1) for t in range(n - 1)]
    segments += [seg(0, 0, Action.DMA_READ, 16_000), seg(0, 0, Action.STOP)]
    segments += [seg(t, 1000, Action.STOP) for t in range(1, n)]
    timing = retime(Trace.from_segments((), segments), cfg)
    assert timing.cycles == pytest.approx(expected, rel=1e-6)
    unshared = retime(Trace.from_segments((), segments), cfg.with_(wram_dma_share=0.0))
    assert unshared.cycles == pytest.approx(max(16_000, 1000 * max(computing, 11)), rel=1e-6)


def test_barrier_waits_for_the_slowest():
    segments = [seg(0, 0, Action.BOOT, 1), seg(0, 100, Action.BARRIER, 64, 2), seg(0, 10, Action.STOP),
                seg(1, 1000, Action.BARRIER, 64, 2), seg(1, 10, Action.STOP)]
    timing = retime(Trace.from_segments((), segments), CONFIG)
    assert timing.cycles == 11 * 1000 + 11 * 10
    assert timing.sync_wait_cycles[0] == pytest.approx(11 * 900)


def test_handshake_and_semaphore_order():
    segments = [seg(0, 0, Action.BOOT, 1), seg(0, 500, Action.NOTIFY), seg(0, 0, Action.STOP),
                seg(1, 10, Action.WAIT_FOR, 0), seg(1, 0, Action.SEM_GIVE, 80, 0), seg(1, 0, Action.STOP)]
    timing = retime(Trace.from_segments((), segments), CONFIG)
    assert timing.cycles == 11 * 500
    assert timing.sync_wait_cycles[1] == pytest.approx(11 * 490)


def test_perfcounter_reads_model_time_in_16_cycle_steps():
    class Source:
        def __init__(self):
            self.values = []
            self.queue = [seg(0, 0, Action.PERF_CONFIG, 1, 1), seg(0, 100, Action.PERF_GET), seg(0, 0, Action.STOP)]

        def step(self, tasklet, now, value):
            self.values.append(value)
            return self.queue.pop(0)

    source = Source()
    DpuTimeline(CONFIG, (), source).run()
    assert source.values[2] == 1100 // 16 * 16


def test_cosimulation_and_replay_agree_and_retiming_scales(toolchain, va):
    binary = toolchain.compile(Variant.of(va, "O2", 16))
    workload = va.workload(16384, 2, 16, {"BL": 10, "INT32": None})
    device = SimDevice(2)
    device.load(binary.elf_path)
    inputs = workload.inputs()
    workload.verify(workload.execute(device, inputs), workload.reference(inputs))
    record = device.launches[-1]
    for timing, trace in zip(record.timings, record.traces):
        again = retime(trace, device.config)
        assert again.cycles == timing.cycles
        assert np.allclose(again.slots, timing.slots)
    trace = record.traces[0]
    slower_dma = retime(trace, device.config.with_(dma_beta=2.0))
    assert slower_dma.cycles > record.timings[0].cycles
    cheap_period = retime(trace, device.config.with_(revolver_period=1))
    assert cheap_period.cycles < record.timings[0].cycles
