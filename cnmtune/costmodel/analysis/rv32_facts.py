"""The rv32 proxy's instructions as the trip-count analysis reads them (``LoopFacts``).

``addi r, r, c`` is a self-add, ``slli``/``srli``/``srai r, r, s`` a self-shift (+s, -s),
``addi rd, rs, c`` an add of a constant to another register;
``addi r, x0, c`` and ``lui r, c`` set constants; loads and stores give their base register,
width (lb/lbu/sb 1, lh/lhu/sh 2, lw/sw 4) and offset; a conditional branch compares rs1 with
rs2, x0 read as the immediate 0. Writes to x0 are no writes. Words of the stack frame (``sp`` or
``s0`` plus an offset) count as registers of their own (cnmtune.costmodel.analysis.stack_slots).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from cnmtune.costmodel.analysis.cfg import FunctionCfg
from cnmtune.costmodel.analysis.rv32_isa import (OP_AUIPC, OP_BRANCH, OP_IMM, OP_JAL, OP_JALR, OP_LOAD, OP_LUI,
                                                 OP_REG, OP_STORE, OP_SYSTEM)
from cnmtune.costmodel.analysis.rv32_program import Program
from cnmtune.costmodel.analysis.stack_slots import add_stack_slots
from cnmtune.costmodel.analysis.trips import LoopFacts

_WRITES_RD = (OP_LUI, OP_AUIPC, OP_JAL, OP_JALR, OP_LOAD, OP_IMM, OP_REG, OP_SYSTEM)
_LOAD_WIDTH = np.array([1, 2, 4, 0, 1, 2, 0, 0])  # by funct3: lb, lh, lw, -, lbu, lhu
_STORE_WIDTH = np.array([1, 2, 4, 0, 0, 0, 0, 0])  # sb, sh, sw
_FRAME = (2, 8)  # sp, s0


def rv32_loop_facts(program: Program, cfgs: Sequence[FunctionCfg]) -> LoopFacts:
    """The loop facts of every instruction word of ``program``, whose functions have ``cfgs``."""
    w = program.words.astype(np.int64)
    signed = program.words.view(np.int32).astype(np.int64)
    opcode, rd, rs1, rs2, funct3 = w & 0x7F, (w >> 7) & 0x1F, (w >> 15) & 0x1F, (w >> 20) & 0x1F, (w >> 12) & 7
    imm_i = signed >> 20
    imm_s = ((signed >> 25) << 5) | ((w >> 7) & 0x1F)
    written = np.where(np.isin(opcode, _WRITES_RD), rd, 0)
    addi = (opcode == OP_IMM) & (funct3 == 0) & (rd != 0)
    self_add = np.where(addi & (rs1 == rd), imm_i, 0)
    shamt = np.where((opcode == OP_IMM) & (rs1 == rd) & (rd != 0), rs2, 0)  # rs2's field holds shamt
    self_shift = np.where(funct3 == 1, shamt, np.where(funct3 == 5, -shamt, 0))
    constant = np.where(addi & (rs1 == 0), imm_i, np.where((opcode == OP_LUI) & (rd != 0), signed & ~0xFFF, 0))
    is_constant = (addi & (rs1 == 0)) | ((opcode == OP_LUI) & (rd != 0))
    width = np.where(opcode == OP_LOAD, _LOAD_WIDTH[funct3], np.where(opcode == OP_STORE, _STORE_WIDTH[funct3], 0))
    branch = opcode == OP_BRANCH
    facts = LoopFacts(
        writes=[(r,) if r else () for r in written.tolist()],
        self_add=self_add.tolist(),
        self_shift=self_shift.tolist(),
        add_imm=[(r, c) if k else None for r, c, k in
                 zip(rs1.tolist(), imm_i.tolist(), (addi & (rs1 != rd) & (rs1 != 0)).tolist())],
        constant=[c if k else None for c, k in zip(constant.tolist(), is_constant.tolist())],
        mem_base=np.where(width > 0, rs1, -1).tolist(), mem_width=width.tolist(),
        mem_offset=np.where(opcode == OP_LOAD, imm_i, np.where(opcode == OP_STORE, imm_s, 0)).tolist(),
        compare=[None if not b else (a, None, 0) if c == 0 else (c, None, 0) if a == 0 else (a, c, None)
                 for b, a, c in zip(branch.tolist(), rs1.tolist(), rs2.tolist())])
    stores = (opcode == OP_STORE) & (funct3 == 2)
    add_stack_slots(facts, _FRAME, [(r, 0) if k else None for r, k in zip(rs2.tolist(), stores.tolist())],
                    (((opcode == OP_JAL) | (opcode == OP_JALR)) & (rd != 0)).tolist(), {0: 0}, program.functions,
                    program.function_of, cfgs)
    return facts
