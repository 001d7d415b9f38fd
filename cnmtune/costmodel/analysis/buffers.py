"""Constant buffer sizes in a program's code: what a kernel's block-size parameters look like.

PrIM-style kernels stream MRAM through WRAM blocks whose size is a compile-time define
(``BL``, ``BLOCK_BYTES``): the buffers come from ``mem_alloc(BLOCK_BYTES)`` and move with
``mram_read``/``mram_write`` of that many bytes. Two binaries differing only in the block size
have the same opcode histogram, so the sizes are read from the code itself, per instruction:

- ``dma``: the constant byte count of each DMA. Proxy: the size argument (a2) of a call to
  ``mram_read``/``mram_write`` (and their ``_unaligned`` forms), from the constant propagation
  of cnmtune.costmodel.analysis.calls. Real DPU: ``ldma``/``sdma`` move ``(immDma + 1) * 8``
  bytes plus a length a register may carry; an immediate of 0 is left out, since it is also
  the form of a length computed at run time. (Derived from the SDK objdump in
  ../shared/upmem/objdump_sample.txt: a loop advancing its MRAM address by 2048 bytes per
  ``ldma r3, r4, 255``; the FACTS table bounds a DMA to 8..2048 bytes.)
- ``alloc``: the constant size argument of each ``mem_alloc`` call (a0 on the proxy; r0 set by
  ``move r0, imm`` in the call's block on a real DPU, the first argument register of the SDK ABI
  as in ``move r0, 272; call r23, barrier_wait`` of the same objdump).

Sizes that are not constants (the last, partial block of a stream) are left out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from cnmtune.costmodel.analysis.calls import CallSite, argument_constants
from cnmtune.costmodel.analysis.cfg import FunctionCfg
from cnmtune.costmodel.analysis.dpu_isa import encoding_table
from cnmtune.costmodel.analysis.dpu_program import DpuProgram
from cnmtune.costmodel.analysis.rv32_program import Program

#: Proxy routines whose size argument is read, with its register (a0 = x10, a2 = x12).
DMA_ROUTINES = {"mram_read": 12, "mram_write": 12, "mram_read_unaligned": 12,
                "mram_write_unaligned": 12}
ALLOC_ROUTINES = {"mem_alloc": 10}
DMA_UNIT = 8  # bytes per step of a DPU DMA length
_DPU_DMA = ("ldma", "sdma")


@dataclass(frozen=True)
class BufferSizes:
    """Constant sizes in bytes by instruction index: DMAs, and ``mem_alloc`` calls."""

    dma: dict[int, int] = field(default_factory=dict)
    alloc: dict[int, int] = field(default_factory=dict)

    def moved(self, index_map: np.ndarray) -> BufferSizes:
        """The same sizes at new instruction indices (``index_map[old] = new``)."""
        return BufferSizes({int(index_map[i]): v for i, v in self.dma.items()},
                           {int(index_map[i]): v for i, v in self.alloc.items()})


def argument_sizes(program: Program, cfgs: tuple[FunctionCfg, ...], sites: Sequence[CallSite]) -> dict[int, int]:
    """The constant size passed at each of the proxy's calls to a DMA routine or ``mem_alloc``, by
    call-site index (one dataflow pass; calls with a size not constant are left out)."""
    return argument_constants(program, cfgs, sites, {**DMA_ROUTINES, **ALLOC_ROUTINES})


def rv32_buffer_sizes(program: Program, cfgs: tuple[FunctionCfg, ...], sites: Sequence[CallSite],
                      sizes: Mapping[int, int] | None = None) -> BufferSizes:
    """Constant sizes at the proxy's calls to the DMA routines and to ``mem_alloc`` (``sizes``:
    their ``argument_sizes`` where the caller has them)."""
    found = argument_sizes(program, cfgs, sites) if sizes is None else sizes
    callee = {site.index: site.callee for site in sites}
    return BufferSizes({i: size for i, size in found.items() if callee[i] in DMA_ROUTINES},
                       {i: size for i, size in found.items() if callee[i] in ALLOC_ROUTINES})


def dpu_buffer_sizes(program: DpuProgram, cfgs: tuple[FunctionCfg, ...],
                     sites: list[CallSite]) -> BufferSizes:
    """Constant sizes of a real DPU ELF's ``ldma``/``sdma`` and of its ``mem_alloc`` calls."""
    table = encoding_table()
    words, forms = program.words, program.forms
    immediate = table.operand(words, forms, "immDma")
    dma = {i: (int(immediate[i]) + 1) * DMA_UNIT for i, m in enumerate(program.mnemonics)
           if m in _DPU_DMA and immediate[i] > 0}
    move = table.index("MOVEri")
    rc, dc = table.operand(words, forms, "rc"), table.operand(words, forms, "dc")
    value = table.operand(words, forms, "imm")
    alloc = {}
    for site in sites:
        if not site.exact or site.callee not in ALLOC_ROUTINES:
            continue
        fn = program.function_at(site.index)
        cfg = cfgs[int(program.function_of[site.index])]
        leader = fn.first + cfg.leaders[cfg.block_of(site.index - fn.first)]
        for i in range(site.index - 1, leader - 1, -1):  # the last write of r0 in the block
            if forms[i] == move and rc[i] == 0:
                alloc[site.index] = int(value[i])
            if rc[i] == 0 or dc[i] == 0:
                break
    return BufferSizes(dma, alloc)
