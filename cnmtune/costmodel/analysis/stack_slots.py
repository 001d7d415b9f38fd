"""Stack-frame words as registers of their own, so a loop counter kept in memory is an induction.

Unoptimized code (-O0, and pipelines without mem2reg) keeps every local in the stack frame: its
loop counter is ``lw a0, -20(s0); addi a0, a0, 1; sw a0, -20(s0)`` on rv32, ``lw r0, r22, -12;
add r0, r0, 1; sw r22, -12, r0`` on a DPU, and the branch compares a register just loaded from
that word. ``add_stack_slots`` rewrites an ISA's ``LoopFacts`` so that each word of the frame
(a frame register plus a constant offset) is a register numbered from ``SLOT_BASE`` up, which the
trip-count analysis (cnmtune.costmodel.analysis.trips) then reads like any register:

- a forward pass over the CFG of each function with a loop tracks the registers that hold a
  slot's word plus a constant (a word load from the slot, then adds of constants) or a constant,
  and the slots that hold a constant; where paths join, a register keeps what every path into
  the join agrees on (a constant c on one path and the slot's word plus k on another agree where
  that path's slot holds c - k); the state repeats round loops until it settles; a call forgets
  everything;
- a word store to a slot writes the slot: a self-add when it stores the slot's own word plus c,
  a constant, or another slot plus a constant (``add_imm``); registers that held the old word
  plus k then hold the new one plus k - c (the stored register: the new word);
- a conditional branch on a register that holds a slot's word compares the slot (and a
  register holding a constant compares that constant).

So a counter the loop's header loads and its latch, laid out elsewhere, increments and stores
(``addi a6, a6, 1; sw a6, -12(s0); bgeu a6, a5, exit`` before a header ``lw a6, -12(s0)``: LLVM's
rotated loops without mem2reg) is the slot's induction, compared where it is stored.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence

import numpy as np

from cnmtune.costmodel.analysis.cfg import FunctionCfg
from cnmtune.costmodel.analysis.program import Function
from cnmtune.costmodel.analysis.trips import LoopFacts

#: Register numbers of stack slots start here (above every ISA's registers).
SLOT_BASE = 64
#: A value as the pass knows it: (slot or None for a constant, addend). The pass also keeps a
#: slot's contents where they are a constant, under the slot's number.
_Value = tuple[int | None, int]
#: Passes over a function's blocks at most: values at a join can change kind (a constant becomes
#: the slot's word plus k) as well as vanish, so the pass is bounded rather than trusted to settle.
_MAX_PASSES = 8
_Lookup = Callable[[int], _Value | None]


def add_stack_slots(facts: LoopFacts, frame: Collection[int], stored: Sequence[_Value | None],
                    calls: Sequence[bool], fixed: Mapping[int, int], functions: Sequence[Function],
                    function_of: np.ndarray, cfgs: Sequence[FunctionCfg]) -> None:
    """Rewrite ``facts`` in place with the frame's words as registers (see the module docstring).

    ``frame``: the registers that address the stack frame (rv32 ``sp``, ``s0``; the DPU's
    ``r22``). ``stored``: for each store, what it writes to memory, ``(register, 0)`` or ``(None,
    constant)`` for an immediate; None for other instructions. ``calls``: the instructions that
    call a function. ``fixed``: read-only registers and their values (rv32 ``x0``; the DPU's
    ``zero`` and ``one``). ``functions`` and their ``cfgs``: where the pass runs (the functions
    with a loop: only a loop's trip count reads slots); ``function_of``: the index into
    ``functions`` of every instruction."""
    slots: dict[tuple[int, int], int] = {}
    slot_of: dict[int, int] = {}
    for i in range(len(facts.writes)):
        if facts.mem_width[i] == 4 and facts.mem_base[i] in frame:
            slot_of[i] = slots.setdefault((facts.mem_base[i], facts.mem_offset[i]), SLOT_BASE + len(slots))
    with_slots = set(function_of[list(slot_of)].tolist())
    for k, (function, cfg) in enumerate(zip(functions, cfgs)):
        if k not in with_slots or not cfg.loops:
            continue  # no register can hold a slot's word, or no loop whose trips a slot could count
        blocks = cfg.block_ranges(function.first, function.count)
        out: list[dict[int, _Value] | None] = [None] * len(blocks)
        succs = cfg.successors()

        def entry(b: int) -> dict[int, _Value]:
            known = [out[p] for p in cfg.preds[b] if out[p] is not None]
            return {} if b == 0 or not known else _meet(known)

        # passes in address order; a block runs again only when what flows into it has changed
        stale, passes = set(range(len(blocks))), 0
        while stale and passes < _MAX_PASSES:
            passes += 1
            for b in range(len(blocks)):
                if b not in stale:
                    continue
                stale.discard(b)
                state = _run(facts, *blocks[b], entry(b), slot_of, stored, calls, fixed, None)
                if state != out[b]:
                    out[b] = state
                    stale.update(succs[b])
        for b, (first, last) in enumerate(blocks):
            out[b] = _run(facts, first, last, entry(b), slot_of, stored, calls, fixed, facts)


def _meet(paths: list[dict[int, _Value]]) -> dict[int, _Value]:
    """What every path agrees on: the same value, or a slot's word plus k where the paths that
    have a constant c instead also know the slot holds c - k (a counter set to 0 beside ``i = 0``
    meets the counter reloaded from the slot)."""
    if len(paths) == 1:
        return dict(paths[0])
    agreed = {}
    for r in set(paths[0]).intersection(*paths[1:]):
        values = [path[r] for path in paths]
        relative = {v for v in values if v[0] is not None}
        if not relative:
            if len(set(values)) == 1:
                agreed[r] = values[0]
        elif len(relative) == 1:
            slot, k = relative.pop()
            if all(v == (slot, k) or path.get(slot) == (None, v[1] - k) for v, path in zip(values, paths)):
                agreed[r] = (slot, k)
    return agreed


def _run(facts: LoopFacts, first: int, last: int, known: dict[int, _Value], slot_of: Mapping[int, int],
         stored: Sequence[_Value | None], calls: Sequence[bool], fixed: Mapping[int, int],
         rewrite: LoopFacts | None) -> dict[int, _Value]:
    """The known values after instructions [first, last) from ``known`` before them; with
    ``rewrite``, also make its stores to slots writes of the slots and its compares compare slots."""
    def value(r: int) -> _Value | None:
        return (None, fixed[r]) if r in fixed else known.get(r)

    for i in range(first, last):
        slot = slot_of.get(i)
        if slot is not None and stored[i] is not None:
            register, addend = stored[i]
            v = (None, addend) if register is None else value(register)
            if rewrite is not None:
                _store(rewrite, i, slot, v)
            step = v[1] if v is not None and v[0] == slot else None
            contents = known.get(slot)
            known = {r: w if w[0] != slot else (slot, w[1] - step) for r, w in known.items()
                     if w[0] != slot or step is not None}
            if step is not None and register is not None:  # it held the old word plus step: the new word
                known[register] = (slot, 0)
            if v is not None and v[0] is None:  # the slot's own constant contents, under its number
                known[slot] = v
            elif step is not None and contents is not None:
                known[slot] = (None, contents[1] + step)
            else:
                known.pop(slot, None)
        elif slot is not None and facts.writes[i]:
            known[facts.writes[i][0]] = (slot, 0)
        elif facts.writes[i]:
            new = _written(facts, i, value)
            for r in facts.writes[i]:
                if new is None:
                    known.pop(r, None)
                else:
                    known[r] = new
        if rewrite is not None and facts.compare[i] is not None:
            rewrite.compare[i] = _slot_compare(facts.compare[i], value)
        if calls[i]:
            known = {}
    return known


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
