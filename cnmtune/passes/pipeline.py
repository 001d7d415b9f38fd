"""The Pipeline value type: an optimisation level or an ordered sequence of passes, with LLVM knobs."""

from __future__ import annotations

import difflib
import hashlib
import re
from dataclasses import dataclass

from cnmtune.errors import PipelineError
from cnmtune.passes.knobs import KNOBS, knobs_text, parse_knob
from cnmtune.passes.vocabulary import BY_NAME, NAMES

# O-levels map to llvmlite's default per-module pipeline at that speed level. llvmlite has no
# size levels, so Os and Oz are the O2 pipeline with size-oriented tuning options (no loop
# unrolling or vectorisation, clang's -Os / -Oz inliner thresholds 75 / 25).
LEVELS: tuple[str, ...] = ("O0", "O1", "O2", "O3", "Os", "Oz")

_PASS_TOKEN = re.compile(r"^[a-z][a-z0-9-]*$")


def _unknown_pass(name: str) -> PipelineError:
    """An unknown pass named with its closest valid names (the whole vocabulary is a long line)."""
    close = difflib.get_close_matches(name, NAMES, n=3)
    hint = f" (closest: {', '.join(close)})" if close else ""
    return PipelineError(f"unknown pass {name!r}{hint}; `cnmtune passes` lists the {len(NAMES)} valid ones")


@dataclass(frozen=True)
class Pipeline:
    """An LLVM optimisation pipeline: either a level ('O2') or an ordered tuple of pass names, and
    the LLVM knobs it sets (sorted (name, value) pairs, cnmtune.passes.knobs)."""

    level: str | None = None
    passes: tuple[str, ...] = ()
    knobs: tuple[tuple[str, int], ...] = ()

    def __post_init__(self) -> None:
        if self.level is not None and self.passes:
            raise PipelineError("a pipeline is either an optimisation level or a pass sequence, not both")
        if self.level is None and not self.passes:
            object.__setattr__(self, "level", "O0")  # no passes at all is the O0 pipeline
        if self.level is not None and self.level not in LEVELS:
            raise PipelineError(f"unknown optimisation level {self.level!r}; valid: {', '.join(LEVELS)}")
        unknown = [p for p in self.passes if p not in BY_NAME]
        if unknown:
            raise _unknown_pass(unknown[0])
        knobs = tuple(sorted(parse_knob(f"{name}={value}") for name, value in self.knobs))
        if len({name for name, _ in knobs}) < len(knobs):
            raise PipelineError(f"a knob is set twice: {knobs_text(self.knobs, ', ')}")
        if knobs and self.level == "O0":
            raise PipelineError("knobs need an optimising pipeline: O0 runs no pass")
        object.__setattr__(self, "knobs", knobs)

    @classmethod
    def parse(cls, text: str) -> "Pipeline":
        """Parse 'O2', '-O2', 'sroa,instcombine' or '-sroa -instcombine' (opt-style flags), each
        optionally with knobs: 'O2,unroll-count=4', '-O2 -unroll-count=4'."""
        stripped = text.strip()
        if not stripped:
            raise PipelineError("empty pipeline; give an O-level (O0..O3, Os, Oz) or comma-separated passes")
        parts = stripped.split(",") if "," in stripped else stripped.split()
        tokens = [t.strip().lstrip("-") for t in parts]
        if any(not t for t in tokens):
            raise PipelineError(f"malformed pipeline {text!r}: empty pass name between separators")
        knobs = tuple(parse_knob(t) for t in tokens if "=" in t)
        names = [t for t in tokens if "=" not in t]
        if not names:
            raise PipelineError(f"pipeline {text!r} sets knobs but names no level or pass")
        for name in names:
            if name.startswith("O") and len(name) <= 2 and name not in LEVELS:
                raise PipelineError(f"unknown optimisation level {name!r}; valid: {', '.join(LEVELS)}")
        if len(names) == 1 and names[0] in LEVELS:
            return cls(level=names[0], knobs=knobs)
        for token in names:
            if token not in LEVELS and not _PASS_TOKEN.match(token):
                raise PipelineError(
                    f"malformed pipeline {text!r}: {token!r} is not a pass name (LLVM options are knobs, "
                    f"e.g. unroll-count=4: {', '.join(KNOBS)}; nested pass managers are not supported)"
                )
        # an unknown pass first: 'O2,typo' is a typo to name, not a level mixed with passes
        unknown = [name for name in names if name not in LEVELS and name not in BY_NAME]
        if unknown:
            raise _unknown_pass(unknown[0])
        if any(name in LEVELS for name in names):
            raise PipelineError("a pipeline is either an optimisation level or a pass sequence, not both")
        return cls(passes=tuple(names), knobs=knobs)

    @property
    def is_level(self) -> bool:
        """True for an optimisation level, False for an explicit pass sequence."""
        return self.level is not None

    @property
    def text(self) -> str:
        """Canonical text form: 'O2' or 'sroa,instcombine,...', then the knobs sorted by name
        ('O2,unroll-count=4')."""
        base = [self.level] if self.level is not None else list(self.passes)
        return ",".join(base + ([knobs_text(self.knobs)] if self.knobs else []))

    @property
    def id(self) -> str:
        """Stable short id of the canonical text (first 12 hex digits of its SHA-256)."""
        return hashlib.sha256(self.text.encode()).hexdigest()[:12]

    def __str__(self) -> str:
        return self.text
