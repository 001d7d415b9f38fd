"""LLVM's own tuning knobs that a pipeline may set, as data, and the process state they live in.

A knob is one of LLVM's command-line options (``cl::opt``) written into a pipeline as
``name=value`` (``O2,unroll-count=4``). llvmlite can only set such an option for the whole
process (``llvm.set_option``), and LLVM cannot unset one: once given, even its default value
changes what a pass does (measured: uni's O2 build after ``-unroll-count=0`` runs 2.73 ms on one
DPU instead of 1.94 ms, because the unroller treats any given count as the user's). So a
process sets knobs once, for its whole life (`set_process_knobs`), and a pipeline with knobs is
optimised in a process started for exactly that knob set (the proxy toolchain keeps one per
set: cnmtune.runtime.toolchain.knob_process); `apply_pipeline` refuses a pipeline whose knobs
are not this process's.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import llvmlite.binding as llvm

from cnmtune.errors import PipelineError


@dataclass(frozen=True)
class Knob:
    """One LLVM option a pipeline may set: its name in pipeline text, the values allowed, what it
    does, and where LLVM defines it."""

    name: str
    low: int
    high: int
    doc: str
    source: str


KNOBS: dict[str, Knob] = {k.name: k for k in (
    Knob("unroll-count", 0, 64,
         "unroll every loop the loop unroller handles by this factor, overriding `#pragma unroll` (0: "
         "no forced factor, but pragmas stay overridden); a DPU loop spends about half its "
         "instructions on address, induction and branch",
         "llvm/lib/Transforms/Scalar/LoopUnrollPass.cpp, cl::opt UnrollCount"),
    Knob("unroll-runtime", 0, 1,
         "1: also unroll loops whose trip count is known only at run time (with a remainder loop), "
         "which is every DPU loop over a block or a DPU's share; measured at O2 on one DPU, 16 tasklets, "
         "1/64 of the default preset: va 1.33 -> "
         "0.91 ms, red 0.83 -> 0.59 ms, hst-s 2.19 -> 1.97 ms",
         "llvm/lib/Transforms/Scalar/LoopUnrollPass.cpp, cl::opt UnrollRuntime"),
    Knob("inline-threshold", 0, 4000,
         "the inliner's cost threshold (O2's default 225): higher inlines larger helpers into "
         "their loops, lower keeps more calls; not in the knob pipelines: measured at O2, small "
         "presets, 1 DPU, threshold 1000 changes ts's and nw's ELFs by a few instructions and their "
         "times by 0.0 % and +1.7 %, bs's and bfs's not at all",
         "llvm/lib/Analysis/InlineCost.cpp, cl::opt DefaultThreshold (-inline-threshold)"),
)}

_PROCESS_KNOBS: tuple[tuple[str, int], ...] = ()


def parse_knob(token: str) -> tuple[str, int]:
    """'unroll-count=4' -> ('unroll-count', 4); an unknown knob or a value out of range is an error."""
    name, _, text = token.partition("=")
    knob = KNOBS.get(name.strip())
    if knob is None:
        raise PipelineError(f"unknown knob {name.strip()!r} in {token!r}; valid knobs: {', '.join(KNOBS)}")
    value = text.strip()
    if not value.lstrip("-").isdigit() or not knob.low <= int(value) <= knob.high:
        raise PipelineError(f"knob {knob.name} takes an integer in {knob.low}..{knob.high}, got {value!r}")
    return knob.name, int(value)


def knobs_text(knobs: Sequence[tuple[str, int]], sep: str = ",") -> str:
    """Knobs as a pipeline writes them: 'unroll-count=4' pairs joined by `sep`."""
    return sep.join(f"{name}={value}" for name, value in knobs)


def llvm_options(knobs: Sequence[tuple[str, int]]) -> list[str]:
    """Knobs as LLVM's tools (and llvm.set_option) spell them: ['-unroll-count=4', ...]."""
    return [f"-{name}={value}" for name, value in knobs]


def set_process_knobs(knobs: Sequence[tuple[str, int]]) -> None:
    """Set `knobs` as LLVM options for the rest of this process's life; once, before any
    optimisation (the knob server's first step)."""
    global _PROCESS_KNOBS
    knobs = tuple(sorted(knobs))
    if _PROCESS_KNOBS and _PROCESS_KNOBS != knobs:
        raise PipelineError(f"this process's LLVM knobs are already {knobs_text(_PROCESS_KNOBS)}; LLVM cannot "
                            "unset them")
    for option in llvm_options(knobs):
        llvm.set_option("cnmtune", option)
    _PROCESS_KNOBS = knobs


def process_knobs() -> tuple[tuple[str, int], ...]:
    """The knobs this process's LLVM runs with (sorted (name, value) pairs; () for LLVM's defaults)."""
    return _PROCESS_KNOBS
