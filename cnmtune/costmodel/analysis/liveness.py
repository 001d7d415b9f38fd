"""Register liveness over a decoded rv32i program: what each instruction reads and writes, and
which registers are live after it.

A backward dataflow over each function's CFG, on bit masks (x0 never counts). A direct call
reads the argument registers its callee reads before writing them: the least fixpoint of every
function's liveness at its entry over the call graph. An ecall reads a0..a2 and a7
(cnm_ecall.h's services take at most three arguments); an indirect call is taken to read all
of a0..a7. A call clobbers the caller-saved registers; a return reads the results and what the
caller preserved (ilp32).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from cnmtune.costmodel.analysis.calls import CallSite
from cnmtune.costmodel.analysis.cfg import FunctionCfg
from cnmtune.costmodel.analysis.rv32_isa import (OP_AUIPC, OP_BRANCH, OP_IMM, OP_JAL, OP_JALR, OP_LOAD, OP_LUI,
                                                 OP_REG, OP_STORE, OP_SYSTEM)
from cnmtune.costmodel.analysis.rv32_program import Program

RA = 1
_ALL = (1 << 32) - 2  # every register but x0
_ARGS = sum(1 << r for r in range(10, 18))  # a0..a7
_ECALL_ARGS = sum(1 << r for r in (10, 11, 12, 17))  # a0..a2 and the service number in a7
_CALLER_SAVED = sum(1 << r for r in (1, 5, 6, 7, *range(10, 18), *range(28, 32)))
# what the caller still reads after a return or a jump out: ra, sp, gp, tp and s0..s11 (ilp32)
_PRESERVED = sum(1 << r for r in (1, 2, 3, 4, 8, 9, *range(18, 28)))
_RETURN_VALUES = (1 << 10) | (1 << 11)  # a0, a1


@dataclass(frozen=True)
class RegisterFlow:
    """Per instruction, as bit masks over x1..x31: the registers it reads (a direct call: the
    arguments its callee reads), the registers it writes, and those live after it (0 outside
    functions)."""

    uses: list[int]
    defs: list[int]
    live_after: list[int]


def register_flow(program: Program, cfgs: tuple[FunctionCfg, ...], sites: list[CallSite]) -> RegisterFlow:
    """The reads, writes and liveness of every instruction of ``program`` (its functions' CFGs
    ``cfgs`` and call sites ``sites``)."""
    liveness = _Liveness(program, cfgs, sites)
    return RegisterFlow(liveness.uses, liveness.defs, liveness.after())


class _Liveness:
    """The registers live after every instruction of a program (backward dataflow over each
    function's CFG, as bit masks; x0 never counts). A direct call reads the argument registers
    its callee reads before writing them: the least fixpoint of every function's liveness at its
    entry over the call graph. Any other call reads a0..a7."""

    def __init__(self, program: Program, cfgs: tuple[FunctionCfg, ...], sites: list[CallSite]):
        self.blocks = [cfg.block_ranges(fn.first, fn.count) for fn, cfg in zip(program.functions, cfgs)]
        self.succs = [cfg.successors() for cfg in cfgs]
        self.preds = [cfg.preds for cfg in cfgs]
        f = program.fields
        self.uses, self.defs, self.call_base = _effects(f.opcode, f.rd, f.rs1, f.rs2)
        self.live_in: list[list[int]] = [[] for _ in self.blocks]
        self._solve_with_call_reads(program, sites)

    def _solve_with_call_reads(self, program: Program, sites: list[CallSite]) -> None:
        """Direct calls start reading nothing; a function whose entry liveness grows passes it to
        its call sites and its callers are solved again, until nothing changes."""
        callers: dict[int, list[int]] = {}
        for site in sites:
            if site.callee_function is not None and site.exact and site.index in self.call_base:
                callers.setdefault(site.callee_function, []).append(site.index)
                self.uses[site.index] = self.call_base[site.index]
        entry = [0] * len(self.blocks)
        pending = set(range(len(self.blocks)))
        while pending:
            k = pending.pop()
            self.live_in[k] = self._solve(k)
            reads = self.live_in[k][0] & _ARGS if self.blocks[k] else 0
            if reads != entry[k]:
                entry[k] = reads
                for i in callers.get(k, ()):
                    self.uses[i] = self.call_base[i] | reads
                    pending.add(int(program.function_of[i]))

    def _solve(self, k: int) -> list[int]:
        """Live-in of each block of function ``k`` (a worklist over block summaries)."""
        blocks, succs, preds = self.blocks[k], self.succs[k], self.preds[k]
        uses, defs = self.uses, self.defs
        gen, kill = [0] * len(blocks), [0] * len(blocks)
        for b, (start, end) in enumerate(blocks):
            g = d = 0
            for i in range(end - 1, start - 1, -1):
                g = (g & ~defs[i]) | uses[i]
                d |= defs[i]
            gen[b], kill[b] = g, d
        live_in = [0] * len(blocks)
        work, queued = list(range(len(blocks))), [True] * len(blocks)
        while work:
            b = work.pop()
            queued[b] = False
            out = 0
            for s in succs[b]:
                out |= live_in[s]
            new = gen[b] | (out & ~kill[b])
            if new != live_in[b]:
                live_in[b] = new
                for p in preds[b]:
                    if not queued[p]:
                        queued[p] = True
                        work.append(p)
        return live_in

    def after(self) -> list[int]:
        """Registers live after each instruction (0 outside functions)."""
        after = [0] * len(self.uses)
        uses, defs = self.uses, self.defs
        for k, blocks in enumerate(self.blocks):
            live_in, succs = self.live_in[k], self.succs[k]
            for b, (start, end) in enumerate(blocks):
                live = 0
                for s in succs[b]:
                    live |= live_in[s]
                for i in range(end - 1, start - 1, -1):
                    after[i] = live
                    live = (live & ~defs[i]) | uses[i]
        return after


def _effects(opcodes: Sequence[int], rds: Sequence[int], rs1s: Sequence[int],
             rs2s: Sequence[int]) -> tuple[list[int], list[int], dict[int, int]]:
    """Registers each instruction reads and writes, as bit masks (a call reading a0..a7), and per
    call, what it reads besides its arguments."""
    bit = lambda r: (1 << r) & _ALL  # noqa: E731
    uses, defs, call_base = [], [], {}
    for i, (op, rd, rs1, rs2) in enumerate(zip(opcodes, rds, rs1s, rs2s)):
        if op == OP_REG:
            u, d = bit(rs1) | bit(rs2), bit(rd)
        elif op in (OP_IMM, OP_LOAD):
            u, d = bit(rs1), bit(rd)
        elif op in (OP_STORE, OP_BRANCH):
            u, d = bit(rs1) | bit(rs2), 0
        elif op in (OP_LUI, OP_AUIPC):
            u, d = 0, bit(rd)
        elif op in (OP_JAL, OP_JALR) and rd == RA:  # a call: reads its arguments, clobbers caller-saved
            call_base[i] = bit(rs1) if op == OP_JALR else 0
            u, d = call_base[i] | _ARGS, _CALLER_SAVED
        elif op == OP_JALR and rs1 == RA and rd == 0:  # return: the result and what the caller preserved
            u, d = _RETURN_VALUES | _PRESERVED, 0
        elif op == OP_JALR:  # a tail call or an indirect jump: arguments and preserved registers
            call_base[i] = _PRESERVED | bit(rs1)
            u, d = call_base[i] | _ARGS, bit(rd)
        elif op == OP_SYSTEM:  # ecall: a service reads its arguments and answers in a0
            u, d = _ECALL_ARGS, 1 << 10
        else:
            u, d = 0, bit(rd)
        uses.append(u)
        defs.append(d)
    return uses, defs, call_base
