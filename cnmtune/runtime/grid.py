"""The run-configuration grid of a tuning or dataset sweep: DPUs x tasklets x problem sizes.

Validity follows the L2P protocol and the hardware: tasklets in 1..24, tasklets >= DPUs (L2P
keeps only T >= D), and the workload must accept the combination with the given defines and
parameters (its WRAM and define checks run in its constructor: a larger block define can leave
room for fewer tasklets). Invalid points are returned with their reason, not silently dropped.
"""

from __future__ import annotations

from dataclasses import dataclass

from cnmtune.dpu.memory_map import MAX_TASKLETS
from cnmtune.errors import KernelError
from cnmtune.runtime.kernel import Kernel
from cnmtune.runtime.workload import DefineValue


@dataclass(frozen=True, order=True)
class RunConfig:
    """One point of the grid: how many DPUs and tasklets, and the problem size."""

    dpus: int
    tasklets: int
    size: int


@dataclass(frozen=True)
class GridPoint:
    """A configuration and, when it cannot run, why."""

    config: RunConfig
    reason: str = ""

    @property
    def valid(self) -> bool:
        return not self.reason


def config_grid(kernel: Kernel, dpus: list[int], tasklets: list[int], sizes: list[int | str],
                tasklets_at_least_dpus: bool = True, defines: dict[str, DefineValue] | None = None,
                params: dict[str, object] | None = None) -> list[GridPoint]:
    """Every (DPUs, tasklets, size) combination for `kernel` built with `defines` and run with
    `params` (none: the workload's own), each marked valid or not."""
    points = []
    for size in sizes:
        total = kernel.workload.size_of(size)
        for d in dpus:
            for t in tasklets:
                config = RunConfig(d, t, total)
                points.append(GridPoint(config, _invalid(kernel, config, tasklets_at_least_dpus, defines,
                                                         params or {})))
    return points


def size_ladder(kernel: Kernel, steps: int) -> list[int]:
    """``steps`` problem sizes from the kernel's small preset to its default, log-spaced: the
    ends are the presets, the sizes between them multiples of the small one."""
    if steps < 2:
        raise KernelError(f"a size ladder needs at least 2 steps, not {steps}")
    small, default = kernel.workload.size_of("small"), kernel.workload.size_of("default")
    ratio = default / small
    sizes = [small, *(small * max(1, round(ratio ** (k / (steps - 1)))) for k in range(1, steps - 1)), default]
    return sorted(set(sizes))


def _invalid(kernel: Kernel, config: RunConfig, tasklets_at_least_dpus: bool,
             defines: dict[str, DefineValue] | None, params: dict[str, object]) -> str:
    if not 1 <= config.tasklets <= MAX_TASKLETS:
        return f"{config.tasklets} tasklets (a DPU runs 1..{MAX_TASKLETS})"
    if config.dpus < 1:
        return f"{config.dpus} DPUs"
    if tasklets_at_least_dpus and config.tasklets < config.dpus:
        return f"tasklets {config.tasklets} < DPUs {config.dpus} (L2P keeps T >= D)"
    try:
        kernel.workload(config.size, config.dpus, config.tasklets, defines, **params)
    except KernelError as exc:
        return str(exc)
    return ""
