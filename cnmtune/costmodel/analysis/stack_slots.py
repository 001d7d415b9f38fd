"""Stack-frame words as registers of their own, so a loop counter kept in memory is an induction.

Unoptimized code (-O0, and pipelines without mem2reg) keeps every local in the stack frame: its
loop counter is ``lw a0, -20(s0); addi a0, a0, 1; sw a0, -20(s0)`` on rv32, ``lw r0, r22, -12;
add r0, r0, 1; sw r22, -12, r0`` on a DPU, and the branch compares a register just loaded from
that word. ``add_stack_slots`` rewrites an ISA's ``LoopFacts`` so that each word of the frame
(a frame register plus a constant offset) is a register numbered from ``SLOT_BASE`` up, which the
trip-count analysis (cnmtune.costmodel.analysis.trips) then reads like any register:

- one pass over the instructions tracks, between control transfers, the registers that hold a
  slot's word plus a constant (a word load from the slot, then adds of constants) or a constant;
- a word store to a slot writes the slot: a self-add when it stores the slot's own word plus c,
  a constant, or another slot plus a constant (``add_imm``);
- a conditional branch on a register that holds a slot's word compares the slot (and a
  register holding a constant compares that constant).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence

from cnmtune.costmodel.analysis.trips import LoopFacts

#: Register numbers of stack slots start here (above every ISA's registers).
SLOT_BASE = 64
#: A value as the pass knows it: (slot or None for a constant, addend).
_Value = tuple[int | None, int]
_Lookup = Callable[[int], _Value | None]


def add_stack_slots(facts: LoopFacts, frame: Collection[int], stored: Sequence[_Value | None],
                    transfers: Sequence[bool], fixed: Mapping[int, int]) -> None:
    """Rewrite ``facts`` in place with the frame's words as registers (see the module docstring).

    ``frame``: the registers that address the stack frame (rv32 ``sp``, ``s0``; the DPU's
    ``r22``). ``stored``: for each store, what it writes to memory, ``(register, 0)`` or ``(None,
    constant)`` for an immediate; None for other instructions. ``transfers``: the instructions that
    transfer control (branches, jumps, calls). ``fixed``: read-only registers and their values
    (rv32 ``x0``; the DPU's ``zero`` and ``one``)."""
    slots: dict[tuple[int, int], int] = {}
    known: dict[int, _Value] = {}

    def value(r: int) -> _Value | None:
        return (None, fixed[r]) if r in fixed else known.get(r)

    for i in range(len(facts.writes)):
        slot = None
        if facts.mem_width[i] == 4 and facts.mem_base[i] in frame:
            slot = slots.setdefault((facts.mem_base[i], facts.mem_offset[i]), SLOT_BASE + len(slots))
        if slot is not None and stored[i] is not None:
            register, addend = stored[i]
            _store(facts, i, slot, (None, addend) if register is None else value(register))
        elif slot is not None and facts.writes[i]:
            known[facts.writes[i][0]] = (slot, 0)
        elif facts.writes[i]:
            new = _written(facts, i, value)
            for r in facts.writes[i]:
                if new is None:
                    known.pop(r, None)
                else:
                    known[r] = new
        if facts.compare[i] is not None:
            facts.compare[i] = _slot_compare(facts.compare[i], value)
        if transfers[i]:
            known.clear()


def _store(facts: LoopFacts, i: int, slot: int, v: _Value | None) -> None:
    """Make store ``i`` of ``v`` a write of ``slot``."""
    facts.writes[i] = (slot,)
    if v is None:
        return
    if v[0] is None:
        facts.constant[i] = v[1]
    elif v[0] == slot:
        facts.self_add[i] = v[1]
    else:
        facts.add_imm[i] = v


def _written(facts: LoopFacts, i: int, value: _Lookup) -> _Value | None:
    """What instruction ``i`` writes as a slot plus a constant or a constant, None if neither."""
    if facts.constant[i] is not None:
        return None, facts.constant[i]
    if facts.add_imm[i] is not None:
        source, c = facts.add_imm[i]
        v = value(source)
        return None if v is None else (v[0], v[1] + c)
    if facts.self_add[i] and len(facts.writes[i]) == 1:
        v = value(facts.writes[i][0])
        return None if v is None else (v[0], v[1] + facts.self_add[i])
    return None


def _slot_compare(compare: tuple[int, int | None, int | None],
                  value: _Lookup) -> tuple[int, int | None, int | None] | None:
    """``compare`` with registers holding a slot's word read as the slot and registers holding a
    constant as the constant; unchanged when no operand holds a slot's word."""
    register, other, immediate = compare
    operands = [register] if other is None else [register, other]
    values = [value(r) for r in operands]
    if not any(v is not None and v[0] is not None and v[1] == 0 for v in values):
        return compare
    read = [(v[0], None) if v is not None and v[0] is not None and v[1] == 0
            else (None, v[1]) if v is not None and v[0] is None else (r, None)
            for r, v in zip(operands, values)]
    if other is None:
        return (read[0][0], None, immediate) if read[0][0] is not None else None
    (x, xi), (y, yi) = read
    if x is None and y is None:
        return None
    if x is None:
        return y, None, xi
    return (x, None, yi) if y is None else (x, y, None)
