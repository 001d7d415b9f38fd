"""The base-mnemonic normalisation and field decoding, checked against capstone."""

from __future__ import annotations

import random
import struct

import capstone
import numpy as np
import pytest

from cnmtune.costmodel.analysis.rv32_isa import RV32I_MNEMONICS, base_mnemonics, decode_fields

# What capstone prints for a pseudo-instruction -> the base instruction it encodes.
ALIASES = {"mv": "addi", "li": "addi", "nop": "addi", "not": "xori", "neg": "sub",
           "seqz": "sltiu", "snez": "sltu", "sltz": "slt", "sgtz": "slt", "beqz": "beq",
           "bnez": "bne", "blez": "bge", "bgez": "bge", "bltz": "blt", "bgtz": "blt",
           "bgt": "blt", "ble": "bge", "bgtu": "bltu", "bleu": "bgeu", "j": "jal", "jr": "jalr",
           "ret": "jalr", "fence.tso": "fence", "pause": "fence"}
BASE_OPCODES = [0x37, 0x17, 0x6F, 0x67, 0x63, 0x03, 0x23, 0x13, 0x33, 0x0F, 0x73]


def random_words(n: int = 20000, seed: int = 7) -> list[int]:
    rng = random.Random(seed)
    words = []
    for _ in range(n):
        w = (rng.getrandbits(32) & ~0x7F) | rng.choice(BASE_OPCODES)
        # Zero fields now and then, so that capstone prints its aliases (mv, li, beqz, ret...).
        for field in (0x1F << 7, 0x1F << 15, 0x1F << 20, 0xFFF << 20, 0x7F << 25):
            if rng.random() < 0.25:
                w &= ~field
        words.append(w)
    return words + [0x00000073, 0x00100073, 0x00008067, 0x00000013, 0x0FF0000F, 0x8330000F]


@pytest.fixture(scope="module")
def decoded():
    md = capstone.Cs(capstone.CS_ARCH_RISCV, capstone.CS_MODE_RISCV32)
    rows = []
    for w in random_words():
        insns = list(md.disasm_lite(struct.pack("<I", w), 0))
        if insns:
            rows.append((w, insns[0][2], insns[0][3]))
    words = np.array([w for w, _, _ in rows], dtype=np.uint32)
    fields = decode_fields(words)
    return rows, fields, [base or m for base, (_, m, _) in zip(base_mnemonics(fields), rows)]


def test_vocabulary_is_the_sorted_base_isa_without_pseudo_forms():
    assert list(RV32I_MNEMONICS) == sorted(RV32I_MNEMONICS)
    assert len(RV32I_MNEMONICS) == 47
    assert {"add", "addi", "jal", "jalr", "beq", "lw", "sw", "ecall", "fence.i", "csrrw"} \
        <= set(RV32I_MNEMONICS)
    assert not {"mv", "li", "ret", "j", "nop", "beqz", "call"} & set(RV32I_MNEMONICS)


def test_base_mnemonic_matches_what_capstone_decodes(decoded):
    rows, _, names = decoded
    checked = 0
    for (w, mnemonic, _), name in zip(rows, names):
        if (w & 0x7F) == 0x73 and (w >> 12) & 7:
            assert name.startswith("csrr"), (hex(w), mnemonic, name)  # csrr/rdcycle/fsflags...
        elif name in RV32I_MNEMONICS:
            assert ALIASES.get(mnemonic, mnemonic) == name, (hex(w), mnemonic, name)
        else:
            assert name == mnemonic  # outside the base ISA capstone's name is kept (M: mul)
        checked += 1
    assert checked > 10000
    assert {"mv", "beqz", "j", "ret"} <= {m for _, m, _ in rows}  # aliases were exercised


def _number(text: str) -> int:
    return int(text.strip(), 0)


def test_immediates_match_capstone_operands(decoded):
    rows, fields, names = decoded
    for k, (w, mnemonic, ops) in enumerate(rows):
        operands = [o.strip() for o in ops.split(",")] if ops else []
        name = names[k]
        if name in ("beq", "bne", "blt", "bge", "bltu", "bgeu"):
            assert _number(operands[-1]) == fields.imm_b[k], (hex(w), mnemonic, ops)
        elif name == "jal" and mnemonic in ("j", "jal"):
            assert _number(operands[-1]) == fields.imm_j[k], (hex(w), mnemonic, ops)
        elif mnemonic in ("lui", "auipc"):
            assert _number(operands[-1]) == (fields.imm_u[k] >> 12) & 0xFFFFF
        elif mnemonic in ("addi", "andi", "ori", "xori", "slti", "sltiu"):
            assert _number(operands[-1]) == fields.imm_i[k], (hex(w), mnemonic, ops)
        elif mnemonic in ("lw", "lb", "lh", "lbu", "lhu", "sw", "sb", "sh"):
            imm = fields.imm_i[k] if mnemonic.startswith("l") else fields.imm_s[k]
            assert _number(operands[-1].split("(")[0]) == imm, (hex(w), mnemonic, ops)
