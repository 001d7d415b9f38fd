"""Calibrating DpuConfig on real UPMEM times (cnmtune/data/calibration/upmem_hw_prim_times.csv).

Each row (benchmark, DPUs, size) is run once on the simulator, verified, and its traces and
host-transfer log kept. Fitting then only re-times: kernel constants are searched by re-timing
the distinct traces of every row, transfer constants by re-pricing the transfer logs. The
objective is the mean absolute percentage error (MAPE), the figure validate_sim.py reports.
"""

from __future__ import annotations

import csv
import hashlib
import math
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable

from cnmtune.runtime import Kernel
from cnmtune.runtime.execute import run_on_device
from cnmtune.runtime.sim.config import DpuConfig
from cnmtune.runtime.sim.device import SimDevice, Transfer, transfer_times
from cnmtune.runtime.sim.timing import retime
from cnmtune.runtime.sim.trace import Trace
from cnmtune.runtime.toolchain import ProxyToolchain, Variant

#: The real UPMEM times shipped with cnmtune; their source, columns and meaning: README.md there.
DATA = Path(__file__).resolve().parents[2] / "data" / "calibration"
FITTED_CSV = "upmem_hw_prim_times.csv"  # VA, RED, BS, GEMV: the constants are fitted on these rows
VALIDATION_CSV = "upmem_hw_validation_times.csv"  # MLP, SCAN-SSA: held out, never fitted

KERNELS = {"VA": "va", "RED": "red", "BS": "bs", "GEMV": "gemv", "MLP": "mlp", "SCAN-SSA": "scan-ssa"}
TASKLETS = 16  # the calibration data's tasklet count (DATA/README.md)
# workload keywords a row's size implies (DATA/README.md): MLP's layers are n x n
ROW_PARAMS: dict[str, Callable[[int], dict]] = {"MLP": lambda size: {"n_cols": size}}
CRITICAL_DPUS = 3  # slowest DPUs per launch whose traces the fit re-times


@dataclass(frozen=True)
class Row:
    """One measured configuration and its real times in milliseconds."""

    benchmark: str
    nr_dpus: int
    size: int
    kernel_ms: float
    cpu_to_dpu_ms: float
    dpu_to_cpu_ms: float


@dataclass(frozen=True)
class RowRun:
    """A row simulated once: distinct traces per launch (with multiplicity) and transfers."""

    row: Row
    launches: tuple[tuple[Trace, ...], ...]
    transfers: tuple[Transfer, ...]


def row_params(row: Row) -> dict:
    """The workload keywords of a row (empty unless its size implies more than the size)."""
    return ROW_PARAMS.get(row.benchmark, lambda size: {})(row.size)


def load_rows(path: Path) -> list[Row]:
    """Read the calibration CSV."""
    with open(path, newline="") as handle:
        return [Row(r["benchmark"], int(r["num_dpus"]), int(r["size_param"]), float(r["kernel_ms"]),
                    float(r["cpu_to_dpu_ms"]), float(r["dpu_to_cpu_ms"])) for r in csv.DictReader(handle)]


def _critical(record, keep: int) -> tuple[Trace, ...]:
    """The distinct traces of the `keep` slowest DPUs of a launch.

    Kernel time is the slowest DPU's; DPUs with identical work have identical traces, and a
    DPU far from the slowest under the literature constants stays far from it under nearby
    ones, so re-timing the few slowest keeps the fit exact where it matters and fast.
    """
    order = sorted(range(len(record.traces)), key=lambda k: -record.timings[k].cycles)[:keep]
    seen: dict[str, Trace] = {}
    for trace in (record.traces[k] for k in order):
        digest = hashlib.sha256()
        for column in (trace.tasklet, trace.slots, trace.routine_counts, trace.routine_params,
                       trace.mram_accesses, trace.action, trace.arg0, trace.arg1):
            digest.update(column.tobytes())
        seen.setdefault(digest.hexdigest(), trace)
    return tuple(seen.values())


def simulate_rows(rows: list[Row], kernels_dir: Path, config: DpuConfig,
                  progress: Callable[[Row], None] = lambda row: None) -> list[RowRun]:
    """Compile (O2, 16 tasklets) and run every row once, verified; keep critical traces and transfers."""
    toolchain = ProxyToolchain()
    binaries = {}
    runs = []
    for row in rows:
        name = KERNELS[row.benchmark]
        if name not in binaries:
            kernel = Kernel.load(kernels_dir / name)
            binaries[name] = toolchain.compile(Variant.of(kernel, "O2", TASKLETS))
        device = SimDevice(row.nr_dpus, config)
        run_on_device(binaries[name], device, row.size, params=row_params(row))
        launches = tuple(_critical(record, CRITICAL_DPUS) for record in device.launches)
        runs.append(RowRun(row, launches, tuple(device.transfers)))
        progress(row)
    return runs


def predicted_kernel_ms(run: RowRun, config: DpuConfig) -> float:
    """Kernel time of a simulated row under `config`, by re-timing its traces."""
    total = 0.0
    for traces in run.launches:
        cycles = max(retime(trace, config).cycles for trace in traces)
        total += cycles / config.frequency_hz + config.launch_overhead_s
    return 1e3 * total


#: Measured cells that a workload's cnmtune version does not reproduce by design, and why: they
#: are left out of the fit and of the transfer MAPE, and validate_sim.py lists them apart.
INCOMPARABLE = {
    ("BS", "dpu_to_cpu_ms"): "cnmtune's BS returns every query's found index (queries per DPU x 8 B); "
                             "PrIM's returns 16 x 8 B of DPU_RESULTS",
}


def comparable(benchmark: str, column: str) -> bool:
    """Whether the simulator's figure for this measured column means what the measurement means."""
    return (benchmark, column) not in INCOMPARABLE


def predicted_transfer_ms(run: RowRun, config: DpuConfig) -> tuple[float, float]:
    """(CPU->DPU, DPU->CPU) milliseconds of a simulated row under `config`; like PrIM's timers (and the
    calibration CSV's columns) they leave out the Inter-DPU transfers between launches."""
    times = transfer_times(run.transfers, config)
    return 1e3 * times.host_to_dpu_s, 1e3 * times.dpu_to_host_s


def mape(pairs: list[tuple[float, float]]) -> float:
    """Mean absolute percentage error of (predicted, measured) pairs, in percent."""
    return 100.0 * sum(abs(p - m) / m for p, m in pairs) / len(pairs)


# ------------------------------------------------------------------ parameters and search
@dataclass(frozen=True)
class Knob:
    """One free constant: how to read it from a config and how to set it."""

    name: str
    get: Callable[[DpuConfig], float]
    set: Callable[[DpuConfig, float], DpuConfig]
    low: float
    high: float


def field_knob(name: str, low: float, high: float) -> Knob:
    """A knob on a plain DpuConfig field."""
    return Knob(name, lambda c: getattr(c, name), lambda c, v: replace(c, **{name: v}), low, high)


def coordinate_search(config: DpuConfig, knobs: list[Knob], objective: Callable[[DpuConfig], float],
                      rounds: int = 3, report: Callable[[str, float], None] = lambda name, value: None) -> DpuConfig:
    """Minimise `objective` one knob at a time: golden-section search on each knob's range (on a log
    scale where the range is positive: bandwidths span decades), repeated."""
    best = objective(config)
    for _ in range(rounds):
        improved = False
        for knob in knobs:
            if knob.low > 0:
                def at(u: float) -> float:
                    return objective(knob.set(config, math.exp(u)))
                u, score = _golden(at, math.log(knob.low), math.log(knob.high))
                value = math.exp(u)
            else:
                def at(value: float) -> float:
                    return objective(knob.set(config, value))
                value, score = _golden(at, knob.low, knob.high)
            if score < best - 1e-9:
                config, best, improved = knob.set(config, value), score, True
                report(knob.name, value)
        if not improved:
            break
    return config


def _golden(f: Callable[[float], float], low: float, high: float, steps: int = 20) -> tuple[float, float]:
    ratio = (math.sqrt(5) - 1) / 2
    a, b = low, high
    c, d = b - ratio * (b - a), a + ratio * (b - a)
    fc, fd = f(c), f(d)
    for _ in range(steps):
        if fc < fd:
            b, d, fd = d, c, fc
            c = b - ratio * (b - a)
            fc = f(c)
        else:
            a, c, fc = c, d, fd
            d = a + ratio * (b - a)
            fd = f(d)
    return (c, fc) if fc < fd else (d, fd)


# The MRAM DMA latency alpha + beta * bytes is PrIM's measurement (FACTS.md: ~77 / ~61 cycles,
# 0.5 cycle/B) and stays fixed; fitting it too gave alpha ~250 and beta ~0.75, far from the
# measured latency, and a worse error on the held-out SCAN-SSA (50 % against 31 %). What is
# fitted is what no source gives: the DMA engine's occupancy per transfer and the launch overhead.
KERNEL_KNOBS = [
    field_knob("dma_engine_overhead", 0.0, 400.0),
    field_knob("launch_overhead_s", 0.0, 400e-6),
]  # routine costs are the SDK's (config.py), not fitted: a fitted multiply hid MLP's error
TRANSFER_KNOBS = [
    field_knob("host_to_dpu_Bps", 0.05e9, 2e9),
    field_knob("chip_to_dpu_Bps", 0.1e9, 5e9),
    field_knob("rank_to_dpu_Bps", 0.5e9, 20e9),
    field_knob("dpu_to_host_Bps", 0.02e9, 2e9),
    field_knob("chip_to_host_Bps", 0.05e9, 5e9),
    field_knob("rank_to_host_Bps", 0.2e9, 20e9),
    field_knob("transfer_latency_s", 0.0, 2e-3),
    field_knob("transfer_per_dpu_s", 0.0, 100e-6),
]


def fit(runs: list[RowRun], config: DpuConfig, groups: tuple[str, ...] | list[str] = ("kernel", "transfers"),
        rounds: int = 3, report: Callable[[str, float], None] = lambda n, v: None) -> DpuConfig:
    """Fit the kernel knobs on kernel_ms, then the transfer knobs on both transfer columns (the
    comparable cells). The host-link search starts from PrIM's published bandwidths (DpuConfig's
    defaults), whatever `config` holds: its objective has local minima, and a start from an
    earlier fit can stay in one."""
    def kernel_error(c: DpuConfig) -> float:
        return mape([(predicted_kernel_ms(r, c), r.row.kernel_ms) for r in runs])

    def transfer_error(c: DpuConfig) -> float:
        pairs = []
        for r in runs:
            to_dpu, to_host = predicted_transfer_ms(r, c)
            pairs += [(p, m) for p, m, column in ((to_dpu, r.row.cpu_to_dpu_ms, "cpu_to_dpu_ms"),
                                                  (to_host, r.row.dpu_to_cpu_ms, "dpu_to_cpu_ms"))
                      if comparable(r.row.benchmark, column)]
        return mape(pairs)

    if "kernel" in groups:
        config = coordinate_search(config, KERNEL_KNOBS, kernel_error, rounds, report)
    if "transfers" in groups:
        literature = DpuConfig()
        for knob in TRANSFER_KNOBS:
            config = knob.set(config, knob.get(literature))
        config = coordinate_search(config, TRANSFER_KNOBS, transfer_error, rounds, report)
    return config
