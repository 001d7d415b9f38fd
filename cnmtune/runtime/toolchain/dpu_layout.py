"""Memory use of a real UPMEM DPU ELF (e_machine 245), read with pyelftools.

The runtime cannot use cnmtune.costmodel's DPU decoder (DESIGN.md: runtime does not import
costmodel), and needs only sizes: instructions are the 8-byte slots of .text (FACTS.md §3),
split by function name into soft-arithmetic routines, the SDK runtime and the kernel; WRAM
runs to the heap start `__sys_heap_pointer_reset` and holds the `.data.__sys_host` (`__host`
variables) and `.data.stacks` sections of the SDK's dpu.lds; MRAM runs to `__sys_used_mram_end`.
The SDK linker enforces IRAM and WRAM capacity itself, so nothing here re-checks them.
"""

from __future__ import annotations

import io
import re
from pathlib import Path

from elftools.common.exceptions import ELFError
from elftools.elf.elffile import ELFFile

from cnmtune.dpu.memory_map import MRAM_BASE, MRAM_SIZE
from cnmtune.errors import ElfError
from cnmtune.runtime.toolchain.base import MemoryUse

EM_DPU = 245
DPU_INSTRUCTION_BYTES = 8

_SOFTLIB = re.compile(r"__(?:(?:u?(?:div|mod)|mul|ashl|ashr|lshr)(?:[sdt]i3|\d+)|\w+[sdt]f[23]"
                      r"|float\w*[sdt]f|fix\w*[sdt]i|extend\w+|trunc\w+|(?:clz|ctz|popcount|bswap)[sd]i2)")
# the SDK runtime's families (dpu-rt syslib) and its libc and tasklet functions
_RUNTIME_PREFIXES = ("__", "mram_", "barrier_", "mutex_", "sem_", "handshake_", "perfcounter_", "mem_",
                     "fsb_", "buddy_", "seqread_", "seqwrite_", "atomic_", "dma_")
_RUNTIME_NAMES = frozenset({"printf", "puts", "putchar", "memcpy", "memset", "memmove", "memcmp", "strlen",
                            "me", "halt", "check_stack"})


def dpu_elf_machine(data: bytes) -> int | None:
    """e_machine of an ELF image, None if the bytes are not an ELF."""
    if len(data) < 20 or data[:4] != b"\x7fELF":
        return None
    return int.from_bytes(data[18:20], "little" if data[5] == 1 else "big")


def read_dpu_memory_use(elf_path: Path) -> MemoryUse:
    """IRAM, WRAM and MRAM use of a linked DPU program (see the module docstring)."""
    try:
        data = Path(elf_path).read_bytes()
    except OSError as exc:
        raise ElfError(f"{elf_path}: cannot read linked program: {exc}") from exc
    machine = dpu_elf_machine(data)
    if machine is None:
        raise ElfError(f"{elf_path}: the UPMEM linker did not produce an ELF")
    if machine != EM_DPU or data[4] != 1:
        raise ElfError(f"{elf_path}: not a 32-bit UPMEM DPU ELF (e_machine {machine}, expected {EM_DPU})")
    try:
        elf = ELFFile(io.BytesIO(data))
        sections = {s.name: s for s in elf.iter_sections()}
        symtab = elf.get_section_by_name(".symtab")
        symbols = list(symtab.iter_symbols()) if symtab is not None else []
        text = sections.get(".text")
        text_index = next((i for i, s in enumerate(elf.iter_sections()) if s.name == ".text"), None)
        values = {s.name: s["st_value"] for s in symbols if s.name}
        functions = [(s.name, s["st_size"]) for s in symbols
                     if s["st_info"]["type"] == "STT_FUNC" and s["st_shndx"] == text_index and s["st_size"]]
        alloc = [(s["sh_addr"], s["sh_size"]) for s in elf.iter_sections()
                 if s["sh_flags"] & 0x2 and not s["sh_flags"] & 0x4 and s["sh_size"]]  # SHF_ALLOC, not EXECINSTR
    except (ELFError, ValueError, KeyError) as exc:
        raise ElfError(f"{elf_path}: corrupt DPU ELF: {exc}") from exc
    total = (text["sh_size"] if text is not None else 0) // DPU_INSTRUCTION_BYTES
    softlib = sum(size for name, size in functions if _SOFTLIB.fullmatch(name)) // DPU_INSTRUCTION_BYTES
    runtime = sum(size for name, size in functions
                  if not _SOFTLIB.fullmatch(name) and _is_runtime(name)) // DPU_INSTRUCTION_BYTES
    host = sections[".data.__sys_host"]["sh_size"] if ".data.__sys_host" in sections else 0
    stacks = sections[".data.stacks"]["sh_size"] if ".data.stacks" in sections else 0
    wram = [(a, n) for a, n in alloc if a < MRAM_BASE]
    heap = values.get("__sys_heap_pointer_reset")
    wram_end = heap if heap is not None else max((a + n for a, n in wram), default=0)
    mram_end = values.get("__sys_used_mram_end")
    if mram_end is None:
        mram_end = max((a + n for a, n in alloc if MRAM_BASE <= a < MRAM_BASE + MRAM_SIZE), default=MRAM_BASE)
    kernel = max(total - runtime - softlib, 0)
    return MemoryUse(
        runtime_instructions=runtime,
        kernel_instructions=kernel,
        softlib_instructions=softlib,
        wram_data_bytes=max(wram_end - host - stacks, 0),
        wram_host_bytes=host,
        wram_stack_bytes=stacks,
        mram_static_bytes=max(mram_end - MRAM_BASE, 0),
        iram_dpu_instructions=kernel + runtime,  # a real DPU ELF holds DPU instructions already
    )


def _is_runtime(name: str) -> bool:
    return name in _RUNTIME_NAMES or name.startswith(_RUNTIME_PREFIXES)
