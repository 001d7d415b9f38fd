"""Training data of the PerfVec design model: suite variants recorded once, re-timed under sampled designs.

A unit is one run of a variant (kernel, pipeline, tasklets; the workload's defines) on some DPUs
at a size preset. Each unit is recorded once into a trace store (runtime/sim/traces.py; a unit
already recorded there is loaded) and re-timed exactly under every design the seeded sampler
draws (runtime/sim/design_space.py), through the sweep's own evaluator (evaluate.retime_points:
nothing is re-executed; a design that cannot re-time the trace exactly is stored as invalid with
the reason). Everything goes to the store's re-timing tables (store_retimes.py), a chunk of
designs per transaction: a generation that stops goes on where it stopped, and asking for more
designs later re-times only the new ones (the sampler's first N designs do not change).

`training_data` reads the store back as PerfVecData: per unit with exact re-timings, its blocks
(from its trace set) and its cycles under every stored design (NaN where not exact).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from cnmtune.costmodel.learn.perfvec import PerfVecData
from cnmtune.costmodel.learn.perfvec_blocks import program_blocks
from cnmtune.errors import CnmtuneError, InvalidRetime, UsageError
from cnmtune.plugin.jobs import status_of
from cnmtune.plugin.sweep.design import DesignPoint
from cnmtune.plugin.sweep.evaluate import retime_points
from cnmtune.runtime.registry import find_kernel
from cnmtune.runtime.sim.config import DpuConfig
from cnmtune.runtime.sim.design_space import DESIGN_SPACE, TIMELINE_PARAMETERS, design_vector, sample_designs
from cnmtune.runtime.sim.traces import TraceSet, config_from_json, config_to_json, load_trace_set, obtain_trace_set
from cnmtune.runtime.toolchain import ProxyToolchain, Toolchain, Variant
from cnmtune.store import Store, defines_key
from cnmtune.store_retimes import (
    INVALID,
    OK,
    DesignRow,
    RetimeRecord,
    TraceSetRecord,
    add_designs,
    designs,
    record_retimes,
    record_trace_set,
    retimed,
    retimes,
    trace_set,
    trace_sets,
)

__all__ = ["RetimeReport", "RetimeSpec", "generate_retimes", "training_data"]

CHUNK = 25  # designs per transaction


@dataclass(frozen=True)
class RetimeSpec:
    """What to generate: the variants (kernels x pipelines x tasklet counts, None = the workload's),
    their run (DPUs, size preset, input seed) and the designs (count, sampler seed)."""

    kernels: tuple[str, ...]
    pipelines: tuple[str, ...] = ("O2",)
    tasklets: tuple[int | None, ...] = (None,)
    dpus: int = 1
    size: str = "small"
    input_seed: int = 0
    designs: int = 300
    design_seed: int = 0

    def __post_init__(self) -> None:
        if not self.kernels or not self.pipelines or not self.tasklets or self.dpus < 1 or self.designs < 1:
            raise UsageError("a re-timing generation needs kernels, pipelines, tasklet counts, DPUs >= 1 and "
                             "designs >= 1")


@dataclass(frozen=True)
class RetimeReport:
    """What a generation did: units recorded now, failed or loaded, re-timings added, seconds each way."""

    units: int
    recorded: int
    failed: int
    retimed: int
    invalid: int
    record_seconds: float
    retime_seconds: float


def _unit(variant: Variant, dpus: int, size: int, seed: int) -> str:
    return (f"{variant.kernel.name}|{variant.pipeline.text}|{variant.nr_tasklets}|{defines_key(dict(variant.defines))}"
            f"|{dpus}|{size}|{seed}")


def _record(store: Store, variant: Variant, spec: RetimeSpec, size: int, traces: Path,
            toolchain: Toolchain) -> tuple[str, TraceSet | None, bool]:
    """The unit, its trace set (None if it cannot be recorded: the failure is stored once) and
    whether it was recorded now."""
    unit = _unit(variant, spec.dpus, size, spec.input_seed)
    known = trace_set(store, unit)
    if known is not None and known.status != OK:
        return unit, None, False
    if known is not None:
        return unit, load_trace_set(Path(known.directory)), False
    start = time.perf_counter()
    base = TraceSetRecord(unit, variant.kernel.name, variant.pipeline.text, variant.nr_tasklets,
                          defines_key(dict(variant.defines)), spec.dpus, size, spec.input_seed, OK)
    try:
        recorded, _ = obtain_trace_set(variant, spec.dpus, size, spec.input_seed, None, DpuConfig.calibrated(),
                                       traces, toolchain)
    except CnmtuneError as exc:
        record_trace_set(store, replace(base, status=status_of(exc).value, error=str(exc),
                                        seconds=time.perf_counter() - start))
        return unit, None, True
    record_trace_set(store, replace(base, directory=str(recorded.directory), launches=len(recorded.launches),
                                    seconds=time.perf_counter() - start))
    return unit, recorded, True


def _retime(store: Store, unit: str, recorded: TraceSet, configs: list[DpuConfig]) -> tuple[int, int, float]:
    """Re-time `recorded` under the designs it has no row for; (rows added, of them invalid, seconds)."""
    done = retimed(store, unit)
    todo = [c for c in configs if c.full_hash not in done]
    points = [DesignPoint(tuple((p.field, getattr(c, p.field)) for p in DESIGN_SPACE), c) for c in todo]
    pending: list[RetimeRecord] = []
    added = invalid = 0
    start = clock = time.perf_counter()
    for config, result in zip(todo, retime_points(recorded, points)):
        seconds, clock = time.perf_counter() - clock, time.perf_counter()
        if isinstance(result, InvalidRetime):
            pending.append(RetimeRecord(unit, config.full_hash, INVALID, error=str(result), seconds=seconds))
            invalid += 1
        else:
            pending.append(RetimeRecord(unit, config.full_hash, OK, sum(result.launch_cycles), result.kernel_s,
                                        result.transfer_s, seconds=seconds))
        if len(pending) == CHUNK:
            record_retimes(store, pending)
            added, pending = added + len(pending), []
    record_retimes(store, pending)
    return added + len(pending), invalid, time.perf_counter() - start


def generate_retimes(store: Store, spec: RetimeSpec, traces: str | Path, toolchain: Toolchain | None = None,
                     progress: Callable[[str, int, int], None] | None = None) -> RetimeReport:
    """Record every unit of `spec` (once) and re-time it under the spec's designs, into `store`;
    trace sets go under `traces`. ``progress(unit, done, total)`` after each unit."""
    toolchain = toolchain or ProxyToolchain()
    configs = sample_designs(spec.designs, spec.design_seed)
    add_designs(store, (DesignRow(c.full_hash, spec.design_seed, i, json.dumps(config_to_json(c), sort_keys=True))
                        for i, c in enumerate(configs)))
    variants = [Variant.of(find_kernel(k), p, t) for k in spec.kernels for p in spec.pipelines for t in spec.tasklets]
    recorded_now = failed = added = invalid = 0
    record_seconds = retime_seconds = 0.0
    for number, variant in enumerate(variants, 1):
        size = variant.kernel.workload.preset(spec.size)
        start = time.perf_counter()
        unit, recorded, now = _record(store, variant, spec, size, Path(traces), toolchain)
        record_seconds += time.perf_counter() - start
        recorded_now += now and recorded is not None
        if recorded is None:
            failed += 1
        else:
            n, bad, seconds = _retime(store, unit, recorded, configs)
            added, invalid, retime_seconds = added + n, invalid + bad, retime_seconds + seconds
        if progress:
            progress(unit, number, len(variants))
    return RetimeReport(len(variants), recorded_now, failed, added, invalid, record_seconds, retime_seconds)


def training_data(store: Store) -> tuple[PerfVecData, list[DpuConfig]]:
    """The store's exact re-timings as PerfVecData (units with at least one, every stored design),
    with the designs' configs in the data's column order."""
    rows = designs(store)
    if not rows:
        raise CnmtuneError(f"{store.path} holds no sampled designs; generate re-timings first")
    configs = [config_from_json(json.loads(r.config)) for r in rows]
    column = {r.hash: k for k, r in enumerate(rows)}
    cycles: dict[str, np.ndarray] = {}
    for record in retimes(store):
        if record.ok:
            cycles.setdefault(record.unit, np.full(len(rows), np.nan))[column[record.design_hash]] = record.cycles
    units = [u for u in trace_sets(store) if u.unit in cycles]
    if not units:
        raise CnmtuneError(f"{store.path} holds no exact re-timing; generate re-timings first")
    programs = tuple(program_blocks(load_trace_set(Path(u.directory))) for u in units)
    data = PerfVecData(tuple(u.unit for u in units), tuple(u.kernel for u in units), programs,
                       design_vector(configs, TIMELINE_PARAMETERS), np.stack([cycles[u.unit] for u in units]))
    return data, configs
