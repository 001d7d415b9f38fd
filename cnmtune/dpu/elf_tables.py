"""The section and symbol tables of a DPU program's ELF, read with struct and numpy.

Both kinds of program cnmtune reads, the proxy's rv32i ELF and a real UPMEM DPU ELF, are ELF32
little endian. pyelftools takes ~2 ms to open an ELF and ~20-50 us per symbol, more than the
rest of feature extraction; these readers take well under a millisecond. They check bounds and
raise TruncatedElf; the caller checks the ELF's identity (machine, type) first
(cnmtune.costmodel.analysis.elf) or reads an ELF its own linker wrote
(cnmtune.runtime.toolchain.layout).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

import numpy as np

from cnmtune.errors import ElfError, NotAnElf, TruncatedElf

EHDR = struct.Struct("<16sHHIIIIIHHHHHH")
SHDR_DTYPE = np.dtype([("name", "<u4"), ("type", "<u4"), ("flags", "<u4"), ("addr", "<u4"),
                       ("offset", "<u4"), ("size", "<u4"), ("link", "<u4"), ("info", "<u4"),
                       ("addralign", "<u4"), ("entsize", "<u4")])
SYM_DTYPE = np.dtype([("name", "<u4"), ("value", "<u4"), ("size", "<u4"),
                      ("info", "u1"), ("other", "u1"), ("shndx", "<u2")])
SHT_NULL, SHT_SYMTAB, SHT_NOBITS = 0, 2, 8
SHF_WRITE = 0x1
SHF_ALLOC = 0x2
SHF_EXECINSTR = 0x4


@dataclass(frozen=True)
class Section:
    """One section header: where it lives in the target's address space, how big it is, and
    whether it is loaded (alloc), code (executable) and writable at run time."""

    name: str
    address: int
    size: int
    alloc: bool
    executable: bool
    writable: bool


def read_sections(data: bytes, label: str) -> tuple[np.ndarray, tuple[Section, ...]]:
    """The raw section header table and its decoded sections, bounds-checked."""
    if len(data) < EHDR.size:
        raise TruncatedElf(f"{label}: truncated ELF ({len(data)} bytes, the ELF header is cut)")
    (*_, e_shoff, _flags, _ehsize, _phentsize, _phnum, e_shentsize, e_shnum,
     e_shstrndx) = EHDR.unpack_from(data)
    if e_shnum == 0:
        raise ElfError(f"{label}: ELF without section headers; cnmtune needs .text and .symtab")
    if e_shentsize != SHDR_DTYPE.itemsize:
        raise TruncatedElf(f"{label}: corrupt ELF (section header size {e_shentsize}, "
                           f"expected {SHDR_DTYPE.itemsize})")
    table_end = e_shoff + e_shnum * e_shentsize
    if table_end > len(data):
        raise TruncatedElf(f"{label}: truncated ELF (section header table ends at byte "
                           f"{table_end}, the file has {len(data)})")
    headers = np.frombuffer(data, dtype=SHDR_DTYPE, count=e_shnum, offset=e_shoff)
    if e_shstrndx >= e_shnum:
        raise TruncatedElf(f"{label}: corrupt ELF (section name table index {e_shstrndx})")
    ends = headers["offset"].astype(np.int64) + headers["size"]
    stored = (headers["type"] != SHT_NOBITS) & (headers["type"] != SHT_NULL)
    beyond = np.flatnonzero(stored & (ends > len(data)))
    if beyond.size:
        k = int(beyond[0])
        raise TruncatedElf(f"{label}: truncated ELF (section {k} ends at byte {int(ends[k])}, "
                           f"the file has {len(data)})")
    names_at = int(headers["offset"][e_shstrndx])
    names = data[names_at:names_at + int(headers["size"][e_shstrndx])]
    sections = tuple(
        Section(string_at(names, name, label), address, size, bool(flags & SHF_ALLOC),
                bool(flags & SHF_EXECINSTR), bool(flags & SHF_WRITE))
        for name, _, flags, address, _, size, *_ in headers.tolist())  # Python ints: one conversion
    return headers, sections


def symbol_table(data: bytes, headers: np.ndarray, sections: tuple[Section, ...],
                 label: str) -> tuple[np.ndarray, bytes]:
    """.symtab's entries and the string table their names index; ElfError without a .symtab."""
    index = next((k for k, s in enumerate(sections) if s.name == ".symtab"), None)
    if index is None or headers["type"][index] != SHT_SYMTAB:
        raise ElfError(f"{label}: no .symtab (stripped ELF?); cnmtune needs the symbols to "
                       "attribute code to functions")
    strtab = int(headers["link"][index])
    if not 0 < strtab < len(sections):
        raise TruncatedElf(f"{label}: corrupt ELF (.symtab links to section {strtab})")
    off = int(headers["offset"][strtab])
    offset, size = int(headers["offset"][index]), int(headers["size"][index])
    if size % SYM_DTYPE.itemsize:
        raise TruncatedElf(f"{label}: corrupt .symtab (size {size} is not a multiple of "
                           f"{SYM_DTYPE.itemsize})")
    symbols = np.frombuffer(data, dtype=SYM_DTYPE, count=size // SYM_DTYPE.itemsize, offset=offset)
    return symbols, data[off:off + int(headers["size"][strtab])]


def symbol_values(data: bytes, label: str) -> dict[str, int]:
    """Name -> value of every named symbol of an ELF32 little-endian file (the first of equal names)."""
    if data[:4] != b"\x7fELF":
        raise NotAnElf(f"{label}: not an ELF file (starts with {data[:8]!r}, expected b'\\x7fELF')")
    headers, sections = read_sections(data, label)
    symbols, strings = symbol_table(data, headers, sections, label)
    values: dict[str, int] = {}
    for name_at, value in zip(symbols["name"].tolist(), symbols["value"].tolist()):
        if name_at and (name := string_at(strings, name_at, label)) not in values:
            values[name] = value
    return values


def string_at(strings: bytes, offset: int, label: str) -> str:
    """The NUL-terminated name at ``offset`` of a string table."""
    end = strings.find(b"\0", offset)
    if offset >= len(strings) or end < 0:
        raise TruncatedElf(
            f"{label}: corrupt ELF (a symbol or section name lies outside its string table)")
    return strings[offset:end].decode("utf-8", "replace")
