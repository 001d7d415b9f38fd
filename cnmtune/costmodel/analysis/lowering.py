"""The DPU lowering model: the DPU instructions the UPMEM compiler would emit for a proxy binary.

The proxy executes rv32i, a DPU what the UPMEM compiler emits, and the two streams differ
where the DPU ISA does more per instruction: an ALU op carries a condition and a jump target,
a compare-and-jump takes a register or an immediate, ``lsl_add``/``lsl_sub``/``lsr_add`` shift
and add (subtract), a 32-bit constant is one ``move``, and a 64-bit add or subtract keeps its
carry in the flags (``addc``/``subc``). They differ in names too: the SDK writes a constant or a
register copy as ``move``, a branch on zero as ``jz``/``jnz``, ``x > k`` as ``jgts``/``jgtu``
where rv32i swaps the operands of ``blt``, and ``0 - x`` as ``neg``. And the SDK inlines three
runtime calls the proxy makes: ``mram_read``/``mram_write`` are one ``ldma``/``sdma`` (four
instructions when the size is not a constant), ``me()`` reads the thread-id register
(``BUILTINS``); their wrappers' bodies are no code of the DPU's.

``lower(program)`` walks every basic block of a decoded rv32i program and gives each
instruction the DPU instructions it stands for in its context and the DPU mnemonic the SDK's
objdump prints for it: 1 where the DPU does the same work in one instruction, 0 where another
instruction absorbs it (the rules, with their sources and status, are in
cnmtune.costmodel.analysis.lowering_rules). A fusion pairs an instruction with the next reader of
what it writes in the same block, so the compiler's interleaving does not hide it; a temporary
is only fused away when it is dead afterwards, by the register liveness of
cnmtune.costmodel.analysis.liveness.

Not modelled (rv32i and DPU counts are taken as equal there): multiplies of 8- and 16-bit
operands, which the DPU does inline on its 8x8 multipliers (1 instruction for int8 x int8, 7 for
int8 x int16, DPU_CODEGEN.md §2) where the proxy calls __mulsi3 (N+7 instructions, N the bit
length of the smaller operand): such a kernel is over-charged by up to 14 instructions per
multiply; no kernel of the suite has one (at -O2 every __mulsi3 operand comes from lw, addi, slli
or or, none from a byte or half-word load). A constant rv32i builds with lui (and addi) for one
ALU op stays a move and the op, where the DPU's 32-bit immediate could hold it; me()'s result
stays a copy where the SDK writes the thread id into its final register; mutex_lock and
mutex_unlock, inline acquire/release in the SDK's mutex.h, stay calls. The runtime routines' bodies are priced by their
UPMEM cost, not lowered (cnmtune.runtime.sim.config). A 64-bit compare-and-branch is left
one-to-one on purpose: either path runs two rv32i branches, as many as the DPU's sub + subc with
a condition.
"""

from __future__ import annotations

import hashlib
import threading
from collections import Counter, OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType

import numpy as np

from cnmtune.costmodel.analysis.buffers import argument_sizes
from cnmtune.costmodel.analysis.calls import CallSite, call_sites
from cnmtune.costmodel.analysis.cfg import FunctionCfg, loop_depths
from cnmtune.costmodel.analysis.liveness import RA, RegisterFlow, register_flow
from cnmtune.costmodel.analysis.lowering_rules import INLINE_CALL_RULES, RULES, SINGLE_RULES
from cnmtune.costmodel.analysis.rv32_isa import (OP_AUIPC, OP_BRANCH, OP_IMM, OP_JAL, OP_JALR, OP_LOAD, OP_LUI,
                                                 OP_REG, OP_STORE)
from cnmtune.costmodel.analysis.elf import ElfImage, load_elf, read_source
from cnmtune.costmodel.analysis.program import KERNEL, RUNTIME
from cnmtune.costmodel.analysis.rv32_program import Program, decode_rv32
from cnmtune.dpu.slots import DpuSlots

#: Version of what the lowering computes (this module and its rule table): DpuConfig.hash
#: includes it, so times simulated under another lowering are not taken for current ones. Give it
#: a new name whenever any ELF's slots, mnemonics or rules change; a refactor that changes none
#: keeps it. tests/costmodel/analysis/test_lowering.py holds the lowering of five kernels to it.
LOWERING_VERSION = "lowering-sdk-vocabulary-1"

_DPU_NAME = {"addi": "add", "add": "add", "sub": "sub", "andi": "and", "and": "and", "ori": "or", "or": "or",
             "xori": "xor", "xor": "xor", "slli": "lsl", "sll": "lsl", "srli": "lsr", "srl": "lsr",
             "srai": "asr", "sra": "asr", "lb": "lbs", "lbu": "lbu", "lh": "lhs", "lhu": "lhu", "lw": "lw",
             "sb": "sb", "sh": "sh", "sw": "sw", "beq": "jeq", "bne": "jneq", "blt": "jlts", "bge": "jges",
             "bltu": "jltu", "bgeu": "jgeu", "slt": "sub", "sltu": "sub", "slti": "sub", "sltiu": "sub",
             "ecall": "call", "ebreak": "fault", "fence": "nop"}
_SET_LESS = {"slt": "jlts", "sltu": "jltu", "slti": "jlts", "sltiu": "jltu"}
_SET_GREATER_EQUAL = {"slt": "jges", "sltu": "jgeu", "slti": "jges", "sltiu": "jgeu"}
# a compare-and-jump whose first rv32 operand is the constant: the DPU compares the register with it
_SWAPPED = {"blt": "jgts", "bge": "jles", "bltu": "jgtu", "bgeu": "jleu", "beq": "jeq", "bne": "jneq"}
_ZERO_JUMP = {"beq": "jz", "bne": "jnz"}
_BRANCHES = frozenset(_SWAPPED)
#: Immediate ranges of the DPU forms the fusions produce (encoding table: ADDrrici holds 8 bits,
#: JEQrii ... JGTUrii 11), signed.
_CONDITION_IMMEDIATE = range(-128, 128)
_COMPARE_IMMEDIATE = range(-1024, 1024)

#: DPU runtime functions the SDK inlines: callee -> (lowering rule with a constant size, rule
#: without, argument registers the builtin reads). mram_read(from, to, n) and mram_write(from, to,
#: n) take a0, a1, a2 (n the size); me() none.
BUILTINS: dict[str, tuple[str, str, tuple[int, ...]]] = {
    "mram_read": ("inline-dma", "inline-dma-length", (10, 11, 12)),
    "mram_write": ("inline-dma", "inline-dma-length", (10, 11, 12)),
    "me": ("inline-me", "inline-me", ()),
}
_DMA_NAME = {"mram_read": "ldma", "mram_write": "sdma"}
_SIZE = 12  # a2: the byte count of mram_read and mram_write


@dataclass(frozen=True)
class Lowering:
    """Per rv32i instruction: the DPU instructions it stands for, its DPU mnemonic ('' when a
    neighbour absorbs it) and the rule that decided."""

    slots: np.ndarray  # int8
    mnemonics: tuple[str, ...]
    rules: tuple[str, ...]

    def dpu_instructions(self, i: int) -> list[str]:
        """The DPU mnemonics rv32i instruction ``i`` stands for, one per DPU instruction (a
        mnemonic 'a+b' is one of each; none where a neighbour absorbs it)."""
        return _expand(self.mnemonics[i], int(self.slots[i]))

    def program_instructions(self) -> list[str]:
        """The DPU mnemonics of the whole program in order: ``dpu_instructions`` of every rv32i
        instruction, concatenated."""
        out: list[str] = []
        for name, count in zip(self.mnemonics, self.slots.tolist()):
            if count:
                out.extend(_expand(name, count))
        return out

    def histogram(self, mask: np.ndarray | None = None) -> dict[str, int]:
        """DPU mnemonic -> DPU instructions, over the instructions of ``mask`` (default: all)."""
        counts: Counter[str] = Counter()
        for i in (range(len(self.slots)) if mask is None else np.flatnonzero(mask).tolist()):
            counts.update(self.dpu_instructions(i))
        return dict(counts)

    def inlined(self, i: int) -> bool:
        """Whether the call at ``i`` is one the SDK inlines (mram_read, mram_write, me): no call on
        the DPU."""
        return self.rules[i] in INLINE_CALL_RULES


def _expand(mnemonic: str, count: int) -> list[str]:
    """`count` DPU instructions named by `mnemonic` ('a+b': one of each)."""
    parts = mnemonic.split("+")
    return parts if len(parts) == count else [mnemonic] * count


def lower(program: Program, cfgs: tuple[FunctionCfg, ...] | None = None,
          sites: Sequence[CallSite] | None = None, sizes: Mapping[int, int] | None = None) -> Lowering:
    """Lower every instruction of ``program`` (its functions' CFGs: ``cfgs``, its
    ``call_sites(program, cfgs)``: ``sites``, and their ``argument_sizes``: ``sizes``; each
    computed if absent)."""
    if cfgs is None:
        cfgs = loop_depths(program)[1]
    if sites is None:
        sites = call_sites(program, cfgs)
    if sizes is None:
        sizes = argument_sizes(program, cfgs, sites)
    work = _Lowerer(program, register_flow(program, cfgs, sites))
    for function, cfg in zip(program.functions, cfgs):
        for start, end in cfg.block_ranges(function.first, function.count):
            work.fuse_block(start, end)
        work.index_induction(function.first, function.first + function.count)
    work.inline_builtins(cfgs, sites, sizes)
    return Lowering(work.slots, tuple(name if s else "" for name, s in zip(work.names, work.slots)),
                    tuple(work.rules))


def _single(program: Program, i: int) -> tuple[str, str]:
    """The DPU mnemonic of instruction ``i`` on its own, and the rule that names it."""
    f, mnemonic = program.fields, program.mnemonics[i]
    op, rd, rs1, rs2 = f.opcode[i], f.rd[i], f.rs1[i], f.rs2[i]
    if op in (OP_JAL, OP_JALR):
        return ("call" if rd != 0 else "jump"), "one-to-one"
    if mnemonic == "addi" and rd == 0:
        return "nop", "one-to-one"
    if op in (OP_LUI, OP_AUIPC) or (mnemonic == "addi" and (rs1 == 0 or f.imm_i[i] == 0)):
        return "move", "move"
    if mnemonic == "sub" and rs1 == 0:
        return "neg", "neg"
    if mnemonic == "xori" and f.imm_i[i] == -1:
        return "not", "not"
    if mnemonic in _SET_LESS:
        return "sub", "set-compare"
    if op == OP_BRANCH and 0 in (rs1, rs2) and rs1 != rs2:
        if mnemonic in _ZERO_JUMP:
            return _ZERO_JUMP[mnemonic], "zero-jump"
        if rs1 == 0 and mnemonic in ("bltu", "bgeu"):  # 0 < r is r != 0, 0 >= r is r == 0
            return ("jnz" if mnemonic == "bltu" else "jz"), "zero-jump"
        if rs1 == 0:
            return _SWAPPED[mnemonic], "swapped-compare"
    return _DPU_NAME.get(mnemonic, mnemonic), "one-to-one"


class _Lowerer:
    """One program's lowering in progress: per instruction its DPU slots, mnemonic and rule."""

    def __init__(self, program: Program, flow: RegisterFlow):
        self.program, self.f, self.m, self.flow = program, program.fields, program.mnemonics, flow
        self.slots = np.where(program.padding, 0, 1).astype(np.int8)
        named = [_single(program, i) for i in range(len(program.mnemonics))]
        self.names = [name for name, _ in named]
        self.rules = [rule for _, rule in named]

    def free(self, k: int) -> bool:
        """Whether instruction ``k`` is one DPU instruction of its own, no rule's member yet."""
        return self.rules[k] in SINGLE_RULES and self.slots[k] == 1

    def apply(self, rule: str, members: tuple[int, ...], name: str | None = None) -> None:
        """Charge the rule's DPU instructions to the members of its pattern, in order; ``name``
        is the DPU mnemonic of the member that carries the fused instruction."""
        for index, charge in zip(members, RULES[rule].slots, strict=True):
            self.slots[index] = charge
            self.rules[index] = rule
            if charge and name is not None:
                self.names[index] = name

    def dead_after(self, k: int, reg: int) -> bool:
        """Whether ``reg`` is dead after instruction ``k``."""
        return not (self.flow.live_after[k] >> reg) & 1

    def next_reader(self, i: int, end: int, reg: int) -> int | None:
        """The first instruction of (i, end) that reads ``reg``, or None if one writes it first or
        none reads it."""
        uses, defs, bit = self.flow.uses, self.flow.defs, 1 << reg
        for k in range(i + 1, end):
            if uses[k] & bit:
                return k
            if defs[k] & bit:
                return None
        return None

    def kept(self, i: int, j: int, *regs: int) -> bool:
        """Whether no instruction of (i, j) writes any of ``regs``."""
        mask = sum({1 << r for r in regs if r})
        defs = self.flow.defs
        return not any(defs[k] & mask for k in range(i + 1, j))

    def fuse_block(self, start: int, end: int) -> None:
        """Apply the fusion rules to the instructions [start, end) of one basic block."""
        f = self.f
        for i in range(start, end - 1):
            if f.rd[i] and f.opcode[i] in (OP_REG, OP_IMM, OP_LUI, OP_AUIPC) and self.free(i):
                self._fuse_from(i, end)
        self._fuse_carries(start, end)
        self._fuse_shift_pairs(start, end)
        self._fuse_pairs(start, end)

    def _fuse_from(self, i: int, end: int) -> None:
        """The fusions that start at instruction ``i``: the next reader of what it writes."""
        f, m, t = self.f, self.m, self.f.rd[i]
        j = self.next_reader(i, end, t)
        if j is None or not self.free(j):
            return
        if f.opcode[i] == OP_AUIPC and f.opcode[j] == OP_JALR and f.rs1[j] == t and f.rd[j] in (0, RA) \
                and j == i + 1:
            self.apply("call", (i, j))  # a call, or a tail call (jalr x0): the DPU's call r23, f / jump f
        elif m[i] == "lui" and m[j] == "addi" and f.rd[j] == t == f.rs1[j]:
            self.apply("constant", (i, j))
        elif m[i] in ("slli", "srli") and m[j] in ("add", "sub") and f.rs1[j] != f.rs2[j]:
            self._shift_and_add(i, j)
        elif m[i] in _SET_LESS and m[j] in _ZERO_JUMP and 0 in (f.rs1[j], f.rs2[j]) and self.dead_after(j, t) \
                and self.kept(i, j, f.rs1[i], f.rs2[i] if m[i] in ("slt", "sltu") else 0) \
                and (m[i] in ("slt", "sltu") or f.imm_i[i] in _COMPARE_IMMEDIATE):
            self.apply("compare-jump", (i, j), _compare_jump_name(self.program, i, m[j] == "bne"))
        elif m[i] == "addi" and f.rs1[i] == 0 and m[j] in _BRANCHES and 0 not in (f.rs1[j], f.rs2[j]) \
                and f.rs1[j] != f.rs2[j] and f.imm_i[i] in _COMPARE_IMMEDIATE and self.dead_after(j, t):
            self.apply("compare-immediate", (i, j), _compare_immediate_name(self.program, i, j))
        elif j == end - 1 and m[j] in _ZERO_JUMP and 0 in (f.rs1[j], f.rs2[j]) and m[i] not in _SET_LESS:
            self._alu_condition(i, j)

    def _shift_and_add(self, i: int, j: int) -> None:
        """slli/srli t, x, k whose next reader adds (subtracts) t: lsl_add, lsr_add (lsl_sub). The
        DPU instruction goes where the add is (x unchanged until then) or where the shift is (the
        other operand unchanged, the destination untouched until the add)."""
        f, m, t = self.f, self.m, self.f.rd[i]
        y = f.rs1[j] if f.rs2[j] == t else f.rs2[j]
        subtract = m[j] == "sub"
        if (subtract and (f.rs2[j] != t or m[i] != "slli")) or not (f.rd[j] == t or self.dead_after(j, t)):
            return
        at_add = self.kept(i, j, f.rs1[i])
        at_shift = self.kept(i, j, y, f.rd[j]) and self.next_reader(i, j + 1, f.rd[j]) in (j, None)
        if at_add or at_shift:
            rule = "lsl-sub" if subtract else ("lsl-add" if m[i] == "slli" else "lsr-add")
            self.apply(rule, (i, j), rule.replace("-", "_"))

    def _alu_condition(self, i: int, j: int) -> None:
        """An ALU op whose result the block's closing branch compares with zero: the DPU op carries
        the condition and the target, placed last (its sources unchanged until the branch)."""
        f, op = self.f, self.f.opcode[i]
        shift = self.m[i] in ("slli", "srli", "srai")
        if (op == OP_REG and self.kept(i, j, f.rs1[i], f.rs2[i])) \
                or (op == OP_IMM and self.kept(i, j, f.rs1[i]) and (shift or f.imm_i[i] in _CONDITION_IMMEDIATE)):
            self.apply("alu-condition", (i, j))

    def _fuse_carries(self, start: int, end: int) -> None:
        """64-bit add/sub on register pairs: the carry (borrow) that sltu computes and the high word
        adds (subtracts) is the DPU's addc (subc) flag. The high word's own add may sit anywhere in
        the block, before or after the low word's."""
        f, m = self.f, self.m
        for i in range(start, end):
            if m[i] != "sltu" or not self.free(i) or not f.rd[i]:
                continue
            c, a, b = f.rd[i], f.rs1[i], f.rs2[i]
            # carry: the low add s = x + y earlier in the block, and sltu c, s, x|y
            low = self._last_def(start, i, a)
            kind = "carry" if low is not None and m[low] == "add" and b != a and b in (f.rs1[low], f.rs2[low]) \
                and self._last_def(low + 1, i, b) is None else "borrow"
            if kind == "borrow":  # sltu c, a, b and the low sub s = a - b in the same block
                low = next((k for k in range(i + 1, end) if m[k] == "sub" and (f.rs1[k], f.rs2[k]) == (a, b)), None)
            use = next((k for k in range(i + 1, end) if c in (f.rs1[k], f.rs2[k])), None)
            op = "add" if kind == "carry" else "sub"
            if low is None or use is None or m[use] != op or (f.rd[use] != c and not self.dead_after(use, c)):
                continue
            members = (low, i, use) if kind == "carry" else (i, low, use)
            if not all(self.free(k) for k in members):  # already part of another pattern
                continue
            self.apply(kind, members)
            high = next((k for k in range(use - 1, start - 1, -1) if k not in members and m[k] == op
                         and f.rd[k] in (f.rs1[use], f.rs2[use])), None)
            if high is not None:
                self.names[high] = op + "c"

    def _fuse_shift_pairs(self, start: int, end: int) -> None:
        """A 64-bit shift by a constant k joins the two words with or: (lo >> k) | (hi << (32 - k))
        (or the mirror for a left shift). The bits are disjoint, so or is add and the shift folds
        into it: lsl_add (lsr_add)."""
        f, m = self.f, self.m
        opposite = {"slli": "srli", "srli": "slli"}
        for j in range(start, end):
            if m[j] != "or" or not self.free(j) or f.rs1[j] == f.rs2[j]:
                continue
            for t, y in ((f.rs2[j], f.rs1[j]), (f.rs1[j], f.rs2[j])):
                i, other = self._last_def(start, j, t), self._last_def(start, j, y)
                if i is None or other is None or not t or not self.free(i) \
                        or m[i] not in opposite or m[other] != opposite[m[i]] \
                        or f.imm_i[i] % 32 + f.imm_i[other] % 32 != 32 \
                        or (f.rd[j] != t and not self.dead_after(j, t)):
                    continue
                self.apply("shift-join", (i, j), "lsl_add" if m[i] == "slli" else "lsr_add")
                break

    def _last_def(self, start: int, end: int, reg: int) -> int | None:
        """The last instruction of [start, end) that writes ``reg``, or None."""
        f = self.f
        return next((k for k in range(end - 1, start - 1, -1)
                     if f.rd[k] == reg and f.opcode[k] not in (OP_BRANCH, OP_STORE)), None)

    def _fuse_pairs(self, start: int, end: int) -> None:
        """Two 32-bit loads (stores) of the words of one 8-aligned double word are one ld (sd)."""
        f, m = self.f, self.m
        for i in range(start, end - 1):
            j = i + 1
            if m[i] != m[j] or m[i] not in ("lw", "sw") or not self.free(i) or not self.free(j):
                continue
            offset = f.imm_i if m[i] == "lw" else f.imm_s
            if f.rs1[i] != f.rs1[j] or abs(offset[i] - offset[j]) != 4 or min(offset[i], offset[j]) % 8:
                continue
            if m[i] == "lw" and f.rs1[i] in (f.rd[i], f.rd[j]):  # the base is overwritten by the pair
                continue
            self.apply("pair", (i, j), "ld" if m[i] == "lw" else "sd")

    def index_induction(self, first: int, end: int) -> None:
        """A loop that walks a pointer and exits on comparing it: the DPU loop counts an index and
        forms each address with lsl_add, one instruction more per iteration."""
        f, m = self.f, self.m
        for j in range(first, end):
            if f.opcode[j] != OP_BRANCH or f.imm_b[j] >= 0 or not self.free(j):
                continue
            top = j + f.imm_b[j] // 4
            if top < first:
                continue
            body = range(top, j)
            for p, q in ((f.rs1[j], f.rs2[j]), (f.rs2[j], f.rs1[j])):
                writes = [k for k in body if f.rd[k] == p and f.opcode[k] not in (OP_BRANCH, OP_STORE)]
                if not p or not q or len(writes) != 1 or any(f.rd[k] == q for k in body):
                    continue
                step = writes[0]
                walks = m[step] == "addi" and f.rs1[step] == p and f.imm_i[step] and self.free(step)
                if walks and any(f.opcode[k] in (OP_LOAD, OP_STORE) and f.rs1[k] == p for k in body):
                    self.apply("index-induction", (step,), "add+lsl_add")
                    break

    def inline_builtins(self, cfgs: tuple[FunctionCfg, ...], sites: Sequence[CallSite],
                        sizes: Mapping[int, int]) -> None:
        """The runtime calls the SDK inlines (BUILTINS): each call site becomes the builtin's DPU
        code (with the constant size of a DMA in ``sizes``), the argument copies it makes
        unnecessary vanish, and the wrappers' bodies cost nothing (the ecall in them is the
        simulator's service, priced apart)."""
        program = self.program
        builtin = {k for k, fn in enumerate(program.functions)
                   if fn.name in BUILTINS and (fn.region == RUNTIME or not program.regions_known)}
        calls = [s for s in sites if s.exact and s.callee_function in builtin and s.index > 0
                 and self.rules[s.index] == "call" == self.rules[s.index - 1]]
        for site in calls:
            constant, variable, arguments = BUILTINS[site.callee]
            dpu = _DMA_NAME.get(site.callee, "move")
            if site.index in sizes or not arguments:
                self.apply(constant, (site.index - 1, site.index), dpu)
            else:
                self.apply(variable, (site.index - 1, site.index), f"move+lsr_add+lsl_add+{dpu}")
            function = program.function_at(site.index)
            cfg = cfgs[int(program.function_of[site.index])]
            leader = function.first + cfg.leaders[cfg.block_of(site.index - function.first)]
            self._drop_operand_copies(leader, site.index, arguments, site.index in sizes)
        for k in builtin:
            fn = program.functions[k]
            for i in range(fn.first, fn.first + fn.count):
                self.apply("inlined-body", (i,))

    def _drop_operand_copies(self, leader: int, call: int, arguments: tuple[int, ...], constant_size: bool) -> None:
        """The mv (and a constant size's li) in the call's block, from ``leader`` on, that only feed
        an inlined builtin's arguments."""
        f = self.f
        for reg in arguments:
            k = self._last_def(leader, call - 1, reg)
            if k is None or not self.free(k) or self.m[k] != "addi" or self.next_reader(k, call + 1, reg) != call:
                continue
            copy = f.imm_i[k] == 0 and f.rs1[k] != 0 and self.kept(k, call, f.rs1[k])
            if copy or (reg == _SIZE and constant_size and f.rs1[k] == 0):
                self.apply("builtin-operand", (k,))


def _compare_jump_name(program: Program, i: int, taken_if_set: bool) -> str:
    """The compare-and-jump of slt* t, ... at ``i`` and a branch taken when t is set (bnez t) or
    clear (beqz t): seqz and snez are jumps on zero."""
    f, mnemonic = program.fields, program.mnemonics[i]
    if (mnemonic == "sltiu" and f.imm_i[i] == 1) or (mnemonic == "sltu" and f.rs1[i] == 0):
        zero_is_set = mnemonic == "sltiu"  # seqz t, a: t = (a == 0); snez t, b: t = (b != 0)
        return "jz" if zero_is_set == taken_if_set else "jnz"
    return (_SET_LESS if taken_if_set else _SET_GREATER_EQUAL)[mnemonic]


def _compare_immediate_name(program: Program, i: int, j: int) -> str:
    """The compare-and-jump of the branch ``j`` comparing a register with the constant li'd at ``i``."""
    f, branch = program.fields, program.mnemonics[j]
    if f.imm_i[i] == 0 and branch in _ZERO_JUMP:
        return _ZERO_JUMP[branch]
    return _SWAPPED[branch] if f.rs1[j] == f.rd[i] else _DPU_NAME[branch]


@dataclass(frozen=True)
class LoweredElf:
    """A proxy ELF decoded and lowered: its image, program, loop depths, CFGs, call sites and
    lowering (what the simulator's charges, the IRAM rule and the cost model's features all read)."""

    image: ElfImage
    program: Program
    depth: np.ndarray
    cfgs: tuple[FunctionCfg, ...]
    sites: tuple[CallSite, ...]
    sizes: Mapping[int, int]  # argument_sizes: constant DMA and mem_alloc sizes by call site
    lowering: Lowering


# The last few ELFs' lowerings, by content: a compile lowers its ELF for the IRAM rule, and the
# features read the same lowering just after.
_LOWERED_KEEP = 8
_lowered: OrderedDict[str, LoweredElf] = OrderedDict()
_lowered_lock = threading.Lock()


def lowered_elf(source: str | Path | bytes, name: str | None = None) -> LoweredElf:
    """Load, decode and lower a proxy ELF (a path or its bytes), once per content for the last
    few ELFs (read-only arrays)."""
    data, label = read_source(source, name)
    digest = hashlib.sha256(data).hexdigest()
    with _lowered_lock:
        if (hit := _lowered.get(digest)) is not None:
            _lowered.move_to_end(digest)
            return hit
    image = load_elf(data, label)
    program = decode_rv32(image)
    depth, cfgs = loop_depths(program)
    sites = tuple(call_sites(program, cfgs))
    sizes = MappingProxyType(argument_sizes(program, cfgs, sites))  # read-only, as the arrays
    result = LoweredElf(image, program, depth, cfgs, sites, sizes, lower(program, cfgs, sites, sizes))
    for array in (depth, result.lowering.slots):
        array.setflags(write=False)
    with _lowered_lock:
        _lowered[digest] = result
        while len(_lowered) > _LOWERED_KEEP:
            _lowered.popitem(last=False)
    return result


def dpu_slots(source: str | Path | bytes, name: str | None = None) -> DpuSlots:
    """The value the simulator charges and the IRAM rule counts: per .text word, its lowered DPU
    instructions, and the lowered DPU instructions of kernel + runtime."""
    lowered = lowered_elf(source, name)
    slots = lowered.lowering.slots
    return DpuSlots(weights=slots, iram_instructions=int(slots[_masks(lowered.program)[1]].sum()))


def _masks(program: Program) -> tuple[np.ndarray, np.ndarray]:
    """The kernel's and IRAM's (kernel + runtime) instructions, alignment padding excluded."""
    region = np.array([f.region for f in program.functions])[program.function_of]
    live = ~program.padding
    return live & (region == KERNEL), live & ((region == KERNEL) | (region == RUNTIME))


def lowered_summary(source: str | Path | bytes, name: str | None = None) -> dict:
    """A proxy ELF as DPU code: rv32i and lowered DPU instruction counts of the kernel and of
    IRAM (kernel + runtime), the kernel's DPU-mnemonic histogram and how often each rule applied."""
    lowered = lowered_elf(source, name)
    program, low = lowered.program, lowered.lowering
    kernel, iram = _masks(program)
    return {"kernel_rv32_instructions": int(kernel.sum()), "kernel_dpu_instructions": int(low.slots[kernel].sum()),
            "iram_rv32_instructions": int(iram.sum()), "iram_dpu_instructions": int(low.slots[iram].sum()),
            "kernel_histogram": low.histogram(kernel),
            "rules": dict(Counter(r for r, k in zip(low.rules, kernel.tolist()) if k))}
