"""What every ISA front-end shares: code regions, functions, and their spans over .text.

Both decoders (the rv32 proxy, cnmtune.costmodel.analysis.rv32_program, and the real DPU,
cnmtune.costmodel.analysis.dpu_program) cut .text into functions the same way and put each
function in one region: kernel (the user's code), runtime (crt0 and the DPU runtime) or softlib
(soft multiply/divide/float).
"""

from __future__ import annotations

import bisect
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from cnmtune.costmodel.analysis.elf import ElfImage

KERNEL, RUNTIME, SOFTLIB = "kernel", "runtime", "softlib"
REGIONS = (KERNEL, RUNTIME, SOFTLIB)


@dataclass(frozen=True)
class Function:
    """A function's span of instructions: indices [first, first + count) into the program."""

    name: str
    address: int
    first: int
    count: int
    region: str


def text_functions(image: ElfImage, n: int, region: Callable[[str, int], str], slot: int = 4
                   ) -> tuple[tuple[Function, ...], list[bool], np.ndarray, np.ndarray]:
    """The functions covering the ``n`` instructions of .text (``slot`` bytes each) exactly once,
    each in the region ``region(name, address)`` names; which of them are function symbols; the
    index into them of every instruction; and which instructions a function symbol covers."""
    spans, is_symbol = _function_spans(image, n, slot)
    base = image.text_address
    functions: list[Function] = []
    for name, first, last in spans:
        address = base + slot * first
        functions.append(Function(name, address, first, last - first, region(name, address)))
    function_of = np.repeat(np.arange(len(functions), dtype=np.int32), [f.count for f in functions])
    covered = np.zeros(n, dtype=bool)
    for (_, first, last), symbol in zip(spans, is_symbol):
        covered[first:last] = symbol
    return tuple(functions), is_symbol, function_of, covered


def _function_spans(image: ElfImage, n: int, slot: int) -> tuple[list[tuple[str, int, int]], list[bool]]:
    """(name, first, last) instruction spans covering the ``n`` instructions of .text exactly
    once, and which of them are function symbols.

    A function symbol of size 0 extends to the next function. Words no function covers become
    a span named after a global label at their start (e.g. an assembly ``_start`` without
    ``.type``), or ``<gap@0x...>``.
    """
    base = image.text_address
    aligned = [f for f in image.functions if (f.address - base) % slot == 0]
    starts = [(f.address - base) // slot for f in aligned] + [n]
    spans: list[tuple[str, int, int]] = []
    for k, f in enumerate(aligned):
        first, following = starts[k], starts[k + 1]
        last = min(following, first + (f.size + slot - 1) // slot) if f.size else following
        spans.append((f.name, first, last))
    labels = {(s.address - base) // slot: s.name for s in image.labels
              if (s.address - base) % slot == 0}
    label_at = sorted(labels)
    filled: list[tuple[str, int, int]] = []
    is_symbol: list[bool] = []
    cursor = 0
    for span in spans + [(None, n, n)]:
        gap_start = cursor
        while gap_start < span[1]:
            # Split a gap at every global label inside it.
            k = bisect.bisect_right(label_at, gap_start)
            gap_end = min(label_at[k], span[1]) if k < len(label_at) else span[1]
            name = labels.get(gap_start, f"<gap@0x{base + slot * gap_start:08x}>")
            filled.append((name, gap_start, gap_end))
            is_symbol.append(False)
            gap_start = gap_end
        if span[0] is not None:
            filled.append(span)
            is_symbol.append(True)
        cursor = max(cursor, span[2])
    return filled, is_symbol
