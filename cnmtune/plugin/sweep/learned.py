"""Learned design sweeps: a program's PerfVec representation once, then design points in bulk.

The program's representation comes from its recorded trace set (its blocks through the block
encoder, one onnxruntime call); every design point is then one design-encoder row and a dot
product (one call for all points): the predicted DPU cycles. Seconds follow in closed form, as in
the exact sweep: cycles / frequency + the launch overhead per launch, and the recorded transfer
log priced under the point's config. The best few points (by the metric) are then priced exactly
by the exact sweep (re-timing, or re-execution where re-timing is not exact), and both are
reported. Points whose timeline constants lie outside the ranges the model was trained on are
counted: their predictions extrapolate.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace

import numpy as np

from cnmtune.costmodel.learn.perfvec_blocks import program_blocks
from cnmtune.costmodel.learn.perfvec_onnx import PerfVecScorer
from cnmtune.plugin.sweep.design import CostExpression, DesignPoint
from cnmtune.plugin.sweep.evaluate import KernelSweep, PointResult, main_effects, pareto_front, sweep_trace_set
from cnmtune.runtime.sim.design_space import TIMELINE_PARAMETERS, design_vector
from cnmtune.runtime.sim.device import transfer_times_under
from cnmtune.runtime.sim.traces import TraceSet
from cnmtune.runtime.toolchain import Toolchain

__all__ = ["LearnedSweep", "learned_sweep"]


@dataclass
class LearnedSweep:
    """Predicted times of every point (as a KernelSweep, method 'learned'), the best few priced
    exactly (pairs of predicted and exact results), and how fast the prediction ran."""

    sweep: KernelSweep
    confirmed: list[tuple[PointResult, PointResult]]
    predict_seconds: float
    extrapolated: int

    @property
    def points_per_s(self) -> float:
        """Design points predicted per second (program representation included)."""
        return len(self.sweep.results) / self.predict_seconds if self.predict_seconds else float("inf")

    def to_dict(self) -> dict:
        """JSON-safe form: the sweep's, plus the confirmations and the speed."""
        metric = self.sweep.metric
        return {**self.sweep.to_dict(), "predict_seconds": self.predict_seconds, "points_per_s": self.points_per_s,
                "extrapolated": self.extrapolated,
                "confirmed": [{"params": dict(p.point.values), "predicted_s": p.seconds(metric),
                               "exact_s": e.seconds(metric), "method": e.method,
                               "error": p.seconds(metric) / e.seconds(metric) - 1} for p, e in self.confirmed]}


def _predict(trace_set: TraceSet, points: list[DesignPoint], scorer: PerfVecScorer,
             cost: CostExpression) -> list[PointResult]:
    program = scorer.program(program_blocks(trace_set))
    configs = [p.config for p in points]
    cycles = np.exp(scorer.log_cycles(program, design_vector(configs, TIMELINE_PARAMETERS)).astype(np.float64))
    transfers = transfer_times_under(trace_set.transfers, configs)  # every point's at once
    results = []
    for point, config, predicted, (to_dpu, inter_dpu, to_host) in zip(points, configs, cycles.tolist(),
                                                                      transfers.tolist()):
        kernel = predicted / config.frequency_hz + len(trace_set.launches) * config.launch_overhead_s
        results.append(PointResult(point, kernel, to_dpu, to_host, inter_dpu, "learned", cost=cost(point)))
    return results


def learned_sweep(trace_set: TraceSet, points: list[DesignPoint], scorer: PerfVecScorer, confirm: int = 5,
                  cost: CostExpression | None = None, metric: str = "kernel", strict: bool = False,
                  toolchain: Toolchain | None = None) -> LearnedSweep:
    """Predict every point with `scorer`, then price the `confirm` best exactly (see the module docstring)."""
    cost = cost or CostExpression()
    start = time.perf_counter()
    results = _predict(trace_set, points, scorer, cost)
    predict_seconds = time.perf_counter() - start
    front = set(pareto_front(results, metric))
    results = [replace(r, pareto=i in front) for i, r in enumerate(results)]
    best = sorted(range(len(results)), key=lambda i: results[i].seconds(metric))[:max(0, confirm)]
    exact = sweep_trace_set(trace_set, [points[i] for i in best], cost, metric, strict, toolchain).results
    confirmed = [(results[i], e) for i, e in zip(best, exact)]
    extrapolated = sum(not all(p.contains(getattr(point.config, p.field)) for p in TIMELINE_PARAMETERS)
                       for point in points)
    sweep = KernelSweep(trace_set, results, metric, main_effects(results, metric), time.perf_counter() - start)
    return LearnedSweep(sweep, confirmed, predict_seconds, extrapolated)
