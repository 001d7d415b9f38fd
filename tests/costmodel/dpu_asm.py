"""A tiny UPMEM DPU assembler and ELF writer for hand-built test binaries.

Instructions are encoded straight from the shipped encoding table (one form by name, operands
placed by the table's field slices), independently of the decoder's matching. The ELF is what
the SDK linker writes, reduced to what the decoder reads: ELF32 LE, ET_EXEC, e_machine 245,
.text at 0x80000000 in 8-byte slots, a few WRAM sections, .symtab with function symbols,
labels and absolute symbols.
"""

from __future__ import annotations

import json
import struct
from dataclasses import dataclass, field

from cnmtune.costmodel.analysis.dpu_isa import TABLE_PATH

IRAM = 0x80000000
FORMS = {e["name"]: e for e in json.loads(TABLE_PATH.read_text())}
REG = {**{f"r{i}": i for i in range(24)}, **{f"d{i}": i for i in range(0, 24, 2)},
       "zero": 24, "one": 25, "lneg": 26, "mneg": 27, "id": 28, "id2": 29, "id4": 30, "id8": 31}


def encode(form: str, **operands: int | str) -> int:
    """The 48-bit word of ``form`` with ``operands`` (registers by name, numbers as ints)."""
    entry = FORMS[form]
    assert set(operands) == set(entry["args"]), (form, entry["args"])
    word = entry["base"]
    for name, offset, mask, position in entry["fields"]:
        value = operands[name]
        value = REG[value] if isinstance(value, str) else value
        word |= ((value >> offset) & mask) << position
    return word


@dataclass
class Asm:
    """A program: functions (FUNC symbols), labels, marks, and instructions by form name.

    ``pc`` and ``off`` operands may name a function or a label; they become its slot index.
    Labels become NOTYPE symbols; marks only name a slot for the tests.
    """

    items: list[tuple[str, dict]] = field(default_factory=list)
    functions: list[tuple[str, int]] = field(default_factory=list)
    labels: dict[str, int] = field(default_factory=dict)
    marks: dict[str, int] = field(default_factory=dict)

    @classmethod
    def calling_main(cls) -> Asm:
        """A program whose ``__bootstrap`` calls ``main`` and stops; the caller writes ``main``."""
        a = cls()
        a.func("__bootstrap")
        a("CALLri", rc="r23", off="main")
        a.label("__sys_end")
        a("STOPci", cc=1, pc="__sys_end")
        return a

    def func(self, name: str) -> None:
        self.functions.append((name, len(self.items)))

    def label(self, name: str) -> None:
        self.labels[name] = len(self.items)

    def mark(self, name: str) -> None:
        self.marks[name] = len(self.items)

    def __call__(self, form: str, **operands: int | str) -> None:
        self.items.append((form, operands))

    def index(self, name: str) -> int:
        """The slot of a function, label or mark."""
        where = {**dict(self.functions), **self.labels, **self.marks}
        return where[name]

    def encode(self, form: str, **operands: int | str) -> int:
        """One instruction with its label operands resolved."""
        return encode(form, **{k: self.index(v) if k in ("pc", "off") and isinstance(v, str)
                               else v for k, v in operands.items()})

    def words(self) -> list[int]:
        return [self.encode(form, **operands) for form, operands in self.items]

    def layout(self) -> tuple[list[tuple[str, int, int]], list[tuple[str, int]]]:
        """FUNC symbols as (name, first slot, slots), each up to the next; NOTYPE labels."""
        bounds = [first for _, first in self.functions] + [len(self.items)]
        funcs = [(name, first, bounds[k + 1] - first)
                 for k, (name, first) in enumerate(self.functions)]
        return funcs, list(self.labels.items())

    def elf(self, **options) -> bytes:
        return write_dpu_elf(self.words(), *self.layout(), **options)


def write_dpu_elf(words: list[int], functions: list[tuple[str, int, int]],
                  labels: list[tuple[str, int]] = (), nr_tasklets: int = 2,
                  stack_size: int = 1024, host_bytes: int = 8, machine: int = 245) -> bytes:
    """An ELF32 LE DPU executable: ``words`` in .text at 0x80000000 (8-byte slots),
    ``functions`` as (name, first slot, slots) FUNC symbols, ``labels`` as NOTYPE symbols."""
    text = b"".join(struct.pack("<Q", w) for w in words)
    data = bytes(16)
    host = bytes(host_bytes)
    stacks = nr_tasklets * stack_size
    names = [b"", b".text", b".data", b".data.__sys_host", b".data.stacks", b".symtab",
             b".strtab", b".shstrtab"]
    shstrtab = b"\0".join(names) + b"\0"
    strtab = bytearray(b"\0")
    symtab = bytearray(bytes(16))

    def symbol(name: str, value: int, size: int, info: int, shndx: int) -> None:
        offset = len(strtab)
        strtab.extend(name.encode() + b"\0")
        symtab.extend(struct.pack("<IIIBBH", offset, value, size, info, 0, shndx))

    for name, first, count in functions:
        symbol(name, IRAM + 8 * first, 8 * count, 0x12, 1)
    for name, index in labels:
        symbol(name, IRAM + 8 * index, 0, 0x10, 1)
    heap = 16 + host_bytes + stacks
    for name, value in (("NR_TASKLETS", nr_tasklets), ("STACK_SIZE_TASKLET_0", stack_size),
                        ("__sys_heap_pointer_reset", heap),
                        ("__sys_used_mram_end", 0x08000000)):
        symbol(name, value, 0, 0x10, 0xFFF1)
    # (name index, type, flags, address, content, link, info, align, entsize)
    sections = [(1, 1, 0x6, IRAM, text, 0, 0, 8, 0),
                (7, 1, 0x3, 0, data, 0, 0, 8, 0),
                (13, 1, 0x3, 16, host, 0, 0, 8, 0),
                (30, 8, 0x3, 16 + host_bytes, stacks, 0, 0, 8, 0),
                (43, 2, 0, 0, bytes(symtab), 6, 1, 4, 16),
                (51, 3, 0, 0, bytes(strtab), 0, 0, 1, 0),
                (59, 3, 0, 0, shstrtab, 0, 0, 1, 0)]
    assert [shstrtab.index(n + b"\0") for n in names[1:]] == [s[0] for s in sections]
    body = bytearray(bytes(52))
    headers = bytearray(bytes(40))
    for name, kind, flags, address, content, link, info, align, entsize in sections:
        while len(body) % 8:
            body.append(0)
        offset = len(body)
        if kind == 8:
            size = content
        else:
            size = len(content)
            body.extend(content)
        headers.extend(struct.pack("<10I", name, kind, flags, address, offset, size, link,
                                   info, align, entsize))
    while len(body) % 4:
        body.append(0)
    shoff = len(body)
    ident = b"\x7fELF" + bytes([1, 1, 1, 0]) + bytes(8)
    body[:52] = struct.pack("<16sHHIIIIIHHHHHH", ident, 2, machine, 1, IRAM, 0, shoff,
                            0x02800000, 52, 32, 0, 40, len(sections) + 1, len(sections))
    return bytes(body + headers)
