"""Predecoding of an rv32i text section for the DPU interpreter.

Every 4-byte word is decoded once into flat integer fields, so the interpreter never looks at
instruction bits again. Two rewrites make the hot loop cheaper and are exact:

* ``auipc`` and ``lui`` become ``LI`` (load constant): auipc's result only depends on its own
  address, which is fixed once the text address is known.
* Branch and ``jal`` targets are stored as instruction *indices* (``target``), so the
  interpreter keeps an index instead of a pc. A target that is not 4-aligned (possible with a
  2-aligned branch offset and no C extension; always 2 mod 4) is encoded as
  ``MISALIGNED_TARGET_BASE + addr // 4``; ``target_address`` inverts both encodings.
* Register writes to x0 vanish: ALU ops with rd = x0 become ``NOP`` and ``jal x0`` becomes
  ``J``. Loads to x0 keep their op (the access can still fault) and the interpreter drops the
  value. ``jalr`` keeps rd and the interpreter skips the link write when rd = x0.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

import numpy as np

MASK32 = 0xFFFFFFFF
# Branch targets that are 2 mod 4 (a fetch-misaligned fault when taken). Real indices lie in
# [-2**29, 2**29), and the encoded ones in [-2**31, -2**30): unambiguous, and they fit int32.
MISALIGNED_TARGET_BASE = -(2 ** 31)
MISALIGNED_TARGET_LIMIT = -(2 ** 30)


class Op(enum.IntEnum):
    """Internal op ids of the predecoded program (dense, so the dispatch is a jump table)."""

    ILLEGAL = 0
    NOP = 1  # fence, fence.i, and ALU / lui / auipc writing x0
    LI = 2  # lui and auipc: rd = imm
    ADDI = 3
    SLTI = 4
    SLTIU = 5
    XORI = 6
    ORI = 7
    ANDI = 8
    SLLI = 9
    SRLI = 10
    SRAI = 11
    ADD = 12
    SUB = 13
    SLL = 14
    SLT = 15
    SLTU = 16
    XOR = 17
    SRL = 18
    SRA = 19
    OR = 20
    AND = 21
    LB = 22
    LH = 23
    LW = 24
    LBU = 25
    LHU = 26
    SB = 27
    SH = 28
    SW = 29
    BEQ = 30
    BNE = 31
    BLT = 32
    BGE = 33
    BLTU = 34
    BGEU = 35
    JAL = 36  # rd = pc + 4 (stored in imm); jump to target
    J = 37  # jal x0
    JALR = 38  # t = (rs1 + imm) & ~1; rd = pc + 4 unless rd = x0; jump to t
    ECALL = 39
    EBREAK = 40


# Columns of DecodedProgram.code, the packed int32 table the interpreter reads (one row per word).
# C_CHARGE holds charge | ROUTINE_ENTRY on routine entries, so the hot loop tests one loaded value.
C_OP, C_RD, C_RS1, C_RS2, C_IMM, C_TARGET, C_CHARGE, C_ROUTINE = range(8)
CODE_COLUMNS = 8
ROUTINE_ENTRY = 64  # flag bit of C_CHARGE; a word's charge (DPU issue slots) is below it
CHARGE_MASK = ROUTINE_ENTRY - 1

_BRANCH = {0: Op.BEQ, 1: Op.BNE, 4: Op.BLT, 5: Op.BGE, 6: Op.BLTU, 7: Op.BGEU}
_LOAD = {0: Op.LB, 1: Op.LH, 2: Op.LW, 4: Op.LBU, 5: Op.LHU}
_STORE = {0: Op.SB, 1: Op.SH, 2: Op.SW}
_OP_IMM = {0: Op.ADDI, 2: Op.SLTI, 3: Op.SLTIU, 4: Op.XORI, 6: Op.ORI, 7: Op.ANDI}
_SHIFT_IMM = {(1, 0x00): Op.SLLI, (5, 0x00): Op.SRLI, (5, 0x20): Op.SRAI}
_OP_REG = {(0, 0x00): Op.ADD, (0, 0x20): Op.SUB, (1, 0x00): Op.SLL, (2, 0x00): Op.SLT,
           (3, 0x00): Op.SLTU, (4, 0x00): Op.XOR, (5, 0x00): Op.SRL, (5, 0x20): Op.SRA,
           (6, 0x00): Op.OR, (7, 0x00): Op.AND}


def target_address(index: int, text_address: int) -> int:
    """The pc an instruction index (as stored in ``target``) stands for."""
    if index < MISALIGNED_TARGET_LIMIT:
        return ((index - MISALIGNED_TARGET_BASE) << 2) | 2
    return (text_address + 4 * index) & MASK32


def _sext(value: int, bits: int) -> int:
    value &= (1 << bits) - 1
    return value - (1 << bits) if value >> (bits - 1) else value


def _int32(value: int) -> int:
    return _sext(value, 32)


@dataclass(frozen=True, eq=False)
class DecodedProgram:
    """A predecoded text section: per-word fields plus the caller's charge/routine tables."""

    text_address: int
    words: np.ndarray  # uint32[n], the raw instruction words
    op: np.ndarray  # uint8[n], Op
    rd: np.ndarray  # uint8[n]
    rs1: np.ndarray  # uint8[n]
    rs2: np.ndarray  # uint8[n]
    imm: np.ndarray  # int32[n]: immediate; LI value; JAL link value (pc + 4)
    target: np.ndarray  # int32[n]: branch / jal target index (see module doc), else 0
    charge: np.ndarray  # int8[n]: DPU issue slots an execution of the word costs (0..CHARGE_MASK)
    routine: np.ndarray  # int16[n]: -1, or the table-charged routine whose entry this word is
    routine_kind: np.ndarray  # int8[R]: RoutineKind of each routine id (interpreter.py)
    routine_native: np.ndarray  # int8[R]: NativeOp of each routine id, 0 = interpret (interpreter.py)
    code: np.ndarray = field(repr=False)  # int32[n, CODE_COLUMNS]: the columns above, packed (C_*)

    @property
    def n(self) -> int:
        """Number of instruction words."""
        return len(self.words)

    @property
    def n_routines(self) -> int:
        """Number of routine ids (R), the middle dimension of routine_acc."""
        return len(self.routine_kind)

    def index_of(self, address: int) -> int:
        """Instruction index of a text address (no range check)."""
        return (address - self.text_address) >> 2

    def address_of(self, index: int) -> int:
        """Text address of an instruction index."""
        return (self.text_address + 4 * index) & MASK32


def _decode_word(word: int, pc: int, index: int) -> tuple[int, int, int, int, int, int]:
    """(op, rd, rs1, rs2, imm, target) of one word at address pc (index = its word index)."""
    opcode, rd = word & 0x7F, (word >> 7) & 0x1F
    f3, rs1, rs2, f7 = (word >> 12) & 7, (word >> 15) & 0x1F, (word >> 20) & 0x1F, word >> 25
    i_imm = _sext(word >> 20, 12)

    def jump_target(offset: int) -> int:
        dest = (pc + offset) & MASK32
        if dest & 3:
            return MISALIGNED_TARGET_BASE + (dest >> 2)
        return index + (offset >> 2)  # offset is a multiple of 4: the index delta is exact

    if opcode in (0x37, 0x17):  # lui, auipc
        upper = word & 0xFFFFF000
        value = upper if opcode == 0x37 else (pc + upper) & MASK32
        return (Op.LI, rd, 0, 0, _int32(value), 0) if rd else (Op.NOP, 0, 0, 0, 0, 0)
    if opcode == 0x6F:  # jal
        offset = _sext(((word >> 31) << 20) | (((word >> 12) & 0xFF) << 12)
                       | (((word >> 20) & 1) << 11) | (((word >> 21) & 0x3FF) << 1), 21)
        link = _int32(pc + 4)
        return (Op.JAL if rd else Op.J), rd, 0, 0, (link if rd else 0), jump_target(offset)
    if opcode == 0x67 and f3 == 0:  # jalr
        return Op.JALR, rd, rs1, 0, i_imm, 0
    if opcode == 0x63 and f3 in _BRANCH:
        offset = _sext(((word >> 31) << 12) | (((word >> 7) & 1) << 11)
                       | (((word >> 25) & 0x3F) << 5) | (((word >> 8) & 0xF) << 1), 13)
        return _BRANCH[f3], 0, rs1, rs2, offset, jump_target(offset)
    if opcode == 0x03 and f3 in _LOAD:
        return _LOAD[f3], rd, rs1, 0, i_imm, 0
    if opcode == 0x23 and f3 in _STORE:
        return _STORE[f3], 0, rs1, rs2, _sext((f7 << 5) | rd, 12), 0
    if opcode == 0x13:
        if f3 in _OP_IMM:
            op, imm = _OP_IMM[f3], i_imm
        elif (f3, f7) in _SHIFT_IMM:  # f7 includes shamt[5], which must be 0 on rv32
            op, imm = _SHIFT_IMM[f3, f7], rs2
        else:
            return Op.ILLEGAL, 0, 0, 0, 0, 0
        return (op, rd, rs1, 0, imm, 0) if rd else (Op.NOP, 0, 0, 0, 0, 0)
    if opcode == 0x33 and (f3, f7) in _OP_REG:  # funct7 = 1 (the M extension) is illegal
        return (_OP_REG[f3, f7], rd, rs1, rs2, 0, 0) if rd else (Op.NOP, 0, 0, 0, 0, 0)
    if opcode == 0x0F and f3 in (0, 1):  # fence, fence.i: one hart, no caches to sync
        return Op.NOP, 0, 0, 0, 0, 0
    if word == 0x00000073:
        return Op.ECALL, 0, 0, 0, 0, 0
    if word == 0x00100073:
        return Op.EBREAK, 0, 0, 0, 0, 0
    return Op.ILLEGAL, 0, 0, 0, 0, 0


def decode_program(text: bytes, text_address: int, charge=None, routine=None,
                   routine_kind=None, routine_native=None) -> DecodedProgram:
    """Predecode ``text`` (little-endian rv32i words) loaded at ``text_address``.

    charge: per-word issue slots (default 1 everywhere); routine: per-word routine id whose
    entry the word is (default -1); routine_kind: RoutineKind per routine id (default: kind 0
    for ids 0..max(routine)); routine_native: NativeOp per routine id (default 0: every routine
    is interpreted). A trailing partial word is ignored.
    """
    if text_address & 3:
        raise ValueError(f"text address {text_address:#x} is not 4-aligned")
    words = np.frombuffer(bytes(text[: len(text) // 4 * 4]), dtype="<u4").astype(np.uint32)
    n = len(words)
    fields = np.zeros((n, 6), dtype=np.int64)
    for i, word in enumerate(words.tolist()):
        fields[i] = _decode_word(word, (text_address + 4 * i) & MASK32, i)
    charge_arr = np.ones(n, np.int8) if charge is None else np.asarray(charge, np.int8).copy()
    routine_arr = (np.full(n, -1, np.int16) if routine is None
                   else np.asarray(routine, np.int16).copy())
    if charge_arr.shape != (n,) or routine_arr.shape != (n,):
        raise ValueError(f"charge and routine need one entry per instruction word ({n})")
    if charge_arr.min(initial=0) < 0 or charge_arr.max(initial=0) > CHARGE_MASK:
        raise ValueError(f"a word's charge must be 0..{CHARGE_MASK} issue slots")
    if routine_kind is None:
        routine_kind = np.zeros(int(routine_arr.max(initial=-1)) + 1, np.int8)
    kind_arr = np.asarray(routine_kind, np.int8).copy()
    if routine_arr.max(initial=-1) >= len(kind_arr) or routine_arr.min(initial=-1) < -1:
        raise ValueError("routine ids must be -1 or index routine_kind")
    native_arr = (np.zeros(len(kind_arr), np.int8) if routine_native is None
                  else np.asarray(routine_native, np.int8).copy())
    if native_arr.shape != kind_arr.shape or native_arr.min(initial=0) < 0:
        raise ValueError("routine_native needs one NativeOp (>= 0) per routine id")
    code = np.zeros((n, CODE_COLUMNS), np.int32)
    code[:, C_OP:C_TARGET + 1] = fields
    code[:, C_CHARGE] = charge_arr | np.where(routine_arr >= 0, ROUTINE_ENTRY, 0).astype(np.int8)
    code[:, C_ROUTINE] = routine_arr
    for arr in (words, charge_arr, routine_arr, kind_arr, native_arr, code):
        arr.setflags(write=False)
    return DecodedProgram(
        text_address=text_address, words=words, op=fields[:, 0].astype(np.uint8),
        rd=fields[:, 1].astype(np.uint8), rs1=fields[:, 2].astype(np.uint8),
        rs2=fields[:, 3].astype(np.uint8), imm=fields[:, 4].astype(np.int32),
        target=fields[:, 5].astype(np.int32), charge=charge_arr, routine=routine_arr,
        routine_kind=kind_arr, routine_native=native_arr, code=code)
