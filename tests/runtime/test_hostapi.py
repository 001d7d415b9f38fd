"""The SDK's host API on the simulator: a C host program built with its own Makefile, run for real.

tests/runtime/hostapi_faults is a small application in PrIM's layout that misuses the API on
purpose (argv[1] picks how); each misuse must come back as the SDK's status code and one
DPU_ASSERT line naming the cause.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from cnmtune.plugin.app import AppProject
from cnmtune.runtime.device import DPU_MRAM_HEAP_POINTER_NAME
from cnmtune.runtime.hostapi import host_environment
from cnmtune.runtime.hostapi.protocol import DpuStatus
from cnmtune.runtime.hostapi.server import HostApiError, parse_profile
from cnmtune.runtime.sim.config import DpuConfig
from cnmtune.runtime.sim.device import SimDevice, transfer_seconds

FAULTS_APP = Path(__file__).with_name("hostapi_faults")


@pytest.fixture(scope="module")
def faults_app(tmp_path_factory) -> AppProject:
    root = tmp_path_factory.mktemp("faults") / "app"
    shutil.copytree(FAULTS_APP, root, ignore=shutil.ignore_patterns("bin"))
    project = AppProject(root)
    project.build({"NR_DPUS": "2", "NR_TASKLETS": "4"})
    return project


def test_a_correct_run_returns_results_and_reports_one_set(faults_app):
    run = faults_app.run(["ok"])
    assert run.returncode == 0, run.stderr
    assert run.stdout.splitlines() == ["status 0", "DPU 0: 1 1", "DPU 1: 1 1"]
    (times,) = run.sets
    assert (times.nr_dpus, times.simulated_dpus, times.launches) == (2, 2, 1)
    assert times.kernel_s > 0 and times.host_to_dpu_s > 0 and times.dpu_to_host_s > 0
    assert "cnmtune: 2 DPUs, simulator config calibrated, program dpu_code" in run.stderr


@pytest.mark.parametrize("mode, status, cause", [
    ("unknown-symbol", DpuStatus.UNKNOWN_SYMBOL, r"symbol 'no_such_symbol' is not defined by dpu_code"),
    ("oversize", DpuStatus.INVALID_SYMBOL_ACCESS, r"64 B at offset 0 of 'fault' \(4 B in dpu_code\)"),
    ("fault", DpuStatus.DPU_FAULT,
     r"DPU 0, tasklet 1: mram_read: MRAM range 0xbfffff8\+16 \(bank offset 0x3fffff8\) runs past the end of the "
     r"64 MiB MRAM bank at pc 0x[0-9a-f]+ in mram_read called from \w+ \(ra 0x[0-9a-f]+\)"),
    ("deadlock", DpuStatus.TIMEOUT, r"DPU 0: deadlock at cycle \d+: every live tasklet is blocked \(tasklet 0 in \w+\)"),
])
def test_misuse_gets_the_sdk_status_and_one_line(faults_app, mode, status, cause):
    run = faults_app.run([mode])
    assert run.returncode == 1  # DPU_ASSERT's exit(EXIT_FAILURE)
    assert run.stdout.splitlines() == [f"status {int(status)}"]
    errors = [line for line in run.stderr.splitlines() if "DPU Error" in line]
    assert len(errors) == 1
    assert re.fullmatch(rf"host/app\.c:\d+\(main\): DPU Error \(DPU_ERR_{status.name}: {cause}\)", errors[0]), errors[0]


def test_the_host_clock_reads_simulated_time_inside_dpu_calls(faults_app, tmp_path):
    """A host that times dpu_launch (synchronous, or asynchronous + dpu_sync) with gettimeofday sees the
    simulated kernel time (+ its own real work)."""
    source = tmp_path / "clock.c"
    source.write_text("""
#include <dpu.h>
#include <stdio.h>
#include <sys/time.h>
int main(void) {
    struct dpu_set_t set;
    struct timeval start, stop;
    uint32_t one = 1;
    DPU_ASSERT(dpu_alloc(2, "backend=simulator", &set));
    DPU_ASSERT(dpu_load(set, "bin/dpu_code", NULL));
    DPU_ASSERT(dpu_broadcast_to(set, "increment", 0, &one, sizeof one, DPU_XFER_DEFAULT));
    gettimeofday(&start, NULL);
    DPU_ASSERT(dpu_launch(set, DPU_SYNCHRONOUS));
    gettimeofday(&stop, NULL);
    printf("%ld ", (long)((stop.tv_sec - start.tv_sec) * 1000000 + stop.tv_usec - start.tv_usec));
    gettimeofday(&start, NULL);
    DPU_ASSERT(dpu_launch(set, DPU_ASYNCHRONOUS)); /* the host waits in dpu_sync */
    DPU_ASSERT(dpu_sync(set));
    gettimeofday(&stop, NULL);
    printf("%ld\\n", (long)((stop.tv_sec - start.tv_sec) * 1000000 + stop.tv_usec - start.tv_usec));
    DPU_ASSERT(dpu_free(set));
    return 0;
}
""")
    program, env = _compile_host(source)
    for clock, env_extra in (("simulated", {"CNMTUNE_HOST_CLOCK": "simulated"}), ("wall", {})):
        report = tmp_path / f"{clock}.json"
        done = subprocess.run([str(program)], cwd=faults_app.root, env=env | env_extra | {"CNMTUNE_REPORT": str(report)},
                              capture_output=True, text=True, check=True)
        launches = json.loads(report.read_text())["sets"][0]["launches"]
        for measured_us, launch in zip(map(int, done.stdout.split()), launches, strict=True):
            kernel_us = launch["kernel_s"] * 1e6
            if clock == "simulated":  # + the host's own real work between its clock reads (a preemption or two)
                assert kernel_us <= measured_us <= kernel_us + 5000, (measured_us, kernel_us)
            else:  # a round trip to the simulator process and simulating a launch take more than 100 us
                assert measured_us > kernel_us + 100, (measured_us, kernel_us)


def _compile_host(source: Path) -> tuple[Path, dict[str, str]]:
    """A host program built from `source` against cnmtune's host library, and the environment to run it in."""
    _, env = host_environment()
    flags = subprocess.run(["dpu-pkg-config", "--cflags", "--libs", "dpu"], env=env, capture_output=True,
                           text=True, check=True).stdout.split()
    program = source.with_suffix("")
    subprocess.run([os.environ.get("CC", "cc"), "-std=c11", "-Wall", "-Werror", "-o", str(program), str(source),
                    *flags], check=True)
    return program, env


def test_probes_time_on_the_simulated_clock_and_measure_no_energy(faults_app, tmp_path):
    """dpu_probe.h as PrIM's ENERGY=1 builds use it: DPU_TIME is the simulated time between start and stop
    (with the host clock on wall time too), DPU_ENERGY reads 0 J with DPU_OK and one note; misuse is one error."""
    source = tmp_path / "probe.c"
    source.write_text("""
#include <dpu.h>
#include <dpu_probe.h>
#include <stdio.h>
int main(void) {
    struct dpu_set_t set;
    struct dpu_probe_t probe;
    double accumulated, average, energy;
    uint32_t one = 1;
    DPU_ASSERT(dpu_probe_init("energy_probe", &probe));
    DPU_ASSERT(dpu_alloc(2, NULL, &set));
    DPU_ASSERT(dpu_load(set, "bin/dpu_code", NULL));
    DPU_ASSERT(dpu_broadcast_to(set, "increment", 0, &one, sizeof one, DPU_XFER_DEFAULT));
    for (int rep = 0; rep < 2; rep++) {
        DPU_ASSERT(dpu_probe_start(&probe));
        DPU_ASSERT(dpu_launch(set, DPU_SYNCHRONOUS));
        DPU_ASSERT(dpu_probe_stop(&probe));
        DPU_ASSERT(dpu_probe_get(&probe, DPU_ENERGY, DPU_AVERAGE, &energy));
    }
    DPU_ASSERT(dpu_probe_get(&probe, DPU_TIME, DPU_ACCUMULATE, &accumulated));
    DPU_ASSERT(dpu_probe_get(&probe, DPU_TIME, DPU_AVERAGE, &average));
    printf("%.17g %.17g %.17g\\n", accumulated, average, energy);
    DPU_ASSERT(dpu_free(set));
    DPU_ASSERT(dpu_probe_deinit(&probe));
    DPU_ASSERT(dpu_probe_stop(&probe)); /* after deinit: never started */
    return 0;
}
""")
    program, env = _compile_host(source)
    report = tmp_path / "report.json"
    done = subprocess.run([str(program)], cwd=faults_app.root, env=env | {"CNMTUNE_REPORT": str(report)},
                          capture_output=True, text=True)
    assert done.returncode == 1, done.stderr  # DPU_ASSERT's exit on the last call
    accumulated, average, energy = map(float, done.stdout.split())
    kernel_s = sum(launch["kernel_s"] for launch in json.loads(report.read_text())["sets"][0]["launches"])
    assert kernel_s <= accumulated <= kernel_s + 0.005  # + the host's own real work between start and stop
    assert average == pytest.approx(accumulated / 2) and energy == 0.0
    note = "cnmtune: dpu_probe_get(DPU_ENERGY) reads 0 J: cnmtune's simulator measures no energy"
    assert done.stderr.count(note) == 1
    (error,) = [line for line in done.stderr.splitlines() if "DPU Error" in line]
    assert error.endswith("DPU Error (DPU_ERR_INTERNAL: dpu_probe_stop: probe '(unnamed)' was not started)"), error


def test_profiles_are_parsed_as_the_sdk_writes_them():
    assert parse_profile("backend=simulator, nrDpusPerCI=8") == {"backend": "simulator", "nrDpusPerCI": "8"}
    assert parse_profile("") == {}
    for bad in ("backend", "backend=cas"):
        with pytest.raises(HostApiError) as caught:
            parse_profile(bad)
        assert caught.value.status is DpuStatus.INVALID_PROFILE


def test_a_large_allocation_runs_on_the_sampled_device(tmp_path):
    """More DPUs than CNMTUNE_SIMULATED_DPUS: the first and last execute, the others read back zeros."""
    root = tmp_path / "app"
    shutil.copytree(FAULTS_APP, root, ignore=shutil.ignore_patterns("bin"))
    project = AppProject(root)
    project.build({"NR_DPUS": "3", "NR_TASKLETS": "4"})
    run = project.run(["ok"], env={"CNMTUNE_SIMULATED_DPUS": "2"})
    assert run.returncode == 0, run.stderr
    assert run.stdout.splitlines() == ["status 0", "DPU 0: 1 1", "DPU 1: 0 0", "DPU 2: 1 1"]
    assert (run.sets[0].nr_dpus, run.sets[0].simulated_dpus) == (3, 2)
    assert "DPUs 0 and 2 execute, the others' outputs read as zeros" in run.stderr


def test_all_dpus_ranks_and_their_iterators(faults_app):
    """DPU_ALLOCATE_ALL gets CNMTUNE_NR_DPUS in ranks of 64; DPU_RANK_FOREACH and DPU_FOREACH walk them."""
    run = faults_app.run(["ranks"], env={"CNMTUNE_NR_DPUS": "70", "CNMTUNE_SIMULATED_DPUS": "2"})
    assert run.returncode == 0, run.stderr
    assert run.stdout.splitlines() == ["all: 70 DPUs in 2 ranks", "rank 0: 64 DPUs, 64 iterated",
                                       "rank 1: 6 DPUs, 6 iterated", "one rank: 64 DPUs"]
    assert [(s.nr_dpus, s.simulated_dpus, s.launches) for s in run.sets] == [(70, 2, 0), (64, 2, 0)]


def test_the_same_traffic_costs_the_same_through_the_host_library_and_the_device_api(faults_app, tmp_path):
    """Issue 41: each call of a C host program (libdpu.c) is priced as the same call of a Python
    workload (SimDevice): copies one DPU at a time, a push of one shared buffer and of distinct
    ones, a broadcast, WRAM and MRAM, and the pulls back."""
    source = tmp_path / "traffic.c"
    source.write_text("""
#include <dpu.h>
#include <stdint.h>
int main(void) {
    struct dpu_set_t set, dpu;
    uint32_t each;
    static uint64_t heap[4][512], shared[512];
    uint32_t words[4][8] = { { 0 } };
    DPU_ASSERT(dpu_alloc(4, "backend=simulator", &set));
    DPU_ASSERT(dpu_load(set, "bin/dpu_code", NULL));
    DPU_FOREACH(set, dpu, each) DPU_ASSERT(dpu_copy_to(dpu, DPU_MRAM_HEAP_POINTER_NAME, 0, heap[each], 64));
    DPU_FOREACH(set, dpu, each) DPU_ASSERT(dpu_prepare_xfer(dpu, shared));
    DPU_ASSERT(dpu_push_xfer(set, DPU_XFER_TO_DPU, DPU_MRAM_HEAP_POINTER_NAME, 0, sizeof shared, DPU_XFER_DEFAULT));
    DPU_FOREACH(set, dpu, each) DPU_ASSERT(dpu_prepare_xfer(dpu, heap[each]));
    DPU_ASSERT(dpu_push_xfer(set, DPU_XFER_TO_DPU, DPU_MRAM_HEAP_POINTER_NAME, 0, sizeof heap[0], DPU_XFER_DEFAULT));
    DPU_FOREACH(set, dpu, each) DPU_ASSERT(dpu_prepare_xfer(dpu, words[each]));
    DPU_ASSERT(dpu_push_xfer(set, DPU_XFER_TO_DPU, "words", 0, sizeof words[0], DPU_XFER_DEFAULT));
    DPU_ASSERT(dpu_broadcast_to(set, DPU_MRAM_HEAP_POINTER_NAME, 0, shared, sizeof shared, DPU_XFER_DEFAULT));
    DPU_FOREACH(set, dpu, each) DPU_ASSERT(dpu_prepare_xfer(dpu, heap[each]));
    DPU_ASSERT(dpu_push_xfer(set, DPU_XFER_FROM_DPU, DPU_MRAM_HEAP_POINTER_NAME, 0, sizeof heap[0], DPU_XFER_DEFAULT));
    DPU_FOREACH(set, dpu, each) DPU_ASSERT(dpu_copy_from(dpu, "words", 0, words[each], sizeof words[0]));
    /* no buffer prepared: an empty transfer, as the SDK's */
    DPU_ASSERT(dpu_push_xfer(set, DPU_XFER_FROM_DPU, "words", 0, sizeof words[0], DPU_XFER_DEFAULT));
    DPU_ASSERT(dpu_free(set));
    return 0;
}
""")
    program, env = _compile_host(source)
    report = tmp_path / "report.json"
    subprocess.run([str(program)], cwd=faults_app.root, env=env | {"CNMTUNE_REPORT": str(report)},
                   capture_output=True, text=True, check=True)
    c_seconds = [t["seconds"] for t in json.loads(report.read_text())["sets"][0]["transfers"]]

    device = SimDevice(4, DpuConfig.named(os.environ.get("CNMTUNE_SIM_CONFIG", "calibrated")))
    device.load(faults_app.root / "bin" / "dpu_code")
    heap, shared, words = [bytes(4096) for _ in range(4)], bytes(4096), [bytes(32) for _ in range(4)]
    for dpu in range(4):
        device.copy_to(dpu, DPU_MRAM_HEAP_POINTER_NAME, heap[dpu][:64])
    device.push_to(DPU_MRAM_HEAP_POINTER_NAME, [shared] * 4)
    device.push_to(DPU_MRAM_HEAP_POINTER_NAME, heap)
    device.push_to("words", words)
    device.broadcast(DPU_MRAM_HEAP_POINTER_NAME, shared)
    device.push_from(DPU_MRAM_HEAP_POINTER_NAME, 4096)
    for dpu in range(4):
        device.copy_from(dpu, "words", 32)
    python_seconds = [transfer_seconds(t, device.config) for t in device.transfers]
    assert c_seconds == pytest.approx(python_seconds, abs=2e-9)  # the report holds whole nanoseconds
    assert [t.shared_buffer for t in device.transfers[4:6]] == [True, False]
    assert python_seconds[4] < python_seconds[5]  # one host buffer for every DPU is read once
