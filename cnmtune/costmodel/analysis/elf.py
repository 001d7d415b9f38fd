"""Loading and validating the linked ELF whose features the cost model reads.

``load_elf`` accepts the proxy target's binaries (ELF32, little endian, RISC-V, ET_EXEC, 4-byte
instructions) and ``load_dpu_elf`` real UPMEM DPU binaries (ELF32, little endian, e_machine
245, ET_EXEC, 8-byte instruction slots; shared/upmem/DPU_ISA.md §1); each refuses everything
else with one line naming the file and the cause. ``elf_machine`` tells them apart. The
section and symbol tables are read by cnmtune.dpu.elf_tables (struct/numpy, not pyelftools).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from cnmtune.dpu.elf_tables import (EHDR, SHT_NOBITS, SHT_NULL, Section, read_sections, string_at,
                                     symbol_table)
from cnmtune.errors import ElfError, NotAnElf, TruncatedElf, UnsupportedMachine

EM_RISCV = 243
EM_DPU = 245
EF_RISCV_RVC = 0x1
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

_STT_NOTYPE, _STT_FUNC = 0, 2
_STB_LOCAL = 0


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
    constant_data: tuple[tuple[int, bytes], ...] = ()

    def symbol(self, name: str) -> int | None:
        """The value of a global symbol, or None when the ELF does not define it."""
        return self.symbols.get(name)

    def constant_word(self, address: int) -> int | None:
        """The word at ``address`` of the read-only data (see ``constant_word``)."""
        return constant_word(self.constant_data, address)


def constant_word(constant_data: tuple[tuple[int, bytes], ...], address: int) -> int | None:
    """The little-endian word at ``address`` of the read-only data sections ((address, bytes)
    pairs), or None when no section holds all 4 bytes."""
    for start, content in constant_data:
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
    headers, sections = read_sections(data, label)
    return _image(data, label, headers, sections)


def load_dpu_elf(source: str | Path | bytes, name: str | None = None) -> ElfImage:
    """Read and validate a real UPMEM DPU ELF (e_machine 245) from a path or from bytes.

    ``text`` holds the 8-byte instruction slots; decode them with cnmtune.costmodel.analysis.dpu_program.
    """
    data, label = read_source(source, name)
    _check_identity(data, label, EM_DPU)
    headers, sections = read_sections(data, label)
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
    if len(data) < EHDR.size:
        raise TruncatedElf(f"{label}: truncated ELF ({len(data)} bytes, the ELF header is cut)")
    e_type, = struct.unpack_from("<H", data, 16)
    if e_type != 2:
        raise ElfError(f"{label}: not an executable: {_ET_NAMES.get(e_type, f'e_type {e_type}')}")
    e_flags, = struct.unpack_from("<I", data, 36)
    if expected == EM_RISCV and e_flags & EF_RISCV_RVC:
        raise UnsupportedMachine(
            f"{label}: RISC-V ELF with compressed (C) instructions (e_flags RVC); the proxy "
            "target is rv32i with 4-byte instructions only")


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
    syms, strings = symbol_table(data, headers, sections, label)
    functions, labels, values, absolute = _classify(syms, strings, text, t_addr,
                                                    t_addr + t_size, label)
    t_off = int(headers["offset"][text])
    # What the loader writes into the data memories (WRAM, MRAM) and nothing changes: constant
    # pools and const tables, read when a call target or a size is loaded from a link-time
    # address. A writable section's words hold their initial values only until a store (a
    # __host variable, .dpu_host, is written by the host before every launch), so they are
    # not constants.
    stored = (headers["type"] != SHT_NOBITS) & (headers["type"] != SHT_NULL)
    constant_data = tuple(
        (s.address, data[int(h["offset"]):int(h["offset"]) + s.size])
        for s, h, keep in zip(sections, headers, stored.tolist())
        if keep and s.alloc and not s.executable and not s.writable and s.size)
    return ElfImage(name=label, data=data, machine=machine, text_address=t_addr,
                    text=data[t_off:t_off + t_size], sections=sections, functions=functions,
                    labels=labels, symbols=values, absolute=absolute, constant_data=constant_data)


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
    # the columns as Python lists, converted once (not a numpy scalar per field and symbol)
    name_at, value, size, shndx = (syms[field].tolist() for field in ("name", "value", "size", "shndx"))
    by_address: dict[int, list[tuple[str, bool, int]]] = {}
    for i in np.flatnonzero(in_text & (kind == _STT_FUNC)).tolist():
        by_address.setdefault(value[i], []).append((string_at(strings, name_at[i], label), bool(local[i]), size[i]))
    functions = tuple(FunctionSymbol(_preferred(group), address, max(g[2] for g in group))
                      for address, group in sorted(by_address.items()))

    values: dict[str, int] = {}
    absolute = set()
    labels = []
    text_label = (in_text & (kind == _STT_NOTYPE)).tolist()
    for i in np.flatnonzero(~local).tolist():
        name = string_at(strings, name_at[i], label)
        if not name:
            continue
        values[name] = value[i]
        if shndx[i] == SHN_ABS:
            absolute.add(name)
        elif text_label[i] and not name.startswith("__cnm_text_"):
            labels.append(FunctionSymbol(name, value[i], 0))
    return functions, tuple(sorted(labels, key=lambda s: s.address)), values, frozenset(absolute)
