"""The rv32 proxy's instructions as the trip-count analysis reads them (``LoopFacts``).

``addi r, r, c`` is a self-add, ``addi rd, rs, c`` an add of a constant to another register;
``addi r, x0, c`` and ``lui r, c`` set constants; loads and stores give their base register,
width (lb/lbu/sb 1, lh/lhu/sh 2, lw/sw 4) and offset; a conditional branch compares rs1 with
rs2, x0 read as the immediate 0. Writes to x0 are no writes. Words of the stack frame (``sp`` or
``s0`` plus an offset) count as registers of their own (``_stack_slots``).
"""

from __future__ import annotations

import numpy as np

from cnmtune.costmodel.analysis.rv32_isa import (OP_AUIPC, OP_BRANCH, OP_IMM, OP_JAL, OP_JALR, OP_LOAD, OP_LUI,
                                                 OP_REG, OP_STORE, OP_SYSTEM)
from cnmtune.costmodel.analysis.rv32_program import Program
from cnmtune.costmodel.analysis.trips import LoopFacts

_WRITES_RD = (OP_LUI, OP_AUIPC, OP_JAL, OP_JALR, OP_LOAD, OP_IMM, OP_REG, OP_SYSTEM)
_LOAD_WIDTH = np.array([1, 2, 4, 0, 1, 2, 0, 0])  # by funct3: lb, lh, lw, -, lbu, lhu
_STORE_WIDTH = np.array([1, 2, 4, 0, 0, 0, 0, 0])  # sb, sh, sw
_SP, _FP = 2, 8
#: Register numbers of stack slots start here (above every ISA register).
SLOT_BASE = 64


def rv32_loop_facts(program: Program) -> LoopFacts:
    """The loop facts of every instruction word of ``program``."""
    w = program.words.astype(np.int64)
    signed = program.words.view(np.int32).astype(np.int64)
    opcode, rd, rs1, rs2, funct3 = w & 0x7F, (w >> 7) & 0x1F, (w >> 15) & 0x1F, (w >> 20) & 0x1F, (w >> 12) & 7
    imm_i = signed >> 20
    imm_s = ((signed >> 25) << 5) | ((w >> 7) & 0x1F)
    written = np.where(np.isin(opcode, _WRITES_RD), rd, 0)
    addi = (opcode == OP_IMM) & (funct3 == 0) & (rd != 0)
    self_add = np.where(addi & (rs1 == rd), imm_i, 0)
    constant = np.where(addi & (rs1 == 0), imm_i, np.where((opcode == OP_LUI) & (rd != 0), signed & ~0xFFF, 0))
    is_constant = (addi & (rs1 == 0)) | ((opcode == OP_LUI) & (rd != 0))
    width = np.where(opcode == OP_LOAD, _LOAD_WIDTH[funct3], np.where(opcode == OP_STORE, _STORE_WIDTH[funct3], 0))
    branch = opcode == OP_BRANCH
    facts = LoopFacts(
        writes=[(r,) if r else () for r in written.tolist()],
        self_add=self_add.tolist(),
        add_imm=[(r, c) if k else None for r, c, k in
                 zip(rs1.tolist(), imm_i.tolist(), (addi & (rs1 != rd) & (rs1 != 0)).tolist())],
        constant=[c if k else None for c, k in zip(constant.tolist(), is_constant.tolist())],
        mem_base=np.where(width > 0, rs1, -1).tolist(), mem_width=width.tolist(),
        mem_offset=np.where(opcode == OP_LOAD, imm_i, np.where(opcode == OP_STORE, imm_s, 0)).tolist(),
        compare=[None if not b else (a, None, 0) if c == 0 else (c, None, 0) if a == 0 else (a, c, None)
                 for b, a, c in zip(branch.tolist(), rs1.tolist(), rs2.tolist())])
    _stack_slots(facts, opcode.tolist(), rd.tolist(), rs1.tolist(), rs2.tolist(), funct3.tolist(),
                 imm_i.tolist(), imm_s.tolist(), (signed & ~0xFFF).tolist())
    return facts


def _stack_slots(facts: LoopFacts, opcode, rd, rs1, rs2, funct3, imm_i, imm_s, imm_u) -> None:
    """Stack-slot words as registers of their own (``SLOT_BASE`` up), so a counter kept in memory
    (-O0: ``lw a0, -20(s0); addi a0, a0, 1; sw a0, -20(s0)``) is an induction like a register.

    One pass tracks, between control transfers, registers holding a slot's word plus a constant
    or a constant; a word store to a slot then writes the slot (a self-add, a constant or another
    slot plus a constant), and a branch on registers loaded from slots compares the slots."""
    known: dict[int, tuple[int | None, int]] = {}  # register -> (slot or None for a constant, addend)

    def slot(i: int, offset: int) -> int | None:
        return SLOT_BASE + (rs1[i] << 12) + (offset & 0xFFF) if rs1[i] in (_SP, _FP) and funct3[i] == 2 else None

    def value(r: int) -> tuple[int | None, int] | None:
        return (None, 0) if r == 0 else known.get(r)

    for i, op in enumerate(opcode):
        if op == OP_LOAD and (s := slot(i, imm_i[i])) is not None and rd[i]:
            known[rd[i]] = (s, 0)
        elif op == OP_IMM and funct3[i] == 0 and rd[i] and (v := value(rs1[i])) is not None:
            known[rd[i]] = (v[0], v[1] + imm_i[i])
        elif op == OP_LUI and rd[i]:
            known[rd[i]] = (None, imm_u[i])
        elif op == OP_STORE and (s := slot(i, imm_s[i])) is not None:
            facts.writes[i] = (s,)
            v = value(rs2[i])
            if v is not None and v[0] is None:
                facts.constant[i] = v[1]
            elif v is not None and v[0] == s:
                facts.self_add[i] = v[1]
            elif v is not None:
                facts.add_imm[i] = v
        elif op == OP_BRANCH:
            a, b = value(rs1[i]), value(rs2[i])
            if any(v is not None and v[0] is not None and v[1] == 0 for v in (a, b)):
                facts.compare[i] = _slot_compare(a, b, rs1[i], rs2[i])
            known.clear()
        elif op in (OP_JAL, OP_JALR):
            known.clear()
        elif rd[i] and op in _WRITES_RD:
            known.pop(rd[i], None)


def _slot_compare(a, b, ra: int, rb: int) -> tuple[int, int | None, int | None] | None:
    """A branch's compare with operands read as slots or constants where known."""
    def operand(v, r):
        if v is not None and v[0] is not None and v[1] == 0:
            return v[0], None
        if v is not None and v[0] is None:
            return None, v[1]
        return r, None
    (x, xi), (y, yi) = operand(a, ra), operand(b, rb)
    if x is None and y is None:
        return None
    if x is None:
        return y, None, xi
    return (x, None, yi) if y is None else (x, y, None)
