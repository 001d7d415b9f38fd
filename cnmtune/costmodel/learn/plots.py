"""PNG plots of cost-model reports (matplotlib, Agg backend): the figures of the L2P paper.

- ``kernel_bars``: per-kernel runtime/speedup MAPE and runtime R^2 (L2P Fig. 4)
- ``heatmap``: train-kernel x target-kernel MAPE, with or without transfer (Figs. 5, 6)
- ``time_bars``: training, fine-tuning and prediction times (Figs. 8, 9)
- ``fraction_sweep``: transfer MAPE against the fine-tuning data fraction
- ``predicted_vs_true``: scatter of predicted against true values, per kernel

Every function writes one PNG atomically and returns its path.
"""

from __future__ import annotations

import io
import os
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from cnmtune.atomic import atomic_write


def _figure(width: float, height: float):
    import matplotlib

    matplotlib.use("Agg", force=False)
    from matplotlib import pyplot as plt

    return plt, *plt.subplots(figsize=(width, height))


def _save(plt, fig, path: str | os.PathLike) -> Path:
    buffer = io.BytesIO()
    fig.tight_layout()
    fig.savefig(buffer, format="png", dpi=110)
    plt.close(fig)
    return atomic_write(path, buffer.getvalue())


def kernel_bars(report: Mapping[str, Mapping[str, float | None]], path: str | os.PathLike,
                title: str = "") -> Path:
    """Bars of runtime and speedup MAPE (left axis) and runtime R^2 (right axis) per kernel."""
    kernels = [k for k in report if k != "all"]
    value = lambda k, m: np.nan if report[k].get(m) is None else float(report[k][m])
    plt, fig, ax = _figure(max(6.0, 0.55 * len(kernels) + 2), 4.2)
    x = np.arange(len(kernels))
    ax.bar(x - 0.2, [value(k, "runtime_mape") for k in kernels], 0.4, label="runtime MAPE %")
    ax.bar(x + 0.2, [value(k, "speedup_mape") for k in kernels], 0.4, label="speedup MAPE %")
    ax.set_xticks(x, kernels, rotation=60, ha="right")
    ax.set_ylabel("MAPE %")
    twin = ax.twinx()
    twin.plot(x, [value(k, "runtime_r2") for k in kernels], "k.", label="runtime R² (log)")
    twin.set_ylim(max(-1.0, min(0.0, np.nanmin([value(k, "runtime_r2") for k in kernels] + [0.0]))), 1.05)
    twin.set_ylabel("R²")
    handles = ax.get_legend_handles_labels()[0] + twin.get_legend_handles_labels()[0]
    ax.legend(handles, [h.get_label() for h in handles], loc="upper left", fontsize=8)
    ax.set_title(title)
    return _save(plt, fig, path)


def heatmap(matrix: np.ndarray, rows: Sequence[str], columns: Sequence[str], path: str | os.PathLike,
            title: str = "", label: str = "MAPE %") -> Path:
    """A ``rows x columns`` matrix as an annotated heatmap on a log colour scale (errors of a
    model that extrapolates span decades); NaN: not measured (blank), +inf: overflowed ("inf")."""
    from matplotlib.colors import LogNorm

    matrix = np.asarray(matrix, dtype=np.float64)
    plt, fig, ax = _figure(max(5.0, 0.5 * len(columns) + 2.5), max(4.0, 0.45 * len(rows) + 1.5))
    finite = matrix[np.isfinite(matrix) & (matrix > 0)]
    low = float(finite.min()) if finite.size else 0.1
    # the scale ends at 10^6 (beyond that a prediction has no meaning left; the cell says how far off)
    high = min(max(float(finite.max()) if finite.size else 1.0, 10 * low), max(1e6, 10 * low))
    shown = np.where(np.isposinf(matrix), high, np.clip(matrix, low, high))
    image = ax.imshow(np.ma.masked_invalid(shown), cmap="viridis_r", aspect="auto", norm=LogNorm(low, high))
    ax.set_xticks(range(len(columns)), columns, rotation=60, ha="right")
    ax.set_yticks(range(len(rows)), rows)
    ax.set_xlabel("target kernel")
    ax.set_ylabel("trained on")
    middle = np.sqrt(low * high)
    for (i, j), v in np.ndenumerate(matrix):
        if np.isnan(v):
            continue
        text = "inf" if np.isinf(v) else f"{v:.1f}" if v < 10 else f"{v:.0f}" if v < 1e4 else f"{v:.0e}"
        ax.text(j, i, text, ha="center", va="center", fontsize=7,
                color="white" if np.isinf(v) or v > middle else "black")
    fig.colorbar(image, ax=ax, label=f"{label} (log scale)")
    ax.set_title(title)
    return _save(plt, fig, path)


def time_bars(times: Mapping[str, float], path: str | os.PathLike, title: str = "",
              unit: str = "seconds") -> Path:
    """Horizontal bars of named durations (log scale)."""
    names = list(times)
    plt, fig, ax = _figure(7.0, max(2.5, 0.4 * len(names) + 1))
    ax.barh(range(len(names)), [times[n] for n in names])
    ax.set_yticks(range(len(names)), names)
    ax.set_xscale("log")
    ax.set_xlabel(unit)
    for i, n in enumerate(names):
        ax.text(times[n], i, f" {times[n]:.3g}", va="center", fontsize=8)
    ax.set_title(title)
    return _save(plt, fig, path)


def fraction_sweep(fractions: Sequence[float], curves: Mapping[str, Sequence[float]],
                   path: str | os.PathLike, title: str = "", label: str = "runtime MAPE %") -> Path:
    """One line per curve name: a metric against the fine-tuning fraction (log x axis)."""
    plt, fig, ax = _figure(6.0, 4.0)
    for name, values in curves.items():
        ax.plot([100 * f for f in fractions], values, marker="o", label=name)
    ax.set_xscale("log")
    ax.set_xlabel("fine-tuning data, % of the target kernel's samples")
    ax.set_ylabel(label)
    ax.legend(fontsize=8)
    ax.set_title(title)
    return _save(plt, fig, path)


def predicted_vs_true(true: np.ndarray, predicted: np.ndarray, kernels: Sequence[str],
                      path: str | os.PathLike, title: str = "", label: str = "kernel seconds") -> Path:
    """Log-log scatter of predicted against true values, coloured by kernel, with y = x."""
    true, predicted, kernels = np.asarray(true), np.asarray(predicted), np.asarray(kernels)
    plt, fig, ax = _figure(6.5, 5.5)
    for name in sorted(set(kernels.tolist())):
        rows = kernels == name
        ax.scatter(true[rows], predicted[rows], s=4, alpha=0.6, label=name)
    low, high = float(min(true.min(), predicted.min())), float(max(true.max(), predicted.max()))
    ax.plot([low, high], [low, high], "k--", linewidth=0.8)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel(f"true {label}")
    ax.set_ylabel(f"predicted {label}")
    if len(set(kernels.tolist())) <= 24:
        ax.legend(fontsize=6, markerscale=3, ncol=2)
    ax.set_title(title)
    return _save(plt, fig, path)
