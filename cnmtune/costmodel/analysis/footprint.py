"""Static WRAM and MRAM footprints and the tasklet configuration recorded in the ELF."""

from __future__ import annotations

from dataclasses import dataclass

from cnmtune.costmodel.analysis.elf import ElfImage
from cnmtune.dpu.memory_map import MRAM_BASE, MRAM_SIZE, WRAM_BASE


@dataclass(frozen=True)
class Footprint:
    """Bytes of WRAM and MRAM a program uses before it allocates anything, and its tasklets.

    ``wram_static_bytes`` runs from the start of WRAM to the heap start
    (``__sys_heap_pointer_reset``) and so holds ``wram_data_bytes`` (globals: data, rodata,
    bss), ``wram_host_bytes`` (``__host`` variables) and ``wram_stack_bytes`` (all tasklet
    stacks) plus alignment. ``mram_static_bytes`` runs from the start of MRAM to
    ``__sys_used_mram_end``. ``nr_tasklets``/``stack_size`` are the absolute symbols
    NR_TASKLETS and STACK_SIZE_DEFAULT (else dpu.ld's ``__cnm_nr_tasklets``/
    ``__cnm_stack_size``, else the SDK's per-tasklet ``STACK_SIZE_TASKLET_0``), None when the
    ELF has none. Without the ``__sys_host_*``/``__sys_stacks_*`` range symbols (real DPU
    ELFs), the SDK linker script's ``.data.__sys_host`` and ``.data.stacks`` sections give the
    ranges (shared/upmem/FACTS.md §3).
    """

    wram_static_bytes: int
    wram_data_bytes: int
    wram_host_bytes: int
    wram_stack_bytes: int
    mram_static_bytes: int
    nr_tasklets: int | None
    stack_size: int | None


def footprint(image: ElfImage) -> Footprint:
    """Read the static memory use of ``image`` from its linker symbols and sections."""
    data = [s for s in image.sections if s.alloc and not s.executable and s.size]
    wram = [(s.address, s.address + s.size) for s in data if s.address < MRAM_BASE]
    mram = [(s.address, s.address + s.size) for s in data
            if MRAM_BASE <= s.address < MRAM_BASE + MRAM_SIZE]
    host = _range(image, "__sys_host_start", "__sys_host_end", ".data.__sys_host")
    stacks = _range(image, "__sys_stacks_start", "__sys_stacks_end", ".data.stacks")
    heap = image.symbol("__sys_heap_pointer_reset")
    wram_static = heap - WRAM_BASE if heap is not None else max((e for _, e in wram), default=0)
    mram_end = image.symbol("__sys_used_mram_end")
    mram_static = (mram_end if mram_end is not None else max((e for _, e in mram),
                                                             default=MRAM_BASE)) - MRAM_BASE
    # Globals are the WRAM section bytes that are neither __host variables nor stacks,
    # wherever the linker script put those two.
    globals_bytes = sum(e - s - _overlap((s, e), host) - _overlap((s, e), stacks)
                        for s, e in wram)
    return Footprint(wram_static_bytes=wram_static, wram_data_bytes=max(globals_bytes, 0),
                     wram_host_bytes=host[1] - host[0], wram_stack_bytes=stacks[1] - stacks[0],
                     mram_static_bytes=max(mram_static, 0),
                     nr_tasklets=_absolute(image, "NR_TASKLETS", "__cnm_nr_tasklets"),
                     stack_size=_absolute(image, "STACK_SIZE_DEFAULT", "__cnm_stack_size",
                                          "STACK_SIZE_TASKLET_0"))


def _range(image: ElfImage, start: str, end: str, section: str) -> tuple[int, int]:
    lo, hi = image.symbol(start), image.symbol(end)
    if lo is not None and hi is not None and hi >= lo:
        return lo, hi
    found = next((s for s in image.sections if s.name == section and s.alloc), None)
    return (found.address, found.address + found.size) if found is not None else (0, 0)


def _overlap(a: tuple[int, int], b: tuple[int, int]) -> int:
    return max(0, min(a[1], b[1]) - max(a[0], b[0]))


def _absolute(image: ElfImage, *names: str) -> int | None:
    """The first of ``names`` defined as an absolute symbol (dpu.ld's defaults come second)."""
    return next((image.symbol(n) for n in names if n in image.absolute), None)
