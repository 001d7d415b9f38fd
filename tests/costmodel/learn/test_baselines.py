"""The cost-model baselines: gradient-boosted trees, the analytical prior alone, random ranking."""

from __future__ import annotations

import numpy as np

from cnmtune.costmodel.learn.baselines import AnalyticalBaseline, GbtBaseline, RandomBaseline
from cnmtune.costmodel.learn.prediction import evaluate


def test_gbt_learns_the_dataset(splits):
    train_set, val_set, test_set = splits
    gbt = GbtBaseline(max_iter=100, seed=0).fit(train_set, val_set)
    prediction = gbt.predict(test_set.X)
    assert prediction.log_targets.shape == (len(test_set), 2) and prediction.log_targets.dtype == np.float32
    report = evaluate(test_set, prediction)
    assert report["all"]["runtime_mape"] < 25.0 and report["all"]["runtime_r2"] > 0.8
    again = GbtBaseline(max_iter=100, seed=0).fit(train_set, val_set).predict(test_set.X)
    np.testing.assert_array_equal(again.log_targets, prediction.log_targets)
    assert all(1 <= m.n_iter_ <= 100 for m in gbt.models) and gbt.seconds > 0


def test_analytical_prior_alone_orders_configurations(splits):
    train_set, _, test_set = splits
    prior = AnalyticalBaseline().fit(train_set)
    assert prior.coef[0, 0] > 0  # more estimated cycles, longer runtime
    report = evaluate(test_set, prior.predict(test_set.X))
    assert report["all"]["tau"] > 0.2


def test_random_ranking_is_seeded_and_uninformative(splits):
    test_set = splits[2]
    a, b = RandomBaseline(1).predict(test_set.X), RandomBaseline(1).predict(test_set.X)
    np.testing.assert_array_equal(a.log_targets, b.log_targets)
    assert abs(evaluate(test_set, a)["all"]["tau"]) < 0.3
    # a row scores the same in any batch (a tuner scores its candidates in batches), another seed differently
    tail = RandomBaseline(1).predict(test_set.X[5:]).log_targets
    np.testing.assert_array_equal(tail, a.log_targets[5:])
    assert not np.array_equal(tail, a.log_targets[:-5])
    assert not np.array_equal(RandomBaseline(2).predict(test_set.X).log_targets, a.log_targets)
