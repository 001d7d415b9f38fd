"""The rules of the DPU lowering model, as data: what the UPMEM compiler emits for rv32i code.

Each rule names the rv32i pattern it matches, the DPU code it stands for, the DPU instructions
it costs per rv32i instruction of the pattern, and where the fact comes from. Status follows
../shared/upmem/DPU_CODEGEN.md: C = confirmed in a listing or in the SDK's sources, D = derived
from confirmed data, U = unconfirmed (a guess, to be checked against a real SDK listing).
cnmtune.costmodel.analysis.lowering applies them.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Rule:
    """A lowering rule: the rv32i pattern, the DPU code, the DPU instructions per rv32i one."""

    name: str
    pattern: str
    dpu: str
    slots: tuple[int, ...]  # DPU instructions charged to each rv32i instruction of the pattern
    status: str  # C, D or U (see the module docstring)
    source: str


_ISA = "DPU_ISA.md §2 and the encoding table (dpu_encodings.json)"
_CODEGEN = "DPU_CODEGEN.md"

RULES: dict[str, Rule] = {r.name: r for r in (
    Rule("one-to-one", "an rv32i ALU op, load, store, branch or jump",
         "the DPU instruction of the same operation (3-operand ALU with immediates, loads and stores "
         "with a 24-bit offset, compare-and-jump on two registers or a register and an immediate)",
         (1,), "C", _ISA),
    Rule("alu-condition", "ALU op writing r; then a branch on r against zero",
         "one ALU instruction carrying the condition and the jump target (add r, r, -1, nz, loop)",
         (1, 0), "C", f"{_ISA} (ALU forms with condition and pc); {_CODEGEN} §3 (`sub r3,r4,r3,gtu,res0`)"),
    Rule("compare-jump", "slt/sltu (or slti/sltiu) into t; then a branch on t against zero; t dead",
         "one compare-and-jump (jlts/jges/jltu/jgeu ra, rb|imm, pc)", (0, 1), "C",
         f"{_ISA} (jlts, jltu, ... on register or immediate); {_CODEGEN} §3 (`jgtu r1, r0, swap`)"),
    Rule("lsl-add", "slli t, x, k; then add d, y, t; t dead",
         "lsl_add d, y, x, k (shift-and-add in one instruction)", (0, 1), "C",
         f"{_CODEGEN} §2 (x*9 -> `lsl_add r,x,x,3`); array indexing by it is U (§4)"),
    Rule("lsl-sub", "slli t, x, k; then sub d, y, t; t dead",
         "lsl_sub d, y, x, k (subtract a shifted register in one instruction)", (0, 1), "C",
         f"{_CODEGEN} §2 (x*14 -> `lsl t,x,4` then `lsl_sub r,t,x,1`)"),
    Rule("shift-join", "a 64-bit shift by a constant k < 32: slli t, hi, 32-k (srli t, lo, 32-k), the "
         "other word shifted by k the opposite way, and or d, y, t; t dead",
         "lsl_add d, y, hi, 32-k (lsr_add d, y, lo, 32-k): the words' bits are disjoint, so or is add "
         "and the shift folds into it; 3 DPU instructions for rv32i's 4", (0, 1), "U",
         f"{_ISA} (lsl_add, lsr_add; lslx/lsrx exist too); lsr_add is among the frequent mnemonics of real "
         "kernels (DPU_ISA.md §5, C), but no listing of a compiled 64-bit shift was seen: which form the "
         "compiler picks is a guess"),
    Rule("constant", "lui t, hi; then addi t, t, lo",
         "move t, imm32 (a DPU immediate holds 32 bits)", (1, 0), "U",
         f"{_ISA} (MOVEri); the compiler's use of one move for every 32-bit constant is not seen in a listing"),
    Rule("call", "auipc ra; then jalr ra, ra, off", "call r23, f", (0, 1), "C",
         f"{_CODEGEN} §2 (`call r23, __mulsi3`)"),
    Rule("carry", "add s, a, b; sltu c, s, a|b; ... add h, h|x, c with c dead",
         "add s, a, b; addc h, ...: the carry lives in the flags, no instruction computes it",
         (1, 0, 0), "D", f"{_CODEGEN} §3 (addc/subc exist; INT64 ADD costs exactly one more "
                         "instruction per element than INT32 in PrIM's profiles, §4)"),
    Rule("borrow", "sltu c, a, b; sub s, a, b (in the block); ... sub h, h|x, c with c dead",
         "sub s, a, b; subc h, ...: the borrow lives in the flags", (0, 1, 0), "D",
         f"{_CODEGEN} §3 (as carry)"),
    Rule("pair", "lw (sw) of the two words of an 8-aligned double word, one after the other",
         "ld (sd): one 64-bit load (store) of a register pair", (1, 0), "D",
         "FACTS.md §2 (64-bit ld/sd on d registers, C); ld/sd are among the most frequent mnemonics of "
         "real kernels (DPU_ISA.md §5, C); that the compiler pairs every such access, spills included, "
         "assumes its register allocator puts the two words in one even/odd pair"),
    Rule("index-induction", "a loop whose latch compares a pointer that one addi p, p, c in the loop "
         "advances and that loads or stores use as their base",
         "add i, i, 1 and lsl_add a, base, i, k: the DPU loop counts an index and forms the address "
         "from it, one instruction more per iteration than walking the pointer", (2,), "U",
         f"{_CODEGEN} §4: PrIM's INT32 and INT64 ADD loops take 6.0 and 7.0 DPU instructions per element "
         "(D, raw profiles), one more than the pointer-walking rv32i loop lowers to; the listing with "
         "lsl_add and an index is recalled from the PrIM paper, not re-read (U)"),
    Rule("set-compare", "slt/sltu/slti/sltiu whose 0/1 result is used as a value",
         "one DPU instruction (the DPU has no set-on-less-than; how the compiler materialises the "
         "flag is not seen in a listing)", (1,), "U", "none: a guess"),
)}
