"""The rv32i instruction set as the cost model counts it: vocabulary, fields, mnemonics.

Mnemonic convention (deterministic, independent of how a capstone version prints aliases):
every instruction of the base ISA (rv32i with Zicsr and Zifencei) is counted under its
*underlying base mnemonic*, derived from the encoding itself (opcode, funct3, funct7). So the
pseudo-instructions a disassembler prints fold into the instruction that executes: ``li``,
``mv`` and ``nop`` count as ``addi``; ``not`` as ``xori``; ``neg`` as ``sub``; ``seqz`` as
``sltiu``; ``snez`` as ``sltu``; ``j`` and ``jal off`` as ``jal``; ``ret``, ``jr`` and
``jalr rs`` as ``jalr``; ``beqz``/``bnez``/``blez``/``bgez``/``bltz``/``bgtz`` as their base
branch; ``csrr``/``csrw``/``rdcycle``... as the ``csrr*`` they encode; ``fence.tso``/``pause``
as ``fence``. The normalisation emits no pseudo forms. An instruction outside the base ISA
(M/A/F/D extensions or privileged ops a foreign binary may hold) keeps capstone's mnemonic and
falls into the ``op:other`` column of a schema that does not list it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

OP_LUI, OP_AUIPC, OP_JAL, OP_JALR, OP_BRANCH = 0x37, 0x17, 0x6F, 0x67, 0x63
OP_LOAD, OP_STORE, OP_IMM, OP_REG, OP_FENCE, OP_SYSTEM = 0x03, 0x23, 0x13, 0x33, 0x0F, 0x73

_BRANCH = {0: "beq", 1: "bne", 4: "blt", 5: "bge", 6: "bltu", 7: "bgeu"}
_LOAD = {0: "lb", 1: "lh", 2: "lw", 4: "lbu", 5: "lhu"}
_STORE = {0: "sb", 1: "sh", 2: "sw"}
_IMM = {0: "addi", 2: "slti", 3: "sltiu", 4: "xori", 6: "ori", 7: "andi"}
_SHIFT_IMM = {(1, 0x00): "slli", (5, 0x00): "srli", (5, 0x20): "srai"}
_REG = {(0, 0x00): "add", (0, 0x20): "sub", (1, 0x00): "sll", (2, 0x00): "slt",
        (3, 0x00): "sltu", (4, 0x00): "xor", (5, 0x00): "srl", (5, 0x20): "sra",
        (6, 0x00): "or", (7, 0x00): "and"}
_CSR = {1: "csrrw", 2: "csrrs", 3: "csrrc", 5: "csrrwi", 6: "csrrsi", 7: "csrrci"}


def _key(opcode: int, funct3: int = 0, funct7: int = 0, system_imm: int = 0) -> int:
    return opcode | funct3 << 7 | funct7 << 10 | system_imm << 17


def _base_table() -> dict[int, str]:
    table = {_key(OP_LUI): "lui", _key(OP_AUIPC): "auipc", _key(OP_JAL): "jal",
             _key(OP_JALR): "jalr", _key(OP_FENCE, 0): "fence", _key(OP_FENCE, 1): "fence.i",
             _key(OP_SYSTEM, 0, 0, 0): "ecall", _key(OP_SYSTEM, 0, 0, 1): "ebreak"}
    table.update({_key(OP_BRANCH, f3): m for f3, m in _BRANCH.items()})
    table.update({_key(OP_LOAD, f3): m for f3, m in _LOAD.items()})
    table.update({_key(OP_STORE, f3): m for f3, m in _STORE.items()})
    table.update({_key(OP_IMM, f3): m for f3, m in _IMM.items()})
    table.update({_key(OP_IMM, f3, f7): m for (f3, f7), m in _SHIFT_IMM.items()})
    table.update({_key(OP_REG, f3, f7): m for (f3, f7), m in _REG.items()})
    table.update({_key(OP_SYSTEM, f3): m for f3, m in _CSR.items()})
    return table


_BASE = _base_table()

#: The base-ISA mnemonics the normalisation emits, sorted (the opcode vocabulary of a schema).
RV32I_MNEMONICS: tuple[str, ...] = tuple(sorted(set(_BASE.values())))


@dataclass(frozen=True)
class Fields:
    """Decoded fields of every instruction word, as Python lists indexed by instruction
    (fast to index one at a time), and the base-mnemonic table key of each as an array."""

    opcode: list[int]
    rd: list[int]
    rs1: list[int]
    rs2: list[int]
    imm_i: list[int]
    imm_s: list[int]
    imm_b: list[int]
    imm_j: list[int]
    imm_u: list[int]
    keys: np.ndarray


def decode_fields(words: np.ndarray) -> Fields:
    """Split 32-bit instruction words into register numbers and sign-extended immediates."""
    w = words.astype(np.int64)
    signed = words.view(np.int32).astype(np.int64)
    opcode = w & 0x7F
    funct3 = (w >> 12) & 7
    funct7 = w >> 25
    imm_i = signed >> 20
    imm_s = ((signed >> 25) << 5) | ((w >> 7) & 0x1F)
    imm_b = ((signed >> 31) << 12) | (((w >> 7) & 1) << 11) | (((w >> 25) & 0x3F) << 5) \
        | (((w >> 8) & 0xF) << 1)
    imm_j = ((signed >> 31) << 20) | (((w >> 12) & 0xFF) << 12) | (((w >> 20) & 1) << 11) \
        | (((w >> 21) & 0x3FF) << 1)
    imm_u = signed & ~0xFFF
    # The table key keeps exactly the bits that select (and validate) a base mnemonic; ecall
    # and ebreak are whole words (their rd, rs1 and immediate fields are fixed).
    no_funct3 = (opcode == OP_LUI) | (opcode == OP_AUIPC) | (opcode == OP_JAL)
    with_funct7 = (opcode == OP_REG) | ((opcode == OP_IMM) & ((funct3 == 1) | (funct3 == 5)))
    system0 = (opcode == OP_SYSTEM) & (funct3 == 0)
    keys = opcode | np.where(no_funct3, 0, funct3 << 7) | np.where(with_funct7, funct7 << 10, 0) \
        | np.where(system0, (w >> 20) << 17 | ((w >> 7) & 0x1FFF) << 29, 0)
    return Fields(opcode=opcode.tolist(), rd=((w >> 7) & 0x1F).tolist(),
                  rs1=((w >> 15) & 0x1F).tolist(), rs2=((w >> 20) & 0x1F).tolist(),
                  imm_i=imm_i.tolist(), imm_s=imm_s.tolist(), imm_b=imm_b.tolist(),
                  imm_j=imm_j.tolist(), imm_u=imm_u.tolist(), keys=keys)


def base_mnemonics(fields: Fields) -> list[str | None]:
    """The counted mnemonic of every instruction in the base ISA (this module's convention); None
    for the others (a disassembler names those)."""
    unique, inverse = np.unique(fields.keys, return_inverse=True)
    names = [_BASE.get(k) for k in unique.tolist()]
    return [names[j] for j in inverse.tolist()]
