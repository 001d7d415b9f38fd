"""The configuration grid: L2P's T >= D rule, hardware limits, workload refusals."""

from cnmtune.runtime.grid import RunConfig, config_grid
from cnmtune.runtime.registry import find_kernel


def test_grid_marks_invalid_points_with_reasons(va):
    points = config_grid(va, [1, 2, 4, 8, 16], [1, 2, 4, 8, 16], ["small"])
    valid = [p.config for p in points if p.valid]
    assert len(points) == 25 and len(valid) == 15  # L2P's 15 configurations per size
    assert RunConfig(4, 2, 4096) not in valid
    assert "L2P keeps T >= D" in next(p.reason for p in points if p.config == RunConfig(4, 2, 4096))


def test_grid_hardware_and_workload_limits(va):
    points = {p.config: p for p in config_grid(va, [1], [16, 25], [100])}
    assert points[RunConfig(1, 16, 100)].valid
    assert "1..24" in points[RunConfig(1, 25, 100)].reason
    lorq = find_kernel("lorq")
    refused = config_grid(lorq, [1], [16], ["small"])[0]
    assert not refused.valid and "do not fit in WRAM" in refused.reason
