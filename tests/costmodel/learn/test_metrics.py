"""Cost-model metrics against hand-computed values and a brute-force Kendall tau-b."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from cnmtune.costmodel.learn.metrics import (average_ranks, kendall_tau, kernel_report, mape, per_group, r2, rmse,
                                       spearman_rho, top_k_recall, top_k_regret)


def brute_force_tau_b(x, y) -> float:
    concordant = discordant = only_x = only_y = 0
    for i, j in itertools.combinations(range(len(x)), 2):
        dx, dy = np.sign(x[i] - x[j]), np.sign(y[i] - y[j])
        if dx == 0 and dy == 0:
            continue
        if dx == 0:
            only_x += 1
        elif dy == 0:
            only_y += 1
        elif dx == dy:
            concordant += 1
        else:
            discordant += 1
    return (concordant - discordant) / math.sqrt((concordant + discordant + only_x) * (concordant + discordant + only_y))


def test_error_metrics_by_hand():
    assert mape([100, 200], [110, 150]) == pytest.approx(17.5)  # (10 % + 25 %) / 2
    assert rmse([1, 2, 3], [1, 2, 5]) == pytest.approx(math.sqrt(4 / 3))
    assert r2([1, 2, 3], [1, 2, 3]) == 1.0
    assert r2([1, 2, 3], [2, 2, 2]) == 0.0  # predicting the mean
    assert r2([1, 2, 3], [3, 2, 1]) == pytest.approx(-3.0)
    assert math.isnan(r2([2, 2], [1, 3]))
    with pytest.raises(ValueError, match="differ in length"):
        mape([1, 2], [1])


def test_kendall_tau_of_known_permutations():
    assert kendall_tau([1, 2, 3, 4], [1, 2, 3, 4]) == 1.0
    assert kendall_tau([1, 2, 3, 4], [4, 3, 2, 1]) == -1.0
    assert kendall_tau([1, 2, 3, 4], [1, 3, 2, 4]) == pytest.approx(4 / 6)  # one swapped pair of six
    assert kendall_tau([1, 2, 3, 4, 5], [2, 1, 4, 3, 5]) == pytest.approx(6 / 10)
    # tau-b with one tie in x and one in y: 4 concordant, 0 discordant, 6 pairs -> 4 / sqrt(5 * 5)
    assert kendall_tau([1, 2, 2, 3], [1, 2, 3, 3]) == pytest.approx(0.8)
    assert math.isnan(kendall_tau([1, 1, 1], [1, 2, 3])) and math.isnan(kendall_tau([1], [1]))


def test_kendall_tau_matches_brute_force_with_ties():
    rng = np.random.default_rng(0)
    for n in (2, 3, 7, 40, 101):
        for _ in range(4):
            x, y = rng.integers(0, 5, n).astype(float), rng.integers(0, 5, n).astype(float)
            expected = brute_force_tau_b(x, y) if len(set(x)) > 1 and len(set(y)) > 1 else float("nan")
            assert kendall_tau(x, y) == pytest.approx(expected, nan_ok=True)


def test_kendall_tau_is_fast_on_large_groups():
    x = np.random.default_rng(1).normal(size=20000)
    assert kendall_tau(x, x + 1e-9) == pytest.approx(1.0)
    assert kendall_tau(x, -x) == pytest.approx(-1.0)


def test_spearman_rho_with_ties_and_monotone_maps():
    assert average_ranks([10, 20, 20, 30]).tolist() == [1.0, 2.5, 2.5, 4.0]
    assert spearman_rho([1, 2, 3, 4], [1, 8, 27, 64]) == pytest.approx(1.0)
    assert spearman_rho([1, 2, 3, 4], [4, 3, 2, 1]) == pytest.approx(-1.0)
    # ranks (1,2,3,4) vs (1,3,2,4): 1 - 6 * 2 / (4 * 15) = 0.8
    assert spearman_rho([1, 2, 3, 4], [1, 3, 2, 4]) == pytest.approx(0.8)
    assert math.isnan(spearman_rho([1, 1, 1], [1, 2, 3]))


def test_top_k_recall_and_regret_by_hand():
    true = [3.0, 1.0, 2.0, 5.0]
    pred = [1.0, 4.0, 2.0, 3.0]  # predicted order: 3.0, 2.0, 5.0, 1.0 (true runtimes)
    assert (top_k_recall(true, pred, 1), top_k_regret(true, pred, 1)) == (0.0, 2.0)  # 3 / 1 - 1
    assert (top_k_recall(true, pred, 2), top_k_regret(true, pred, 2)) == (0.0, 1.0)  # 2 / 1 - 1
    assert (top_k_recall(true, pred, 4), top_k_regret(true, pred, 4)) == (1.0, 0.0)
    assert (top_k_recall(true, pred, 10), top_k_regret(true, pred, 10)) == (1.0, 0.0)  # k > n
    assert top_k_recall([2.0, 1.0, 1.0], [1.0, 3.0, 2.0], 2) == 1.0  # any of tied best counts
    with pytest.raises(ValueError):
        top_k_regret(true, pred, 0)


def test_per_group_keeps_first_appearance_order():
    out = per_group(["b", "a", "b", "a"], lambda v: float(np.sum(v)), [1, 2, 3, 4])
    assert list(out.items()) == [("b", 4.0), ("a", 6.0)]


def test_kernel_report_by_hand():
    kernels = ["va", "va", "va", "red", "red"]
    groups = [("va", 1), ("va", 1), ("va", 1), ("red", 1), ("red", 2)]
    seconds = np.array([1.0, 2.0, 4.0, 3.0, 6.0])
    speedup = 4.0 / seconds
    predicted = np.array([2.0, 1.0, 4.0, 3.0, 6.0])  # va's two fastest swapped
    report = kernel_report(kernels, groups, seconds, speedup, predicted, None, k=1)
    assert list(report) == ["red", "va", "all"]
    va = report["va"]
    assert va["samples"] == 3 and va["runtime_mape"] == pytest.approx((100 + 50 + 0) / 3)
    assert va["tau"] == pytest.approx(1 / 3) and va["top1_recall"] == 0.0 and va["top1_regret"] == 1.0
    assert va["runtime_rmse_log"] == pytest.approx(math.sqrt(2 * math.log(2) ** 2 / 3))  # two rows off by 2x
    assert "speedup_mape" not in va
    red = report["red"]  # two groups of one sample: no order to judge, but the fastest is found
    assert red["runtime_mape"] == 0.0 and red["tau"] is None and red["top1_regret"] == 0.0
    assert report["all"]["top1_regret"] == pytest.approx(1 / 3)  # mean over 3 groups
    by_speedup = kernel_report(kernels, groups, seconds, speedup, None, 4.0 / predicted, k=1)
    assert by_speedup["va"]["tau"] == va["tau"] and by_speedup["va"]["speedup_mape"] == pytest.approx(
        mape(speedup[:3], 4.0 / predicted[:3]))
