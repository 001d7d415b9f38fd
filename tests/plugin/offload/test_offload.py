"""Offload decisions: the sampled device, the CPU baseline, decisions across sizes, the flip, the header."""

from __future__ import annotations

import json
import math
from itertools import pairwise

import numpy as np
import pytest

from rich.console import Console

from cnmtune.errors import DeviceError, UsageError
from cnmtune.plugin.cli import offload as offload_cli
from cnmtune.plugin.offload import decide as offload_module
from cnmtune.plugin.offload.cpu_baseline import CPU_BASELINES, CpuTime, cpu_time, native_library
from cnmtune.plugin.offload.decide import (
    OffloadSpec,
    decide,
    header_text,
    macro_name,
    size_grid,
)
from cnmtune.runtime.device import DPU_MRAM_HEAP_POINTER_NAME
from cnmtune.runtime.registry import find_kernel
from cnmtune.runtime.sampled import SampledSimDevice
from cnmtune.runtime.sim.device import SimDevice
from cnmtune.runtime.toolchain import Variant
from tests.conftest import run_cnmtune as _cnmtune

KERNELS = ("va", "red", "gemv", "bs")


def _execute(device, binary, name: str, size: int, dpus: int):
    workload = find_kernel(name).workload(size, dpus, 16, dict(binary.variant.defines), 0)
    device.load(binary.elf_path)
    return workload.execute(device, workload.inputs())


@pytest.mark.parametrize("name, size", [("va", 10_000), ("red", 10_001), ("gemv", 301), ("bs", 20_000)])
def test_the_sampled_device_predicts_the_full_simulation(name, size, toolchain):
    binary = toolchain.compile(Variant.of(find_kernel(name), "O2", 16))
    full, sampled, none = SimDevice(4), SampledSimDevice(4), SampledSimDevice(4, sampled=())
    for device in (full, sampled, none):
        _execute(device, binary, name, size, 4)
    assert sampled.sampled == (0, 3)
    assert full.transfers == sampled.transfers == none.transfers  # the same pattern, priced alike
    assert (full.times.host_to_dpu_s, full.times.dpu_to_host_s) == \
           (sampled.times.host_to_dpu_s, sampled.times.dpu_to_host_s) == \
           (none.times.host_to_dpu_s, none.times.dpu_to_host_s)
    if name in ("gemv", "bs"):  # equal shares, value-dependent work (soft multiplies; each query's
        # bisection path): the slowest DPU may be an unsampled one (bs at 20,000: DPU 1, 1.5 % slower than DPUs 0 and 3)
        assert sampled.times.kernel_s == pytest.approx(full.times.kernel_s, rel=0.02)
    else:
        assert sampled.times.kernel_s == full.times.kernel_s
    assert none.times.kernel_s == none.times.launches * none.config.launch_overhead_s
    assert none.host_between_launches_s == 0.0  # one launch: no step between launches


def test_the_sampled_device_checks_bounds_of_unsimulated_dpus(va_o2):
    device = SampledSimDevice(2560, sampled=(0,))
    device.load(va_o2.elf_path)
    buffers = [np.zeros(2, np.uint64)] * 2560
    device.push_to(DPU_MRAM_HEAP_POINTER_NAME, buffers)
    assert device.push_from(DPU_MRAM_HEAP_POINTER_NAME, 16)[1] == bytes(16)
    with pytest.raises(DeviceError, match="outside WRAM and MRAM"):
        device.copy_to(2000, DPU_MRAM_HEAP_POINTER_NAME, bytes(8), offset=64 * 1024 * 1024)
    with pytest.raises(DeviceError, match="same size"):
        device.push_to(DPU_MRAM_HEAP_POINTER_NAME, [bytes(8)] * 2559 + [bytes(16)])
    assert device.transfers[0].nr_dpus == 2560 and device.transfers[0].nbytes == 16


def test_extrapolated_kernel_times_follow_strong_scaling():
    decider = offload_module._Decider(OffloadSpec("red", dpus=(4, 64, 128, 256, 2560), tasklets=(16,),
                                                  share_cap=8192), None, None)
    candidates = {c.dpus: c for c in decider.candidates(1_048_576)}  # shares 262144, 16384, 8192, 4096, 410
    assert [candidates[d].method for d in (4, 64, 128, 256, 2560)] == ["extrapolated", "extrapolated", "simulated",
                                                                       "simulated", "simulated"]
    simulated = decider._run(decider.binary(16), 1_048_576, 64, 16, True)
    assert candidates[64].kernel_s == pytest.approx(simulated.kernel_s, rel=0.05)
    assert candidates[64].host_to_dpu_s == simulated.host_to_dpu_s  # transfers always from the real pattern


def test_cpu_baseline_native_and_numpy():
    workload = find_kernel("va").workload(100_000, 1, 1, None, 0)
    inputs = workload.inputs()
    numpy_time = cpu_time(workload, inputs, "numpy", repeats=3)
    assert numpy_time.implementation == "numpy" and "numpy reference of va" in numpy_time.label
    assert numpy_time.seconds > 0 and numpy_time.runs == 3
    if native_library() is None:
        pytest.skip("no C compiler here")
    native = cpu_time(workload, inputs, "native", repeats=3)
    assert native.implementation == "native" and "native C" in native.label and native.seconds > 0
    for name in ("red", "gemv", "bs"):  # the C result verifies against every output of the reference (bs: PrIM's too)
        other = find_kernel(name).workload(find_kernel(name).workload.preset("small"), 1, 1, None, 0)
        timed = cpu_time(other, other.inputs(), "auto", repeats=1)
        assert timed.implementation == "native" and timed.seconds > 0
    sel = find_kernel("sel").workload(4096, 1, 1, None, 0)
    assert cpu_time(sel, sel.inputs(), "auto", repeats=1).implementation == "numpy"
    with pytest.raises(ValueError, match="no C implementation for sel"):
        cpu_time(sel, sel.inputs(), "native", repeats=1)


def test_one_cpu_baseline_for_every_size_of_a_decision(monkeypatch):
    """--cpu auto chooses at the first size (native C where the kernel has it and a compiler works, else numpy)
    and times every other size with the same; the report names it."""
    asked = []

    def recording(workload, inputs, implementation="auto", repeats=7):
        asked.append(implementation)
        return cpu_time(workload, inputs, implementation, repeats)

    monkeypatch.setattr(offload_module, "cpu_time", recording)
    for name, expected in (("va", "native" if native_library() else "numpy"), ("sel", "numpy")):
        asked.clear()
        report = decide(OffloadSpec(name, size=4096, sizes=(1024, 4096, 16_384), dpus=(16,), tasklets=(16,),
                                    repeats=1, bisect_steps=0))
        assert asked == ["auto", expected, expected]
        assert report.cpu_baseline == expected and {p.cpu.implementation for p in report.points} == {expected}
        assert report.to_dict()["cpu_baseline"] == expected
        assert f"CPU baseline at every size: {CPU_BASELINES[expected]} (--cpu auto" in " ".join(report.notes)


def _check_consistency(report) -> None:
    points = report.points
    sizes = [p.size for p in points]
    assert sizes == sorted(sizes) and report.requested in sizes
    for p in points:
        feasible = [c for c in p.candidates if not c.error]
        assert p.best is not None and p.best.total_s == pytest.approx(min(c.total_s for c in feasible), rel=0.05)
        assert p.offload == (p.speedup >= p.min_speedup)
        assert p.speedup == pytest.approx(p.cpu.seconds / p.cnm_s)
    cnm = [p.cnm_s for p in points]  # the model: more work never makes the best CNM time shorter
    assert all(b >= a * 0.99 for a, b in pairwise(cnm)), cnm
    changes = [(a.size, b.size) for a, b in pairwise(points) if a.offload != b.offload]
    assert report.flips == changes
    if report.monotone:
        assert len(changes) <= 1
    if report.flip:
        lo, hi = report.flip
        assert (lo, hi) in changes and lo < hi
        assert next(p for p in points if p.size == lo).offload != next(p for p in points if p.size == hi).offload
    json.dumps(report.to_dict())


@pytest.mark.parametrize("name", KERNELS)
def test_decisions_across_sizes_are_consistent(name):
    small = find_kernel(name).workload.preset("small")
    spec = OffloadSpec(name, size=small * 16, sizes=(small, small * 16, small * 256), dpus=(16, 256, 2560),
                       tasklets=(16,), repeats=3, bisect_steps=2)
    report = decide(spec)
    _check_consistency(report)
    assert {p.origin for p in report.points} <= {"grid", "requested", "bisection", "range"}
    assert not report.at_size.offload  # a few thousand elements: the launch and transfer latencies dominate
    assert any("CNM kernel time: simulated" in n for n in report.notes)
    assert any(n.startswith("CPU: ") for n in report.notes)


def _linear_cpu(ns_per_unit: float):
    def fake(workload, inputs, implementation="auto", repeats=7):
        seconds = workload.size * ns_per_unit * 1e-9
        return CpuTime(seconds, "numpy", "a linear stand-in", repeats, (seconds,))
    return fake


def test_the_flip_point_is_bracketed_and_bisected(monkeypatch):
    monkeypatch.setattr(offload_module, "cpu_time", _linear_cpu(2.0))  # 2 ns per element: a flip inside the range
    spec = OffloadSpec("va", size=4_194_304, sizes=(16_384, 262_144, 4_194_304), dpus=(256, 2560), tasklets=(16,),
                       repeats=1, bisect_steps=5)
    report = decide(spec)
    _check_consistency(report)
    assert report.monotone and len(report.flips) == 1  # CPU linear, CNM affine: one flip
    lo, hi = report.flip
    assert 262_144 <= lo < hi <= 4_194_304 and hi / lo <= 16 ** (1 / 2 ** 5) * 1.01  # five log-halvings
    assert [p.offload for p in report.points] == sorted(p.offload for p in report.points)  # CPU, then CNM
    assert sum(p.origin == "bisection" for p in report.points) == 5
    assert report.at_size.offload
    text = header_text([report])
    assert "#define CNMTUNE_OFFLOAD_VA 1\n" in text
    assert f"#define CNMTUNE_OFFLOAD_VA_DPUS {report.at_size.best.dpus}\n" in text
    assert "#define CNMTUNE_OFFLOAD_VA_TASKLETS 16\n" in text and '#define CNMTUNE_OFFLOAD_VA_PIPELINE "O2"\n' in text
    assert f"#define CNMTUNE_OFFLOAD_VA_FLIP_SIZE {hi}\n" in text
    assert text.startswith("/*") and text.rstrip().endswith("#endif /* CNMTUNE_OFFLOAD_H */")


def test_a_decision_says_how_sure_it_is():
    """Issue 41: a real decision (va, its CPU time measured here) gives the chosen configuration's
    transfer share of its end-to-end time and its transfer time with the transfer constants at the
    cheap and the dear end of their fitted ranges, and the flip point at both ends, which brackets
    the flip. At 2,560 DPUs va's CNM time is transfers (the arguments' WRAM push to every DPU): its
    speedup is ~0.005 at 4,096 elements and ~0.5 at 4M on any machine, so min_speedup 0.05 puts a
    flip inside the sweep."""
    report = decide(OffloadSpec("va", size="small", sizes=("small", 4_194_304), dpus=(2560,), tasklets=(16,),
                                repeats=3, bisect_steps=4, min_speedup=0.05))
    _check_consistency(report)
    at = report.at_size
    assert 0.5 < at.transfer_share < 1  # transfer-bound
    cheap, dear = report.transfer_range_s
    assert cheap < at.best.transfer_s < dear and dear / cheap < 2
    assert report.flip and not at.offload
    low, high = report.flip_range
    evaluated = {p.size for p in report.points}
    assert {low, high} <= evaluated and low <= report.flip[1] <= high
    record = report.to_dict()
    assert record["transfer_share"] == at.transfer_share and record["flip_range"] == [low, high]
    assert record["transfer_s_range"] == [cheap, dear]
    console = Console(width=200, record=True)  # wide: every cell on one line
    console.print(offload_cli._summary_table([report]))
    text = console.export_text()
    others = at.best.total_s - at.best.transfer_s
    assert f"{at.transfer_share:.0%} ({cheap / (others + cheap):.0%}-{dear / (others + dear):.0%})" in text
    assert f"range {low:,}" + ("" if low == high else f" to {high:,}") in text


def test_header_names_and_sizes():
    assert macro_name("hst-s") == "CNMTUNE_OFFLOAD_HST_S" and macro_name("va") == "CNMTUNE_OFFLOAD_VA"
    assert size_grid(256, 65_536, 4) == [256, 1024, 4096, 16_384, 65_536]
    assert size_grid(4096, 10_000, 4) == [4096, 10_000]
    with pytest.raises(UsageError, match="bad size range"):  # a command line that cannot run: exit 2
        size_grid(100, 10, 4)


def test_cli_json_and_header(tmp_path):
    header = tmp_path / "offload.h"
    result = _cnmtune("offload", "va,red", "--size", "65536", "--sizes", "4096,65536", "--dpus", "64,2560",
                      "--tasklets", "16", "--repeats", "3", "--bisect", "1", "--emit-header", str(header), "--json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert [k["kernel"] for k in report["kernels"]] == ["va", "red"]
    for k in report["kernels"]:
        assert k["size"] == 65536 and isinstance(k["offload"], bool) and k["best"]["dpus"] in (64, 2560)
        assert k["cpu"]["implementation"] in ("native", "numpy") and k["cnm_s"] > 0
        assert all(p["offload"] == (p["speedup"] >= 1) for p in k["decisions"])
    text = header.read_text()
    for name, record in zip(("VA", "RED"), report["kernels"]):
        assert f"#define CNMTUNE_OFFLOAD_{name} {int(record['offload'])}\n" in text
        assert f"#define CNMTUNE_OFFLOAD_{name}_DPUS {record['best']['dpus']}\n" in text
    table = _cnmtune("offload", "va", "--size", "small", "--sizes", "small", "--dpus", "2560", "--tasklets", "16",
                     "--repeats", "1")
    assert table.returncode == 0, table.stderr
    assert "offload decisions" in table.stdout and "CPU" in table.stdout
    bad = _cnmtune("offload", "va", "--cpu", "gpu")
    assert bad.returncode == 2 and "unknown --cpu" in bad.stderr
    assert math.isfinite(report["kernels"][0]["speedup"])


def test_host_programs_that_depend_on_dpu_results_are_flagged():
    bfs = decide(OffloadSpec("bfs", size="small", sizes=("small",), dpus=(4,), tasklets=(16,), repeats=1))
    assert bfs.host_depends_on_results and "not reliable" in bfs.notes[0]
    assert bfs.to_dict()["host_depends_on_results"] is True
    assert bfs.at_size.best.launches > 1  # bfs loops over frontiers: several launches, host steps between them
    va = offload_module._Decider(OffloadSpec("va", tasklets=(16,)), None, None)
    assert not va.host_depends_on_results(4096)
