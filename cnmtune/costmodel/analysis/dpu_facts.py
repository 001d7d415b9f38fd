"""The real DPU's instructions as the trip-count analysis reads them (``LoopFacts``).

Facts follow from each word's form in the encoding table (cnmtune.costmodel.analysis.dpu_isa):
its operation and operand names. Register numbers are the ISA's: r0-r23, then the read-only
zero, one, lneg, mneg, id, id2, id4, id8 (24-31), which only ``ra`` can name.

- **writes**: the destination ``rc``, or both registers of a pair ``dc`` (dN: rN and rN+1).
  ``z`` forms, stores, jumps, DMA, acquire/release, boot/stop write none.
- **self_add**: ``add r, r, c`` and ``sub r, r, c`` (-c) on one register (``rri``, ``rrif``,
  ``ssi``, ``rrici``). ``addc``/``subc`` also add the carry, a pair is two registers: neither is
  a self-add.
- **self_shift**: ``lsl r, r, s`` (+s), ``lsr``/``asr r, r, s`` (-s) by an immediate on one
  register.
- **add_imm**: ``add``/``sub`` of an immediate into another register (``rri``), and ``move``
  of a register: (source, constant).
- **constant**: ``move`` of an immediate or of ``zero``/``one``; ``add``/``or``/``xor`` of
  ``zero`` and an immediate, ``sub`` of the two in either order, ``and`` with the immediate 0.
  A pair (``move.s d2, 0``) has a constant only when both its registers receive it: 0, or -1
  sign-extended by ``.s``.
- A form with a condition and no pc sets its destination to 1 or 0 by the condition
  (uPIMulator's model, ``Logic.ExecuteRric``). Those that decode (``rrrc``, ``rrc``, shifts'
  ``rric``) have no immediate to add or move, so they only write; an immediate with a condition
  shares its encoding with the pc form and decodes as it (dpu_isa rule 4): it computes, then
  branches.
- **mem_base/mem_width/mem_offset**: the WRAM loads and stores lbs/lbu/lhs/lhu/lw/ld,
  sb/sh/sw/sd, their ``.s``/``.u`` and ``_id`` forms: base ``ra``, width by the letter b/h/w/d
  (1/2/4/8), offset ``off``. Not the DMA (ldma, ldmai, sdma), nor the ``lws``/``sds``-style
  forms (an S after the operation), whose meaning the ISA notes do not give.
- **compare**, for a conditional branch (flow BRANCH: a ``true`` condition is a goto):
  ``jeq``...``jges`` and the ``sub zero, ...`` forms they encode compare ``ra`` with ``rb`` or
  the immediate, ``jz``/``jnz`` ``ra`` with 0, a source ``zero``/``one`` read as 0/1; a form
  with a destination ``rc`` branches on its result, compared with 0. Other branches (a pair's
  result, a discarded ``z`` result, ``subc``, acquire/release/boot) compare nothing known.

- **stack slots**: a word of the frame (``r22`` plus an offset) is a register of its own
  (cnmtune.costmodel.analysis.stack_slots), so an -O0 counter is an induction; a store writes
  its ``rb`` or its immediate.

Immediates are sign-extended from the width of their field, as the UPMEM objdump prints them
(shared/upmem/objdump_sample.txt: ``add r23, r23, -1, true, ...`` in 8 bits, ``sb r0, 0, -1``,
``and r0, r2, -2048`` in 32).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from cnmtune.costmodel.analysis.cfg import FunctionCfg
from cnmtune.costmodel.analysis.dpu_isa import DpuForm, encoding_table
from cnmtune.costmodel.analysis.dpu_program import BRANCH, CALL, ICALL, DpuProgram
from cnmtune.costmodel.analysis.stack_slots import add_stack_slots
from cnmtune.costmodel.analysis.trips import LoopFacts

_ZERO, _ONE = 24, 25
_FRAME = (22,)  # the stack pointer
_READ_AS = {_ZERO: 0, _ONE: 1}  # constant registers a compare or move reads as their value
_MEMORY = re.compile(r"(?:l(?:b[su]|h[su]|w|d)|s[bhwd](?:_id)?)(?:\.[su])?")
_WIDTH = {"b": 1, "h": 2, "w": 4, "d": 8}
_CONSTANT_OPS = frozenset(("add", "or", "xor"))
_SHIFTS = {"lsl": 1, "lsr": -1, "asr": -1}  # the direction of a self-shift's bits


@dataclass(frozen=True)
class _Facts:
    """One instruction's facts (see LoopFacts)."""

    writes: tuple[int, ...] = ()
    self_add: int = 0
    self_shift: int = 0
    constant: int | None = None
    add_imm: tuple[int, int] | None = None
    mem_base: int = -1
    mem_width: int = 0
    mem_offset: int = 0
    stored: tuple[int | None, int] | None = None
    compare: tuple[int, int | None, int | None] | None = None


_NEUTRAL = _Facts()


def dpu_loop_facts(program: DpuProgram, cfgs: Sequence[FunctionCfg]) -> LoopFacts:
    """The loop facts of every instruction of ``program`` (decoded with the shipped table), whose
    functions have ``cfgs``; padding and undecodable words have none."""
    table = encoding_table()
    facts = [_NEUTRAL if pad or k < 0 else _facts(table.forms[k], word, flow == BRANCH)
             for k, word, flow, pad in zip(program.forms.tolist(), program.words.tolist(),
                                           program.flow.tolist(), program.padding.tolist())]
    loop_facts = LoopFacts(writes=[f.writes for f in facts], self_add=[f.self_add for f in facts],
                           self_shift=[f.self_shift for f in facts],
                           constant=[f.constant for f in facts], add_imm=[f.add_imm for f in facts],
                           mem_base=[f.mem_base for f in facts], mem_width=[f.mem_width for f in facts],
                           mem_offset=[f.mem_offset for f in facts], compare=[f.compare for f in facts])
    add_stack_slots(loop_facts, _FRAME, [f.stored for f in facts], np.isin(program.flow, (CALL, ICALL)).tolist(),
                    _READ_AS, program.functions, program.function_of, cfgs)
    return loop_facts


def _facts(form: DpuForm, word: int, branch: bool) -> _Facts:
    """The facts of ``word`` under ``form``; ``branch``: its flow is a conditional branch."""
    ops = form.operands
    operation = form.operation.split(".")[0]
    ra = form.operand(word, "ra") if "ra" in ops else None
    imm = _signed(form, word, "imm") if "imm" in ops else None
    if "rc" in ops:
        writes = (form.operand(word, "rc"),)
    elif "dc" in ops:
        d = form.operand(word, "dc")
        writes = (d, d + 1)
    else:
        writes = ()
    if _MEMORY.fullmatch(form.mnemonic):
        stored = None
        if form.mnemonic.startswith("s"):
            stored = (form.operand(word, "rb"), 0) if "rb" in ops else (None, imm) if imm is not None else None
        return _Facts(writes, mem_base=ra, mem_width=_WIDTH[form.mnemonic[1]],
                      mem_offset=_signed(form, word, "off") if "off" in ops else 0, stored=stored)
    if not writes:
        return _Facts(compare=_operand_compare(form, word, ra, imm) if branch and operation == "sub"
                      else None)
    value = _value(form, operation, ra, imm)
    if len(writes) == 2:
        high = -1 if form.operation.endswith(".s") and value is not None and value < 0 else 0
        return _Facts(writes, constant=value if value == high else None)
    step, shift, add_imm = 0, 0, None
    if ops[1:3] == ("ra", "imm") and operation in ("add", "sub") and ra < _ZERO:
        c = imm if operation == "add" else -imm
        if ra == writes[0]:
            step = c
        else:
            add_imm = (ra, c)
    elif ops[1:3] == ("ra", "shift") and operation in _SHIFTS and ra == writes[0]:
        shift = _SHIFTS[operation] * form.operand(word, "shift")
    elif form.mnemonic == "move" and ops[1:] == ("ra",) and ra < _ZERO:
        add_imm = (ra, 0)
    return _Facts(writes, self_add=step, self_shift=shift, constant=value, add_imm=add_imm,
                  compare=(writes[0], None, 0) if branch else None)


def _value(form: DpuForm, operation: str, ra: int | None, imm: int | None) -> int | None:
    """The constant a form with a destination writes, None if it is not one."""
    sources = form.operands[1:3]
    if form.mnemonic.startswith("move"):
        return imm if imm is not None else _READ_AS.get(ra)
    if sources not in (("ra", "imm"), ("imm", "ra")):
        return None
    if operation == "and" and imm == 0:  # and r0, r0, 0 (objdump sample)
        return 0
    if ra != _ZERO:
        return None
    if operation == "sub":
        return -imm if sources == ("ra", "imm") else imm
    return imm if operation in _CONSTANT_OPS else None


def _operand_compare(form: DpuForm, word: int, ra: int,
                     imm: int | None) -> tuple[int, int | None, int | None] | None:
    """What ``sub zero, ...`` (and jeq, jz, ... encoding it) compares, None for two constants."""
    if "rb" in form.operands:
        rb = form.operand(word, "rb")
        return (rb, None, _READ_AS[ra]) if ra in _READ_AS else (ra, rb, None)
    if ra in _READ_AS:
        return None
    return (ra, None, 0 if imm is None else imm)


def _signed(form: DpuForm, word: int, name: str) -> int:
    """Operand ``name`` sign-extended from the width of its field."""
    bits = max(offset + mask.bit_length() for op, offset, mask, _ in form.fields if op == name)
    value = form.operand(word, name)
    return value - (1 << bits) if value >> (bits - 1) else value
