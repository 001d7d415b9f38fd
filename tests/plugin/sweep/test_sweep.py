"""Design sweeps: the trace store, checked re-timing, the grid, main effects, Pareto front, CLI."""

from __future__ import annotations

import json

import pytest

from cnmtune.errors import InvalidRetime, SweepError, TraceStoreError
from cnmtune.plugin.sweep.design import CostExpression, design_points, parse_param
from cnmtune.runtime.sim.retime import PreparedTrace, checked_retime
from cnmtune.plugin.sweep.evaluate import (
    kernel_seconds,
    main_effects,
    pareto_front,
    sweep_trace_set,
)
from cnmtune.runtime.sim.traces import load_trace_set, obtain_trace_set
from cnmtune.runtime.execute import run_binary
from cnmtune.runtime.registry import find_kernel
from cnmtune.runtime.sim.config import DpuConfig
from cnmtune.runtime.sim.device import TransferTimes, transfer_times
from cnmtune.runtime.toolchain import Variant
from tests.conftest import run_cnmtune as _cnmtune

KERNELS = ("va", "red", "gemv", "bs")
# no point equals the calibrated config (its dma_beta is PrIM's 0.5): every one is re-timed
GRID = {"frequency_mhz": (267, 350, 400), "revolver": (8, 11, 14), "dma_beta": (0.25, 0.75, 1.0)}


def _small(name: str) -> int:
    return find_kernel(name).workload.preset("small")


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    return tmp_path_factory.mktemp("traces")


@pytest.fixture(scope="module")
def trace_sets(store, toolchain):
    """va, red, gemv, bs at their small presets on 2 DPUs, recorded into the store."""
    sets = {}
    for name in KERNELS:
        trace_set, recorded = obtain_trace_set(Variant.of(find_kernel(name), "O2"), 2, _small(name),
                                               root=store, toolchain=toolchain)
        assert recorded
        sets[name] = trace_set
    return sets


@pytest.mark.parametrize("name", KERNELS)
def test_retime_at_the_recording_config_reproduces_the_cosimulated_kernel_time(name, trace_sets, toolchain):
    trace_set = trace_sets[name]
    config = trace_set.config
    cycles = [[checked_retime(PreparedTrace(trace), config, signature, config, dpu).cycles
               for dpu, (trace, signature) in enumerate(zip(launch.traces, launch.signatures))]
              for launch in trace_set.launches]
    assert cycles == [list(launch.cycles) for launch in trace_set.launches]
    cosimulated = run_binary(toolchain.compile(Variant.of(find_kernel(name), "O2")), 2, _small(name), config)
    assert kernel_seconds(cycles, config) == cosimulated.kernel_s == trace_set.kernel_s  # bit for bit
    assert transfer_times(trace_set.transfers, config) == TransferTimes(
        cosimulated.host_to_dpu_s, cosimulated.inter_dpu_s, cosimulated.dpu_to_host_s)


@pytest.mark.parametrize("name", ["va", "bs"])
def test_a_retimed_design_point_equals_cosimulation_under_its_config(name, trace_sets, toolchain):
    trace_set = trace_sets[name]
    [point] = design_points(trace_set.config, {"frequency_mhz": (400,), "revolver": (8,), "dma_beta": (0.25,),
                                               "xfer_call_us": (30.0,)})
    [result] = sweep_trace_set(trace_set, [point]).results
    assert result.method == "retimed"
    cosimulated = run_binary(toolchain.compile(Variant.of(find_kernel(name), "O2")), 2, _small(name), point.config)
    assert result.kernel_s == cosimulated.kernel_s
    assert (result.host_to_dpu_s, result.dpu_to_host_s) == (cosimulated.host_to_dpu_s, cosimulated.dpu_to_host_s)


def test_three_parameters_by_three_kernels_from_stored_traces(store, trace_sets, toolchain):
    points = design_points(DpuConfig.calibrated(), GRID)
    assert len(points) == 27
    cost = CostExpression("frequency_mhz*1.0 + revolver*2")
    for name in ("va", "red", "gemv"):
        again, recorded = obtain_trace_set(Variant.of(find_kernel(name), "O2"), 2, _small(name), root=store,
                                           toolchain=toolchain)
        assert not recorded and again.directory == trace_sets[name].directory  # loaded, not re-run
        result = sweep_trace_set(again, points, cost)
        assert len(result.results) == 27
        assert {r.method for r in result.results} == {"retimed"}
        assert all(r.kernel_s > 0 and r.transfer_s > 0 for r in result.results)
        # a faster clock never slows the kernel down, everything else equal
        by_values = {r.point.values: r.kernel_s for r in result.results}
        for (values, seconds) in by_values.items():
            faster = tuple((k, 400 if k == "frequency_mhz" else v) for k, v in values)
            assert by_values[faster] <= seconds
        assert {e["param"] for e in result.main_effects} == set(GRID)
        ranges = [e["range_s"] for e in result.main_effects]
        assert ranges == sorted(ranges, reverse=True) and result.most_important == result.main_effects[0]["param"]
        front = [r for r in result.results if r.pareto]
        assert front and min(r.cost for r in result.results) == min(r.cost for r in front)
        assert min(r.kernel_s for r in result.results) == min(r.kernel_s for r in front)
        record = result.to_dict()
        assert record["most_important"] in GRID and len(record["points"]) == 27
        json.dumps(record)


def test_main_effects_and_pareto_on_a_known_table():
    from cnmtune.plugin.sweep.evaluate import PointResult

    base = DpuConfig()
    points = design_points(base, {"frequency_mhz": (100, 200), "revolver": (8, 11)})
    # kernel time = 1000 / f + revolver / 100: frequency's effect (5 - 2.5) beats revolver's (0.03)
    results = [PointResult(p, 1000 / dict(p.values)["frequency_mhz"] + dict(p.values)["revolver"] / 100, 0, 0, 0,
                           "retimed", cost=dict(p.values)["frequency_mhz"]) for p in points]
    effects = main_effects(results)
    assert [e["param"] for e in effects] == ["frequency_mhz", "revolver"]
    assert effects[0]["range_s"] == pytest.approx(5.0)
    assert effects[1]["range_s"] == pytest.approx(0.03)
    assert sorted(pareto_front(results)) == [0, 2]  # f=100 rev=8, f=200 rev=8


def test_a_timing_dependent_lock_order_is_reexecuted_or_refused(store, toolchain):
    variant = Variant.of(find_kernel("trns"), "O2")
    trace_set, _ = obtain_trace_set(variant, 1, _small("trns"), root=store, toolchain=toolchain)
    points = design_points(trace_set.config, {"revolver": (8, 11)})
    results = sweep_trace_set(trace_set, points).results
    changed = results[0]
    assert changed.method == "re-executed" and "granted to tasklet" in changed.note
    assert results[1].method == "recorded"
    cosimulated = run_binary(toolchain.compile(variant), 1, _small("trns"), changed.point.config)
    assert changed.kernel_s == cosimulated.kernel_s
    with pytest.raises(InvalidRetime, match="cannot be re-timed exactly"):
        sweep_trace_set(trace_set, points, strict=True)


def test_counter_reads_allow_host_changes_only(store, toolchain):
    trace_set, _ = obtain_trace_set(Variant.of(find_kernel("stream"), "O2"), 1, _small("stream"), root=store,
                                    toolchain=toolchain)
    points = design_points(trace_set.config, {"frequency_mhz": (350, 400), "launch_overhead_us": (50,),
                                              "dma_beta": (0.75,)})
    results = sweep_trace_set(trace_set, points).results
    assert all(r.method == "re-executed" for r in results)
    assert "performance counter" in results[1].note  # frequency changed
    assert "tasklet" in results[0].note  # DPU timing changed: the counter values differ
    [host_only] = sweep_trace_set(trace_set, design_points(trace_set.config, {"launch_overhead_us": (50,)})).results
    assert host_only.method == "recorded"
    assert host_only.kernel_s == pytest.approx(trace_set.kernel_s + (50e-6 - trace_set.config.launch_overhead_s)
                                               * len(trace_set.launches))


def test_store_refuses_corrupt_or_incomplete_sets(trace_sets, tmp_path):
    import shutil

    copy = tmp_path / "set"
    shutil.copytree(trace_sets["va"].directory, copy)
    assert load_trace_set(copy).kernel_s == trace_sets["va"].kernel_s
    victim = next(copy.glob("*.npz"))
    victim.write_bytes(victim.read_bytes()[:-10] + b"0123456789")
    with pytest.raises(TraceStoreError, match="corrupt"):
        load_trace_set(copy)
    victim.unlink()
    with pytest.raises(TraceStoreError, match="missing"):
        load_trace_set(copy)
    with pytest.raises(TraceStoreError, match="no trace set"):
        load_trace_set(tmp_path)


def test_parameters_and_cost_expressions_are_checked():
    assert parse_param("frequency_mhz=267,350") == ("frequency_mhz", (267.0, 350.0))
    assert parse_param("revolver=8,11") == ("revolver", (8, 11))
    with pytest.raises(SweepError, match="valid: frequency_mhz, revolver"):
        parse_param("clock=1,2")
    with pytest.raises(SweepError, match="must be an integer"):
        parse_param("revolver=8.5")
    with pytest.raises(SweepError, match="not a number"):
        parse_param("dma_beta=fast")
    with pytest.raises(SweepError, match="not both"):
        design_points(DpuConfig(), {"dma_alpha": (50,), "dma_read_alpha": (60,)})
    [point] = design_points(DpuConfig(), {"dma_alpha": (50,), "launch_overhead_us": (30,)})
    assert (point.config.dma_read_alpha, point.config.dma_write_alpha) == (50.0, 50.0)
    assert point.config.launch_overhead_s == pytest.approx(30e-6)
    assert CostExpression("frequency_mhz*1.0 + revolver*2")(point) == pytest.approx(350 + 22)
    assert CostExpression("(frequency_mhz / 100) ** 2 - -dma_alpha")(point) == pytest.approx(12.25 + 50)
    for evil in ("__import__('os').system('true')", "frequency_mhz.real", "[1][0]", "lambda: 1", "x + 1",
                 "frequency_mhz if 1 else 2", "True + 1"):
        with pytest.raises(SweepError):
            CostExpression(evil)
    with pytest.raises(SweepError, match="exponent"):
        CostExpression("frequency_mhz ** 1000")(point)


def test_cli_sweeps_several_kernels_with_json_and_plot(store, trace_sets, tmp_path):
    plot = tmp_path / "pareto.png"
    result = _cnmtune("sweep", "va,red", "--size", "small", "--dpus", "2", "--traces", str(store),
                      "--param", "frequency_mhz=267,350,400", "--param", "revolver=8,11", "--param", "dma_beta=0.25,0.5",
                      "--cost", "frequency_mhz*1.0+revolver*2", "--plot", str(plot), "--json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["points"] == 12 and [k["kernel"] for k in report["kernels"]] == ["va", "red"]
    assert all(not k["recorded_now"] for k in report["kernels"])  # the module's stored traces
    assert all(k["most_important"] in ("frequency_mhz", "revolver", "dma_beta") for k in report["kernels"])
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    table = _cnmtune("sweep", "va", "--size", "small", "--dpus", "2", "--traces", str(store),
                     "--param", "revolver=8,11")
    assert table.returncode == 0, table.stderr
    assert "which parameter matters most" in table.stdout and "revolver" in table.stdout


def test_cli_errors_and_help():
    unknown = _cnmtune("sweep", "va", "--param", "clock=1,2")
    assert unknown.returncode == 2 and "unknown design parameter 'clock'" in unknown.stderr
    assert "frequency_mhz" in unknown.stderr
    evil = _cnmtune("sweep", "va", "--param", "revolver=8", "--cost", "open('x')")
    assert evil.returncode == 2 and "Call is not allowed" in evil.stderr
    helptext = _cnmtune("sweep", "--help")
    assert helptext.returncode == 0
    for name in ("frequency_mhz", "revolver", "dma_beta", "launch_overhead_us", "xfer_call_us"):
        assert name in helptext.stdout


def test_cli_tables_fit_80_columns(store, trace_sets):
    result = _cnmtune("sweep", "va", "--size", "small", "--dpus", "2", "--traces", str(store),
                      "--param", "frequency_mhz=267,400", "--param", "revolver=8,11", columns=80)
    assert result.returncode == 0, result.stderr
    assert "…" not in result.stdout
    assert max(len(line) for line in result.stdout.splitlines()) <= 80
    assert "frequency_mhz" in result.stdout  # a long name whole: neither cut nor split over two lines
    rows = [line for line in result.stdout.splitlines() if line.rstrip(" │").endswith(("retimed", "recorded"))]
    assert len(rows) == 4  # one row per design point, none folded over two lines
