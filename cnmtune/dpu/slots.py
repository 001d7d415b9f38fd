"""DPU issue slots of a proxy binary: what the simulator charges and the IRAM rule counts.

The proxy executes rv32i; a DPU executes what the UPMEM compiler emits, a different stream
(ALU ops with a condition and a jump target, compare-and-jump, lsl_add, register pairs). The
DPU lowering model (cnmtune.costmodel.analysis.lowering) gives every rv32i instruction of a
linked proxy ELF the DPU instructions it stands for; ``DpuSlots`` carries the result to the
simulator's timing (runtime/sim/image.py) and to the toolchain's IRAM check.

The runtime does not import the cost model. The model that computes slots is installed here by
the composition root, the package's ``cnmtune/__init__.py``; ``slots_of`` asks it.
"""

from __future__ import annotations

import functools
import hashlib
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # numpy is not imported for an annotation: a knob process starts without it
    import numpy as np


@dataclass(frozen=True, eq=False)
class DpuSlots:
    """Per 4-byte word of .text, the DPU instructions it stands for (0 where a neighbour absorbs
    it), and the lowered DPU instructions of the code IRAM holds (kernel + runtime)."""

    weights: np.ndarray  # int8, one per .text word, read-only
    iram_instructions: int


SlotModel = Callable[[bytes, str], DpuSlots]  # (ELF bytes, name for messages) -> slots
_installed: list[tuple[SlotModel, Callable[[], str]]] = []
_CACHE_SIZE = 64
_cache: dict[str, DpuSlots] = {}  # by the ELF's SHA-256, oldest first
_lock = threading.Lock()


def install_slot_model(model: SlotModel, identity: Callable[[], str]) -> None:
    """Make ``model`` the one ``slots_of`` uses (the package root installs the lowering model);
    ``identity`` names its version (DpuConfig.hash includes it, so stored times of another
    lowering are never reused)."""
    _installed[:] = [(model, identity)]
    _cache.clear()
    slot_model_identity.cache_clear()


@functools.cache
def slot_model_identity() -> str:
    """The installed slot model's version string."""
    return _model()[1]()


def installed_slot_model() -> tuple[SlotModel, Callable[[], str]]:
    """The installed (model, identity) pair, e.g. to install another one for a while and restore it."""
    return _model()


def _model() -> tuple[SlotModel, Callable[[], str]]:
    if not _installed:
        raise RuntimeError("no DPU slot model installed (cnmtune/__init__.py installs the lowering model)")
    return _installed[0]


def slots_of(elf: bytes | str | Path, name: str | None = None) -> DpuSlots:
    """The DPU slots of a linked proxy ELF (its bytes or its path), cached per content."""
    data = elf if isinstance(elf, bytes) else Path(elf).read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    with _lock:
        slots = _cache.get(digest)
    if slots is None:
        slots = _model()[0](data, name or (str(elf) if not isinstance(elf, bytes) else "<elf>"))
        slots.weights.setflags(write=False)
        with _lock:
            while len(_cache) >= _CACHE_SIZE:
                _cache.pop(next(iter(_cache)))
            _cache[digest] = slots
    return slots
