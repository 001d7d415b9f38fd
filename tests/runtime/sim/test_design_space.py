"""The DPU design space: ranges, today's values inside them, the seeded sampler, normalisation."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from cnmtune.errors import CnmtuneError
from cnmtune.runtime.sim.calibrated import TRANSFER_RANGES
from cnmtune.runtime.sim.config import DpuConfig
from cnmtune.runtime.sim.design_space import (
    DESIGN_SPACE,
    TIMELINE_PARAMETERS,
    design_vector,
    normalised,
    parameter,
    sample_designs,
)
from cnmtune.runtime.sim.retime import HOST_FIELDS, timing_key


def test_every_parameter_is_a_dpuconfig_field_once_with_a_source():
    names = {f.name for f in dataclasses.fields(DpuConfig)}
    fields = [p.field for p in DESIGN_SPACE]
    assert len(set(fields)) == len(fields) and set(fields) <= names
    assert all(p.source and p.unit is not None for p in DESIGN_SPACE)
    # the timeline group is exactly what retime's timing key reads among them
    timeline = {name for name, _ in timing_key(DpuConfig())}
    assert {p.field for p in TIMELINE_PARAMETERS} == timeline & set(fields)
    assert {"revolver_period", "pipeline_depth", "dma_beta", "dma_read_alpha"} <= {p.field for p in TIMELINE_PARAMETERS}
    # the rest is every constant that turns cycles into seconds or prices transfers, but the rank topology
    assert {p.field for p in DESIGN_SPACE if not p.timeline} == HOST_FIELDS - {"dpus_per_rank"}


@pytest.mark.parametrize("config", [DpuConfig(), DpuConfig.calibrated()], ids=["literature", "calibrated"])
def test_todays_values_lie_in_their_ranges(config):
    outside = {p.field: getattr(config, p.field) for p in DESIGN_SPACE if not p.contains(getattr(config, p.field))}
    assert not outside


def test_each_transfer_constant_ranges_over_its_fit_and_says_so():
    """The calibration's 5-95 % range of every transfer constant lies inside its design range, and
    its source quotes the literature value, the calibrated one and that range."""
    for field, (low, high) in TRANSFER_RANGES.items():
        p = parameter(field)
        assert p.contains(low) and p.contains(high), field
        assert "literature" in p.source and "calibrated" in p.source and "5-95 %" in p.source
    low, high = TRANSFER_RANGES["xfer_call_s"]
    assert parameter("xfer_call_s").source.endswith(
        f"literature 46.5 us (fitted on the calibration machine; config.py), calibrated "
        f"{DpuConfig.calibrated().xfer_call_s * 1e6:.3g} us, 5-95 % {low * 1e6:.3g} us to {high * 1e6:.3g} us "
        "(calibrated.py)")


def test_sampled_designs_lie_in_their_ranges_and_are_valid_configs():
    designs = sample_designs(300, seed=7)
    assert all(isinstance(d, DpuConfig) for d in designs)
    for d in designs:
        for p in DESIGN_SPACE:
            value = getattr(d, p.field)
            assert p.contains(value), (p.field, value)
            assert isinstance(value, int) if p.kind is int else isinstance(value, float)
        assert d.revolver_period <= d.pipeline_depth
        assert d.routine_costs == DpuConfig.calibrated().routine_costs  # outside the space: the base's
    assert len({d.hash for d in designs}) == len(designs)
    # the draws cover the ranges: every integer parameter takes both ends somewhere
    vectors = design_vector(designs)
    for k, p in enumerate(DESIGN_SPACE):
        low, high = vectors[:, k].min(), vectors[:, k].max()
        span = p.high - p.low
        assert low < p.low + 0.1 * span or p.log, p.field
        if p.kind is int and p.at_most is None:
            assert (low, high) == (p.low, p.high), p.field


def test_log_uniform_where_the_range_spans_a_decade():
    assert parameter("dma_read_alpha").log and parameter("dma_beta").log and parameter("xfer_to_s_per_B").log
    assert not parameter("frequency_hz").log and not parameter("dma_engine_overhead").log  # 5x; starts at 0
    assert not parameter("xfer_host_cached_fraction").log  # a fraction, from 0
    designs = sample_designs(400, seed=3)
    beta = np.log(design_vector(designs, (parameter("dma_beta"),))[:, 0])
    # log-uniform: as many designs in the lower half of the log range as in the upper half
    middle = (np.log(0.0625) + np.log(2.0)) / 2
    assert 0.4 < (beta < middle).mean() < 0.6


def test_the_sampler_is_deterministic_per_seed_and_prefix_stable():
    first = sample_designs(20, seed=11)
    assert [d.hash for d in first] == [d.hash for d in sample_designs(20, seed=11)]
    assert [d.hash for d in first[5:]] == [d.hash for d in sample_designs(15, seed=11, start=5)]
    assert [d.hash for d in first] != [d.hash for d in sample_designs(20, seed=12)]


def test_normalised_maps_each_range_to_minus_one_one():
    space = DESIGN_SPACE
    lows = np.array([[p.low for p in space]])
    highs = np.array([[p.high for p in space]])
    np.testing.assert_allclose(normalised(lows), -1.0)
    np.testing.assert_allclose(normalised(highs), 1.0)
    inside = normalised(design_vector(sample_designs(50, seed=1)))
    assert inside.min() >= -1 and inside.max() <= 1


def test_bad_requests_fail_with_one_clear_error():
    with pytest.raises(CnmtuneError, match="not a design-space parameter; valid: pipeline_depth"):
        parameter("iram_size")
    with pytest.raises(CnmtuneError, match="count and start must be >= 0"):
        sample_designs(-1)
