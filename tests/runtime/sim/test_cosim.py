"""The jitted co-simulation (cosim.py) against the reference path it reproduces.

Each case runs one workload twice, on a device whose launches take the jitted call and on one
whose launches take the reference path (DpuTimeline driving _Functional from Python), and
requires the same results down to the bit: every launch's timing of every DPU, every column of
every trace, the outputs, the memories and the DPU's printed text.
"""

from __future__ import annotations

import numpy as np
import pytest

from cnmtune.runtime.registry import find_kernel
from cnmtune.runtime.sim import cosim
from cnmtune.runtime.sim.device import SimDevice
from cnmtune.runtime.sim.trace import Action
from cnmtune.runtime.toolchain import Variant

# (kernel, pipeline, tasklets, DPUs): handshake chains (sel), mutexes and barriers (hst-l, trns),
# uneven rows over 5 tasklets (spmv), a print in every launch (bs), many short segments over many
# launches (nw), priced multiplies (lorq), perfcounters at a DPU's 24 tasklets (red), O3 with runtime
# unrolling (va)
CASES = [("sel", "O2", 16, 2), ("hst-l", "O0", 8, 1), ("trns", "O2", 16, 1), ("spmv", "O2", 5, 2),
         ("bs", "O2", 16, 2), ("nw", "O2", 4, 1), ("lorq", "O2", 8, 1), ("red", "O2", 24, 2),
         ("va", "O3,unroll-count=4,unroll-runtime=1", 3, 2)]
TIMING_ARRAYS = ("issue_cycles", "dma_wait_cycles", "sync_wait_cycles", "slots", "instructions")
TRACE_COLUMNS = ("tasklet", "slots", "instructions", "routine_counts", "routine_params", "mram_accesses", "action",
                 "arg0", "arg1")


def _run(binary, kernel, variant, dpus: int, reference: bool):
    device = SimDevice(dpus, reference=reference)
    workload = kernel.workload(kernel.workload.preset("small"), dpus, variant.nr_tasklets, dict(variant.defines), 0)
    device.load(binary.elf_path)
    inputs = workload.inputs()
    outputs = workload.execute(device, inputs)
    workload.verify(outputs, workload.reference(inputs))
    return device, outputs


def _assert_same_launches(jitted: SimDevice, reference: SimDevice) -> None:
    assert len(jitted.launches) == len(reference.launches)
    for ours, theirs in zip(jitted.launches, reference.launches):
        assert ours.kernel_s == theirs.kernel_s
        for timing, expected in zip(ours.timings, theirs.timings):
            assert (timing.cycles, timing.dma_read_bytes, timing.dma_write_bytes, timing.dma_transfers) == \
                   (expected.cycles, expected.dma_read_bytes, expected.dma_write_bytes, expected.dma_transfers)
            for field in TIMING_ARRAYS:
                ours_field, theirs_field = getattr(timing, field), getattr(expected, field)
                assert ours_field.dtype == theirs_field.dtype and np.array_equal(ours_field, theirs_field), field
        for trace, expected in zip(ours.traces, theirs.traces):
            assert trace.routines == expected.routines
            for column in TRACE_COLUMNS:
                ours_column, theirs_column = getattr(trace, column), getattr(expected, column)
                assert ours_column.dtype == theirs_column.dtype and np.array_equal(ours_column, theirs_column), column


@pytest.mark.parametrize("case", CASES, ids=lambda case: "-".join(map(str, case)))
def test_the_jitted_launch_is_the_reference_launch(case, toolchain):
    name, pipeline, tasklets, dpus = case
    kernel = find_kernel(name)
    variant = Variant.of(kernel, pipeline, tasklets)
    binary = toolchain.compile(variant)
    jitted, jitted_outputs = _run(binary, kernel, variant, dpus, reference=False)
    reference, reference_outputs = _run(binary, kernel, variant, dpus, reference=True)
    _assert_same_launches(jitted, reference)
    for ours, theirs in zip(jitted.dpus, reference.dpus):
        assert np.array_equal(ours.state.wram, theirs.state.wram)
        assert np.array_equal(ours.state.mram, theirs.state.mram)
        assert ours.log_text() == theirs.log_text()
    assert repr(jitted_outputs) == repr(reference_outputs)
    if name == "bs":  # the case exercises the jitted call's prints
        assert jitted.dpus[0].log_text()


@pytest.mark.parametrize("prints", [3, cosim.PRINT_LIMIT + 1])
def test_prints_keep_their_text_and_order_on_both_paths(prints, launch):
    """Within PRINT_LIMIT the jitted call formats the prints from its WRAM copies; past it the
    launch runs again on the reference path from the memories it started from."""
    body = f"""
    #include <stdio.h>
    #include <handshake.h>
    __host uint32_t counter;
    int main(void) {{
        for (int i = 0; i < {prints}; i++) {{
            if (me() == 1) handshake_wait_for(0);
            counter += 1;  /* the memory a rerun must start from */
            printf("t%u i%d c%u\\n", me(), i, counter);
            putchar('.');
            if (me() == 0) handshake_notify();
        }}
        if (me() == 0) puts("done");
        return 0;
    }}
    """
    # the second launch starts from the first one's WRAM
    jitted, reference = (launch(body, 2, pipeline="O2", reference=reference, launches=2) for reference in (False, True))
    _assert_same_launches(jitted, reference)
    assert jitted.log(0) == reference.log(0)
    assert jitted.copy_from(0, "counter", 4) == (4 * prints).to_bytes(4, "little")
    text = jitted.log(0)
    assert text.count("t0 ") == text.count("t1 ") == 2 * prints and text.count(".") == 4 * prints
    assert text.count("done\n") == 2 and text.startswith("t0 i0 c1\n.")


SYNC_ZOO = """
#include <handshake.h>
#include <mutex.h>
#include <perfcounter.h>
#include <sem.h>
SEMAPHORE_INIT(slots, 2);
MUTEX_INIT(lock);
BARRIER_INIT(all, NR_TASKLETS);
__host uint32_t total, tries, stamps[NR_TASKLETS];
__host uint64_t elapsed;
__dma_aligned uint64_t block[NR_TASKLETS][8];
int main(void) {
    uint32_t t = me();
    if (t == 0) perfcounter_config(COUNT_CYCLES, true);
    barrier_wait(&all);
    for (int round = 0; round < 3; round++) {
        sem_take(&slots);                        /* at most two tasklets inside */
        mram_read((__mram_ptr void *)(DPU_MRAM_HEAP_POINTER + t * 64), block[t], 64);
        block[t][0] += t + round;
        mram_write(block[t], (__mram_ptr void *)(DPU_MRAM_HEAP_POINTER + t * 64), 64);
        sem_give(&slots);
        while (!mutex_trylock(lock))             /* spins: busy ACQUIRE, a delayed re-try */
            tries++;
        total += *(volatile __mram_ptr uint32_t *)(DPU_MRAM_HEAP_POINTER + t * 64);  /* a direct MRAM load */
        mutex_unlock(lock);
        if (t > 0) handshake_wait_for(t - 1);
        stamps[t] = (uint32_t)perfcounter_get();
        if (t + 1 < NR_TASKLETS) handshake_notify();
        barrier_wait(&all);
    }
    if (t == 0) elapsed = perfcounter_config(COUNT_INSTRUCTIONS, true);
    return 0;
}
"""


@pytest.mark.parametrize("tasklets", [1, 6])
def test_every_synchronisation_is_the_reference_one(tasklets, launch):
    """Semaphores, try-locks that spin, handshakes, barriers, counters and direct MRAM loads."""
    jitted, reference = (launch(SYNC_ZOO, tasklets, pipeline="O2", reference=reference, launches=2)
                         for reference in (False, True))
    _assert_same_launches(jitted, reference)
    for symbol, size in (("total", 4), ("tries", 4), ("stamps", 4 * tasklets), ("elapsed", 8)):
        assert jitted.copy_from(0, symbol, size) == reference.copy_from(0, symbol, size)
    actions = set(jitted.launches[0].traces[0].action.tolist())
    assert {Action.SEM_TAKE, Action.SEM_GIVE, Action.ACQUIRE, Action.RELEASE, Action.BARRIER,
            Action.PERF_CONFIG, Action.PERF_GET, Action.STOP} <= actions
    if tasklets > 1:
        assert {Action.NOTIFY, Action.WAIT_FOR} <= actions
        assert int.from_bytes(jitted.copy_from(0, "tries", 4), "little") > 0
    assert jitted.launches[0].traces[0].mram_accesses.sum() > 0
