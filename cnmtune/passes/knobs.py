"""LLVM's own tuning knobs that a pipeline may set, as data, and how a compile applies them.

A knob is one of LLVM's command-line options (``cl::opt``) written into a pipeline as
``name=value`` (``O2,unroll-count=4``). llvmlite sets such an option for the whole process
(``llvm.set_option``), so `knob_options` sets a pipeline's knobs for one optimisation and puts
every knob back to its neutral value afterwards, under a lock: a worker process compiles one
variant after another, and a compile without knobs gives the same object whatever ran before
it. Only knobs whose neutral value is LLVM's own behaviour are listed (for ``unroll-count``, 0
means "the unroller's cost model decides", which is the value before any option is given); the
test suite checks it by rebuilding an ELF after a knobbed compile.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

import llvmlite.binding as llvm

from cnmtune.errors import PipelineError


@dataclass(frozen=True)
class Knob:
    """One LLVM option a pipeline may set: its name in pipeline text, its neutral value, the values
    allowed, what it does, and where LLVM defines it."""

    name: str
    neutral: int
    low: int
    high: int
    doc: str
    source: str

    @property
    def flag(self) -> str:
        """The option as LLVM's tools (and llvm.set_option) spell it, without a value."""
        return f"-{self.name}"


KNOBS: dict[str, Knob] = {k.name: k for k in (
    Knob("unroll-count", 0, 0, 64,
         "unroll every loop the loop unroller handles by this factor (0: the unroller's cost model "
         "decides); a DPU loop spends about half its instructions on address, induction and branch",
         "llvm/lib/Transforms/Scalar/LoopUnrollPass.cpp, cl::opt UnrollCount"),
)}

_LOCK = threading.Lock()


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


@contextmanager
def knob_options(knobs: Sequence[tuple[str, int]]) -> Iterator[None]:
    """Set `knobs` as LLVM options for the duration of one optimisation, then reset every knob to its
    neutral value; a no-op without knobs."""
    if not knobs:
        yield
        return
    with _LOCK:
        try:
            for name, value in knobs:
                llvm.set_option("cnmtune", f"{KNOBS[name].flag}={value}")
            yield
        finally:
            for name, _ in knobs:
                llvm.set_option("cnmtune", f"{KNOBS[name].flag}={KNOBS[name].neutral}")
