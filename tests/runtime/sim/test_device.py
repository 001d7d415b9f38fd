"""The Device API on the simulator: symbols, transfers, persistence, logs, runtime services."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from cnmtune.errors import DeviceError
from cnmtune.runtime.device import DPU_MRAM_HEAP_POINTER_NAME
from cnmtune.runtime.sim.config import DpuConfig
from cnmtune.runtime.sim.device import SimDevice, Transfer, TransferTimes, transfer_seconds, transfer_times
from cnmtune.runtime.toolchain import Variant

SERVICES = r"""
#include <alloc.h>
#include <barrier.h>
#include <defs.h>
#include <handshake.h>
#include <mram.h>
#include <mutex.h>
#include <perfcounter.h>
#include <sem.h>
#include <stdint.h>
#include <stdio.h>

__host uint32_t launches;             /* WRAM global: survives launches */
__host uint32_t counter;              /* incremented under a mutex by every tasklet */
__host uint32_t chain[NR_TASKLETS];   /* handshake chain: tasklet t sees t's predecessor's value */
__host uint64_t cycles[NR_TASKLETS];
__host uint32_t sem_order;
MUTEX_INIT(lock);
BARRIER_INIT(all, NR_TASKLETS);
SEMAPHORE_INIT(gate, 0);

int main(void) {
    unsigned t = me();
    if (t == 0) {
        launches++;
        perfcounter_config(COUNT_CYCLES, true);
    }
    barrier_wait(&all);
    mutex_lock(lock);
    counter++;
    mutex_unlock(lock);
    if (t > 0) {
        handshake_wait_for(t - 1);
        chain[t] = chain[t - 1] + t;
    }
    if (t + 1 < NR_TASKLETS)
        handshake_notify();
    if (t == 1) { sem_take(&gate); sem_order = 2; }
    if (t == 0) { sem_order = 1; sem_give(&gate); }
    barrier_wait(&all);
    cycles[t] = perfcounter_get();
    /* MRAM: each launch adds one to the first word of the heap */
    __dma_aligned uint64_t word;
    if (t == 0) {
        mram_read(DPU_MRAM_HEAP_POINTER, &word, 8);
        word += 1;
        mram_write(&word, DPU_MRAM_HEAP_POINTER, 8);
        printf("launch %u: counter=%u chain=%u %s %lld %.2f\n", launches, counter, chain[NR_TASKLETS - 1], "ok",
               (long long)-5, 2.5);
    }
    return 0;
}
"""


@pytest.fixture(scope="module")
def services_elf(tmp_path_factory, isolated_cache):
    from cnmtune.runtime import Kernel
    from cnmtune.runtime.toolchain import BuildCache, ProxyToolchain

    root = tmp_path_factory.mktemp("services")
    (root / "dpu").mkdir()
    (root / "dpu" / "task.c").write_text(SERVICES)
    toolchain = ProxyToolchain(BuildCache(isolated_cache))
    return toolchain.compile(Variant.of(Kernel.load(root), "O2", 4)).elf_path


def u32(data: bytes) -> list[int]:
    return np.frombuffer(data, np.uint32).tolist()


def test_services_globals_and_mram_persist_across_launches(services_elf):
    device = SimDevice(2)
    device.load(services_elf)
    device.launch()
    device.launch()
    for dpu in range(2):
        assert u32(device.copy_from(dpu, "launches", 4)) == [2]
        assert u32(device.copy_from(dpu, "counter", 4)) == [8]  # 4 tasklets x 2 launches, no lost update
        assert u32(device.copy_from(dpu, "chain", 16)) == [0, 1, 3, 6]
        assert u32(device.copy_from(dpu, "sem_order", 4)) == [2]
        assert np.frombuffer(device.copy_from(dpu, DPU_MRAM_HEAP_POINTER_NAME, 8), np.uint64)[0] == 2
    assert device.log(1) == ("launch 1: counter=4 chain=6 ok -5 2.50\n"
                             "launch 2: counter=8 chain=6 ok -5 2.50\n")
    cycles = np.frombuffer(device.copy_from(0, "cycles", 32), np.uint64)
    assert all(c > 0 and c % 16 == 0 for c in cycles)
    assert device.times.launches == 2 and device.times.kernel_s > 0


def test_host_writes_reach_the_dpu(services_elf):
    device = SimDevice(3)
    device.load(services_elf)
    device.push_to("launches", [np.array([10 * d], np.uint32) for d in range(3)])
    device.broadcast(DPU_MRAM_HEAP_POINTER_NAME, np.array([40], np.uint64))
    device.copy_to(2, DPU_MRAM_HEAP_POINTER_NAME, np.array([7], np.uint64))
    device.launch()
    assert [u32(b)[0] for b in device.push_from("launches", 4)] == [1, 11, 21]
    heads = [np.frombuffer(b, np.uint64)[0] for b in device.push_from(DPU_MRAM_HEAP_POINTER_NAME, 8)]
    assert heads == [41, 41, 8]


def test_device_misuse_is_refused(services_elf):
    device = SimDevice(2)
    with pytest.raises(DeviceError, match="no program loaded"):
        device.launch()
    device.load(services_elf)
    with pytest.raises(DeviceError, match="symbol 'nope' is not defined"):
        device.copy_to(0, "nope", b"12345678")
    with pytest.raises(DeviceError, match="same size on every DPU"):
        device.push_to("launches", [b"1234", b"12345678"])
    with pytest.raises(DeviceError, match="one buffer per DPU"):
        device.push_to("launches", [b"1234"])
    with pytest.raises(DeviceError, match="DPU 5 does not exist"):
        device.copy_from(5, "launches", 4)
    with pytest.raises(DeviceError, match="outside WRAM and MRAM"):
        device.copy_to(0, "launches", bytes(8), offset=70000)


def test_transfer_model_shape():
    config = DpuConfig(transfer_latency_s=0.0, host_to_dpu_Bps=1e9, chip_to_dpu_Bps=8e9, rank_to_dpu_Bps=8e9,
                       dpus_per_rank=64)
    one = transfer_seconds(Transfer(True, "parallel", 1 << 20, 1), config)
    four = transfer_seconds(Transfer(True, "parallel", 1 << 20, 4), config)
    rank = transfer_seconds(Transfer(True, "parallel", 1 << 20, 64), config)
    two_ranks = transfer_seconds(Transfer(True, "parallel", 1 << 20, 128), config)
    assert four == pytest.approx(one)  # below the rank cap, DPUs transfer side by side
    assert rank == pytest.approx(64 * (1 << 20) / 8e9)  # capped by the rank
    assert two_ranks == pytest.approx(rank)  # ranks transfer concurrently
    chips = config.with_(chip_to_dpu_Bps=2e9, rank_to_dpu_Bps=100e9)
    eight = transfer_seconds(Transfer(True, "parallel", 1 << 20, 8), chips)
    sixteen = transfer_seconds(Transfer(True, "parallel", 1 << 20, 16), chips)
    assert eight == pytest.approx(8 * (1 << 20) / 2e9)  # the 8 DPUs of one chip share its interface
    assert sixteen == pytest.approx(eight)  # two chips side by side
    per_dpu = config.with_(transfer_per_dpu_s=1e-6)
    assert transfer_seconds(Transfer(True, "parallel", 1 << 20, 64), per_dpu) == pytest.approx(rank + 64e-6)


def test_contended_mutex_and_heap_lock_lose_no_update(toolchain, make_kernel):
    kernel = make_kernel("""
    #include <alloc.h>
    #include <barrier.h>
    #include <defs.h>
    #include <mutex.h>
    #include <stdint.h>
    BARRIER_INIT(start, NR_TASKLETS);
    MUTEX_INIT(lock);
    __host uint32_t counter;
    __host uint32_t distinct;
    int main(void) {
        if (me() == 0) mem_reset();
        barrier_wait(&start);
        uint32_t *mine = mem_alloc(48);  /* every tasklet takes the heap lock at once */
        *mine = me();
        for (int i = 0; i < 100; i++) { mutex_lock(lock); counter++; mutex_unlock(lock); }
        barrier_wait(&start);
        mutex_lock(lock); distinct += (*mine == me()); mutex_unlock(lock);
        return 0;
    }
    """)
    for pipeline in ("O0", "O2"):
        device = SimDevice(1, budget=50_000_000)
        device.load(toolchain.compile(Variant.of(kernel, pipeline, 16)).elf_path)
        device.launch()
        assert u32(device.copy_from(0, "counter", 4)) == [1600]
        assert u32(device.copy_from(0, "distinct", 4)) == [16]  # no two tasklets got the same block


def test_transfers_inside_inter_dpu_are_their_own_step(services_elf):
    device = SimDevice(2)
    device.load(services_elf)
    device.push_to("launches", [np.zeros(1, np.uint32)] * 2)
    device.launch()
    with device.inter_dpu():
        device.push_from("launches", 4)
        device.copy_to(1, "launches", np.zeros(1, np.uint32))
    device.launch()
    device.copy_from(0, "counter", 4)
    assert [t.inter_dpu for t in device.transfers] == [False, True, True, False]
    times = device.times
    split = transfer_times(device.transfers, device.config)
    assert split == TransferTimes(times.host_to_dpu_s, times.inter_dpu_s, times.dpu_to_host_s)
    assert split.inter_dpu_s == pytest.approx(sum(transfer_seconds(t, device.config) for t in device.transfers[1:3]))
    assert (times.host_to_dpu_bytes, times.inter_dpu_bytes, times.dpu_to_host_bytes) == (8, 12, 4)
    assert not device._in_inter_dpu  # the step ends with the block


def test_a_counted_transfer_log_costs_what_the_log_costs():
    """A learned sweep prices a run's distinct calls once per design point, each times its count."""
    config = DpuConfig.calibrated()
    log = ([Transfer(True, "parallel", 2048, 64)] * 40 + [Transfer(False, "serial", 8, 1)] * 7
           + [Transfer(True, "broadcast", 64, 64, inter_dpu=True)] * 3)
    counted, plain = transfer_times(Counter(log), config), transfer_times(log, config)
    for step in ("host_to_dpu_s", "inter_dpu_s", "dpu_to_host_s"):
        assert getattr(counted, step) == pytest.approx(getattr(plain, step), rel=1e-12)
    assert counted.host_to_dpu_s == pytest.approx(40 * transfer_seconds(log[0], config), rel=1e-12)
