"""A tiny two-pass rv32i assembler for interpreter tests: text lines in, little-endian words out.

Syntax: one instruction or "label:" per line, '#' comments, registers by x-number or ABI name,
loads/stores as "lw a0, 8(sp)", branch/jal targets as labels or signed byte offsets.
Pseudo-ops: li (lui+addi, always two words), mv, j, call (jal ra), ret, nop, .word.
"""

from __future__ import annotations

import struct

ABI = ["zero", "ra", "sp", "gp", "tp", "t0", "t1", "t2", "s0", "s1", "a0", "a1", "a2", "a3", "a4",
       "a5", "a6", "a7", "s2", "s3", "s4", "s5", "s6", "s7", "s8", "s9", "s10", "s11", "t3", "t4",
       "t5", "t6"]
REG = {**{name: i for i, name in enumerate(ABI)}, **{f"x{i}": i for i in range(32)}, "fp": 8}

R_OPS = {"add": (0, 0), "sub": (0, 0x20), "sll": (1, 0), "slt": (2, 0), "sltu": (3, 0),
         "xor": (4, 0), "srl": (5, 0), "sra": (5, 0x20), "or": (6, 0), "and": (7, 0),
         "mul": (0, 1)}  # mul: an M-extension word, illegal on the proxy
I_OPS = {"addi": 0, "slti": 2, "sltiu": 3, "xori": 4, "ori": 6, "andi": 7}
SHIFT_OPS = {"slli": (1, 0), "srli": (5, 0), "srai": (5, 0x20)}
LOADS = {"lb": 0, "lh": 1, "lw": 2, "lbu": 4, "lhu": 5}
STORES = {"sb": 0, "sh": 1, "sw": 2}
BRANCHES = {"beq": 0, "bne": 1, "blt": 4, "bge": 5, "bltu": 6, "bgeu": 7}


def _i(op, f3, rd, rs1, imm):
    return (imm & 0xFFF) << 20 | rs1 << 15 | f3 << 12 | rd << 7 | op


def _r(f3, f7, rd, rs1, rs2):
    return f7 << 25 | rs2 << 20 | rs1 << 15 | f3 << 12 | rd << 7 | 0x33


def _s(f3, rs1, rs2, imm):
    imm &= 0xFFF
    return (imm >> 5) << 25 | rs2 << 20 | rs1 << 15 | f3 << 12 | (imm & 0x1F) << 7 | 0x23


def _b(f3, rs1, rs2, off):
    v = off & 0x1FFF
    return ((v >> 12) & 1) << 31 | ((v >> 5) & 0x3F) << 25 | rs2 << 20 | rs1 << 15 | f3 << 12 \
        | ((v >> 1) & 0xF) << 8 | ((v >> 11) & 1) << 7 | 0x63


def _j(rd, off):
    v = off & 0x1FFFFF
    return ((v >> 20) & 1) << 31 | ((v >> 1) & 0x3FF) << 21 | ((v >> 11) & 1) << 20 \
        | ((v >> 12) & 0xFF) << 12 | rd << 7 | 0x6F


def _split(line):
    line = line.split("#")[0].strip()
    if not line:
        return None
    mnemonic, _, rest = line.partition(" ")
    return mnemonic, [arg.strip() for arg in rest.split(",")] if rest.strip() else []


def _size(mnemonic):
    return 2 if mnemonic == "li" else 1


def assemble(source: str) -> list[int]:
    """Assemble ``source`` (see module doc) into a list of 32-bit words."""
    labels, items, count = {}, [], 0
    for line in source.splitlines():
        parsed = _split(line)
        if parsed is None:
            continue
        if parsed[0].endswith(":") and not parsed[1]:
            labels[parsed[0][:-1]] = count
            continue
        items.append((count, *parsed))
        count += _size(parsed[0])
    words = []
    for index, mnemonic, args in items:
        words.extend(_encode(mnemonic, args, index, labels))
    return words


def _imm(text):
    return int(text, 0)


def _mem(text):
    offset, _, reg = text.partition("(")
    return _imm(offset or "0"), REG[reg.rstrip(")").strip()]


def _encode(m, args, index, labels):
    def offset(ref):
        return 4 * (labels[ref] - index) if ref in labels else _imm(ref)

    reg = [REG.get(a) for a in args]
    if m in R_OPS:
        return [_r(*R_OPS[m], *reg)]
    if m in I_OPS:
        return [_i(0x13, I_OPS[m], reg[0], reg[1], _imm(args[2]))]
    if m in SHIFT_OPS:
        f3, f7 = SHIFT_OPS[m]
        return [_i(0x13, f3, reg[0], reg[1], f7 << 5 | (_imm(args[2]) & 0x3F))]
    if m in LOADS:
        return [_i(0x03, LOADS[m], reg[0], *reversed(_mem(args[1])))]
    if m in STORES:
        imm, base = _mem(args[1])
        return [_s(STORES[m], base, reg[0], imm)]
    if m in BRANCHES:
        return [_b(BRANCHES[m], reg[0], reg[1], offset(args[2]))]
    if m in ("lui", "auipc"):
        return [(_imm(args[1]) & 0xFFFFF) << 12 | reg[0] << 7 | (0x37 if m == "lui" else 0x17)]
    if m == "jal":
        return [_j(reg[0], offset(args[1]))] if len(args) == 2 else [_j(1, offset(args[0]))]
    if m == "jalr":
        imm, base = _mem(args[1]) if "(" in args[1] else (_imm(args[2]), reg[1])
        return [_i(0x67, 0, reg[0], base, imm)]
    simple = {"ecall": 0x73, "ebreak": 0x00100073, "fence": 0x0FF0000F, "fence.i": 0x100F,
              "nop": 0x13, "ret": _i(0x67, 0, 0, 1, 0)}
    if m in simple:
        return [simple[m]]
    if m == "li":  # always lui + addi, so sizes are known in pass one
        value = _imm(args[1]) & 0xFFFFFFFF
        low = value & 0xFFF
        low -= 0x1000 if low & 0x800 else 0
        upper = ((value - low) >> 12) & 0xFFFFF
        return [upper << 12 | reg[0] << 7 | 0x37, _i(0x13, 0, reg[0], reg[0], low)]
    if m == "mv":
        return [_i(0x13, 0, reg[0], reg[1], 0)]
    if m == "j":
        return [_j(0, offset(args[0]))]
    if m == "call":
        return [_j(1, offset(args[0]))]
    if m == ".word":
        return [_imm(args[0]) & 0xFFFFFFFF]
    raise ValueError(f"unknown mnemonic {m!r}")


def to_bytes(words: list[int]) -> bytes:
    """Little-endian bytes of ``words``."""
    return struct.pack(f"<{len(words)}I", *words)
