"""Trip-count-aware loop weights: each natural loop weighted by how often it iterates.

A loop-weighted histogram that charges every loop the same factor counts an unrolled loop's
body k times over while it runs k times less often: on the reference dataset the loop-weighted
instruction count of a kernel's binaries at one configuration was anti-correlated with their
times for most kernels (unrolled builds are the fast ones). So each loop gets its own factor,
read from the loop's *induction*: a register the loop writes only by adding a constant to itself
(step s) or by shifting itself by a constant (``d >>= 1``), that the loop's exit test compares
against a loop-invariant bound. A register written once is an induction; one written several
times (a counter an unrolled loop steps once per copy of the body) is one when each of its writes
runs on every iteration (its block lies on every path from the header to a back edge), its step
the sum of theirs. The exit test is a conditional branch in a block with an edge out of the loop
(a branch inside the body, an `if` on the counter, says nothing of the trip count); the bound is a
register the loop does not write, or one it sets again every iteration to a constant or to such a
register plus a constant.

- **Constant trip count.** The induction's start and the bound are both constants, or both
  one register plus a constant (a pointer walking a block to its end: start = p + c1,
  bound = p + c2, p not written in the loop), as set by the one definition of each that
  reaches the loop from outside (or by its only definition in the function): the factor is
  the trip count ceil(|bound - start| / s). A shift induction from a constant start > 0 to a
  constant bound takes ceil(|log2(bound / start)| / s) trips for a shift of s bits, and
  floor(log2(start) / s) + 1 to reach zero (a right shift tested against 0).
- **Runtime bound.** The factor is ``loop_weight / k``, k the loop's unroll factor read from
  its memory accesses: a loop unrolled k times reads or writes through a pointer induction at
  k consecutive offsets of one access width u and steps it by k x u (``lw 0, 4, 8, 12`` and
  ``addi 16``). Its body is counted k times and its factor is k times smaller, so the unrolled
  loop weighs what its work is, less the loop overhead it removed. Without such accesses k = 1:
  a loop stepping a block or a stride keeps ``loop_weight``.
- **No induction found** (a loop on a condition, a linked walk): the factor is
  ``loop_weight``, the constant weight of before. A counter kept in a word of the stack frame
  (-O0) is an induction: each ISA's facts name frame words as registers of their own
  (cnmtune.costmodel.analysis.stack_slots).

A factor is kept as (power, scale), the factor being ``scale * loop_weight ** power``, so the
weights of any ``loop_weight`` follow from one analysis: (0, trip count), (1, 1 / k) or (1, 1).
An instruction's weight is the product of the factors of the loops holding it: with no induction
anywhere it is ``loop_weight ** depth``, the weight of before. Facts about instructions come from
each ISA front-end as ``LoopFacts`` (cnmtune.costmodel.analysis.rv32_facts,
cnmtune.costmodel.analysis.dpu_facts).
"""

from __future__ import annotations

import math
from bisect import bisect_left
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from cnmtune.costmodel.analysis.cfg import FunctionCfg
from cnmtune.costmodel.analysis.program import Function


@dataclass(frozen=True)
class LoopFacts:
    """What the trip-count analysis reads of every instruction of a program (indexed like its
    instructions; registers as the ISA numbers them).

    ``writes``: the registers an instruction writes (a register pair: both). ``self_add``: c when
    the instruction is ``r = r + c`` for the one register it writes (c != 0), else 0.
    ``self_shift``: s when it is ``r = r << s`` (s > 0) or ``r = r >> -s`` (s < 0, logical or
    arithmetic) by a constant, else 0.
    ``constant``: the value it writes when that is a constant (load immediate, move of an
    immediate), else None. ``add_imm``: (register, c) when it writes another register plus a
    constant (``addi rd, rs, c``; a register move: c = 0), else None. ``mem_base``,
    ``mem_width``, ``mem_offset``: the base register, access width in bytes and constant offset
    of a load or store of data memory (-1, 0, 0 for other instructions). ``compare``: for a
    conditional branch, (register, other register or None, immediate or None): what it compares
    (a branch on a register against zero: (register, None, 0)); None otherwise.
    """

    writes: list[tuple[int, ...]]
    self_add: list[int]
    self_shift: list[int]
    constant: list[int | None]
    add_imm: list[tuple[int, int] | None]
    mem_base: list[int]
    mem_width: list[int]
    mem_offset: list[int]
    compare: list[tuple[int, int | None, int | None] | None]


#: A loop's weight factor: (power, scale), the factor being ``scale * loop_weight ** power``.
Factor = tuple[int, float]
_UNKNOWN: Factor = (1, 1.0)


def loop_factors(facts: LoopFacts, first: int, count: int, cfg: FunctionCfg) -> tuple[Factor, ...]:
    """The factor of each of ``cfg.loop_bodies`` of a function of ``count`` instructions starting
    at instruction ``first``."""
    if not cfg.loop_bodies:
        return ()
    ranges = cfg.block_ranges(first, count)
    defs: dict[int, list[int]] = {}
    for i in range(first, first + count):
        for r in facts.writes[i]:
            defs.setdefault(r, []).append(i)
    succs = cfg.successors()
    return tuple(_factor(facts, {i for b in body for i in range(*ranges[b])},
                         _Entry(facts, cfg, first, ranges, header, body, defs, succs))
                 for header, body in zip(cfg.loop_headers, cfg.loop_bodies))


def block_factors(cfg: FunctionCfg, factors: tuple[Factor, ...]) -> tuple[list[int], list[float]]:
    """(power, scale) of each block of a function: the product of the ``factors`` of the loops
    holding it."""
    power, scale = [0] * len(cfg.leaders), [1.0] * len(cfg.leaders)
    for body, (p, s) in zip(cfg.loop_bodies, factors):
        for b in body:
            power[b] += p
            scale[b] *= s
    return power, scale


@dataclass(frozen=True)
class _Entry:
    """Where a loop is entered from: the values its registers hold there."""

    facts: LoopFacts
    cfg: FunctionCfg
    first: int
    ranges: list[tuple[int, int]]  # each block's [start, end) instructions (cfg.block_ranges)
    header: int
    body: frozenset[int]
    defs: dict[int, list[int]]  # register -> the instructions of the function that write it, in order
    succs: list[list[int]]  # each block's successors (cfg.preds inverted)

    def exiting(self) -> set[int]:
        """The loop's blocks with an edge leaving it: where its exit tests are."""
        return {b for b in self.body if any(s not in self.body for s in self.succs[b])}

    def every_iteration(self) -> set[int]:
        """The loop's blocks on every path from its header to a back edge (to a block that jumps
        to the header): those that run on every iteration that goes round."""
        inside = {b: [] for b in self.body}
        for b in self.body:
            for p in self.cfg.preds[b]:
                if p in self.body and b != self.header:
                    inside[p].append(b)
        latches = {p for p in self.cfg.preds[self.header] if p in self.body}

        def reaches_latch(without: int) -> bool:
            stack, seen = [self.header], {self.header}
            while stack:
                b = stack.pop()
                if b in latches:
                    return True
                for n in inside[b]:
                    if n != without and n not in seen:
                        seen.add(n)
                        stack.append(n)
            return False

        return {self.header} | {b for b in self.body if b != self.header and not reaches_latch(b)}

    def value(self, r: int) -> tuple[int | None, int] | None:
        """r's value on entering the loop as (register or None, constant): a constant, or a
        register plus a constant, set by the one definition of r that reaches the loop from
        outside (searching back from the header's predecessors outside the loop); None if
        none, several, or the function's entry reach it."""
        ranges, preds = self.ranges, self.cfg.preds
        defs = self.defs.get(r, ())
        stack = [b for b in preds[self.header] if b not in self.body]
        seen, found = set(stack), set()
        while stack:
            block = stack.pop()
            start, end = ranges[block]
            last = bisect_left(defs, end) - 1  # r's last write before the block's end
            if last >= 0 and defs[last] >= start:
                found.add(defs[last])
                if len(found) > 1:
                    return None
            elif block == 0:
                return None
            else:
                for p in preds[block]:
                    if p not in seen:
                        seen.add(p)
                        stack.append(p)
        return _value_set_by(self.facts, found.pop()) if found else None


def _factor(facts: LoopFacts, body: set[int], entry: _Entry) -> Factor:
    written = Counter(r for i in body for r in facts.writes[i])
    steps = _inductions(facts.self_add, facts, body, written, entry)
    shifts = _inductions(facts.self_shift, facts, body, written, entry)
    if not steps and not shifts:
        return _UNKNOWN
    exits = entry.exiting()
    for i in sorted(body):
        compared = facts.compare[i]
        if compared is None or entry.cfg.block_of(i - entry.first) not in exits:
            continue  # a branch inside the body (an `if`), not the loop's exit test
        a, b, imm = compared
        for r, other in ((a, b), (b, a)):
            if r is not None and (r in steps or r in shifts) and (
                    other is None or written[other] == 0 or _recomputed(facts, body, written, other) is not None):
                return _trip_factor(facts, body, written, entry, steps, shifts, r, other, imm)
    return _UNKNOWN


def _inductions(by: list[int], facts: LoopFacts, body: set[int], written: Counter, entry: _Entry) -> dict[int, int]:
    """The registers the loop writes only by instructions with a nonzero ``by`` (self-adds or
    self-shifts) of one sign, each on every iteration where there are several: register -> the
    sum of their ``by``."""
    sites: dict[int, list[int]] = {}
    for i in body:
        if by[i] and len(facts.writes[i]) == 1:
            sites.setdefault(facts.writes[i][0], []).append(i)
    every = None
    found = {}
    for r, writes in sites.items():
        if len(writes) != written[r] or len({by[i] > 0 for i in writes}) > 1:
            continue
        if len(writes) > 1:
            every = entry.every_iteration() if every is None else every
            if any(entry.cfg.block_of(i - entry.first) not in every for i in writes):
                continue
        found[r] = sum(by[i] for i in writes)
    return found


def _recomputed(facts: LoopFacts, body: set[int], written: Counter, r: int) -> tuple[int | None, int] | None:
    """What the loop sets r to where its one write of r in the body is a constant or a register the
    loop does not write plus a constant (a loop-invariant bound recomputed each iteration); None if not."""
    if written[r] != 1:
        return None
    value = next(_value_set_by(facts, i) for i in body if r in facts.writes[i])
    return value if value is not None and (value[0] is None or written[value[0]] == 0) else None


def _trip_factor(facts: LoopFacts, body: set[int], written: Counter, entry: _Entry,
                 steps: dict[int, int], shifts: dict[int, int], r: int, bound_register: int | None,
                 imm: int | None) -> Factor:
    defs = entry.defs
    start = entry.value(r) or _only_value(facts, [i for i in defs.get(r, []) if i not in body])
    bound = (None, imm) if bound_register is None else _bound(facts, body, written, entry, bound_register) \
        or entry.value(bound_register) or _only_value(facts, defs.get(bound_register, []))
    if r in shifts:
        trips = _shift_trips(start, bound, shifts[r])
        return _UNKNOWN if trips is None else (0, float(trips))
    if start is not None and bound is not None and start[0] == bound[0] \
            and not any(start[0] in facts.writes[i] for i in body):
        return 0, float(max(1, math.ceil(abs(bound[1] - start[1]) / abs(steps[r]))))
    return 1, 1.0 / _unroll_factor(facts, body, {q: s for q, s in steps.items() if written[q] == 1})


def _shift_trips(start: tuple[int | None, int] | None, bound: tuple[int | None, int] | None, shift: int) -> int | None:
    """Trips of a register shifted by ``shift`` bits an iteration (< 0: right) from a constant
    start > 0 to a constant bound; None where either is not a constant or the shift cannot reach it."""
    if start is None or bound is None or start[0] is not None or bound[0] is not None or start[1] <= 0:
        return None
    first, last = start[1], bound[1]
    if last <= 0:  # shifted until it is zero: only a right shift gets there
        return (first.bit_length() - 1) // -shift + 1 if shift < 0 else None
    return max(1, math.ceil(abs(math.log2(last / first)) / abs(shift)))


def _bound(facts: LoopFacts, body: set[int], written: Counter, entry: _Entry, r: int) -> tuple[int | None, int] | None:
    """A bound the loop recomputes from an invariant register (`_recomputed`), as that register's
    value on entering the loop plus the constant; None where r is not such a bound."""
    value = _recomputed(facts, body, written, r)
    if value is None or value[0] is None:
        return value
    base = entry.value(value[0])
    return None if base is None else (base[0], base[1] + value[1])


def _unroll_factor(facts: LoopFacts, body: set[int], steps: dict[int, int]) -> int:
    """The largest k such that the loop accesses memory through an induction stepping k x u at
    k consecutive offsets of width u (1 if none)."""
    offsets: dict[tuple[int, int], set[int]] = {}
    for i in body:
        if facts.mem_width[i] and facts.mem_base[i] in steps:
            offsets.setdefault((facts.mem_base[i], facts.mem_width[i]), set()).add(facts.mem_offset[i])
    best = 1
    for (base, width), seen in offsets.items():
        k = len(seen)
        if k > best and abs(steps[base]) == k * width and max(seen) - min(seen) == (k - 1) * width:
            best = k
    return best


def _only_value(facts: LoopFacts, definitions: list[int]) -> tuple[int | None, int] | None:
    """The value a register's single definition sets, as (register or None, constant); None
    unless there is exactly one and it sets a constant or a register plus a constant."""
    return _value_set_by(facts, definitions[0]) if len(definitions) == 1 else None


def _value_set_by(facts: LoopFacts, i: int) -> tuple[int | None, int] | None:
    """What instruction i writes as (register or None, constant), None if neither form."""
    return (None, facts.constant[i]) if facts.constant[i] is not None else facts.add_imm[i]


def program_factors(facts: LoopFacts, functions: Sequence[Function],
                    cfgs: Sequence[FunctionCfg]) -> tuple[np.ndarray, np.ndarray]:
    """(power, scale) of every instruction of a program, function after function."""
    power: list[int] = []
    scale: list[float] = []
    lengths: list[int] = []  # of every block of every function: one repeat for all
    for f, cfg in zip(functions, cfgs):
        p, s = block_factors(cfg, loop_factors(facts, f.first, f.count, cfg))
        power.extend(p)
        scale.extend(s)
        lengths.extend(cfg.block_lengths(f.count))
    return (np.repeat(np.asarray(power, dtype=np.int32), lengths),
            np.repeat(np.asarray(scale, dtype=np.float64), lengths))
