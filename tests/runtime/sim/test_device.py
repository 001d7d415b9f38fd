"""The Device API on the simulator: symbols, transfers, persistence, logs, runtime services."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from cnmtune.errors import DeviceError
from cnmtune.runtime.device import DPU_MRAM_HEAP_POINTER_NAME
from cnmtune.runtime.registry import find_kernel
from cnmtune.runtime.sampled import SampledSimDevice
from cnmtune.runtime.sim import calibrated, calibration
from cnmtune.runtime.sim.config import DpuConfig
from cnmtune.runtime.sim.device import (
    SimDevice,
    Transfer,
    TransferTimes,
    transfer_bounds,
    transfer_seconds,
    transfer_times,
    transfer_times_under,
)
from cnmtune.runtime.sim.design_space import sample_designs
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
    with pytest.raises(DeviceError, match="one buffer for each of its DPUs"):
        device.write([], "launches", [])
    device.copy_to(0, "launches", np.array([3], np.uint32))
    with pytest.raises(DeviceError, match="a copy to or from one DPU"):  # refused before any byte is written
        device.write([0, 1], "launches", [np.array([9], np.uint32)] * 2, kind="copy")
    assert u32(device.copy_from(0, "launches", 4)) == [3] and len(device.transfers) == 2


def test_many_small_copies_cost_their_calls_plus_their_bytes(services_elf):
    """Issue 41: a host loop of 1,000 dpu_copy_to of 64 B pays 1,000 call costs plus its bytes, not a
    bandwidth-smooth share of 64 kB."""
    config = DpuConfig.calibrated()
    device = SimDevice(1, config)
    device.load(services_elf)
    for k in range(1000):
        device.copy_to(0, DPU_MRAM_HEAP_POINTER_NAME, bytes(64), offset=64 * k)
    per_call = config.xfer_call_s + config.xfer_mram_per_dpu_s
    per_byte = config.xfer_to_s_per_B * config.xfer_host_cached_fraction  # 1 DPU: 1 ** exponent
    assert device.times.host_to_dpu_s == pytest.approx(1000 * (per_call + 64 * per_byte), rel=1e-3)
    assert device.times.host_to_dpu_s == pytest.approx(1000 * config.xfer_call_s, rel=0.05)  # calls dominate
    assert {(t.kind, t.memory, t.nr_dpus) for t in device.transfers} == {("copy", "mram", 1)}


def test_a_serial_copy_to_n_dpus_costs_n_per_dpu_copies_and_a_push_less(services_elf):
    config = DpuConfig.calibrated()
    for symbol, memory in ((DPU_MRAM_HEAP_POINTER_NAME, "mram"), ("launches", "wram")):
        one = SimDevice(1, config)
        one.load(services_elf)
        one.copy_to(0, symbol, bytes(4))
        serial, pushed = SimDevice(16, config), SimDevice(16, config)
        for device in (serial, pushed):
            device.load(services_elf)
        for dpu in range(16):
            serial.copy_to(dpu, symbol, bytes(4))
        pushed.push_to(symbol, [bytes(4) for _ in range(16)])
        assert serial.times.host_to_dpu_s == pytest.approx(16 * one.times.host_to_dpu_s)
        assert pushed.times.host_to_dpu_s < serial.times.host_to_dpu_s / 4
        assert pushed.transfers[0].memory == memory and pushed.transfers[0].kind == "push"


def test_transfer_model_shape():
    config = DpuConfig.calibrated()
    mib = 1 << 20

    def seconds(to_dpu=True, kind="push", nbytes=mib, dpus=1, memory="mram", shared=False):
        return transfer_seconds(Transfer(to_dpu, kind, nbytes, dpus, memory=memory, shared_buffer=shared), config)

    # MRAM: per-byte row work + a host share that grows with the rank's DPUs; ranks run concurrently
    assert seconds(dpus=1) < seconds(dpus=64) < 64 * seconds(dpus=1)
    assert seconds(dpus=128) == pytest.approx(seconds(dpus=64), rel=0.01)
    # a broadcast is priced per DPU it reaches (PrIM counts DPUs x bytes / time), below distinct buffers
    broadcast = seconds(kind="broadcast", dpus=64)
    assert broadcast > seconds(dpus=1) and broadcast < seconds(dpus=64)
    assert seconds(dpus=64, shared=True) == pytest.approx(broadcast)
    # reading MRAM: a fixed extra per call, slower per byte
    assert seconds(to_dpu=False, nbytes=8) == pytest.approx(seconds(nbytes=8) + config.xfer_mram_read_s, rel=1e-3)
    # WRAM: DPU by DPU for a push, once for a broadcast
    wram = seconds(nbytes=256, dpus=64, memory="wram")
    assert wram == pytest.approx(config.xfer_call_s + 64 * 256 * config.xfer_wram_s_per_B)
    assert seconds(kind="broadcast", nbytes=256, dpus=64, memory="wram") == pytest.approx(
        config.xfer_call_s + 256 * config.xfer_wram_s_per_B)
    with pytest.raises(ValueError, match="a copy addresses one DPU"):
        Transfer(True, "copy", 8, 2)
    with pytest.raises(ValueError, match="kind 'serial'"):
        Transfer(True, "serial", 8, 1)
    with pytest.raises(ValueError, match="a broadcast writes to the DPUs"):
        Transfer(False, "broadcast", 8, 4)


def test_the_transfer_constants_ends_bound_every_call():
    """transfer_bounds: each constant at the end of its fitted 5-95 % range that makes transfers
    cheapest (dearest) prices every kind of call at most (at least) as any constants within the
    ranges do: call_seconds is monotone in each constant."""
    config = DpuConfig.calibrated()
    cheap, dear = transfer_bounds(config, calibrated.TRANSFER_RANGES)
    assert cheap.xfer_call_s < config.xfer_call_s < dear.xfer_call_s
    assert cheap.xfer_host_cache_bytes > dear.xfer_host_cache_bytes  # a larger cache holds more host buffers
    rng = np.random.default_rng(41)
    inside = [config.with_(**{name: rng.uniform(low, high) for name, (low, high) in calibrated.TRANSFER_RANGES.items()})
              for _ in range(20)]
    calls = [Transfer(to_dpu, kind, nbytes, dpus if kind != "copy" else 1, memory=memory, shared_buffer=shared)
             for to_dpu in (True, False) for kind in ("copy", "push", "broadcast") for memory in ("mram", "wram")
             for nbytes in (8, 4096, 1 << 22) for dpus in (4, 64, 2560) for shared in (False, True)
             if to_dpu or kind != "broadcast"]
    for call in calls:
        low, high = transfer_seconds(call, cheap), transfer_seconds(call, dear)
        assert low < high
        assert all(low <= transfer_seconds(call, c) <= high for c in (config, *inside)), call


def test_transfer_model_fits_every_transfer_column_of_both_csvs():
    """Issue 41's targets on the 92 rows, with the calls as PrIM's host code issues them (the
    DPU->CPU of RED and BS and SCAN-SSA's Inter-DPU pull WRAM; BS, GEMV and MLP share one host
    buffer), for the shipped constants and for a fit from the literature values."""
    rows = [r for name in (calibration.FITTED_CSV, calibration.VALIDATION_CSV)
            for r in calibration.load_rows(calibration.DATA / name)]
    data = calibration.TransferData([_prim_calls(r.benchmark, r.nr_dpus, r.size) for r in rows],
                                    [calibration.measured_transfer_ms(r) for r in rows], 64)
    assert data.valid.sum(axis=0).tolist() == [92, 92, 30]
    literature = DpuConfig()
    refit = calibration.fit_transfer_constants(data, {n: getattr(literature, n) for n in calibration.TRANSFER_FIELDS})
    before = calibration.transfer_mape(data, literature)
    for constants in (DpuConfig.calibrated(), literature.with_(**refit)):
        errors = calibration.transfer_mape(data, constants)
        assert errors["cpu_to_dpu_ms"] <= 30 and errors["dpu_to_cpu_ms"] <= 15 and errors["dpu_to_dpu_ms"] <= 20
        assert sum(errors.values()) < sum(before.values()) - 15  # 35.9 + 23.3 + 8.9 % from the start


def test_the_workloads_issue_prims_transfer_calls(toolchain):
    """cnmtune's PrIM workloads make the host calls of PrIM's host code (what the calibration rows
    time), but for the argument structs of VA and RED (16 and 8 bytes against PrIM's 12 and 16) and
    the order of MLP's weight pushes among its Inter-DPU calls."""
    arguments = {"VA": 16, "RED": 8}
    for bench, name in calibration.KERNELS.items():
        row = min((r for csv in (calibration.FITTED_CSV, calibration.VALIDATION_CSV)
                   for r in calibration.load_rows(calibration.DATA / csv) if r.benchmark == bench and r.nr_dpus == 4),
                  key=lambda r: r.size)
        kernel = find_kernel(name)
        binary = toolchain.compile(Variant.of(kernel, "O2", calibration.TASKLETS))
        workload = kernel.workload(row.size, 4, calibration.TASKLETS, dict(binary.variant.defines), 0,
                                   **calibration.row_params(row))
        device = SampledSimDevice(4, sampled=())  # nothing executes: the host program's calls only
        device.load(binary.elf_path)
        workload.execute(device, workload.inputs())
        prim = list(_prim_calls(bench, 4, row.size))
        if bench in arguments:
            prim[0] = Transfer(True, "push", arguments[bench], 4, memory="wram")
        assert sorted(map(repr, device.transfers)) == sorted(map(repr, prim)), bench
        if bench != "MLP":
            assert device.transfers == prim, bench


def _prim_calls(bench: str, d: int, n: int) -> tuple[Transfer, ...]:
    """The transfer calls of PrIM's host code for one calibration row (16 tasklets, strong scaling)."""
    def up(a: int, m: int) -> int:
        return -(-a // m) * m

    def push(to_dpu, memory, nbytes, shared=False, inter=False):
        return Transfer(to_dpu, "push", nbytes, d, inter, memory, shared and d > 1)

    rows = -(-n // d) + (-(-n // d)) % 2  # GEMV, MLP: rows per DPU, padded to even
    if bench == "VA":
        b = up(-(-n // d), 2) * 4
        return push(True, "wram", 12), push(True, "mram", b), push(True, "mram", b), push(False, "mram", b)
    if bench == "RED":
        return push(True, "wram", 16), push(True, "mram", -(-n // d) * 8), push(False, "wram", 16 * 16)
    if bench == "BS":
        queries = up(max(1, n // 8), d * 16)
        return (push(True, "wram", 24, True), push(True, "mram", n * 8, True), push(True, "mram", queries // d * 8),
                push(False, "wram", 16 * 8))
    if bench == "GEMV":
        return (push(True, "wram", 16), push(True, "mram", rows * 256), push(True, "mram", 256, True),
                push(False, "mram", rows * 4))
    if bench == "MLP":  # all three layers' weights in CPU-DPU, two vector round trips in Inter-DPU
        weights = push(True, "mram", rows * n * 4)
        between = (push(False, "mram", rows * 4, inter=True), push(True, "mram", n * 4, True, inter=True))
        return (push(True, "wram", 16), weights, push(True, "mram", n * 4, True), weights, weights, *between,
                *between, push(False, "mram", rows * 4))
    b = up(-(-n // d), 16 * 128) * 8  # SCAN-SSA
    return (push(True, "wram", 16, True), push(True, "mram", b), push(False, "wram", 16 * 8, inter=True),
            push(True, "wram", 16, inter=True), push(False, "mram", b))


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
    log = ([Transfer(True, "push", 2048, 64)] * 40 + [Transfer(False, "copy", 8, 1)] * 7
           + [Transfer(True, "broadcast", 64, 64, inter_dpu=True)] * 3)
    counted, plain = transfer_times(Counter(log), config), transfer_times(log, config)
    for step in ("host_to_dpu_s", "inter_dpu_s", "dpu_to_host_s"):
        assert getattr(counted, step) == pytest.approx(getattr(plain, step), rel=1e-12)
    assert counted.host_to_dpu_s == pytest.approx(40 * transfer_seconds(log[0], config), rel=1e-12)


def test_a_transfer_log_priced_under_many_configs_at_once_costs_what_each_config_prices():
    """A learned sweep prices every design point's transfers in one pass: each row is transfer_times
    under that point's config, whatever the call kinds, memories, shared buffers and rank size."""
    log = ([Transfer(True, "push", 2048, 256)] * 4 + [Transfer(True, "push", 4096, 256, shared_buffer=True)]
           + [Transfer(True, "broadcast", 16, 256, memory="wram"), Transfer(False, "copy", 8, 1, memory="wram")]
           + [Transfer(False, "push", 512, 256)] * 3 + [Transfer(True, "broadcast", 64, 256, inter_dpu=True)])
    configs = [DpuConfig(), DpuConfig.calibrated(), DpuConfig.calibrated().with_(dpus_per_rank=8),
               *sample_designs(20, seed=5)]
    rows = transfer_times_under(log, configs)
    assert rows.shape == (len(configs), 3)
    for config, row in zip(configs, rows):
        times = transfer_times(log, config)
        np.testing.assert_allclose(row, (times.host_to_dpu_s, times.inter_dpu_s, times.dpu_to_host_s), rtol=1e-12)
    np.testing.assert_array_equal(transfer_times_under(Counter(log), configs), rows)
    assert transfer_times_under([], configs).tolist() == [[0.0] * 3] * len(configs)


def test_transfers_inside_untimed_count_nowhere(services_elf):
    """Device.untimed: a read only a results check needs (BS's found indices) moves its data but is in
    no step's time, byte count or transfer log."""
    device = SimDevice(2)
    device.load(services_elf)
    device.push_to("launches", [np.array([5], np.uint32)] * 2)
    with device.untimed():
        assert [u32(b) for b in device.push_from("launches", 4)] == [[5], [5]]
        with device.inter_dpu():
            device.copy_to(1, "launches", np.array([6], np.uint32))
    assert u32(device.copy_from(1, "launches", 4)) == [6]
    assert [(t.to_dpu, t.kind) for t in device.transfers] == [(True, "push"), (False, "copy")]
    times = device.times
    assert (times.host_to_dpu_bytes, times.inter_dpu_bytes, times.dpu_to_host_bytes) == (8, 0, 4)
    assert times.inter_dpu_s == 0 and times.transfer_s == transfer_times(device.transfers, device.config).total_s
    assert not device._untimed  # the block ends with the with
