"""Loading and validating the linked ELF whose features the cost model reads.

``load_elf`` accepts the proxy target's binaries (ELF32, little endian, RISC-V, ET_EXEC, 4-byte
instructions) and ``load_dpu_elf`` real UPMEM DPU binaries (ELF32, little endian, e_machine
245, ET_EXEC, 8-byte instruction slots; shared/upmem/DPU_ISA.md §1); each refuses everything
else with one line naming the file and the cause. ``elf_machine`` tells them apart. The
headers and the symbol table are read with struct/numpy rather than pyelftools: pyelftools
takes ~2 ms to open an ELF and ~20 us per symbol, and a linked image holds thousands of
symbols (mostly ``$d`` and ``.L`` locals), while the whole extraction must stay in a few ms.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from cnmtune.errors import ElfError, NotAnElf, TruncatedElf, UnsupportedMachine

EM_RISCV = 243
EM_DPU = 245
EF_RISCV_RVC = 0x1
SHF_ALLOC = 0x2
SHF_EXECINSTR = 0x4
SHN_ABS = 0xFFF1

MACHINE_NAMES = {
    0: "no machine", 2: "SPARC", 3: "x86 (i386)", 4: "m68k", 8: "MIPS", 20: "PowerPC",
    21: "PowerPC64", 22: "s390", 40: "ARM", 42: "SuperH", 43: "SPARC V9", 50: "IA-64",
    62: "x86-64", 83: "AVR", 94: "Xtensa", 105: "MSP430", 164: "Hexagon", 183: "AArch64",
    188: "TI C6000", 190: "CUDA", 224: "AMDGPU", 243: "RISC-V", 245: "UPMEM DPU", 247: "eBPF",
    258: "LoongArch",
}

_ET_NAMES = {0: "ET_NONE", 1: "ET_REL (a relocatable object: link it first)", 2: "ET_EXEC",
             3: "ET_DYN (a shared object or PIE)", 4: "ET_CORE (a core dump)"}

_EHDR = struct.Struct("<16sHHIIIIIHHHHHH")
_SHDR_DTYPE = np.dtype([("name", "<u4"), ("type", "<u4"), ("flags", "<u4"), ("addr", "<u4"),
                        ("offset", "<u4"), ("size", "<u4"), ("link", "<u4"), ("info", "<u4"),
                        ("addralign", "<u4"), ("entsize", "<u4")])
_SHT_NULL, _SHT_SYMTAB, _SHT_NOBITS = 0, 2, 8
_SYM_DTYPE = np.dtype([("name", "<u4"), ("value", "<u4"), ("size", "<u4"),
                       ("info", "u1"), ("other", "u1"), ("shndx", "<u2")])
_STT_NOTYPE, _STT_FUNC = 0, 2
_STB_LOCAL = 0


@dataclass(frozen=True)
class Section:
    """One section header: where it lives in the target's address space and how big it is."""

    name: str
    address: int
    size: int
    alloc: bool
    executable: bool


@dataclass(frozen=True)
class FunctionSymbol:
    """A function in .text (aliases at one address merged under the preferred name)."""

    name: str
    address: int
    size: int


@dataclass(frozen=True)
class ElfImage:
    """The parts of a validated proxy ELF that feature extraction reads."""

    name: str
    data: bytes
    machine: str
    text_address: int
    text: bytes
    sections: tuple[Section, ...]
    functions: tuple[FunctionSymbol, ...]
    labels: tuple[FunctionSymbol, ...]
    symbols: dict[str, int]
    absolute: frozenset[str]
    initialised: tuple[tuple[int, bytes], ...] = ()

    def symbol(self, name: str) -> int | None:
        """The value of a global symbol, or None when the ELF does not define it."""
        return self.symbols.get(name)

    def initial_word(self, address: int) -> int | None:
        """The word the loader writes at ``address`` (see ``initial_word``)."""
        return initial_word(self.initialised, address)


def initial_word(initialised: tuple[tuple[int, bytes], ...], address: int) -> int | None:
    """The little-endian word at ``address`` of the initialised data sections
    ((address, bytes) pairs), or None when no section holds all 4 bytes."""
    for start, content in initialised:
        offset = address - start
        if 0 <= offset <= len(content) - 4:
            return int.from_bytes(content[offset:offset + 4], "little")
    return None


def machine_name(e_machine: int) -> str:
    """A readable name for an ELF e_machine number."""
    return MACHINE_NAMES.get(e_machine, "unknown-machine")


def read_source(source: str | Path | bytes, name: str | None = None) -> tuple[bytes, str]:
    """The bytes of an ELF given as a path or as bytes, and the label errors name it by."""
    if isinstance(source, (bytes, bytearray, memoryview)):
        return bytes(source), name or "<bytes>"
    label = name or str(source)
    try:
        return Path(source).read_bytes(), label
    except OSError as exc:
        raise ElfError(f"{label}: cannot read the file ({exc.strerror or exc})") from None


def elf_machine(data: bytes) -> int | None:
    """The e_machine of an ELF's bytes, or None when they are not (enough of) an ELF."""
    if data[:4] != b"\x7fELF" or len(data) < 20 or data[5] not in (1, 2):
        return None
    return struct.unpack_from("<H" if data[5] == 1 else ">H", data, 18)[0]


def load_elf(source: str | Path | bytes, name: str | None = None) -> ElfImage:
    """Read and validate a proxy ELF from a path or from bytes; raise an ElfError subclass."""
    data, label = read_source(source, name)
    _check_identity(data, label)
    headers, sections = _read_sections(data, label)
    return _image(data, label, headers, sections)


def load_dpu_elf(source: str | Path | bytes, name: str | None = None) -> ElfImage:
    """Read and validate a real UPMEM DPU ELF (e_machine 245) from a path or from bytes.

    ``text`` holds the 8-byte instruction slots; decode them with cnmtune.costmodel.analysis.dpu_program.
    """
    data, label = read_source(source, name)
    _check_identity(data, label, EM_DPU)
    headers, sections = _read_sections(data, label)
    return _image(data, label, headers, sections, machine="dpu", slot=8)


def _check_identity(data: bytes, label: str, expected: int = EM_RISCV) -> None:
    if data[:4] != b"\x7fELF":
        head = data[:8]
        raise NotAnElf(f"{label}: not an ELF file (starts with {head!r}, expected b'\\x7fELF')")
    if len(data) < 20:
        raise TruncatedElf(f"{label}: truncated ELF ({len(data)} bytes, the ELF header is cut)")
    ei_class, ei_data = data[4], data[5]
    if ei_data not in (1, 2):
        raise TruncatedElf(f"{label}: corrupt ELF header (EI_DATA {ei_data} is neither LE nor BE)")
    (e_machine,) = struct.unpack_from("<H" if ei_data == 1 else ">H", data, 18)
    if e_machine == EM_DPU and expected != EM_DPU:
        raise UnsupportedMachine(
            f"{label}: UPMEM DPU ELF (e_machine 245), not a RISC-V proxy binary; "
            "extract_features reads it with the DPU decoder")
    if e_machine != expected:
        wanted = "UPMEM DPU" if expected == EM_DPU else "RISC-V rv32 proxy"
        raise UnsupportedMachine(
            f"{label}: {machine_name(e_machine)} ELF (e_machine {e_machine}); cnmtune reads "
            f"{wanted} binaries")
    arch, target = ("UPMEM DPU", "a DPU") if expected == EM_DPU else ("RISC-V", "the proxy target")
    if ei_class != 1:
        kind = "ELF64" + (" (rv64)" if expected == EM_RISCV else "") if ei_class == 2 \
            else f"EI_CLASS {ei_class}"
        raise UnsupportedMachine(f"{label}: {kind} {arch} ELF; {target} is 32-bit")
    if ei_data != 1:
        raise UnsupportedMachine(f"{label}: big-endian {arch} ELF; {target} is little endian")
    if len(data) < _EHDR.size:
        raise TruncatedElf(f"{label}: truncated ELF ({len(data)} bytes, the ELF header is cut)")
    e_type, = struct.unpack_from("<H", data, 16)
    if e_type != 2:
        raise ElfError(f"{label}: not an executable: {_ET_NAMES.get(e_type, f'e_type {e_type}')}")
    e_flags, = struct.unpack_from("<I", data, 36)
    if expected == EM_RISCV and e_flags & EF_RISCV_RVC:
        raise UnsupportedMachine(
            f"{label}: RISC-V ELF with compressed (C) instructions (e_flags RVC); the proxy "
            "target is rv32i with 4-byte instructions only")


def _read_sections(data: bytes, label: str) -> tuple[np.ndarray, tuple[Section, ...]]:
    """The raw section header table and its decoded sections, bounds-checked."""
    (*_, e_shoff, _flags, _ehsize, _phentsize, _phnum, e_shentsize, e_shnum,
     e_shstrndx) = _EHDR.unpack_from(data)
    if e_shnum == 0:
        raise ElfError(f"{label}: ELF without section headers; cnmtune needs .text and .symtab")
    if e_shentsize != _SHDR_DTYPE.itemsize:
        raise TruncatedElf(f"{label}: corrupt ELF (section header size {e_shentsize}, "
                           f"expected {_SHDR_DTYPE.itemsize})")
    table_end = e_shoff + e_shnum * e_shentsize
    if table_end > len(data):
        raise TruncatedElf(f"{label}: truncated ELF (section header table ends at byte "
                           f"{table_end}, the file has {len(data)})")
    headers = np.frombuffer(data, dtype=_SHDR_DTYPE, count=e_shnum, offset=e_shoff)
    if e_shstrndx >= e_shnum:
        raise TruncatedElf(f"{label}: corrupt ELF (section name table index {e_shstrndx})")
    ends = headers["offset"].astype(np.int64) + headers["size"]
    stored = (headers["type"] != _SHT_NOBITS) & (headers["type"] != _SHT_NULL)
    beyond = np.flatnonzero(stored & (ends > len(data)))
    if beyond.size:
        k = int(beyond[0])
        raise TruncatedElf(f"{label}: truncated ELF (section {k} ends at byte {int(ends[k])}, "
                           f"the file has {len(data)})")
    names_at = int(headers["offset"][e_shstrndx])
    names = data[names_at:names_at + int(headers["size"][e_shstrndx])]
    sections = tuple(
        Section(_name(names, int(h["name"]), label), int(h["addr"]), int(h["size"]),
                bool(h["flags"] & SHF_ALLOC), bool(h["flags"] & SHF_EXECINSTR))
        for h in headers)
    return headers, sections


def _image(data: bytes, label: str, headers: np.ndarray, sections: tuple[Section, ...],
           machine: str = "riscv32", slot: int = 4) -> ElfImage:
    index = {s.name: k for k, s in reversed(list(enumerate(sections)))}
    text = index.get(".text")
    if text is None or sections[text].size == 0:
        raise ElfError(f"{label}: no code: the ELF has no (or an empty) .text section")
    t_addr, t_size = sections[text].address, sections[text].size
    if t_size % slot or t_addr % slot:
        what = "8-byte DPU instruction slots" if machine == "dpu" else "4-byte rv32i instructions"
        raise ElfError(f"{label}: .text is {t_size} bytes at 0x{t_addr:08x}, not a whole number "
                       f"of aligned {what}")
    symtab = index.get(".symtab")
    if symtab is None or headers["type"][symtab] != _SHT_SYMTAB:
        raise ElfError(f"{label}: no .symtab (stripped ELF?); cnmtune needs the symbols to "
                       "attribute code to functions")
    strtab = int(headers["link"][symtab])
    if not 0 < strtab < len(sections):
        raise TruncatedElf(f"{label}: corrupt ELF (.symtab links to section {strtab})")
    off = int(headers["offset"][strtab])
    strings = data[off:off + int(headers["size"][strtab])]
    syms = _symbols(data, int(headers["offset"][symtab]), int(headers["size"][symtab]), label)
    functions, labels, values, absolute = _classify(syms, strings, text, t_addr,
                                                    t_addr + t_size, label)
    t_off = int(headers["offset"][text])
    # What the loader writes into the data memories (WRAM, MRAM): constant pools and
    # initialised globals, read when a call target is loaded from a link-time address.
    stored = (headers["type"] != _SHT_NOBITS) & (headers["type"] != _SHT_NULL)
    initialised = tuple(
        (s.address, data[int(h["offset"]):int(h["offset"]) + s.size])
        for s, h, keep in zip(sections, headers, stored.tolist())
        if keep and s.alloc and not s.executable and s.size)
    return ElfImage(name=label, data=data, machine=machine, text_address=t_addr,
                    text=data[t_off:t_off + t_size], sections=sections, functions=functions,
                    labels=labels, symbols=values, absolute=absolute, initialised=initialised)


def _symbols(data: bytes, offset: int, size: int, label: str) -> np.ndarray:
    if size % _SYM_DTYPE.itemsize:
        raise TruncatedElf(f"{label}: corrupt .symtab (size {size} is not a multiple of "
                           f"{_SYM_DTYPE.itemsize})")
    return np.frombuffer(data, dtype=_SYM_DTYPE, count=size // _SYM_DTYPE.itemsize, offset=offset)


def _name(strings: bytes, offset: int, label: str) -> str:
    end = strings.find(b"\0", offset)
    if offset >= len(strings) or end < 0:
        raise TruncatedElf(
            f"{label}: corrupt ELF (a symbol or section name lies outside its string table)")
    return strings[offset:end].decode("utf-8", "replace")


def _preferred(aliases: list[tuple[str, bool, int]]) -> str:
    """The name for a set of function symbols at one address.

    zig's compiler_rt exports one implementation under several names, plus a local
    ``compiler_rt.<file>.<name>`` for each: ``__cmpdf2`` is also ``__eqdf2``, ``__ltdf2``,
    ``__ledf2`` and ``__nedf2``. The plain name the implementation is defined under wins
    (``__cmpdf2``, ``__mulsi3``), then any plain name, then global over local, then the
    shortest, then the first alphabetically.
    """
    defined = {name.rsplit(".", 1)[1] for name, _, _ in aliases if "." in name}
    return min(aliases, key=lambda a: ("." in a[0], a[0] not in defined, a[1], len(a[0]),
                                       a[0]))[0]


def _classify(syms: np.ndarray, strings: bytes, text_index: int, text_start: int,
              text_end: int, label: str):
    """Split symbols into functions in .text, other .text labels, globals and absolutes."""
    kind = syms["info"] & 0xF
    local = (syms["info"] >> 4) == _STB_LOCAL
    in_text = (syms["shndx"] == text_index) & (syms["value"] >= text_start) \
        & (syms["value"] < text_end)
    by_address: dict[int, list[tuple[str, bool, int]]] = {}
    for i in np.flatnonzero(in_text & (kind == _STT_FUNC)).tolist():
        name = _name(strings, int(syms["name"][i]), label)
        by_address.setdefault(int(syms["value"][i]), []).append(
            (name, bool(local[i]), int(syms["size"][i])))
    functions = tuple(FunctionSymbol(_preferred(group), address, max(g[2] for g in group))
                      for address, group in sorted(by_address.items()))

    values: dict[str, int] = {}
    absolute = set()
    labels = []
    for i in np.flatnonzero(~local).tolist():
        name = _name(strings, int(syms["name"][i]), label)
        if not name:
            continue
        values[name] = int(syms["value"][i])
        if syms["shndx"][i] == SHN_ABS:
            absolute.add(name)
        elif in_text[i] and kind[i] == _STT_NOTYPE and not name.startswith("__cnm_text_"):
            labels.append(FunctionSymbol(name, int(syms["value"][i]), 0))
    return functions, tuple(sorted(labels, key=lambda s: s.address)), values, frozenset(absolute)
