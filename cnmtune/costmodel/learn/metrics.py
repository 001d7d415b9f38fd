"""Accuracy and ranking metrics of a cost model, in numpy.

Error metrics compare predicted and true values; rank metrics compare orders within a ranking
group (one kernel at one size: the candidates a tuner chooses among). Lower runtime is better.
A metric that is undefined for its input (a constant sequence for a correlation, an empty
group) is NaN.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence

import numpy as np


def _pair(true, pred) -> tuple[np.ndarray, np.ndarray]:
    t = np.asarray(true, dtype=np.float64).ravel()
    p = np.asarray(pred, dtype=np.float64).ravel()
    if t.shape != p.shape:
        raise ValueError(f"true and predicted values differ in length: {t.size} != {p.size}")
    return t, p


def mape(true, pred) -> float:
    """Mean absolute percentage error, in percent."""
    t, p = _pair(true, pred)
    return float(np.mean(np.abs(p - t) / np.abs(t)) * 100.0) if t.size else float("nan")


def rmse(true, pred) -> float:
    """Root mean squared error."""
    t, p = _pair(true, pred)
    return float(np.sqrt(np.mean((p - t) ** 2))) if t.size else float("nan")


def r2(true, pred) -> float:
    """Coefficient of determination: 1 - residual / total sum of squares."""
    t, p = _pair(true, pred)
    total = np.sum((t - t.mean()) ** 2) if t.size else 0.0
    return float(1.0 - np.sum((t - p) ** 2) / total) if total > 0 else float("nan")


def average_ranks(values) -> np.ndarray:
    """Ranks 1..n, tied values sharing the mean of their ranks."""
    _, inverse, counts = np.unique(np.asarray(values).ravel(), return_inverse=True, return_counts=True)
    first = np.cumsum(counts) - counts
    return (first + (counts + 1) / 2.0)[inverse]


def spearman_rho(a, b) -> float:
    """Spearman's rank correlation (Pearson correlation of average ranks)."""
    x, y = _pair(a, b)
    if x.size < 2:
        return float("nan")
    rx, ry = average_ranks(x) - (x.size + 1) / 2.0, average_ranks(y) - (y.size + 1) / 2.0
    denominator = np.sqrt(np.sum(rx * rx) * np.sum(ry * ry))
    return float(np.sum(rx * ry) / denominator) if denominator > 0 else float("nan")


def _tied_pairs(values: np.ndarray) -> int:
    _, counts = np.unique(values, return_counts=True)
    return int(np.sum(counts * (counts - 1) // 2))


def _inversions(ranks: np.ndarray) -> int:
    """Pairs i < j with ranks[i] > ranks[j] (strictly), in O(n log^2 n) vectorised steps.

    Bottom-up merge counting: at width w, every element of a right half-block counts the
    elements of its left half-block that are larger. Keys offset by block id let one sorted
    array and searchsorted answer all blocks at once.
    """
    n = ranks.size
    span = int(ranks.max()) + 2 if n else 1
    position = np.arange(n)
    total = 0
    width = 1
    while width < n:
        block = position // (2 * width)
        right = (position // width) % 2 == 1
        left_keys = np.sort(block[~right] * span + ranks[~right])
        key = block[right] * span + ranks[right]
        end = np.searchsorted(left_keys, block[right] * span + span, side="left")
        total += int(np.sum(end - np.searchsorted(left_keys, key, side="right")))
        width *= 2
    return total


def kendall_tau(a, b) -> float:
    """Kendall's tau-b (ties in either sequence accounted for), O(n log^2 n)."""
    x, y = _pair(a, b)
    n = x.size
    if n < 2:
        return float("nan")
    pairs = n * (n - 1) // 2
    ties_x, ties_y = _tied_pairs(x), _tied_pairs(y)
    ties_xy = _tied_pairs(np.unique(np.column_stack([x, y]), axis=0, return_inverse=True)[1])
    order = np.lexsort((y, x))  # by x, ties in x by y: pairs tied in x are no inversions
    discordant = _inversions(np.unique(y, return_inverse=True)[1][order])
    concordant_minus_discordant = pairs - ties_x - ties_y + ties_xy - 2 * discordant
    denominator = np.sqrt(float(pairs - ties_x) * float(pairs - ties_y))
    return float(concordant_minus_discordant / denominator) if denominator > 0 else float("nan")


def _top_k(true_runtime, pred_runtime, k: int) -> tuple[np.ndarray, np.ndarray]:
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    t, p = _pair(true_runtime, pred_runtime)
    return t, t[np.argsort(p, kind="stable")[:k]]


def top_k_recall(true_runtime, pred_runtime, k: int = 10) -> float:
    """1.0 if a truly fastest candidate is among the k predicted fastest, else 0.0."""
    t, chosen = _top_k(true_runtime, pred_runtime, k)
    return float(chosen.min() <= t.min()) if t.size else float("nan")


def top_k_regret(true_runtime, pred_runtime, k: int = 10) -> float:
    """True runtime of the best of the k predicted fastest over the true best, minus 1."""
    t, chosen = _top_k(true_runtime, pred_runtime, k)
    return float(chosen.min() / t.min() - 1.0) if t.size else float("nan")


def per_group(keys: Sequence[Hashable], metric: Callable[..., float], *arrays) -> dict:
    """``metric`` applied to the rows of every group key, in order of first appearance."""
    columns = [np.asarray(a) for a in arrays]
    index: dict[Hashable, list[int]] = {}
    for i, key in enumerate(keys):
        index.setdefault(key, []).append(i)
    return {key: metric(*(c[rows] for c in columns)) for key, rows in index.items()}


def _mean(values) -> float:
    finite = [v for v in values if not np.isnan(v)]
    return float(np.mean(finite)) if finite else float("nan")


def kernel_report(kernels: Sequence[str], groups: Sequence[Hashable], true_seconds, true_speedup,
                  pred_seconds=None, pred_speedup=None, k: int = 10) -> dict[str, dict[str, float | None]]:
    """Metrics per kernel (or per any row label passed as ``kernels``), plus an ``all`` row, of
    predicted runtimes and/or speedups.

    Runtime MAPE is on seconds, runtime R^2 and RMSE on log seconds (runtimes span orders of
    magnitude; an RMSE of 0.05 is a typical error factor of e^0.05); tau, rho, top-k recall and
    regret are means over the ranking groups (kernel, size), ranking by predicted runtime (or by
    1 / predicted speedup without one). The rows are JSON-safe: an undefined metric (e.g. tau of
    a constant group) is None.
    """
    if pred_seconds is None and pred_speedup is None:
        raise ValueError("kernel_report needs predicted runtimes, speedups or both")
    true_seconds, true_speedup = np.asarray(true_seconds, np.float64), np.asarray(true_speedup, np.float64)
    errors = {}  # metric name -> (true values, predicted values, metric)
    if pred_seconds is not None:
        pred_seconds = np.asarray(pred_seconds, np.float64)
        errors["runtime_mape"] = (true_seconds, pred_seconds, mape)
        errors["runtime_r2"] = (np.log(true_seconds), np.log(pred_seconds), r2)
        errors["runtime_rmse_log"] = (np.log(true_seconds), np.log(pred_seconds), rmse)
    if pred_speedup is not None:
        errors["speedup_mape"] = (true_speedup, np.asarray(pred_speedup, np.float64), mape)
    score = pred_seconds if pred_seconds is not None else 1.0 / errors["speedup_mape"][1]
    ranks = (("tau", kendall_tau), ("rho", spearman_rho),
             (f"top{k}_recall", lambda t, p: top_k_recall(t, p, k)),
             (f"top{k}_regret", lambda t, p: top_k_regret(t, p, k)))
    keys, groups = np.asarray(kernels), list(groups)

    def row(rows: np.ndarray) -> dict[str, float | None]:
        out: dict[str, float] = {"samples": rows.size}
        out.update({name: metric(t[rows], p[rows]) for name, (t, p, metric) in errors.items()})
        row_groups = [groups[i] for i in rows]
        for name, metric in ranks:
            out[name] = _mean(per_group(row_groups, metric, true_seconds[rows], score[rows]).values())
        return {key: None if np.isnan(value) else value for key, value in out.items()}

    report = {name: row(np.flatnonzero(keys == name)) for name in sorted(set(keys.tolist()))}
    report["all"] = row(np.arange(keys.size))
    return report
