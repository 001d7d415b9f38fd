"""Relocatable 32-bit little-endian ELF objects and ar archives, as cnmtune's linker reads them:
sections with their bytes and RELA relocations, and symbols (cnmtune.runtime.toolchain.linker)."""

from __future__ import annotations

import functools
import struct
from dataclasses import dataclass, field

SHT_SYMTAB, SHT_RELA, SHT_NOBITS, SHT_REL = 2, 4, 8, 9
SHT_RISCV_ATTRIBUTES = 0x70000003
SHF_WRITE, SHF_ALLOC, SHF_EXECINSTR, SHF_MERGE, SHF_TLS = 0x1, 0x2, 0x4, 0x10, 0x400
STB_LOCAL, STB_GLOBAL, STB_WEAK = 0, 1, 2
STT_SECTION, STT_FILE = 3, 4
SHN_UNDEF, SHN_ABS, SHN_COMMON = 0, 0xFFF1, 0xFFF2
EM_RISCV = 243
_SECTION_HEADER = struct.Struct("<10I")
_SYMBOL = struct.Struct("<IIIBBH")
_RELA = struct.Struct("<IIi")


class NotRelocatable(ValueError):
    """The bytes are not a relocatable ELF32 little-endian RISC-V object (or not an ar archive)."""


@dataclass(eq=False)
class Section:
    """One section of an object: its header fields, bytes (empty for NOBITS) and RELA relocations
    as (offset, type, symbol index, addend)."""

    index: int
    name: str
    type: int
    flags: int
    align: int
    size: int
    data: bytes
    relocs: list[tuple[int, int, int, int]] = field(default_factory=list)


@dataclass(frozen=True)
class Symbol:
    """One ELF symbol-table entry."""

    name: str
    value: int
    size: int
    info: int
    other: int
    shndx: int

    @property
    def bind(self) -> int:
        return self.info >> 4

    @property
    def type(self) -> int:
        return self.info & 0xF

    @property
    def hidden(self) -> bool:
        """Internal or hidden visibility: a local symbol of the linked program."""
        return self.other & 3 in (1, 2)

    @property
    def defined(self) -> bool:
        return self.shndx != SHN_UNDEF


@dataclass(frozen=True)
class ObjectFile:
    """A parsed relocatable object (read-only: a link keeps its own state)."""

    name: str
    e_flags: int
    sections: tuple[Section, ...]
    symbols: tuple[Symbol, ...]
    has_rel: bool  # REL (not RELA) relocations, which the linker does not read

    @functools.cached_property
    def global_symbols(self) -> tuple[tuple[int, Symbol], ...]:
        """(index, symbol) of every non-local symbol, in table order."""
        return tuple((k, s) for k, s in enumerate(self.symbols) if k and s.bind != STB_LOCAL)

    @functools.cached_property
    def named_locals(self) -> tuple[Symbol, ...]:
        """The local symbols a linked program may keep: not section symbols, not the assembler's
        temporaries (.L...), which --discard-locals drops."""
        return tuple(s for s in self.symbols[1:]
                     if s.bind == STB_LOCAL and s.type != STT_SECTION and not s.name.startswith(".L"))

    @functools.cached_property
    def locals_by_section(self) -> dict[int, tuple[int, ...]]:
        """Section index -> the positions in ``named_locals`` of the local symbols it holds (a link
        looks at the sections it keeps, not at every symbol)."""
        groups: dict[int, list[int]] = {}
        for position, symbol in enumerate(self.named_locals):
            groups.setdefault(symbol.shndx, []).append(position)
        return {shndx: tuple(positions) for shndx, positions in groups.items()}

    @functools.cached_property
    def undefined(self) -> frozenset[str]:
        """The names of the non-local symbols this object refers to without defining them."""
        return frozenset(s.name for _, s in self.global_symbols if not s.defined)

    @functools.cached_property
    def defines(self) -> frozenset[str]:
        """The names of the non-local symbols this object defines."""
        return frozenset(s.name for _, s in self.global_symbols if s.defined)

    @classmethod
    def parse(cls, name: str, data: bytes) -> ObjectFile:
        """Parse `data` (NotRelocatable if it is not a well-formed relocatable ELF32 little-endian
        RISC-V object)."""
        try:
            return cls._parse(name, data)
        except NotRelocatable:
            raise
        except (struct.error, IndexError, ValueError) as exc:  # offsets past the end, unterminated names
            raise NotRelocatable(f"{name}: malformed ELF object ({type(exc).__name__}: {exc})") from exc

    @classmethod
    def _parse(cls, name: str, data: bytes) -> ObjectFile:
        if data[:4] != b"\x7fELF" or data[4:6] != b"\x01\x01" or struct.unpack_from("<HH", data, 16) != (1, EM_RISCV):
            raise NotRelocatable(f"{name}: not a relocatable ELF32 little-endian RISC-V object")
        e_flags, = struct.unpack_from("<I", data, 36)
        shoff, = struct.unpack_from("<I", data, 32)
        shnum, shstrndx = struct.unpack_from("<HH", data, 48)
        headers = [_SECTION_HEADER.unpack_from(data, shoff + 40 * i) for i in range(shnum)]
        names = headers[shstrndx][4]

        def text(base: int, offset: int) -> str:
            return data[base + offset:data.index(b"\0", base + offset)].decode()

        sections = tuple(Section(i, text(names, h[0]), h[1], h[2], max(h[8], 1), h[5],
                                 b"" if h[1] == SHT_NOBITS else data[h[4]:h[4] + h[5]])
                         for i, h in enumerate(headers))
        symbols: tuple[Symbol, ...] = ()
        for h in headers:
            if h[1] == SHT_SYMTAB:
                strings = headers[h[6]][4]
                symbols = tuple(Symbol(text(strings, n), value, size, info, other, shndx)
                                for n, value, size, info, other, shndx in _SYMBOL.iter_unpack(data[h[4]:h[4] + h[5]]))
            elif h[1] == SHT_RELA:
                sections[h[7]].relocs.extend((off, info & 0xFF, info >> 8, addend)
                                             for off, info, addend in _RELA.iter_unpack(data[h[4]:h[4] + h[5]]))
        return cls(name, e_flags, sections, symbols, any(h[1] == SHT_REL for h in headers))


def archive_members(data: bytes, name: str = "archive") -> list[tuple[str, bytes]]:
    """The (name, bytes) of every member of a System V / GNU ar archive, in archive order."""
    if not data.startswith(b"!<arch>\n"):
        raise NotRelocatable(f"{name}: not an ar archive")
    offset, members, long_names = 8, [], b""
    while offset + 60 <= len(data):
        header = data[offset:offset + 60]
        member, size = header[:16].decode().strip(), int(header[48:58])
        body = data[offset + 60:offset + 60 + size]
        if member == "//":
            long_names = body
        elif member not in ("/", "/SYM64/"):
            if member.startswith("/"):
                start = int(member[1:])
                member = long_names[start:long_names.index(b"/\n", start)].decode()
            members.append((member.rstrip("/"), body))
        offset += 60 + size + (size & 1)
    return members
