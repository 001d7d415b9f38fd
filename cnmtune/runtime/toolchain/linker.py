"""cnmtune's own link of a proxy DPU program: the bytes `ld.lld` writes for cnmtune's linker script,
made in-process (a link was ~20 ms of a variant's ~40 ms, 8 of them starting zig's lld).

It links what a proxy build links: relocatable objects (the kernel's, then cnmtune's DPU runtime)
and zig's compiler_rt archive (one member, taken when anything calls into it), with ld.lld's
options of ``ProxyToolchain.link_args``: --gc-sections from the entry and the KEEP sections,
--strip-debug, --discard-locals, dpu.ld's layout and symbols, NR_TASKLETS and STACK_SIZE_DEFAULT.
The output is lld's, byte for byte: sections, program headers, the symbol table in lld's order
(each file's locals, the hidden symbols lld makes local, then the globals in the order lld first
saw them) and its string tables (tests/runtime/test_linker.py compares them on eight kernels;
when this was written, 287 variants of the 20 suite and 4 unseen kernels were identical).
Anything else (other relocation types, mergeable or TLS sections, COMMON symbols, an undefined or
twice-defined symbol, objects that disagree on flags or attributes, an edited dpu.ld) raises
``Unsupported`` and the caller links with ld.lld, which also reports the errors.
"""

from __future__ import annotations

import functools
import hashlib
import struct
from dataclasses import dataclass
from collections.abc import Sequence
from fnmatch import fnmatchcase
from pathlib import Path

from cnmtune.dpu.memory_map import LINKER_SCRIPT
from cnmtune.runtime.toolchain.relocatable import (SHF_ALLOC, SHF_EXECINSTR, SHF_MERGE, SHF_TLS, SHF_WRITE,
                                                   SHN_ABS, SHN_COMMON, SHN_UNDEF, SHT_NOBITS, SHT_RISCV_ATTRIBUTES,
                                                   STB_GLOBAL, STB_LOCAL, STB_WEAK, ObjectFile, Section,
                                                   archive_members)

# the dpu.ld this module lays programs out by; another one is linked by ld.lld
SCRIPT_SHA256 = "e509274b9d3f38d366a49ac3c054669a64c46cbaca58e819208f4764bdf27b00"
PAGE = 4096
R_RISCV_32, R_RISCV_CALL_PLT, R_RISCV_HI20, R_RISCV_LO12_I, R_RISCV_LO12_S = 1, 19, 26, 27, 28
SUPPORTED_RELOCATIONS = frozenset({R_RISCV_32, R_RISCV_CALL_PLT, R_RISCV_HI20, R_RISCV_LO12_I, R_RISCV_LO12_S})
PT_LOAD, PT_RISCV_ATTRIBUTES = 1, 0x70000003
SHT_PROGBITS, SHT_SYMTAB, SHT_STRTAB = 1, 2, 3
STACK_TABLE_ENTRIES = 24
# dpu.ld's sections in order: (name, segment, NOLOAD, kept when nothing is placed in it)
OUTPUT_SECTIONS = ((".text", "iram", False, True), (".wram.null", "wram", False, True),
                   (".rodata", "wram", False, False), (".data", "wram", False, False),
                   (".bss", "wram", False, False), (".dpu_host", "wram", False, True),
                   (".stack_table", "wram", False, True), (".stacks", "wram", True, True),
                   (".mram.noinit", "mram_noinit", True, True), (".mram", "mram", False, True),
                   (".atomic", "atomic", True, False))
SEGMENTS = ("iram", "wram", "mram_noinit", "mram", "atomic")
KEEP = (".text.__sys_crt0", ".data.__sys_keep", ".data.__sys_keep.*", ".dpu_host", ".dpu_host.*",
        ".mram.noinit", ".mram.noinit.*", ".mram", ".mram.*")
# the symbols dpu.ld defines, in the order lld adds them after the inputs' (its top-level
# assignments, the --defsym ones, the symbols its expressions read, then those its SECTIONS
# define), with the output section each belongs to (None: absolute)
SCRIPT_SYMBOLS = {"__cnm_nr_tasklets": None, "__cnm_stack_size": None, "NR_TASKLETS": None,
                  "STACK_SIZE_DEFAULT": None, "__sys_stacks_start": ".stacks", "__sys_stacks_end": ".stacks",
                  "__sys_heap_pointer_reset": ".stacks", "__sys_used_mram_end": ".mram",
                  "__cnm_text_runtime_start": ".text", "__cnm_text_runtime_end": ".text",
                  "__cnm_text_kernel_start": ".text", "__cnm_text_kernel_end": ".text",
                  "__cnm_text_softlib_start": ".text", "__cnm_text_softlib_end": ".text",
                  "__sys_host_start": ".dpu_host", "__sys_host_end": ".dpu_host",
                  "__sys_thread_stack_table": ".stack_table", "__sys_wram_end": ".stacks"}
PROVIDED = {"__cnm_wram_size": 65536}  # PROVIDE(...): defined only where an input refers to it


class Unsupported(Exception):
    """What this linker does not do (the caller links with ld.lld instead)."""


@functools.lru_cache(maxsize=65536)
def _matches(name: str, patterns: tuple[str, ...]) -> bool:
    """Whether a section name matches one of a script rule's patterns (cached: the same names
    come back in every link)."""
    return any(fnmatchcase(name, p) for p in patterns)


def _align(value: int, alignment: int) -> int:
    return -(-value // alignment) * alignment


@dataclass(frozen=True, eq=False)
class _Input:
    """An input object and what a link reads of it whatever the other inputs are (made once per
    process for the DPU runtime and compiler_rt: its 890 sections and 1,081 named locals are
    most of a link's)."""

    obj: ObjectFile
    keep: tuple[int, ...]  # its allocated sections that dpu.ld KEEPs
    attributes: frozenset[bytes]  # its .riscv.attributes sections
    absolute_locals: frozenset[int]  # positions (ObjectFile.named_locals) of the locals lld writes as absolute


def _input(obj: ObjectFile) -> _Input:
    absolute = frozenset(position for section, positions in obj.locals_by_section.items()
                         if section == SHN_ABS or (0 < section < 0xFF00 and _kept_absolute(
                             obj.sections[section].name, obj.sections[section].flags))
                         for position in positions)
    keep = tuple(sec.index for sec in obj.sections if sec.flags & SHF_ALLOC and _matches(sec.name, KEEP))
    return _Input(obj, keep, frozenset(sec.data for sec in obj.sections if sec.type == SHT_RISCV_ATTRIBUTES), absolute)


@functools.lru_cache(maxsize=4)
def _library(runtime: tuple[Path, ...], archive: Path) -> tuple[tuple[_Input, ...], _Input]:
    """The DPU runtime's objects and compiler_rt's one member, parsed once per process."""
    members = archive_members(archive.read_bytes(), str(archive))
    if len(members) != 1:
        raise Unsupported(f"{archive} has {len(members)} members")
    return (tuple(_input(ObjectFile.parse(p.name, p.read_bytes())) for p in runtime),
            _input(ObjectFile.parse(members[0][0], members[0][1])))


@functools.lru_cache(maxsize=1)
def _script_matches() -> bool:
    return hashlib.sha256(LINKER_SCRIPT.read_bytes()).hexdigest() == SCRIPT_SHA256


def link(objects: Sequence[bytes], runtime: Sequence[Path], archive: Path, nr_tasklets: int,
         stack_size: int) -> bytes:
    """The ELF ld.lld links from the kernel's `objects` (their bytes), the `runtime` objects and
    compiler_rt's `archive` with cnmtune's linker script; Unsupported where it would differ."""
    if not _script_matches():
        raise Unsupported(f"{LINKER_SCRIPT} is not the script this linker lays out")
    if not (1 <= nr_tasklets <= STACK_TABLE_ENTRIES and stack_size > 0 and stack_size % 8 == 0):
        raise Unsupported("NR_TASKLETS or STACK_SIZE_DEFAULT outside what dpu.ld asserts")
    library, softlib = _library(tuple(runtime), archive)
    inputs = [_input(ObjectFile.parse(f"object {i}", data)) for i, data in enumerate(objects)] + list(library)
    return _Link(inputs, softlib, nr_tasklets, stack_size).write()


class _Link:
    """One link's state: the files, the global symbols, the live sections and their addresses."""

    def __init__(self, inputs: list[_Input], softlib: _Input, nr_tasklets: int, stack_size: int):
        self.nr_tasklets, self.stack_size = nr_tasklets, stack_size
        self.inputs = inputs
        self.files = [i.obj for i in inputs]
        self.globals: dict[str, tuple[int, int]] = {}  # name -> (file, symbol index) of its definition
        self.order: dict[str, None] = {}  # global names in the order the inputs named them
        for f in range(len(inputs)):
            self._add(f)
        if any(name not in self.globals for f in self.files for name in f.undefined & softlib.obj.defines):
            inputs.append(softlib)
            self.files.append(softlib.obj)
            self._add(len(inputs) - 1)
        self.softlib = len(inputs) - 1 if inputs[-1] is softlib else None
        self._check()
        self.live = self._mark()
        self.allocated = [(f, sec) for f, i in sorted(self.live)  # in input order
                          if (sec := self.files[f].sections[i]).flags & SHF_ALLOC]
        self.address: dict[tuple[int, int], int] = {}
        self.placed: dict[str, list[tuple[int, Section]]] = {}
        self.symbols: dict[str, int] = {}
        self._layout()

    def _add(self, f: int) -> None:
        for k, s in self.files[f].global_symbols:
            self.order.setdefault(s.name)
            if s.shndx == SHN_UNDEF:
                continue
            if s.shndx == SHN_COMMON or s.name in SCRIPT_SYMBOLS or s.name in PROVIDED:
                raise Unsupported(f"COMMON symbol {s.name}, or one dpu.ld defines")
            old = self.globals.get(s.name)
            if old is None or (self.files[old[0]].symbols[old[1]].bind == STB_WEAK and s.bind == STB_GLOBAL):
                self.globals[s.name] = (f, k)
            elif s.bind == STB_GLOBAL and self.files[old[0]].symbols[old[1]].bind == STB_GLOBAL:
                raise Unsupported(f"{s.name} defined twice")

    def _check(self) -> None:
        first = self.files[0]
        if any(f.e_flags != first.e_flags or f.has_rel for f in self.files):
            raise Unsupported("inputs that differ in ELF flags, or REL relocations")
        self.e_flags = first.e_flags
        self.attributes = _merged_attributes(frozenset().union(*(i.attributes for i in self.inputs)))

    def target(self, f: int, k: int) -> tuple[int, int] | None:
        """The (file, symbol index) a reference resolves to (None: an undefined weak symbol)."""
        s = self.files[f].symbols[k]
        if s.bind == STB_LOCAL or s.defined:
            return f, k
        found = self.globals.get(s.name)
        if found is None and s.bind != STB_WEAK and s.name not in SCRIPT_SYMBOLS and s.name not in PROVIDED:
            raise Unsupported(f"undefined symbol {s.name}")
        return found

    def _mark(self) -> set[tuple[int, int]]:
        """--gc-sections: the sections reachable from the entry and the KEEP sections."""
        live: set[tuple[int, int]] = set()
        work = [(f, i) for f, found in enumerate(self.inputs) for i in found.keep]
        if "__bootstrap" not in self.globals:
            raise Unsupported("no entry symbol __bootstrap")
        f, k = self.globals["__bootstrap"]
        work.append((f, self.files[f].symbols[k].shndx))
        while work:
            key = work.pop()
            if key in live:
                continue
            live.add(key)
            f, i = key
            for _, kind, k, _ in self.files[f].sections[i].relocs:
                if kind not in SUPPORTED_RELOCATIONS:
                    raise Unsupported(f"relocation type {kind}")
                found = self.target(f, k)
                if found is not None and 0 < (shndx := self.files[found[0]].symbols[found[1]].shndx) < 0xFF00:
                    work.append((found[0], shndx))
        for f, i in live:
            sec = self.files[f].sections[i]
            if sec.flags & (SHF_MERGE | SHF_TLS) or sec.type not in (SHT_PROGBITS, SHT_NOBITS):
                raise Unsupported(f"section {sec.name} (flags {sec.flags:#x}, type {sec.type})")
        return live

    def _take(self, patterns: Sequence[str], softlib: bool | None = None) -> list[tuple[int, Section]]:
        """The live allocated input sections not placed yet that `patterns` match, in input order
        (softlib: only compiler_rt's, or only the others')."""
        taken = [(f, sec) for f, sec in self._pending(patterns)
                 if softlib is None or (f == self.softlib) == softlib]
        for f, sec in taken:
            self.address[(f, sec.index)] = -1
        return taken

    def _place(self, name: str, start: int, groups: Sequence[Sequence[str]], softlib=None) -> int:
        """Place the sections `groups` match at `start` (each group after the last), in `name`."""
        dot = start
        for patterns in groups:
            for f, sec in self._take(patterns, softlib):
                dot = _align(dot, sec.align)
                self.address[(f, sec.index)] = dot
                self.placed.setdefault(name, []).append((f, sec))
                dot += sec.size
        return dot

    def _section(self, name: str, dot: int, groups: Sequence[Sequence[str]], end_align: int = 1) -> tuple[int, int]:
        """An output section at ALIGN(8), aligned to its inputs too: (start, end)."""
        start = _align(dot, max([8, *(sec.align for _, sec in self._pending([p for g in groups for p in g]))]))
        return start, _align(self._place(name, start, groups), end_align)

    def _layout(self) -> None:
        """Addresses of every live section and of the script's symbols, as dpu.ld lays them out."""
        s = self.symbols
        s["__cnm_nr_tasklets"] = s["NR_TASKLETS"] = self.nr_tasklets
        s["__cnm_stack_size"] = s["STACK_SIZE_DEFAULT"] = self.stack_size
        s["__cnm_text_runtime_start"] = dot = 0x80000000
        dot = self._place(".text", dot, [[".text.__sys_crt0"], [".text.__sys", ".text.__sys.*", ".text.__sys_*"]])
        s["__cnm_text_runtime_end"] = s["__cnm_text_kernel_start"] = dot
        dot = self._place(".text", dot, [[".text", ".text.*"]], softlib=False)
        s["__cnm_text_kernel_end"] = s["__cnm_text_softlib_start"] = dot
        s["__cnm_text_softlib_end"] = self._place(".text", dot, [[".text", ".text.*"]], softlib=True)
        self.extent = {".text": (0x80000000, s["__cnm_text_softlib_end"]), ".wram.null": (0, 8)}
        dot = 8
        for name, groups in ((".rodata", [[".srodata", ".srodata.*", ".rodata", ".rodata.*"]]),
                             (".data", [[".data.__sys_lower", ".data.__sys_lower.*"],
                                        [".data.__sys_keep", ".data.__sys_keep.*"],
                                        [".sdata", ".sdata.*", ".data", ".data.*"]]),
                             (".bss", [[".sbss", ".sbss.*", ".bss", ".bss.*"]])):
            start, end = self._section(name, dot, groups)
            if name in self.placed:
                self.extent[name], dot = (start, end), end
        start, dot = self._section(".dpu_host", dot, [[".dpu_host", ".dpu_host.*"]], end_align=8)
        self.extent[".dpu_host"] = (start, dot)
        s["__sys_host_start"], s["__sys_host_end"] = start, dot
        s["__sys_thread_stack_table"] = start = _align(dot, 8)
        self.extent[".stack_table"] = (start, start + 4 * STACK_TABLE_ENTRIES)
        s["__sys_stacks_start"] = start = _align(start + 4 * STACK_TABLE_ENTRIES, 16)
        s["__sys_stacks_end"] = dot = start + self.nr_tasklets * self.stack_size
        self.extent[".stacks"] = (start, dot)
        s["__sys_heap_pointer_reset"] = s["__sys_wram_end"] = _align(dot, 8)
        end = _align(self._place(".mram.noinit", 0x08000000, [[".mram.noinit", ".mram.noinit.*"]]), 8)
        self.extent[".mram.noinit"] = (0x08000000, end)
        self.extent[".mram"] = self._section(".mram", end, [[".mram", ".mram.*"]], end_align=8)
        s["__sys_used_mram_end"] = self.extent[".mram"][1]
        end = self._place(".atomic", 0xF0000000, [[".atomic", ".atomic.*"]])
        if ".atomic" in self.placed:
            self.extent[".atomic"] = (0xF0000000, end)
        orphans = [sec.name for f, sec in self._pending(["*"])]
        if orphans:
            raise Unsupported(f"sections dpu.ld does not place: {', '.join(orphans)}")

    def _pending(self, patterns: Sequence[str]) -> list[tuple[int, Section]]:
        """The live allocated sections not placed yet that `patterns` match, in input order."""
        return [(f, sec) for f, sec in self.allocated
                if (f, sec.index) not in self.address and _matches(sec.name, tuple(patterns))]

    def value(self, f: int, k: int) -> int:
        """The linked value of symbol `k` of file `f` (0: an undefined weak one)."""
        found = self.target(f, k)
        if found is None:
            name = self.files[f].symbols[k].name
            return self.symbols.get(name, PROVIDED.get(name, 0))
        sym = self.files[found[0]].symbols[found[1]]
        if sym.shndx == SHN_ABS:
            return sym.value
        return self.address[(found[0], sym.shndx)] + sym.value

    def contents(self, f: int, sec: Section) -> bytes:
        """A placed section's bytes with its relocations applied."""
        out = bytearray(sec.data)
        here = self.address[(f, sec.index)]
        for offset, kind, k, addend in sec.relocs:
            v = (self.value(f, k) + addend) & 0xFFFFFFFF
            word, = struct.unpack_from("<I", out, offset)
            if kind == R_RISCV_32:
                word = v
            elif kind == R_RISCV_HI20:
                word = (word & 0xFFF) | (((v + 0x800) >> 12) & 0xFFFFF) << 12
            elif kind == R_RISCV_LO12_I:
                word = (word & 0xFFFFF) | (v & 0xFFF) << 20
            elif kind == R_RISCV_LO12_S:
                word = (word & 0x01FFF07F) | ((v >> 5) & 0x7F) << 25 | (v & 0x1F) << 7
            else:  # R_RISCV_CALL_PLT: auipc (here) + jalr (next word), pc-relative
                d = (v - here - offset) & 0xFFFFFFFF
                jalr, = struct.unpack_from("<I", out, offset + 4)
                struct.pack_into("<I", out, offset + 4, (jalr & 0xFFFFF) | (d & 0xFFF) << 20)
                word = (word & 0xFFF) | (((d + 0x800) >> 12) & 0xFFFFF) << 12
            struct.pack_into("<I", out, offset, word)
        return bytes(out)

    def _outputs(self) -> list[dict]:
        """The output sections lld keeps, in dpu.ld's order, with their headers' fields and bytes."""
        out, previous = [], 0
        for name, segment, noload, always in OUTPUT_SECTIONS:
            inputs = self.placed.get(name, [])
            if not (always or inputs):
                continue
            start, end = self.extent[name]
            if inputs:  # an output section takes its inputs' flags; one with none, the previous one's
                flags = functools.reduce(lambda a, b: a | b, (sec.flags for _, sec in inputs)) \
                    & (SHF_ALLOC | SHF_WRITE | SHF_EXECINSTR)
                align = max(sec.align for _, sec in inputs)
                nobits = noload or all(sec.type == SHT_NOBITS for _, sec in inputs)
            else:
                flags, align, nobits = SHF_ALLOC | (previous & SHF_WRITE), 1, noload
            previous = flags
            body = b""
            if not nobits:
                image = bytearray(end - start)
                for f, sec in inputs:
                    if sec.type != SHT_NOBITS:
                        at = self.address[(f, sec.index)] - start
                        image[at:at + sec.size] = self.contents(f, sec)
                if name == ".stack_table":  # dpu.ld's LONGs: the top of each tasklet's stack, 0 past NR_TASKLETS
                    stacks, size = self.symbols["__sys_stacks_start"], self.stack_size
                    image = bytearray(struct.pack(f"<{STACK_TABLE_ENTRIES}I", *(
                        stacks + (t + 1) * size if t < self.nr_tasklets else 0 for t in range(STACK_TABLE_ENTRIES))))
                body = bytes(image)
            out.append({"name": name, "type": SHT_NOBITS if nobits else SHT_PROGBITS, "flags": flags,
                        "addr": start, "size": end - start, "align": align, "segment": segment, "body": body})
        return out

    def _symbol_table(self, index: dict[str, int]) -> tuple[bytes, bytes, int]:
        """(.symtab, .strtab, the number of local entries) as lld writes them: each file's locals,
        then the globals in the order lld saw them, those hidden made local and moved before the
        others; the strings in the order before that move."""
        where = {(f, sec.index): index[name] for name, placed in self.placed.items() for f, sec in placed}
        strings = bytearray(b"\0")

        def located(f: int, s) -> tuple[int, int] | None:
            """(value, output section index) of a symbol absolute or in a placed section, else None."""
            if s.shndx == SHN_ABS:
                return s.value, SHN_ABS
            if (f, s.shndx) in where:
                return self.address[(f, s.shndx)] + s.value, where[(f, s.shndx)]
            return None

        def string(name: str) -> int:
            strings.extend(name.encode() + b"\0")
            return len(strings) - len(name) - 1

        entries = [(0, 0, 0, 0, 0, 0)]
        placed_in: list[list[int]] = [[] for _ in self.files]
        for f, section in where:
            placed_in[f].append(section)
        for f, (obj, found) in enumerate(zip(self.files, self.inputs)):
            kept = sorted(found.absolute_locals.union(*(obj.locals_by_section.get(i, ()) for i in placed_in[f])))
            for position in kept:
                s = obj.named_locals[position]
                value, shndx = located(f, s) or (0, SHN_ABS)  # not located: a section lld keeps as absolute 0
                entries.append((string(s.name), value, s.size, s.info, s.other, shndx))
        hidden, public = [], []
        names = [*self.order, *(n for n in SCRIPT_SYMBOLS if n not in self.order)]
        for name in names:
            if name in SCRIPT_SYMBOLS or (name in PROVIDED and name not in self.globals):
                section = SCRIPT_SYMBOLS.get(name)
                value = self.symbols[name] if name in SCRIPT_SYMBOLS else PROVIDED[name]
                public.append((string(name), value, 0, STB_GLOBAL << 4, 0, index[section] if section else SHN_ABS))
                continue
            if name not in self.globals:
                raise Unsupported(f"{name} is undefined")
            f, k = self.globals[name]
            s = self.files[f].symbols[k]
            if (found := located(f, s)) is None:
                continue  # its section was collected
            value, shndx = found
            if s.hidden:
                hidden.append((string(name), value, s.size, STB_LOCAL << 4 | s.type, s.other, shndx))
            else:
                public.append((string(name), value, s.size, s.info, s.other, shndx))
        entries += hidden
        locals_ = len(entries)
        entries += public
        return b"".join(struct.pack("<IIIBBH", *e) for e in entries), bytes(strings), locals_

    def write(self) -> bytes:
        """The linked ELF file."""
        sections = self._outputs()
        index = {s["name"]: i for i, s in enumerate(sections, 1)}
        members = {g: [s for s in sections if s["segment"] == g] for g in SEGMENTS}
        loads = [g for g in SEGMENTS if members[g] and members[g][-1]["addr"] + members[g][-1]["size"]
                 != members[g][0]["addr"]]  # lld drops an empty PT_LOAD
        offset = 52 + 32 * (len(loads) + 1)
        for s in sections:
            first = members[s["segment"]][0] if s["segment"] in loads else None
            if first is s:  # congruent with its address modulo the page
                offset += (s["addr"] - offset) % PAGE
            elif s["type"] != SHT_NOBITS:
                offset = first["offset"] + s["addr"] - first["addr"] if first else _align(offset, s["align"])
            s["offset"] = offset
            offset += 0 if s["type"] == SHT_NOBITS else s["size"]
        symtab, strtab, locals_ = self._symbol_table(index)
        extra = [(".riscv.attributes", SHT_RISCV_ATTRIBUTES, self.attributes, 1, 0, 0, 0),
                 (".symtab", SHT_SYMTAB, symtab, 4, len(sections) + 4, locals_, 16),
                 (".shstrtab", SHT_STRTAB, None, 1, 0, 0, 0), (".strtab", SHT_STRTAB, strtab, 1, 0, 0, 0)]
        for name, kind, body, align, link, info, entsize in extra:
            sections.append({"name": name, "type": kind, "flags": 0, "addr": 0, "align": align, "body": body,
                             "link": link, "info": info, "entsize": entsize})
        names = bytearray(b"\0")
        for s in sections:
            s["name_at"] = len(names)
            names.extend(s["name"].encode() + b"\0")
        for s in sections[-len(extra):]:
            s["body"] = bytes(names) if s["body"] is None else s["body"]
            s["offset"] = offset = _align(offset, s["align"])
            s["size"] = len(s["body"])
            offset += s["size"]
        return self._file(sections, members, loads, _align(offset, 4))

    def _file(self, sections: list[dict], members: dict[str, list[dict]], loads: list[str], headers_at: int) -> bytes:
        """The ELF header, program headers, section bytes and section headers (at `headers_at`)."""
        programs = []
        for g in loads:
            first, last = members[g][0], members[g][-1]
            flags = 4 | (2 if any(s["flags"] & SHF_WRITE for s in members[g]) else 0) \
                | (1 if any(s["flags"] & SHF_EXECINSTR for s in members[g]) else 0)
            programs.append((PT_LOAD, first["offset"], first["addr"], first["addr"],
                             last["offset"] - first["offset"] + (0 if last["type"] == SHT_NOBITS else last["size"]),
                             last["addr"] + last["size"] - first["addr"], flags, PAGE))
        attributes = next(s for s in sections if s["type"] == SHT_RISCV_ATTRIBUTES)
        programs.append((PT_RISCV_ATTRIBUTES, attributes["offset"], 0, 0, attributes["size"], attributes["size"], 4, 1))
        f, k = self.globals["__bootstrap"]
        image = bytearray(headers_at + 40 * (len(sections) + 1))
        image[:52] = b"\x7fELF\x01\x01\x01" + bytes(9) + struct.pack(
            "<HHIIIIIHHHHHH", 2, 243, 1, self.value(f, k), 52, headers_at, self.e_flags, 52, 32, len(programs), 40,
            len(sections) + 1, len(sections) - 1)
        for i, program in enumerate(programs):
            struct.pack_into("<8I", image, 52 + 32 * i, *program)
        for i, s in enumerate(sections, 1):
            if s["type"] != SHT_NOBITS:
                image[s["offset"]:s["offset"] + len(s["body"])] = s["body"]
            struct.pack_into("<10I", image, headers_at + 40 * i, s["name_at"], s["type"], s["flags"], s["addr"],
                             s["offset"], s["size"], s.get("link", 0), s.get("info", 0), s["align"], s.get("entsize", 0))
        return bytes(image)


@functools.lru_cache(maxsize=4096)
def _kept_absolute(name: str, flags: int) -> bool:
    """Whether lld keeps a local symbol of an input section (its name and flags) it does not
    output, as absolute 0: stripped debug sections, the RISC-V attributes and the discarded
    .eh_frame do; a discarded mergeable section (.comment) and a collected one do not."""
    return name.startswith(".debug") or name == ".eh_frame" or not flags & (SHF_ALLOC | SHF_MERGE)


def _attribute_tags(blob: bytes) -> dict[int, int | bytes]:
    """The tags of a .riscv.attributes section with one 'riscv' file subsection (odd tags are
    strings, even ones ULEB128 numbers, as the psABI numbers them)."""
    if blob[:1] != b"A" or blob[5:11] != b"riscv\0" or blob[11] != 1:
        raise Unsupported("RISC-V attributes other than one 'riscv' file subsection")
    tags, at, end = {}, 16, len(blob)

    def uleb() -> int:
        nonlocal at
        value = shift = 0
        while True:
            byte = blob[at]
            at += 1
            value |= (byte & 0x7F) << shift
            shift += 7
            if byte < 0x80:
                return value

    while at < end:
        tag = uleb()
        if tag % 2:
            stop = blob.index(b"\0", at)
            tags[tag], at = blob[at:stop], stop + 1
        else:
            tags[tag] = uleb()
    return tags


def _merged_attributes(blobs: set[bytes]) -> bytes:
    """The inputs' RISC-V attributes merged as lld merges these: the union of their tags, which
    must agree where they overlap (crt0.S has no stack alignment tag), written as the input that
    has all of them (Unsupported where none does)."""
    parsed = {blob: _attribute_tags(blob) for blob in blobs}
    union: dict[int, int | bytes] = {}
    for tags in parsed.values():
        for tag, value in tags.items():
            if union.setdefault(tag, value) != value:
                raise Unsupported(f"inputs disagree on RISC-V attribute {tag}")
    found = [blob for blob, tags in parsed.items() if tags == union]
    if not found:
        raise Unsupported("no input carries every RISC-V attribute of the link")
    return found[0]
