"""The DPU design space: the DpuConfig constants an architect varies, their ranges, and a sampler.

Only constants that change a kernel's time are here. Two groups (the split of retime.py):
- the DPU timeline (`timeline`): revolver period, pipeline depth, DMA latencies, per-byte cost and
  engine occupancy, the DMA's share of the WRAM port, the bytes of a direct MRAM access. They
  change the cycles a trace re-times to;
- the clock, the launch overhead and the host-transfer constants: they turn cycles into seconds
  and price the transfer log in closed form (runtime/sim/device.call_seconds), without a replay.

Left out, because in this model they do not change time: the WRAM and IRAM sizes and the
register file (they decide whether a program fits and how it compiles, not how fast it runs;
the tasklet count is the program's), the routine cost table (the SDK's software arithmetic: a
hardware multiplier is another program, not another timing constant), and the rank topology
(DPUs per rank, which must agree with the DPU count a workload runs on).

Ranges span what the sources name for today's DPUs and what a next design plausibly reaches
(each `source` gives today's value and where it comes from: FACTS.md is
../shared/upmem/FACTS.md, "fitted" is calibrated.py; a transfer constant's source gives its
literature value, config.py, and its calibrated value with the fit's 5-95 % range, calibrated.py).
A range whose bounds differ tenfold or more is sampled log-uniformly, others uniformly; integers
uniformly over their values.
The revolver period is drawn at most the pipeline depth: a tasklet waits for its previous
instruction's write-back (no operand bypass, FACTS.md section 2), so the period never exceeds
the depth on a real pipeline. The sampler is deterministic: design i of seed s depends on
(s, i) only, so the first N designs of a seed stay the same when more are drawn.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from cnmtune.errors import CnmtuneError
from cnmtune.runtime.sim.calibrated import FIELDS, TRANSFER_RANGES
from cnmtune.runtime.sim.config import DpuConfig
from cnmtune.runtime.sim.retime import HOST_FIELDS

__all__ = ["DESIGN_SPACE", "TIMELINE_PARAMETERS", "DesignParameter", "design_vector", "normalised",
           "parameter", "sample_designs"]


@dataclass(frozen=True)
class DesignParameter:
    """One DpuConfig constant of the design space: its range (field units), type and sources."""

    field: str
    low: float
    high: float
    kind: type
    unit: str
    source: str
    at_most: str | None = None  # another parameter, drawn first, that bounds this one

    def __post_init__(self) -> None:
        if not 0 <= self.low < self.high:
            raise ValueError(f"design parameter {self.field}: need 0 <= low < high")

    @property
    def log(self) -> bool:
        """Whether the range is sampled (and normalised) on a log scale: bounds tenfold apart."""
        return self.low > 0 and self.high / self.low >= 10

    @property
    def timeline(self) -> bool:
        """Whether the DPU timeline reads it (it changes cycles), not only the seconds."""
        return self.field not in HOST_FIELDS

    def draw(self, u: float, high: float | None = None) -> float:
        """The value at quantile `u` in [0, 1) of the parameter's distribution (capped at `high`)."""
        top = self.high if high is None else min(self.high, high)
        if self.kind is int:
            low, top = int(self.low), int(top)
            return min(top, low + int(u * (top - low + 1)))
        if self.log:
            return math.exp(math.log(self.low) + u * (math.log(top) - math.log(self.low)))
        return self.low + u * (top - self.low)

    def contains(self, value: float) -> bool:
        """Whether `value` lies in the range (and is whole for an integer parameter)."""
        return self.low <= value <= self.high and (self.kind is not int or value == int(value))


def _p(field: str, low: float, high: float, kind: type, unit: str, source: str,
       at_most: str | None = None) -> DesignParameter:
    return DesignParameter(field, low, high, kind, unit, source, at_most)


def _transfer(field: str, low: float, high: float, unit: str, shown: tuple[str, float], what: str,
              origin: str) -> DesignParameter:
    """A host-transfer constant (runtime/sim/device.call_seconds): `what` it prices; its source gives
    the literature value (config.py) and its `origin`, and the calibrated value with the fit's 5-95 %
    range (calibrated.py), in the `shown` unit (its name, and its size in field units)."""
    name, scale = shown
    lo, hi = TRANSFER_RANGES[field]
    literature, fitted, lo, hi = (f"{v / scale:.3g}{name}"
                                  for v in (getattr(DpuConfig(), field), FIELDS[field], lo, hi))
    return _p(field, low, high, float, unit, f"{what}; literature {literature} ({origin}; config.py), calibrated "
                                             f"{fitted}, 5-95 % {lo} to {hi} (calibrated.py)")


_US, _NS_PER_B, _MB = (" us", 1e-6), (" ns/B", 1e-9), (" MB", 1e6)
_FITTED = "fitted on the calibration machine"
_PRIM = "derived from PrIM's CPU-DPU bandwidths, FACTS.md s5.4, UNCONFIRMED"


#: The design space, in the order of the design vector.
DESIGN_SPACE: tuple[DesignParameter, ...] = (
    _p("pipeline_depth", 8, 24, int, "stages",
       "14 stages (FACTS.md s2: uPIMulator num_pipeline_stages, Hot Chips 31)"),
    _p("revolver_period", 4, 24, int, "cycles",
       "11 cycles between a tasklet's issues (FACTS.md s2: uPIMulator num_revolver_scheduling_cycles, "
       "Hot Chips 31); at most 24, the v1A tasklet count", at_most="pipeline_depth"),
    _p("dma_read_alpha", 20.0, 400.0, float, "cycles",
       "77 cycles, MRAM read latency alpha (FACTS.md s4: PrIM s3 latency model)"),
    _p("dma_write_alpha", 20.0, 400.0, float, "cycles",
       "61 cycles, MRAM write latency alpha (FACTS.md s4: PrIM s3 latency model)"),
    _p("dma_beta", 0.0625, 2.0, float, "cycles/B",
       "0.5 cycle/B, 2 B per cycle (FACTS.md s4: PrIM beta; 0.0625 is a 16 B/cycle MRAM port)"),
    _p("dma_engine_overhead", 0.0, 100.0, float, "cycles",
       "engine occupancy per transfer, fitted on real UPMEM times (calibrated.py)"),
    _p("wram_dma_share", 0.0, 0.5, float, "",
       "0.25 of the issue slots while the engine moves data (config.py: derived from the 8-B WRAM port)"),
    _p("mram_direct_access_bytes", 8, 64, int, "B",
       "8 B per direct MRAM load/store (FACTS.md s6.2: uPIMulator min_access_granularity)"),
    _p("frequency_hz", 200e6, 1000e6, float, "Hz",
       "350 MHz (FACTS.md s1: SDK v1A; 267 MHz PrIM 640-DPU system, 400 MHz v1B, 500 MHz Hot Chips target)"),
    _p("launch_overhead_s", 10e-6, 500e-6, float, "s",
       "host cost of a launch, fitted on real UPMEM times (calibrated.py)"),
    _transfer("xfer_call_s", 5e-6, 500e-6, "s", _US,
              "every host transfer call (set walk, transfer matrix, thread hand-off)", _FITTED),
    _transfer("xfer_mram_read_s", 1e-6, 500e-6, "s", _US,
              "extra per MRAM read call (the SDK flushes the host cache lines first)", _FITTED),
    _transfer("xfer_mram_per_dpu_s", 0.01e-6, 2e-6, "s", _US,
              "per DPU of an MRAM call (the MRAM mux taken per DPU pair)", _FITTED),
    _transfer("xfer_wram_s_per_B", 1e-9, 500e-9, "s/B", _NS_PER_B,
              "per byte per DPU to or from WRAM (control interface, DPU by DPU)", _FITTED),
    _transfer("xfer_to_s_per_B", 0.2e-9, 20e-9, "s/B", _NS_PER_B,
              "per byte per DPU written to MRAM on 1 DPU (host memory, transposition, channel)",
              f"{_PRIM}: 0.33 GB/s at 1 DPU"),
    _transfer("xfer_to_rank_exponent", 0.2, 1.2, "", ("", 1.0),
              "power of the rank's DPUs in a write's cost per byte per DPU (1: the rank's bandwidth saturates)",
              f"{_PRIM}: 6.68 GB/s at 64 DPUs"),
    _transfer("xfer_from_row_s_per_B", 0.5e-9, 50e-9, "s/B", _NS_PER_B,
              "per byte per DPU read from MRAM (load-latency bound)", f"{_PRIM}: 0.12 GB/s at 1 DPU"),
    _transfer("xfer_from_shared_s_per_B", 0.01e-9, 5e-9, "s/B", _NS_PER_B,
              "host side per byte per DPU x the rank's DPUs, reading", f"{_PRIM}: 4.74 GB/s at 64 DPUs"),
    _transfer("xfer_host_cached_fraction", 0.0, 1.0, "", ("", 1.0),
              "host-side share left for a buffer read from the host cache (0: free, 1: no gain)", _PRIM),
    _transfer("xfer_host_cache_bytes", 1e6, 100e6, "B", _MB,
              "host footprint where per-DPU buffers leave the host cache", _FITTED),
)
#: The parameters the DPU timeline reads: the input of a learned cycle model.
TIMELINE_PARAMETERS: tuple[DesignParameter, ...] = tuple(p for p in DESIGN_SPACE if p.timeline)
_BY_FIELD = {p.field: p for p in DESIGN_SPACE}


def parameter(field: str) -> DesignParameter:
    """The design parameter of a DpuConfig field; CnmtuneError naming the valid ones if none."""
    try:
        return _BY_FIELD[field]
    except KeyError:
        raise CnmtuneError(f"{field!r} is not a design-space parameter; valid: {', '.join(_BY_FIELD)}") from None


def _design(seed: int, index: int, base: DpuConfig) -> DpuConfig:
    rng = np.random.default_rng([seed, index])
    quantiles = rng.random(len(DESIGN_SPACE))  # one draw per parameter, whatever the bounds
    values: dict[str, float] = {}
    for p, u in zip(DESIGN_SPACE, quantiles.tolist()):
        values[p.field] = p.draw(u, values[p.at_most] if p.at_most else None)
    return base.with_(**values)


def sample_designs(count: int, seed: int = 0, base: DpuConfig | None = None, start: int = 0) -> list[DpuConfig]:
    """Designs `start` .. `start + count - 1` of the seeded random stream over DESIGN_SPACE; the
    constants outside the space (routine costs, topology) are `base`'s (default: calibrated)."""
    if count < 0 or start < 0:
        raise CnmtuneError(f"sample_designs: count and start must be >= 0, not {count} and {start}")
    base = base or DpuConfig.calibrated()
    return [_design(seed, index, base) for index in range(start, start + count)]


def design_vector(configs: list[DpuConfig], space: tuple[DesignParameter, ...] = DESIGN_SPACE) -> np.ndarray:
    """The configs' values of `space` (field units), one row per config (float64)."""
    return np.array([[float(getattr(c, p.field)) for p in space] for c in configs], dtype=np.float64
                    ).reshape(len(configs), len(space))


def normalised(vectors: np.ndarray, space: tuple[DesignParameter, ...] = DESIGN_SPACE) -> np.ndarray:
    """Design vectors mapped to [-1, 1] per parameter over its range (on a log scale where it is
    sampled so); values outside the range map outside [-1, 1]."""
    vectors = np.asarray(vectors, dtype=np.float64)
    out = np.empty_like(vectors)
    for k, p in enumerate(space):
        column = vectors[:, k]
        if p.log:
            column, low, high = np.log(column), math.log(p.low), math.log(p.high)
        else:
            low, high = p.low, p.high
        out[:, k] = 2 * (column - low) / (high - low) - 1
    return out
