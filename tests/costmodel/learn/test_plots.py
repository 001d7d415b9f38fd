"""Report plots: real matplotlib PNGs, including matrices with unmeasured and overflowed cells."""

from __future__ import annotations

import numpy as np

from cnmtune.costmodel.learn import plots

PNG = b"\x89PNG\r\n\x1a\n"


def test_heatmap_of_errors_spanning_decades_with_missing_and_overflowed_cells(tmp_path):
    # a single-kernel source model extrapolates: MAPEs of 1e298 % and inf sit beside 5 %
    matrix = np.array([[4.8, 1.7e2, np.inf], [6e298, 7.4, np.nan], [2.5e4, 33.0, 3.9]])
    path = plots.heatmap(matrix, ["va", "hst-s", "lirq"], ["va", "hst-s", "lirq"], tmp_path / "h.png", "t")
    assert path.read_bytes()[:8] == PNG


def test_heatmap_without_any_finite_cell(tmp_path):
    path = plots.heatmap(np.full((2, 2), np.nan), ["a", "b"], ["a", "b"], tmp_path / "empty.png")
    assert path.read_bytes()[:8] == PNG
