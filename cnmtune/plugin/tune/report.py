"""What a tune reports: every candidate as scored and run, the choice, the default build."""

from __future__ import annotations

import math
from dataclasses import dataclass, field


@dataclass
class Candidate:
    """One distinct (binary, DPUs) point; `pipelines` lists every pipeline that built the binary."""

    pipelines: list[str]
    tasklets: int
    dpus: int
    elf_hash: str
    predicted_s: float = float("nan")
    measured_s: float | None = None
    status: str = "not run"

    @property
    def pipeline(self) -> str:
        """The first pipeline (in set order; O2 for the default build) that produced this binary."""
        return self.pipelines[0]

    def to_dict(self) -> dict:
        """JSON-safe form."""
        return {"pipeline": self.pipeline, "equivalent_pipelines": len(self.pipelines) - 1,
                "tasklets": self.tasklets, "dpus": self.dpus, "elf_hash": self.elf_hash,
                "predicted_s": self.predicted_s, "measured_s": self.measured_s, "status": self.status}


@dataclass
class TuneReport:
    """The outcome of a tune: the top-k as run, the choice, the default build, where time went."""

    kernel: str
    size: int
    variants: int
    candidates: int
    top: list[Candidate]
    chosen: Candidate | None
    default: Candidate | None
    seconds: dict[str, float] = field(default_factory=dict)
    compile_failures: int = 0
    executed: int = 0
    reused: int = 0
    exhaustive: dict | None = None
    finetune: dict | None = None
    defines: dict = field(default_factory=dict)  # given over the workload's, in every build
    params: dict = field(default_factory=dict)  # given workload parameters, in every run

    @property
    def chosen_is_default(self) -> bool:
        """Nothing measured beat the default build: it is the choice."""
        return self.chosen is not None and self.chosen is self.default

    @property
    def first_failure(self) -> str:
        """The first run that failed (the default, then the top-k in order), in one line; '' if none."""
        for c in ([self.default] if self.default else []) + self.top:
            if c.status not in ("verified", "not run") and not c.status.startswith("skipped"):
                return f"{c.pipeline} on {c.dpus} DPUs x {c.tasklets} tasklets: {c.status.splitlines()[0]}"
        return ""

    @property
    def speedup_vs_default(self) -> float | None:
        """Measured default time over the chosen variant's measured time."""
        if not (self.chosen and self.default and self.chosen.measured_s and self.default.measured_s):
            return None
        return self.default.measured_s / self.chosen.measured_s

    def to_dict(self) -> dict:
        """JSON-safe form (a NaN or infinite number is None: JSON has no NaN)."""
        return _finite({"kernel": self.kernel, "size": self.size, "defines": self.defines, "params": self.params,
                "variants": self.variants, "candidates": self.candidates, "compile_failures": self.compile_failures,
                "executed": self.executed, "reused_measurements": self.reused,
                "top": [c.to_dict() for c in self.top],
                "chosen": self.chosen.to_dict() if self.chosen else None,
                "default": self.default.to_dict() if self.default else None,
                "chosen_is_default": self.chosen_is_default, "first_failure": self.first_failure or None,
                "speedup_vs_default": self.speedup_vs_default, "seconds": self.seconds,
                "finetune": self.finetune, "exhaustive": self.exhaustive})


def _finite(value):
    """`value` with every NaN or infinite float, at any depth, replaced by None."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value
