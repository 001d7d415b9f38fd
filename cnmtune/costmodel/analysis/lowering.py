"""The DPU lowering model: the DPU instructions the UPMEM compiler would emit for a proxy binary.

The proxy executes rv32i, a DPU what the UPMEM compiler emits, and the two streams differ
where the DPU ISA does more per instruction: an ALU op carries a condition and a jump target,
a compare-and-jump takes a register or an immediate, ``lsl_add``/``lsl_sub``/``lsr_add`` shift
and add (subtract), a 32-bit
constant is one ``move``, and a 64-bit add or subtract keeps its carry in the flags
(``addc``/``subc``). ``lower(program)`` walks every basic block of a decoded rv32i program and
gives each instruction the DPU instructions it stands for in its context: 1 where the DPU does
the same work in one instruction, 0 where a neighbour absorbs it (the rules, with their sources
and status, are in cnmtune.costmodel.analysis.lowering_rules). A temporary is only fused away
when it is dead afterwards, by the register liveness of cnmtune.costmodel.analysis.liveness.

Not modelled (rv32i and DPU counts are taken as equal there): multiplies of 8- and 16-bit
operands, which the DPU does inline on its 8x8 multipliers (1 instruction for int8 x int8, 7 for
int8 x int16, DPU_CODEGEN.md §2) where the proxy calls __mulsi3 (N+7 instructions, N the bit
length of the smaller operand): such a kernel is over-charged by up to 14 instructions per
multiply; no kernel of the suite has one (at -O2 every __mulsi3 operand comes from lw, addi, slli
or or, none from a byte or half-word load). The runtime
routines' bodies are priced by their UPMEM cost, not lowered (cnmtune.runtime.sim.config). A
64-bit compare-and-branch is left one-to-one on purpose: either path runs two rv32i branches, as
many as the DPU's sub + subc with a condition.
"""

from __future__ import annotations

import hashlib
import threading
from collections import Counter, OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from cnmtune.costmodel.analysis.calls import CallSite, call_sites
from cnmtune.costmodel.analysis.cfg import FunctionCfg, loop_depths
from cnmtune.costmodel.analysis.liveness import RA, block_ranges, register_flow
from cnmtune.costmodel.analysis.lowering_rules import RULES
from cnmtune.costmodel.analysis.rv32_isa import (OP_AUIPC, OP_BRANCH, OP_IMM, OP_JAL, OP_JALR, OP_LOAD, OP_LUI,
                                                 OP_REG, OP_STORE)
from cnmtune.costmodel.analysis.elf import ElfImage, load_elf
from cnmtune.costmodel.analysis.program import KERNEL, RUNTIME
from cnmtune.costmodel.analysis.rv32_program import Program, decode_rv32
from cnmtune.dpu.slots import DpuSlots

#: Version of what the lowering computes (this module and its rule table): DpuConfig.hash
#: includes it, so times simulated under another lowering are not taken for current ones. Give it
#: a new name whenever any ELF's slots, mnemonics or rules change; a refactor that changes none
#: keeps it. tests/costmodel/analysis/test_lowering.py holds the lowering of five kernels to it.
#: (It was a hash of the two files' text; the name is that hash's last value, so stored times keep
#: their keys.)
LOWERING_VERSION = "lowering-e2dffd7c8368"

_DPU_NAME = {"addi": "add", "add": "add", "sub": "sub", "andi": "and", "and": "and", "ori": "or", "or": "or",
             "xori": "xor", "xor": "xor", "slli": "lsl", "sll": "lsl", "srli": "lsr", "srl": "lsr",
             "srai": "asr", "sra": "asr", "lb": "lbs", "lbu": "lbu", "lh": "lhs", "lhu": "lhu", "lw": "lw",
             "sb": "sb", "sh": "sh", "sw": "sw", "beq": "jeq", "bne": "jneq", "blt": "jlts", "bge": "jges",
             "bltu": "jltu", "bgeu": "jgeu", "lui": "move", "auipc": "move", "slt": "sub", "sltu": "sub",
             "slti": "sub", "sltiu": "sub", "ecall": "call", "ebreak": "fault", "fence": "nop"}
_SET_LESS = {"slt": "jlts", "sltu": "jltu", "slti": "jlts", "sltiu": "jltu"}
_SET_GREATER_EQUAL = {"slt": "jges", "sltu": "jgeu", "slti": "jges", "sltiu": "jgeu"}


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
        count = int(self.slots[i])
        parts = self.mnemonics[i].split("+")
        return parts if len(parts) == count else [self.mnemonics[i]] * count

    def histogram(self, mask: np.ndarray | None = None) -> dict[str, int]:
        """DPU mnemonic -> DPU instructions, over the instructions of ``mask`` (default: all)."""
        counts: Counter[str] = Counter()
        for i in (range(len(self.slots)) if mask is None else np.flatnonzero(mask).tolist()):
            counts.update(self.dpu_instructions(i))
        return dict(counts)


def lower(program: Program, cfgs: tuple[FunctionCfg, ...] | None = None,
          sites: Sequence[CallSite] | None = None) -> Lowering:
    """Lower every instruction of ``program`` (its functions' CFGs: ``cfgs``, and its
    ``call_sites(program, cfgs)``: ``sites``; each computed if absent)."""
    if cfgs is None:
        cfgs = loop_depths(program)[1]
    n = len(program.mnemonics)
    slots = np.where(program.padding, 0, 1).astype(np.int8)
    names = [_name(program, i) for i in range(n)]
    rules = ["one-to-one"] * n
    live_after = register_flow(program, cfgs, call_sites(program, cfgs) if sites is None else sites).live_after
    for function, cfg in zip(program.functions, cfgs):
        for start, end in block_ranges(function.first, function.count, cfg):
            _fuse_block(program, start, end, live_after, slots, names, rules)
        _index_induction(program, function.first, function.first + function.count, slots, names, rules)
    return Lowering(slots, tuple(name if s else "" for name, s in zip(names, slots)), tuple(rules))


def _name(program: Program, i: int) -> str:
    mnemonic = program.mnemonics[i]
    op, rd = program.fields.opcode[i], program.fields.rd[i]
    if op in (OP_JAL, OP_JALR):
        return "call" if rd != 0 else "jump"
    return _DPU_NAME.get(mnemonic, mnemonic)


def _fuse_block(program: Program, start: int, end: int, live_after: Sequence[int], slots: np.ndarray,
                names: list[str], rules: list[str]) -> None:
    """Apply the fusion rules to the instructions [start, end) of one basic block."""
    f, m = program.fields, program.mnemonics
    dead = lambda reg, i: not (live_after[i] >> reg) & 1  # noqa: E731
    for i in range(start, end - 1):
        j = i + 1
        if not slots[i] or not slots[j]:
            continue
        op_i, rd = f.opcode[i], f.rd[i]
        if m[j] in ("beq", "bne") and rd and f.rs2[j] == 0 and f.rs1[j] == rd:
            if m[i] in _SET_LESS and dead(rd, j):  # slt t, a, b; bnez t -> jlts a, b
                _apply("compare-jump", (i, j), slots, rules)
                names[j] = (_SET_LESS if m[j] == "bne" else _SET_GREATER_EQUAL)[m[i]]
            elif op_i in (OP_REG, OP_IMM) and m[i] not in _SET_LESS:  # add r, r, -1; bnez r -> add ..., nz
                _apply("alu-condition", (i, j), slots, rules)
        elif m[i] == "slli" and m[j] == "add" and rd in (f.rs1[j], f.rs2[j]) and rd != 0 \
                and (rd == f.rd[j] or dead(rd, j)) and f.rs1[j] != f.rs2[j]:
            _apply("lsl-add", (i, j), slots, rules)
            names[j] = "lsl_add"
        elif m[i] == "slli" and m[j] == "sub" and rd == f.rs2[j] != f.rs1[j] and rd != 0 \
                and (rd == f.rd[j] or dead(rd, j)):
            _apply("lsl-sub", (i, j), slots, rules)
            names[j] = "lsl_sub"
        elif op_i == OP_LUI and m[j] == "addi" and f.rd[j] == rd and f.rs1[j] == rd:
            _apply("constant", (i, j), slots, rules)
        elif op_i == OP_AUIPC and f.opcode[j] == OP_JALR and f.rs1[j] == rd and f.rd[j] == RA:
            _apply("call", (i, j), slots, rules)
    _fuse_carries(program, start, end, live_after, slots, names, rules)
    _fuse_shift_pairs(program, start, end, live_after, slots, names, rules)
    _fuse_pairs(program, start, end, slots, names, rules)


def _fuse_carries(program: Program, start: int, end: int, live_after: Sequence[int], slots: np.ndarray,
                  names: list[str], rules: list[str]) -> None:
    """64-bit add/sub on register pairs: the carry (borrow) that sltu computes and the high word
    adds (subtracts) is the DPU's addc (subc) flag. The high word's own add may sit anywhere in
    the block, before or after the low word's."""
    f, m = program.fields, program.mnemonics
    for i in range(start, end):
        if m[i] != "sltu" or rules[i] != "one-to-one" or not f.rd[i]:
            continue
        c, a, b = f.rd[i], f.rs1[i], f.rs2[i]
        # carry: the low add s = x + y earlier in the block, and sltu c, s, x|y
        low = _last_def(program, start, i, a)
        kind = "carry" if low is not None and m[low] == "add" and b != a and b in (f.rs1[low], f.rs2[low]) \
            and _last_def(program, low + 1, i, b) is None else "borrow"
        if kind == "borrow":  # sltu c, a, b and the low sub s = a - b in the same block
            low = next((k for k in range(i + 1, end) if m[k] == "sub" and (f.rs1[k], f.rs2[k]) == (a, b)), None)
        use = next((k for k in range(i + 1, end) if c in (f.rs1[k], f.rs2[k])), None)
        op = "add" if kind == "carry" else "sub"
        if low is None or use is None or m[use] != op or (f.rd[use] != c and (live_after[use] >> c) & 1):
            continue
        members = (low, i, use) if kind == "carry" else (i, low, use)
        if any(rules[k] != "one-to-one" for k in members):  # already part of another pattern
            continue
        _apply(kind, members, slots, rules)
        high = next((k for k in range(use - 1, start - 1, -1) if k not in members and m[k] == op
                     and f.rd[k] in (f.rs1[use], f.rs2[use])), None)
        if high is not None:
            names[high] = op + "c"


def _fuse_shift_pairs(program: Program, start: int, end: int, live_after: Sequence[int], slots: np.ndarray,
                      names: list[str], rules: list[str]) -> None:
    """A 64-bit shift by a constant k joins the two words with or: (lo >> k) | (hi << (32 - k)) (or
    the mirror for a left shift). The bits are disjoint, so or is add and the shift folds into it:
    lsl_add (lsr_add)."""
    f, m = program.fields, program.mnemonics
    opposite = {"slli": "srli", "srli": "slli"}
    for j in range(start, end):
        if m[j] != "or" or rules[j] != "one-to-one" or f.rs1[j] == f.rs2[j]:
            continue
        for t, y in ((f.rs2[j], f.rs1[j]), (f.rs1[j], f.rs2[j])):
            i, other = _last_def(program, start, j, t), _last_def(program, start, j, y)
            if i is None or other is None or not t or rules[i] != "one-to-one" \
                    or m[i] not in opposite or m[other] != opposite[m[i]] \
                    or f.imm_i[i] % 32 + f.imm_i[other] % 32 != 32 \
                    or (f.rd[j] != t and (live_after[j] >> t) & 1):
                continue
            _apply("shift-join", (i, j), slots, rules)
            names[j] = "lsl_add" if m[i] == "slli" else "lsr_add"
            break


def _last_def(program: Program, start: int, end: int, reg: int) -> int | None:
    """The last instruction of [start, end) that writes ``reg``, or None."""
    f = program.fields
    return next((k for k in range(end - 1, start - 1, -1)
                 if f.rd[k] == reg and f.opcode[k] not in (OP_BRANCH, OP_STORE)), None)


def _fuse_pairs(program: Program, start: int, end: int, slots: np.ndarray, names: list[str],
                rules: list[str]) -> None:
    """Two 32-bit loads (stores) of the words of one 8-aligned double word are one ld (sd)."""
    f, m = program.fields, program.mnemonics
    for i in range(start, end - 1):
        j = i + 1
        if m[i] != m[j] or m[i] not in ("lw", "sw") or rules[i] != "one-to-one" or rules[j] != "one-to-one":
            continue
        offset = f.imm_i if m[i] == "lw" else f.imm_s
        if f.rs1[i] != f.rs1[j] or abs(offset[i] - offset[j]) != 4 or min(offset[i], offset[j]) % 8:
            continue
        if m[i] == "lw" and f.rs1[i] in (f.rd[i], f.rd[j]):  # the base is overwritten by the pair
            continue
        _apply("pair", (i, j), slots, rules)
        names[i] = "ld" if m[i] == "lw" else "sd"


def _index_induction(program: Program, first: int, end: int, slots: np.ndarray, names: list[str],
                     rules: list[str]) -> None:
    """A loop that walks a pointer and exits on comparing it: the DPU loop counts an index and
    forms each address with lsl_add, one instruction more per iteration."""
    f, m = program.fields, program.mnemonics
    for j in range(first, end):
        if f.opcode[j] != OP_BRANCH or f.imm_b[j] >= 0 or rules[j] != "one-to-one":
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
            walks = m[step] == "addi" and f.rs1[step] == p and f.imm_i[step] and rules[step] == "one-to-one"
            if walks and any(f.opcode[k] in (OP_LOAD, OP_STORE) and f.rs1[k] == p for k in body):
                _apply("index-induction", (step,), slots, rules)
                names[step] = "add+lsl_add"
                break


def _apply(rule: str, members: tuple[int, ...], slots: np.ndarray, rules: list[str]) -> None:
    """Charge the rule's DPU instructions to the members of its pattern, in order."""
    for index, charge in zip(members, RULES[rule].slots, strict=True):
        slots[index] = charge
        rules[index] = rule


@dataclass(frozen=True)
class LoweredElf:
    """A proxy ELF decoded and lowered: its program, loop depths, CFGs, call sites and lowering
    (what the simulator's charges, the IRAM rule and the cost model's features all read)."""

    program: Program
    depth: np.ndarray
    cfgs: tuple[FunctionCfg, ...]
    sites: tuple[CallSite, ...]
    lowering: Lowering


# The last few ELFs' lowerings, by content: a compile lowers its ELF for the IRAM rule, and the
# features read the same lowering just after.
_LOWERED_KEEP = 8
_lowered: OrderedDict[str, LoweredElf] = OrderedDict()
_lowered_lock = threading.Lock()


def lowered_elf(image: ElfImage) -> LoweredElf:
    """Decode and lower a proxy ELF, once per content for the last few ELFs (read-only arrays)."""
    digest = hashlib.sha256(image.data).hexdigest()
    with _lowered_lock:
        if (hit := _lowered.get(digest)) is not None:
            _lowered.move_to_end(digest)
            return hit
    program = decode_rv32(image)
    depth, cfgs = loop_depths(program)
    sites = tuple(call_sites(program, cfgs))
    result = LoweredElf(program, depth, cfgs, sites, lower(program, cfgs, sites))
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
    lowered = lowered_elf(load_elf(source, name))
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
    lowered = lowered_elf(load_elf(source, name))
    program, low = lowered.program, lowered.lowering
    kernel, iram = _masks(program)
    return {"kernel_rv32_instructions": int(kernel.sum()), "kernel_dpu_instructions": int(low.slots[kernel].sum()),
            "iram_rv32_instructions": int(iram.sum()), "iram_dpu_instructions": int(low.slots[iram].sum()),
            "kernel_histogram": low.histogram(kernel),
            "rules": dict(Counter(r for r, k in zip(low.rules, kernel.tolist()) if k))}
