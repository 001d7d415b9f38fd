"""What a tune reports: every candidate as scored and run, the choice, the default build."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from cnmtune.wording import counted


@dataclass
class Candidate:
    """One distinct (binary, DPUs) point; `pipelines` lists every pipeline that built the binary."""

    pipelines: list[str]
    tasklets: int
    dpus: int
    elf_hash: str
    predicted_s: float = float("nan")
    prior_s: float = float("nan")  # the static analytical prior's kernel time (learned models only)
    measured_s: float | None = None
    status: str = "not run"
    defines: tuple[tuple[str, object], ...] = ()  # tuned defines over the tune's base (none: the base)
    transfer_s: float | None = None  # measured host-link time of the run (CPU-DPU, inter-DPU, DPU-CPU)
    predicted_transfer_s: float = 0.0  # estimated host-link time (end-to-end objective; else 0)
    screened_s: float | None = None  # kernel time of its screening run, once confirmed by a full run

    @property
    def pipeline(self) -> str:
        """The first pipeline (in set order; O2 for the default build) that produced this binary."""
        return self.pipelines[0]

    def objective_s(self, objective: str) -> float | None:
        """The measured time the tune minimises: the kernel's, or kernel + transfers (end-to-end)."""
        if self.measured_s is None or (objective == "end-to-end" and self.transfer_s is None):
            return None
        return self.measured_s + (self.transfer_s if objective == "end-to-end" else 0.0)

    def compared_s(self, objective: str) -> float | None:
        """The objective as the search compared it: its screening run's, when a full run confirmed it."""
        if self.screened_s is None:
            return self.objective_s(objective)
        return self.screened_s + ((self.transfer_s or 0.0) if objective == "end-to-end" else 0.0)

    def predicted_objective_s(self) -> float:
        """The predicted kernel time plus the estimated transfers (0 under the kernel objective)."""
        return self.predicted_s + self.predicted_transfer_s

    def prior_objective_s(self) -> float:
        """The static prior's kernel time plus the estimated transfers (0 under the kernel objective)."""
        return self.prior_s + self.predicted_transfer_s

    def to_dict(self) -> dict:
        """JSON-safe form."""
        return {"pipeline": self.pipeline, "equivalent_pipelines": len(self.pipelines) - 1,
                "defines": dict(self.defines), "tasklets": self.tasklets, "dpus": self.dpus,
                "elf_hash": self.elf_hash, "predicted_s": self.predicted_s, "measured_s": self.measured_s,
                "predicted_transfer_s": self.predicted_transfer_s, "transfer_s": self.transfer_s,
                "screened_s": self.screened_s, "status": self.status}


@dataclass
class TuneReport:
    """The outcome of a tune: the fastest runs, the choice, the default build, where time went."""

    kernel: str
    size: int
    variants: int
    candidates: int
    top: list[Candidate]  # the fastest runs besides the default (failed runs last), at most top_k
    chosen: Candidate | None
    default: Candidate | None
    seconds: dict[str, float] = field(default_factory=dict)
    compile_failures: int = 0
    executed: int = 0
    reused: int = 0
    exhaustive: dict | None = None
    finetune: dict | None = None  # the model's last adaptation and how many rounds adapted it, or why none ran
    defines: dict = field(default_factory=dict)  # given over the workload's, in every build
    params: dict = field(default_factory=dict)  # given workload parameters, in every run
    objective: str = "kernel"  # or "end-to-end": kernel + transfers
    stages: list[dict] = field(default_factory=list)  # per search stage: what it built, ran and found
    runs: list[Candidate] = field(default_factory=list)  # every candidate run, in order (the default first)

    @property
    def wins(self) -> list[str]:
        """What the chosen variant changes against the default build: its pipeline (when the binary
        is not the default's), its tuned defines, its tasklets, its DPUs ([] for the default)."""
        chosen, default = self.chosen, self.default
        if chosen is None or default is None or chosen is default:
            return []
        out = []
        if chosen.elf_hash != default.elf_hash and default.pipeline not in chosen.pipelines:
            out.append(f"pipeline {chosen.pipeline}")
        out += [f"{name}={value}" for name, value in chosen.defines]
        if chosen.tasklets != default.tasklets:
            out.append(counted(chosen.tasklets, "tasklet"))
        if chosen.dpus != default.dpus:
            out.append(counted(chosen.dpus, "DPU"))
        return out

    @property
    def chosen_is_default(self) -> bool:
        """Nothing measured beat the default build: it is the choice."""
        return self.chosen is not None and self.chosen is self.default

    @property
    def first_failure(self) -> str:
        """The first run that failed (in run order: the default first), in one line; '' if none."""
        for c in self.runs or ([self.default] if self.default else []) + self.top:
            if c.status not in ("verified", "not run") and not c.status.startswith("skipped"):
                return (f"{c.pipeline} on {counted(c.dpus, 'DPU')} x {counted(c.tasklets, 'tasklet')}: "
                        f"{c.status.splitlines()[0]}")
        return ""

    @property
    def speedup_vs_default(self) -> float | None:
        """The default build's measured objective over the chosen variant's."""
        if not (self.chosen and self.default):
            return None
        chosen, default = self.chosen.objective_s(self.objective), self.default.objective_s(self.objective)
        return default / chosen if chosen and default else None

    def to_dict(self) -> dict:
        """JSON-safe form (a NaN or infinite number is None: JSON has no NaN)."""
        return _finite({"kernel": self.kernel, "size": self.size, "defines": self.defines, "params": self.params,
                "objective": self.objective, "wins": self.wins, "stages": self.stages,
                "variants": self.variants, "candidates": self.candidates, "compile_failures": self.compile_failures,
                "executed": self.executed, "reused_measurements": self.reused,
                "top": [c.to_dict() for c in self.top],
                "chosen": self.chosen.to_dict() if self.chosen else None,
                "default": self.default.to_dict() if self.default else None,
                "chosen_is_default": self.chosen_is_default, "first_failure": self.first_failure or None,
                "speedup_vs_default": self.speedup_vs_default, "seconds": self.seconds,
                "finetune": self.finetune, "exhaustive": self.exhaustive,
                "runs": [c.to_dict() for c in self.runs]})


def _finite(value):
    """`value` with every NaN or infinite float, at any depth, replaced by None."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value
