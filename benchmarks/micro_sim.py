"""Simulator microbenchmarks: arithmetic throughput, MRAM DMA latency and STREAM bandwidth.

Compiles the kernels of benchmarks/micro (arith, dma_latency, stream) with the proxy toolchain
at -O2, runs every variant on cnmtune's DPU simulator (run_binary: the host side pushes the
inputs, launches and verifies the result), and reports:

(a) arithmetic throughput in MOPS for INT32/INT64/FLOAT/DOUBLE x ADD/SUB/MUL/DIV x tasklets
    1, 2, 4, 8, 11, 12, 16 on one DPU, with PrIM's published operand 2^20 (the multiplier and
    divisor: a division's cost follows its quotient's bit length, so the operand sets DIV's
    MOPS; prim_arith.py uses the same). The main metric is PrIM's: elements * f / cycles, with
    the slowest tasklet's perfcounter cycles of the timed compute loops; `mops_kernel` uses the
    whole launch's cycles (RunResult.cycles, DMA and barriers included) instead;
(b) MRAM DMA latency in cycles per transfer for 8..2048 B, read and write, one tasklet,
    measured in the DPU (perfcounter brackets, bracket cost subtracted) and from the whole run
    (RunResult.cycles / transfers), each with a least-squares fit alpha + beta * size and R^2;
(c) STREAM COPY/SCALE/ADD/TRIAD bandwidth in MB/s (bytes moved * f / cycles) for 1..16 tasklets.

It checks the shapes known from UPMEM (PASS/FAIL column): throughput rises linearly with
tasklets and saturates at 11, DMA latency is linear in size, and so on; absolute values are
not checked (the simulator is being calibrated). PrIM's reference values (FACTS.md 5.2 and 4;
most UNCONFIRMED) are printed beside the simulated ones, each arithmetic value with its status
(PRIM_STATUS: D derived, U recalled), explained under the table.

    python benchmarks/micro_sim.py [--out benchmarks/results] [--quick] [--no-plots]

Outputs (generated, not committed; git ignores benchmarks/results): <out>/micro_sim.json,
<out>/micro_arith.png, <out>/micro_dma.png, <out>/micro_stream.png. Exit status 1 when a check fails.

The simulator's default config is DpuConfig.calibrated(); every entry point takes `config`
to time another one.

Importable: `run_all(console, config)` = collect + report + plots, returning the results;
`collect(config)` runs everything and returns the JSON-ready results with their checks;
`run_arith`, `run_dma`, `run_stream`, `fit_line`, `dma_fits`, `check_shapes`, `plot_arith`,
`plot_dma`, `plot_stream`, `plot_all`, `print_report` and `write_json` are the pieces.
"""

from __future__ import annotations

import argparse
import importlib
import itertools
import json
import math
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
from rich.console import Console

from cnmtune.display import Table
from cnmtune.runtime import Kernel
from cnmtune.runtime.execute import run_binary
from cnmtune.runtime.sim.config import DpuConfig
from cnmtune.runtime.toolchain import ProxyToolchain, Variant
from cnmtune.atomic import atomic_write

HERE = Path(__file__).resolve().parent
MICRO = HERE / "micro"
RESULTS = HERE / "results"
PIPELINE = "O2"

ARITH_TYPES = ("INT32", "INT64", "FLOAT", "DOUBLE")
ARITH_OPS = ("ADD", "SUB", "MUL", "DIV")
ARITH_TASKLETS = (1, 2, 4, 8, 11, 12, 16)
ITEMSIZE = {"INT32": 4, "INT64": 8, "FLOAT": 4, "DOUBLE": 8}
BLOCK_BYTES = 1024  # BL = 10, as PrIM
# Blocks per run: 528 = lcm(1, 2, 4, 8, 11, 12, 16) gives every tasklet count whole rounds;
# the costly variants (the simulator runs their soft-float/division code) use 176 = 11 * 16.
ARITH_BLOCKS, ARITH_BLOCKS_COSTLY = 528, 176

DMA_SIZES = tuple(8 << k for k in range(9))  # 8 .. 2048 B (PrIM's BL = 3..11)
DMA_MODES = ("READ", "WRITE")
DMA_TRANSFERS = 256

STREAM_OPS = ("COPY", "SCALE", "ADD", "TRIAD")
STREAM_TASKLETS = tuple(range(1, 17))
STREAM_ELEMENTS = 65536  # uint64 per array (512 KiB)

SATURATION = 11  # the revolver pipeline: one instruction per tasklet every 11 cycles

# PrIM's published arithmetic runs: 2^20 elements on one DPU, and the operand is the elements per
# DPU ((T)input_size_dpu, DPU_CODEGEN.md §4). Fixed here, whatever count a run simulates: a
# division's cost follows the bit length of its quotient, a multiply's that of its smaller operand.
PRIM_OPERAND = 1 << 20
# The status printed after each PrIM value
PRIM_STATUS = {"D": "derived from PrIM's committed raw profiles (DPU_CODEGEN.md §4)",
               "U": "the PrIM paper's figure as recalled, not re-read: unconfirmed (DPU_CODEGEN.md §5)"}
# PrIM, 1 DPU at 350 MHz, >= 11 tasklets: (MOPS, status); D for the ADD rows, U for the others.
PRIM_ARITH = {
    ("INT32", "ADD"): (58.4, "D"), ("INT32", "SUB"): (58.56, "U"), ("INT32", "MUL"): (10.27, "U"),
    ("INT32", "DIV"): (11.27, "U"),
    ("INT64", "ADD"): (50.2, "D"), ("INT64", "SUB"): (50.16, "U"), ("INT64", "MUL"): (2.56, "U"),
    ("INT64", "DIV"): (1.40, "U"),
    ("FLOAT", "ADD"): (4.92, "D"), ("FLOAT", "SUB"): (4.91, "U"), ("FLOAT", "MUL"): (1.91, "U"),
    ("FLOAT", "DIV"): (0.34, "U"),
    ("DOUBLE", "ADD"): (3.33, "D"), ("DOUBLE", "SUB"): (3.32, "U"), ("DOUBLE", "MUL"): (0.53, "U"),
    ("DOUBLE", "DIV"): (0.16, "U"),
}
# FACTS.md section 4: alpha/beta are [C2] (secondary source quoting PrIM section 3); the
# measured 2 KiB bandwidths and STREAM COPY are UNCONFIRMED.
PRIM_DMA = {
    "READ": {"alpha": 77.0, "beta": 0.5, "MBps_2048": 628.0},
    "WRITE": {"alpha": 61.0, "beta": 0.5, "MBps_2048": 633.0},
}
PRIM_STREAM_COPY_MBPS = 620.0

Progress = Callable[[str], None]


def _workload_module(kernel: Kernel):
    return importlib.import_module(kernel.workload.__module__)


def _config(config: DpuConfig | None) -> DpuConfig:
    """The given config, else the simulator's default (the calibrated constants)."""
    return config if config is not None else DpuConfig.calibrated()


# --------------------------------------------------------------------------------------- runs
def arith_elements(type_name: str, op: str, quick: bool = False) -> int:
    """Elements of one arith run: whole rounds for every swept tasklet count."""
    costly = op == "DIV" or (type_name in ("FLOAT", "DOUBLE") and op == "MUL")
    blocks = ARITH_BLOCKS_COSTLY if costly or quick else ARITH_BLOCKS
    return blocks * BLOCK_BYTES // ITEMSIZE[type_name]


def run_arith(config: DpuConfig | None = None, toolchain: ProxyToolchain | None = None,
              types=ARITH_TYPES, ops=ARITH_OPS, tasklets=ARITH_TASKLETS, quick: bool = False,
              elements: int | None = None, progress: Progress | None = None,
              scalar: int | None = PRIM_OPERAND) -> list[dict]:
    """Arithmetic throughput rows: one per (type, op, tasklets); `scalar` is the operand (None: the
    elements per DPU, as PrIM's code computes it)."""
    config, toolchain = _config(config), toolchain or ProxyToolchain()
    kernel = Kernel.load(MICRO / "arith")
    parse = _workload_module(kernel).parse_log
    f = config.frequency_hz
    rows = []
    for type_name in types:
        for op in ops:
            n = elements or arith_elements(type_name, op, quick)
            for t in tasklets:
                if progress:
                    progress(f"arith {type_name} {op} T={t}")
                defines = {type_name: None, op: None, **({} if scalar is None else {"SCALAR": scalar})}
                binary = toolchain.compile(Variant.of(kernel, PIPELINE, t, defines))
                result = run_binary(binary, 1, n, config)
                report = parse(result.log)
                if report["elements"] != n:
                    raise RuntimeError(f"arith {type_name} {op} T={t}: DPU reports {report['elements']} elements, ran {n}")
                rows.append({
                    "type": type_name, "op": op, "tasklets": t, "elements": n, "operand": scalar or n,
                    "perf_cycles": report["cycles"], "kernel_cycles": result.cycles,
                    "mops": n * f / report["cycles"] / 1e6 if report["cycles"] else math.nan,
                    "mops_kernel": n * f / result.cycles / 1e6,
                    "ipc": result.ipc, "slots_per_element": result.slots / n,
                    "wall_s": result.wall_s,
                })
    return rows


def run_dma(config: DpuConfig | None = None, toolchain: ProxyToolchain | None = None,
            sizes=DMA_SIZES, modes=DMA_MODES, tasklets: int = 1, transfers: int = DMA_TRANSFERS,
            progress: Progress | None = None) -> list[dict]:
    """DMA latency rows: one per (mode, transfer size)."""
    config, toolchain = _config(config), toolchain or ProxyToolchain()
    kernel = Kernel.load(MICRO / "dma_latency")
    module = _workload_module(kernel)
    f = config.frequency_hz
    rows = []
    for mode in modes:
        for size in sizes:
            if progress:
                progress(f"dma {mode} {size} B")
            binary = toolchain.compile(Variant.of(kernel, PIPELINE, tasklets, {"TRANSFER": size, mode: None}))
            result = run_binary(binary, 1, transfers, config)
            report = module.parse_log(result.log)
            latency = module.latency(report)
            bracket = report[0]["overhead"] / report[0]["calibration"]
            rows.append({
                "mode": mode, "transfer": size, "tasklets": tasklets, "transfers": transfers,
                "latency_cycles": latency, "bracket_cycles": bracket,
                "run_cycles_per_transfer": result.cycles / transfers, "kernel_cycles": result.cycles,
                "MBps": size * f / latency / 1e6 if latency > 0 else math.nan,
                "dma_read_bytes": result.dma_read_bytes, "dma_write_bytes": result.dma_write_bytes,
                "wall_s": result.wall_s,
            })
    return rows


def run_stream(config: DpuConfig | None = None, toolchain: ProxyToolchain | None = None,
               ops=STREAM_OPS, tasklets=STREAM_TASKLETS, elements: int = STREAM_ELEMENTS,
               progress: Progress | None = None) -> list[dict]:
    """STREAM rows: one per (op, tasklets)."""
    config, toolchain = _config(config), toolchain or ProxyToolchain()
    kernel = Kernel.load(MICRO / "stream")
    module = _workload_module(kernel)
    f = config.frequency_hz
    rows = []
    for op in ops:
        for t in tasklets:
            if progress:
                progress(f"stream {op} T={t}")
            binary = toolchain.compile(Variant.of(kernel, PIPELINE, t, {op: None}))
            result = run_binary(binary, 1, elements, config)
            report = module.parse_log(result.log)
            moved = module.BYTES_MOVED[op] * report["bytes"]
            rows.append({
                "op": op, "tasklets": t, "elements": elements, "bytes_moved": moved,
                "perf_cycles": report["cycles"], "kernel_cycles": result.cycles,
                "MBps": moved * f / report["cycles"] / 1e6 if report["cycles"] else math.nan,
                "MBps_kernel": moved * f / result.cycles / 1e6,
                "ipc": result.ipc, "wall_s": result.wall_s,
            })
    return rows


# ------------------------------------------------------------------------------------ analysis
def fit_line(x, y) -> dict[str, float]:
    """Least-squares y = alpha + beta * x, with the coefficient of determination R^2."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    beta, alpha = np.polyfit(x, y, 1)
    residual = float(np.sum((y - (alpha + beta * x)) ** 2))
    total = float(np.sum((y - y.mean()) ** 2))
    return {"alpha": float(alpha), "beta": float(beta), "r2": 1.0 - residual / total if total else 1.0}


def dma_fits(dma_rows: list[dict]) -> dict[str, dict[str, dict[str, float]]]:
    """Per mode: the fit of the in-DPU latency ('perfcounter') and of whole-run cycles per transfer ('run')."""
    fits = {}
    for mode in sorted({r["mode"] for r in dma_rows}, key=DMA_MODES.index):
        rows = sorted((r for r in dma_rows if r["mode"] == mode), key=lambda r: r["transfer"])
        sizes = [r["transfer"] for r in rows]
        fits[mode] = {"perfcounter": fit_line(sizes, [r["latency_cycles"] for r in rows]),
                      "run": fit_line(sizes, [r["run_cycles_per_transfer"] for r in rows])}
    return fits


def _index(rows: list[dict], *keys: str, value: str) -> dict:
    return {tuple(r[k] for k in keys): r[value] for r in rows}


def _check(name: str, passed: bool, value: str, criterion: str) -> dict:
    return {"name": name, "passed": bool(passed), "value": value, "criterion": criterion}


def check_shapes(results: dict) -> list[dict]:
    """The UPMEM shape checks on collected results; each {name, passed, value, criterion}.

    Checks are skipped (not listed) when the results lack the points they need, so a partial
    sweep can be checked too.
    """
    checks: list[dict] = []
    arith = results.get("arith") or []
    mops = _index(arith, "type", "op", "tasklets", value="mops")
    pairs = sorted({(r["type"], r["op"]) for r in arith},
                   key=lambda p: (ARITH_TYPES.index(p[0]) if p[0] in ARITH_TYPES else 99, ARITH_OPS.index(p[1])))

    def has(*keys):
        return all(k in mops for k in keys)

    if has(("INT32", "ADD", 1), ("INT32", "ADD", SATURATION), ("INT32", "ADD", 16)):
        m1, m11, m16 = (mops[("INT32", "ADD", t)] for t in (1, SATURATION, 16))
        checks.append(_check("arith INT32 ADD saturates at 11 tasklets", abs(m16 / m11 - 1) <= 0.05,
                             f"MOPS(16)/MOPS(11) = {m16 / m11:.3f}", "within 5 % of 1"))
        checks.append(_check("arith INT32 ADD rises ~linearly up to 11 tasklets", m11 / m1 > 8,
                             f"MOPS(11)/MOPS(1) = {m11 / m1:.2f}", "> 8"))
        below = [t for t in (2, 4, 8) if ("INT32", "ADD", t) in mops]
        if below:
            eff = min(mops[("INT32", "ADD", t)] / (t * m1) for t in below)
            checks.append(_check("arith INT32 ADD linear below 11 tasklets", eff >= 0.9,
                                 f"min MOPS(t)/(t*MOPS(1)), t in {below} = {eff:.3f}", ">= 0.9"))
    rising = [(p, mops[(*p, SATURATION)] / mops[(*p, 8)]) for p in pairs if has((*p, 8), (*p, SATURATION))]
    if rising:  # ideal 11/8 = 1.375: saturating at 8 (or any count below 11) gives ~1
        worst = min(rising, key=lambda x: x[1])
        checks.append(_check("arith every type/op still rising from 8 to 11 tasklets", worst[1] >= 1.25,
                             f"worst {' '.join(worst[0])}: MOPS(11)/MOPS(8) = {worst[1]:.3f}", ">= 1.25 (ideal 1.375)"))
    sat = [(p, mops[(*p, 16)] / mops[(*p, SATURATION)]) for p in pairs if has((*p, SATURATION), (*p, 16))]
    if sat:
        worst = max(sat, key=lambda x: abs(x[1] - 1))
        checks.append(_check("arith every type/op saturates at 11 tasklets", abs(worst[1] - 1) <= 0.05,
                             f"worst {' '.join(worst[0])}: MOPS(16)/MOPS(11) = {worst[1]:.3f}", "within 5 % of 1"))
    scale = [(p, mops[(*p, SATURATION)] / mops[(*p, 1)]) for p in pairs if has((*p, 1), (*p, SATURATION))]
    if scale:
        worst = min(scale, key=lambda x: x[1])
        checks.append(_check("arith every type/op rises ~linearly up to 11", worst[1] > 8,
                             f"worst {' '.join(worst[0])}: MOPS(11)/MOPS(1) = {worst[1]:.2f}", "> 8"))
    peak = {p: max(v for (ty, op, _), v in mops.items() if (ty, op) == p) for p in pairs}
    types = [ty for ty in ARITH_TYPES if all((ty, op) in peak for op in ("ADD", "MUL", "DIV"))]
    if types:
        bad = [ty for ty in types if not (peak[(ty, "ADD")] > peak[(ty, "MUL")] and peak[(ty, "ADD")] > peak[(ty, "DIV")])]
        checks.append(_check("arith ADD beats MUL and DIV for every type", not bad,
                             "violated by " + ", ".join(bad) if bad else f"{len(types)} types", "ADD > MUL, ADD > DIV"))
    subs = [(ty, peak[(ty, "SUB")] / peak[(ty, "ADD")]) for ty in ARITH_TYPES if (ty, "SUB") in peak and (ty, "ADD") in peak]
    if subs:
        worst = max(subs, key=lambda x: abs(x[1] - 1))
        checks.append(_check("arith SUB ~ ADD for every type", abs(worst[1] - 1) <= 0.1,
                             f"worst {worst[0]}: SUB/ADD = {worst[1]:.3f}", "within 10 % of 1"))
    order_ops = [op for op in ("ADD", "MUL", "DIV") if all((ty, op) in peak for ty in ARITH_TYPES)]
    if order_ops:
        bad = [op for op in order_ops if not all(peak[(a, op)] > peak[(b, op)] for a, b in itertools.pairwise(ARITH_TYPES))]
        checks.append(_check("arith INT32 > INT64 > FLOAT > DOUBLE", not bad,
                             "violated for " + ", ".join(bad) if bad else f"for {', '.join(order_ops)}",
                             "peak MOPS ordered by type for each op"))

    dma = results.get("dma") or []
    fits = results.get("dma_fits") or (dma_fits(dma) if dma else {})
    for mode, fit in fits.items():
        for source, label in (("perfcounter", "in-DPU perfcounter"), ("run", "whole-run cycles")):
            r2 = fit[source]["r2"]
            checks.append(_check(f"DMA {mode.lower()} latency linear in size ({label})", r2 > 0.99,
                                 f"R^2 = {r2:.5f}", "> 0.99"))
        rows = sorted((r for r in dma if r["mode"] == mode), key=lambda r: r["transfer"])
        if len(rows) >= 2:
            lo, hi = rows[0], rows[-1]
            checks.append(_check(f"DMA {mode.lower()} latency grows with size",
                                 hi["latency_cycles"] > lo["latency_cycles"] and fit["perfcounter"]["beta"] > 0,
                                 f"{lo['transfer']} B: {lo['latency_cycles']:.0f} cyc, {hi['transfer']} B: "
                                 f"{hi['latency_cycles']:.0f} cyc, beta {fit['perfcounter']['beta']:.3f}",
                                 "latency(max) > latency(min), beta > 0"))
    if "READ" in fits and "WRITE" in fits:
        ratio = fits["READ"]["perfcounter"]["beta"] / fits["WRITE"]["perfcounter"]["beta"]
        checks.append(_check("DMA beta equal for read and write", abs(ratio - 1) <= 0.1,
                             f"beta_read/beta_write = {ratio:.3f}", "within 10 % of 1"))

    stream = results.get("stream") or []
    bw = _index(stream, "op", "tasklets", value="MBps")
    ops = [op for op in STREAM_OPS if any(k[0] == op for k in bw)]
    best = {op: max(v for (o, _), v in bw.items() if o == op) for op in ops}
    if "COPY" in best and ("COPY", 4) in bw:
        share = bw[("COPY", 4)] / best["COPY"]
        checks.append(_check("STREAM COPY saturates with few tasklets", share >= 0.9,
                             f"BW(4)/max BW = {share:.3f}", ">= 0.9"))
    bound = [op for op in ("COPY", "ADD") if op in best]
    heavy = [op for op in ("SCALE", "TRIAD") if op in best]
    if bound and heavy:
        ratio = max(best[op] for op in heavy) / min(best[op] for op in bound)
        checks.append(_check("STREAM SCALE/TRIAD compute-bound, far below COPY/ADD", ratio < 0.5,
                             f"max(SCALE, TRIAD) / min(COPY, ADD) = {ratio:.3f}", "< 0.5"))
    for op in heavy:
        if (op, SATURATION) in bw and (op, 16) in bw:
            ratio = bw[(op, 16)] / bw[(op, SATURATION)]
            checks.append(_check(f"STREAM {op} saturates at 11 tasklets", abs(ratio - 1) <= 0.05,
                                 f"BW(16)/BW(11) = {ratio:.3f}", "within 5 % of 1"))
    # Up to 11 tasklets every tasklet issues at 1/11 whatever the others do, so more tasklets
    # never take longer. Beyond 11 they share the pipeline and a partial last round of blocks
    # (block quantization) can cost a few %, so only a collapse is a failure there.
    drops, dips = [], []
    for op in ops:
        series = sorted((t, v) for (o, t), v in bw.items() if o == op)
        drops += [(op, t1, v1 / v0) for (_, v0), (t1, v1) in itertools.pairwise(series) if t1 <= SATURATION]
        dips += [(op, t, v / max(w for u, w in series if u < t)) for t, v in series[1:] if t > SATURATION]
    if drops:
        worst = min(drops, key=lambda x: x[2])
        checks.append(_check("STREAM bandwidth non-decreasing up to 11 tasklets", worst[2] >= 0.98,
                             f"worst {worst[0]} at T={worst[1]}: BW(T)/BW(T-1) = {worst[2]:.3f}", ">= 0.98"))
    if dips:
        worst = min(dips, key=lambda x: x[2])
        checks.append(_check("STREAM bandwidth holds beyond 11 tasklets", worst[2] >= 0.9,
                             f"worst {worst[0]} at T={worst[1]}: BW(T)/max BW(<T) = {worst[2]:.3f}", ">= 0.9"))
    return checks


def collect(config: DpuConfig | None = None, toolchain: ProxyToolchain | None = None, quick: bool = False,
            progress: Progress | None = None) -> dict:
    """Run the three microbenchmarks under `config` and return the JSON-ready results with checks."""
    config, toolchain = _config(config), toolchain or ProxyToolchain()
    start = time.perf_counter()
    results = {
        "meta": {"frequency_hz": config.frequency_hz, "config_hash": config.hash, "pipeline": PIPELINE,
                 "dpus": 1, "quick": quick},
        "arith": run_arith(config, toolchain, quick=quick, progress=progress),
        "dma": run_dma(config, toolchain, progress=progress),
        "stream": run_stream(config, toolchain, elements=STREAM_ELEMENTS // (4 if quick else 1), progress=progress),
    }
    results["dma_fits"] = dma_fits(results["dma"])
    results["checks"] = check_shapes(results)
    results["reference"] = {
        "note": "PrIM values: arithmetic from shared/upmem/DPU_CODEGEN.md §4-5 (status per cell: "
                "arith_status); FACTS.md section 4 DMA alpha/beta: [C2], 2 KiB bandwidths and STREAM COPY: "
                "UNCONFIRMED",
        "arith_status": PRIM_STATUS,
        "arith_mops": {f"{t} {o}": {"mops": v, "status": status} for (t, o), (v, status) in PRIM_ARITH.items()},
        "dma": PRIM_DMA, "stream_copy_MBps": PRIM_STREAM_COPY_MBPS,
    }
    results["meta"]["wall_s"] = time.perf_counter() - start
    return results


def write_json(results: dict, path: Path) -> Path:
    """Write the results as JSON (NaN as null)."""
    def clean(obj):
        if isinstance(obj, float) and not math.isfinite(obj):
            return None
        if isinstance(obj, dict):
            return {k: clean(v) for k, v in obj.items()}
        if isinstance(obj, (list, tuple)):
            return [clean(v) for v in obj]
        return obj
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, (json.dumps(clean(results), indent=1) + "\n").encode())
    return path


# -------------------------------------------------------------------------------------- report
def _ref_text(type_name: str, op: str) -> str:
    value, status = PRIM_ARITH.get((type_name, op), (None, ""))
    return "?" if value is None else f"{value:g} ({status})"


def status_legend() -> str:
    """What the (D) and (U) after PrIM's values mean, for under a table that shows them."""
    return "PrIM values: " + "; ".join(f"({key}) {meaning}" for key, meaning in PRIM_STATUS.items()) + "."


def print_report(results: dict, console: Console | None = None) -> None:
    """Rich tables of every result, the PrIM references and the checks."""
    console = console or Console()
    meta = results.get("meta", {})
    f_mhz = meta.get("frequency_hz", _config(None).frequency_hz) / 1e6
    arith = results.get("arith") or []
    if arith:
        tasklets = sorted({r["tasklets"] for r in arith})
        mops = _index(arith, "type", "op", "tasklets", value="mops")
        kern = _index(arith, "type", "op", "tasklets", value="mops_kernel")
        table = Table(title=f"Arithmetic throughput (MOPS at {f_mhz:g} MHz, 1 DPU; PrIM metric: perfcounter "
                            f"cycles of the compute loops)")
        table.add_column("type")
        table.add_column("op")
        for t in tasklets:
            table.add_column(f"T={t}", justify="right")
        table.add_column("whole-run\nMOPS (T=max)", justify="right")
        table.add_column("PrIM ≥11 T", justify="right", style="dim")
        for ty, op in dict.fromkeys((r["type"], r["op"]) for r in arith):
            cells = [f"{mops[(ty, op, t)]:.3g}" if (ty, op, t) in mops else "" for t in tasklets]
            table.add_row(ty, op, *cells, f"{kern.get((ty, op, tasklets[-1]), math.nan):.3g}", _ref_text(ty, op))
        console.print(table)
        operands = ", ".join(f"{v:,}" for v in sorted({r["operand"] for r in arith if "operand" in r}))
        console.print(f"[dim]operand (multiplier, divisor): {operands or '?'}. {status_legend()}[/dim]")

    dma = results.get("dma") or []
    if dma:
        fits = results.get("dma_fits") or dma_fits(dma)
        table = Table(title="MRAM DMA latency, 1 tasklet (cycles per transfer)")
        table.add_column("bytes", justify="right")
        for mode in fits:
            table.add_column(f"{mode.lower()}\nin-DPU", justify="right")
            table.add_column(f"{mode.lower()}\nwhole run", justify="right")
            table.add_column(f"{mode.lower()}\nMB/s", justify="right")
        by = {(r["mode"], r["transfer"]): r for r in dma}
        for size in sorted({r["transfer"] for r in dma}):
            cells = []
            for mode in fits:
                r = by.get((mode, size))
                cells += ([f"{r['latency_cycles']:.1f}", f"{r['run_cycles_per_transfer']:.1f}", f"{r['MBps']:.1f}"]
                          if r else ["", "", ""])
            table.add_row(str(size), *cells)
        console.print(table)
        table = Table(title="DMA latency fit: alpha + beta * bytes")
        for col in ("mode", "measure", "alpha (cyc)", "beta (cyc/B)", "R^2", "PrIM alpha / beta",
                    "PrIM MB/s @2 KiB (UNCONFIRMED)"):
            table.add_column(col, justify="right" if col not in ("mode", "measure") else "left")
        for mode, fit in fits.items():
            ref = PRIM_DMA.get(mode, {})
            for source, label in (("perfcounter", "in-DPU perfcounter"), ("run", "whole-run cycles")):
                table.add_row(mode, label, f"{fit[source]['alpha']:.1f}", f"{fit[source]['beta']:.4f}",
                              f"{fit[source]['r2']:.5f}",
                              f"{ref.get('alpha', '?'):g} / {ref.get('beta', '?'):g} [C2]" if ref else "",
                              f"{ref.get('MBps_2048', '?'):g}" if ref else "")
        console.print(table)
        console.print("[dim]in-DPU = perfcounter bracket around each DMA minus an empty bracket; it keeps the proxy's "
                      "call sequence of mram_read, so alpha is above the DMA engine's own. Whole run = "
                      "RunResult.cycles / transfers (loop overhead included).[/dim]")

    stream = results.get("stream") or []
    if stream:
        bw = _index(stream, "op", "tasklets", value="MBps")
        bwk = _index(stream, "op", "tasklets", value="MBps_kernel")
        ops = list(dict.fromkeys(r["op"] for r in stream))
        table = Table(title=f"STREAM bandwidth (MB/s at {f_mhz:g} MHz, 1 DPU, uint64; perfcounter, slowest tasklet)")
        table.add_column("T", justify="right")
        for op in ops:
            table.add_column(op, justify="right")
        for t in sorted({r["tasklets"] for r in stream}):
            table.add_row(str(t), *[f"{bw[(op, t)]:.1f}" if (op, t) in bw else "" for op in ops])
        last = max(r["tasklets"] for r in stream)
        table.add_row("whole run", *[f"{bwk[(op, last)]:.1f}" if (op, last) in bwk else "" for op in ops], style="dim")
        table.add_row("PrIM", *[f"~{PRIM_STREAM_COPY_MBPS:g} (UNCONFIRMED)" if op == "COPY" else "" for op in ops],
                      style="dim")
        console.print(table)

    checks = results.get("checks")
    if checks is None:
        checks = check_shapes(results)
    if checks:
        table = Table(title="UPMEM shape checks")
        for col in ("check", "value", "criterion", "result"):
            table.add_column(col)
        for c in checks:
            table.add_row(c["name"], c["value"], c["criterion"],
                          "[green]PASS[/green]" if c["passed"] else "[bold red]FAIL[/bold red]")
        console.print(table)
    if "wall_s" in meta:
        console.print(f"[dim]config {meta.get('config_hash', '?')}, wall time {meta['wall_s']:.1f} s[/dim]")


# -------------------------------------------------------------------------------------- plots
def _pyplot():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def plot_arith(results: dict, path: Path) -> Path:
    """MOPS vs tasklets, one subplot per element type, one line per operation (log scale)."""
    plt = _pyplot()
    arith = results["arith"]
    types = list(dict.fromkeys(r["type"] for r in arith))
    cols = min(2, len(types))
    rows = -(-len(types) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(6 * cols, 4.2 * rows), squeeze=False)
    colors = dict(zip(ARITH_OPS, plt.rcParams["axes.prop_cycle"].by_key()["color"]))
    for ax, ty in zip(axes.flat, types):
        for op in dict.fromkeys(r["op"] for r in arith if r["type"] == ty):
            pts = sorted((r["tasklets"], r["mops"]) for r in arith if r["type"] == ty and r["op"] == op)
            ax.plot(*zip(*pts), "x--" if op == "SUB" else "o-", color=colors.get(op), label=op)
            ref = PRIM_ARITH.get((ty, op))
            if ref:
                ax.axhline(ref[0], color=colors.get(op), ls=":", lw=1)
        ax.axvline(SATURATION, color="grey", ls="--", lw=0.8)
        ax.set_yscale("log")
        ax.set_title(ty)
        ax.set_xlabel("tasklets")
        ax.set_ylabel("MOPS")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    for ax in list(axes.flat)[len(types):]:
        ax.set_visible(False)
    f_mhz = results.get("meta", {}).get("frequency_hz", 350e6) / 1e6
    fig.suptitle(f"Simulated arithmetic throughput, 1 DPU at {f_mhz:g} MHz "
                 f"(dotted: PrIM ≥11-tasklet values, mostly unconfirmed)")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def plot_dma(results: dict, path: Path) -> Path:
    """Cycles per transfer vs bytes for read and write, measured points and fitted lines."""
    plt = _pyplot()
    dma = results["dma"]
    fits = results.get("dma_fits") or dma_fits(dma)
    fig, ax = plt.subplots(figsize=(7.5, 5))
    colors = {"READ": "tab:blue", "WRITE": "tab:orange"}
    for mode, fit in fits.items():
        pts = sorted((r["transfer"], r["latency_cycles"], r["run_cycles_per_transfer"]) for r in dma if r["mode"] == mode)
        x = np.array([p[0] for p in pts], float)
        for k, (source, marker, ls) in enumerate((("perfcounter", "o", "-"), ("run", "s", "--"))):
            y = [p[1 + k] for p in pts]
            p = fit[source]
            label = "in-DPU" if source == "perfcounter" else "whole run"
            ax.plot(x, y, marker, color=colors.get(mode), mfc="none" if k else None,
                    label=f"{mode.lower()} {label}")
            xs = np.linspace(0, x.max(), 50)
            ax.plot(xs, p["alpha"] + p["beta"] * xs, ls, color=colors.get(mode), lw=1,
                    label=f"fit {p['alpha']:.0f} + {p['beta']:.3f}·B (R²={p['r2']:.4f})")
        ref = PRIM_DMA.get(mode)
        if ref:
            ax.plot(xs, ref["alpha"] + ref["beta"] * xs, ":", color=colors.get(mode), lw=1,
                    label=f"PrIM {mode.lower()} {ref['alpha']:g} + {ref['beta']:g}·B")
    ax.set_xlabel("bytes per DMA")
    ax.set_ylabel("cycles per transfer")
    ax.set_title("Simulated MRAM DMA latency, 1 tasklet")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def plot_stream(results: dict, path: Path) -> Path:
    """STREAM bandwidth vs tasklets, one line per operation (log scale)."""
    plt = _pyplot()
    stream = results["stream"]
    fig, ax = plt.subplots(figsize=(7.5, 5))
    for op in dict.fromkeys(r["op"] for r in stream):
        pts = sorted((r["tasklets"], r["MBps"]) for r in stream if r["op"] == op)
        ax.plot(*zip(*pts), "o-", label=op)
    ax.axhline(PRIM_STREAM_COPY_MBPS, color="grey", ls=":", lw=1, label="PrIM COPY ~620 MB/s (UNCONFIRMED)")
    ax.axvline(SATURATION, color="grey", ls="--", lw=0.8)
    ax.set_yscale("log")
    ax.set_xlabel("tasklets")
    ax.set_ylabel("MB/s")
    f_mhz = results.get("meta", {}).get("frequency_hz", 350e6) / 1e6
    ax.set_title(f"Simulated STREAM bandwidth, 1 DPU at {f_mhz:g} MHz (uint64)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def plot_all(results: dict, outdir: Path, prefix: str = "micro_") -> list[Path]:
    """Every plot whose data is present: <outdir>/<prefix>{arith,dma,stream}.png."""
    paths = []
    for key, plot in (("arith", plot_arith), ("dma", plot_dma), ("stream", plot_stream)):
        if results.get(key):
            paths.append(plot(results, outdir / f"{prefix}{key}.png"))
    return paths


# ---------------------------------------------------------------------------------------- main
def run_all(console: Console | None = None, config: DpuConfig | None = None, quick: bool = False,
            outdir: Path | None = RESULTS, plots: bool = True, json_name: str | None = None) -> dict:
    """Collect, print the report and (unless `plots` is False or `outdir` None) write the PNGs.

    Returns the JSON-ready results; their "plots" entry lists the PNGs written. `json_name`
    (e.g. "micro_sim.json") also writes the results into `outdir`.
    """
    console = console or Console()
    with console.status("micro benchmarks: compiling and simulating") as status:
        results = collect(config, quick=quick, progress=lambda text: status.update(f"simulating {text}"))
    print_report(results, console)
    results["plots"] = [str(p) for p in plot_all(results, outdir)] if plots and outdir is not None else []
    if json_name and outdir is not None:
        write_json(results, outdir / json_name)
    return results


def failed_checks(results: dict, console: Console) -> list[str]:
    """The names of the shape checks that failed, printed when there are any."""
    failed = [c["name"] for c in results["checks"] if not c["passed"]]
    if failed:
        console.print(f"[bold red]{len(failed)} shape check(s) failed:[/bold red] {', '.join(failed)}")
    return failed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=RESULTS, metavar="DIR",
                        help="folder for micro_sim.json and the PNGs (default: benchmarks/results, which git ignores)")
    parser.add_argument("--quick", action="store_true", help="smaller problem sizes (about 3x faster)")
    parser.add_argument("--no-plots", action="store_true")
    args = parser.parse_args(argv)

    console = Console()
    results = run_all(console, quick=args.quick, outdir=args.out, plots=not args.no_plots, json_name="micro_sim.json")
    for path in [args.out / "micro_sim.json", *results["plots"]]:
        console.print(f"wrote {path}")
    return 1 if failed_checks(results, console) else 0


if __name__ == "__main__":
    sys.exit(main())
