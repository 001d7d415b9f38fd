"""A tiny rv32i assembler for hand-built test programs (labels resolved in a second pass)."""

from __future__ import annotations

import struct
from typing import Callable

from cnmtune.costmodel.analysis.frontend import DecodedProgram, rv32_frontend
from cnmtune.costmodel.analysis.rv32_program import Program, decode_rv32
from cnmtune.costmodel.analysis.elf import ElfImage, FunctionSymbol

BASE = 0x80000000
REG = {"zero": 0, "ra": 1, "sp": 2, "s0": 8, "a0": 10, "a1": 11, "a2": 12, "a3": 13, "a4": 14,
       "a5": 15, "a6": 16, "a7": 17, "t0": 5, "t1": 6, "t2": 7}


def _i(op: int, f3: int, rd: int, rs1: int, imm: int) -> int:
    return (imm & 0xFFF) << 20 | rs1 << 15 | f3 << 12 | rd << 7 | op


def _s(f3: int, rs1: int, rs2: int, imm: int) -> int:
    imm &= 0xFFF
    return (imm >> 5) << 25 | rs2 << 20 | rs1 << 15 | f3 << 12 | (imm & 0x1F) << 7 | 0x23


def _b(f3: int, rs1: int, rs2: int, off: int) -> int:
    imm = off & 0x1FFF
    return ((imm >> 12) & 1) << 31 | ((imm >> 5) & 0x3F) << 25 | rs2 << 20 | rs1 << 15 \
        | f3 << 12 | ((imm >> 1) & 0xF) << 8 | ((imm >> 11) & 1) << 7 | 0x63


def _j(rd: int, off: int) -> int:
    imm = off & 0x1FFFFF
    return ((imm >> 20) & 1) << 31 | ((imm >> 1) & 0x3FF) << 21 | ((imm >> 11) & 1) << 20 \
        | ((imm >> 12) & 0xFF) << 12 | rd << 7 | 0x6F


BRANCH_F3 = {"beq": 0, "bne": 1, "blt": 4, "bge": 5, "bltu": 6, "bgeu": 7}


def assemble(lines: list) -> list[int]:
    """Words for ``lines``: "label:" strings and tuples like ("beq", "a0", "zero", "loop").

    Branch and jal targets are labels (or absolute instruction indices); ("call", index)
    is auipc ra + jalr ra to an absolute instruction index.
    """
    labels, items = {}, []
    for line in lines:
        if isinstance(line, str):
            labels[line.rstrip(":")] = len(items)
        elif line[0] == "call":
            items.extend([line, ("call-lo", *line[1:])])
        else:
            items.append(line)

    def target(ref, here: int) -> int:
        return 4 * ((labels[ref] if isinstance(ref, str) else ref) - here)

    encoders: dict[str, Callable] = {
        "addi": lambda i, rd, rs, imm: _i(0x13, 0, REG[rd], REG[rs], imm),
        "add": lambda i, rd, rs1, rs2: REG[rs2] << 20 | REG[rs1] << 15 | REG[rd] << 7 | 0x33,
        "sub": lambda i, rd, rs1, rs2: 0x20 << 25 | REG[rs2] << 20 | REG[rs1] << 15 | REG[rd] << 7 | 0x33,
        "slt": lambda i, rd, rs1, rs2: REG[rs2] << 20 | REG[rs1] << 15 | 2 << 12 | REG[rd] << 7 | 0x33,
        "sltu": lambda i, rd, rs1, rs2: REG[rs2] << 20 | REG[rs1] << 15 | 3 << 12 | REG[rd] << 7 | 0x33,
        "slli": lambda i, rd, rs, shamt: _i(0x13, 1, REG[rd], REG[rs], shamt & 0x1F),
        "srli": lambda i, rd, rs, shamt: _i(0x13, 5, REG[rd], REG[rs], shamt & 0x1F),
        "or": lambda i, rd, rs1, rs2: REG[rs2] << 20 | REG[rs1] << 15 | 6 << 12 | REG[rd] << 7 | 0x33,
        "lui": lambda i, rd, imm: (imm & 0xFFFFF) << 12 | REG[rd] << 7 | 0x37,
        "lw": lambda i, rd, rs, imm: _i(0x03, 2, REG[rd], REG[rs], imm),
        "lbu": lambda i, rd, rs, imm: _i(0x03, 4, REG[rd], REG[rs], imm),
        "sw": lambda i, rs2, rs, imm: _s(2, REG[rs], REG[rs2], imm),
        "jal": lambda i, rd, ref: _j(REG[rd], target(ref, i)),
        "jalr": lambda i, rd, rs, imm: _i(0x67, 0, REG[rd], REG[rs], imm),
        "ret": lambda i: _i(0x67, 0, 0, 1, 0),
        "ecall": lambda i: 0x73,
        "call": lambda i, ref: 0x00000097,  # auipc ra, 0 (the offset fits jalr's 12 bits)
        "call-lo": lambda i, ref: _i(0x67, 0, 1, 1, target(ref, i - 1)),
        **{m: (lambda f3: lambda i, a, b, ref: _b(f3, REG[a], REG[b], target(ref, i)))(f3)
           for m, f3 in BRANCH_F3.items()},
    }
    return [encoders[item[0]](i, *item[1:]) for i, item in enumerate(items)]


def program(words: list[int], functions: list[tuple[str, int, int]] | None = None,
            symbols: dict[str, int] | None = None,
            data: dict[int, list[int]] | None = None) -> Program:
    """Disassemble ``words`` at 0x80000000 with functions (name, first index, count) and
    read-only data memory (address -> words)."""
    return decode_rv32(image(words, functions, symbols, data))


def decoded(words: list[int], functions: list[tuple[str, int, int]] | None = None) -> DecodedProgram:
    """``words`` through the rv32 front-end, as the feature extractor reads them."""
    return rv32_frontend(image(words, functions))


def image(words: list[int], functions: list[tuple[str, int, int]] | None = None,
          symbols: dict[str, int] | None = None, data: dict[int, list[int]] | None = None) -> ElfImage:
    """An ELF image of ``words`` at 0x80000000 (see ``program``)."""
    text = struct.pack(f"<{len(words)}I", *words)
    spans = functions or [("f", 0, len(words))]
    return ElfImage(
        name="synthetic", data=text, machine="riscv32", text_address=BASE, text=text,
        sections=(), labels=(), symbols=dict(symbols or {}), absolute=frozenset(),
        constant_data=tuple((address, struct.pack(f"<{len(w)}I", *w))
                            for address, w in (data or {}).items()),
        functions=tuple(FunctionSymbol(n, BASE + 4 * first, 4 * count)
                        for n, first, count in spans))
