"""The Workload base class: what a kernel's workload.py declares about its compile-time side.

A define's value is an int, a string, or None for a bare flag (`-DINT32`, PrIM's TYPE style).
`define_choices` lists the accepted values per define, so a bad `-D BL=99` is refused before
any compile. The host side (inputs, transfers, launches, verification) extends this class in
the simulator and kernel-suite work.
"""

from __future__ import annotations

from typing import ClassVar

from cnmtune.dpu.memory_map import MAX_TASKLETS
from cnmtune.errors import KernelError

DefineValue = int | str | None


class Workload:
    """Compile-time description of a kernel; subclass it in workload.py."""

    name: ClassVar[str] = ""
    defines: ClassVar[dict[str, DefineValue]] = {}
    define_choices: ClassVar[dict[str, tuple[DefineValue, ...]]] = {}
    nr_tasklets: ClassVar[int] = 16

    @classmethod
    def resolve_defines(cls, overrides: dict[str, DefineValue] | None = None) -> dict[str, DefineValue]:
        """The defaults updated with `overrides`, each checked against `define_choices`."""
        resolved = dict(cls.defines)
        for key, value in (overrides or {}).items():
            if key == "NR_TASKLETS":
                raise KernelError("set NR_TASKLETS with --tasklets, not as a define")
            resolved[key] = value
        for key, choices in cls.define_choices.items():
            if key in resolved and resolved[key] not in choices:
                shown = ", ".join(str(c) for c in choices)
                raise KernelError(f"{cls.name}: {key}={resolved[key]} is not valid; choose one of {shown}")
        return resolved


def check_tasklets(nr_tasklets: int) -> int:
    """Refuse tasklet counts a DPU cannot run (1..24)."""
    if not 1 <= nr_tasklets <= MAX_TASKLETS:
        raise KernelError(f"NR_TASKLETS={nr_tasklets} is out of range; a DPU runs 1..{MAX_TASKLETS} tasklets")
    return nr_tasklets
