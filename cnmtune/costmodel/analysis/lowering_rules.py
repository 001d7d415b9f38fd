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
_SAMPLE = "objdump_sample.txt (words of a real SDK objdump)"
_LISTING = ("the public SDK objdump listing objdump_sample.txt samples (DPU_ISA.md §0; found again in the "
            "code index with its interleaved C source)")
_SDK_MRAM = ("the SDK's syslib mram.h (2020.x): mram_read/mram_write are static inline calls of "
             "__builtin_dpu_ldma/__builtin_dpu_sdma (FACTS.md §7.1: mram_read = ldma, mram_write = sdma)")

RULES: dict[str, Rule] = {r.name: r for r in (
    Rule("one-to-one", "an rv32i ALU op, load, store, branch or jump",
         "the DPU instruction of the same operation (3-operand ALU with immediates, loads and stores "
         "with a 24-bit offset, compare-and-jump on two registers or a register and an immediate)",
         (1,), "C", _ISA),
    # single instructions the SDK names otherwise
    Rule("move", "addi d, x0, k (li), addi d, s, 0 (mv), lui d, k and auipc d, k",
         "move d, k (a DPU immediate holds 32 bits) or move d, s", (1,), "C",
         f"{_SAMPLE} (`move r0, 272` before `call r23, barrier_wait`, `move r0, r14`, `move r1, 0`, "
         "`move r0, 3425280`); DPU_ISA.md §5 (move is the most frequent mnemonic of real binaries, 13.7 %). "
         "auipc is an address, absolute on the DPU: D"),
    Rule("neg", "sub d, x0, s", "neg d, s", (1,), "C",
         f"{_SAMPLE} (`neg r0, r0` in __div32); DPU_ISA.md §3 (neg is sub from zero)"),
    Rule("not", "xori d, s, -1", "not d, s", (1,), "D",
         "DPU_ISA.md §3 (not is xor with -1; NOTrr in the encoding table, which the decoder prints as not); "
         "not seen in a listing"),
    Rule("zero-jump", "beq/bne r, x0 (either operand order), bltu x0, r (r != 0), bgeu x0, r (r == 0)",
         "jz r, pc / jnz r, pc", (1,), "C",
         f"{_SAMPLE} (`jz r0, ...`, `jnz r0, ...`); DPU_ISA.md §5 (jz 50, jnz 27 in 4 real binaries)"),
    Rule("swapped-compare", "blt x0, r (r > 0) and bge x0, r (r <= 0): rv32 swaps the operands to express "
         "> and <=", "jgts r, 0 / jles r, 0 (the zero as the immediate of a register-immediate "
         "compare-jump)", (1,), "D",
         f"{_ISA} (JGTSrii, JLESrii); DPU_ISA.md §5 (jgts 10, jles 8, jgtu 19, jleu 10 in 4 real binaries); "
         "that the compiler writes x > 0 so is derived"),
    Rule("set-compare", "slt/sltu/slti/sltiu whose 0/1 result is used as a value",
         "sub d, a, b, cc: the set-on-condition form (d = the condition, 0 or 1)", (1,), "D",
         f"{_SAMPLE} (`sub r0, r1, r0, z`, `sub r0, r1, r0, nz`: SUBrrrc, C); that every slt lowers "
         "to one is derived"),
    # fusions
    Rule("alu-condition", "ALU op writing r (an immediate within the 8 bits of the conditional form); "
         "the block's closing branch on r against zero; nothing between reads or writes r or writes the "
         "op's sources",
         "one ALU instruction carrying the condition and the jump target (add r, r, -1, nz, loop), "
         "placed last", (1, 0), "C",
         f"{_ISA} (ALU forms with condition and pc, ADDrrici: 8-bit immediate); {_CODEGEN} §3 "
         f"(`sub r3,r4,r3,gtu,res0`); {_SAMPLE} (`add r2, r2, -1, nz, ...`). With instructions between "
         "the op and the branch: D (the compiler schedules the op last)"),
    Rule("compare-jump", "slt/sltu (or slti/sltiu, immediate within 11 bits) into t; the next reader of t "
         "is a branch on t against zero; t dead after",
         "one compare-and-jump (jlts/jges/jltu/jgeu ra, rb|imm, pc; jz/jnz for seqz and snez)", (0, 1), "C",
         f"{_ISA} (jlts, jltu, ... on register or immediate); {_CODEGEN} §3 (`jgtu r1, r0, swap`)"),
    Rule("compare-immediate", "addi t, x0, k (li, k within 11 bits); the next reader of t is a branch "
         "comparing t with a register r; t dead after",
         "one compare-and-jump on r and the immediate k: jeq/jneq/jlts/jges/jltu/jgeu r, k, or, where t "
         "is the branch's first operand (rv32 swaps to express > and <=), jgts/jles/jgtu/jleu r, k",
         (0, 1), "C",
         f"{_SAMPLE} (`jneq r0, 1`, `jlts r0, 1`, `jeq r23, 200`, `jeq id, 14`; a constant the 11 bits do "
         "not hold stays a move: `move r3, 2048` then `jlts r14, r3`); JEQrii ... JGTUrii take an 11-bit "
         "immediate (encoding table)"),
    Rule("lsl-add", "slli t, x, k; the next reader of t is add d, y, t; t dead after",
         "lsl_add d, y, x, k (shift-and-add in one instruction)", (0, 1), "C",
         f"{_CODEGEN} §2 (x*9 -> `lsl_add r,x,x,3`); {_SAMPLE} (`lsl_add r0, r0, r3, 8`); array "
         "indexing by it is U (§4)"),
    Rule("lsr-add", "srli t, x, k; the next reader of t is add d, y, t; t dead after",
         "lsr_add d, y, x, k", (0, 1), "C",
         f"{_SAMPLE} (`asr r0, r14, 31` then `lsr_add r2, r14, r0, 21`: a signed division's rounding; "
         "`lsr_add r0, r2, r0, 3`); DPU_ISA.md §5 (lsr_add 13 in 4 real binaries)"),
    Rule("lsl-sub", "slli t, x, k; the next reader of t is sub d, y, t; t dead after",
         "lsl_sub d, y, x, k (subtract a shifted register in one instruction)", (0, 1), "C",
         f"{_CODEGEN} §2 (x*14 -> `lsl t,x,4` then `lsl_sub r,t,x,1`)"),
    Rule("shift-join", "a 64-bit shift by a constant k < 32: slli t, hi, 32-k (srli t, lo, 32-k), the "
         "other word shifted by k the opposite way, and or d, y, t; t dead",
         "lsl_add d, y, hi, 32-k (lsr_add d, y, lo, 32-k): the words' bits are disjoint, so or is add "
         "and the shift folds into it; 3 DPU instructions for rv32i's 4", (0, 1), "U",
         f"{_ISA} (lsl_add, lsr_add; lslx/lsrx exist too); lsr_add is among the frequent mnemonics of real "
         "kernels (DPU_ISA.md §5, C), but no listing of a compiled 64-bit shift was seen: which form the "
         "compiler picks is a guess"),
    Rule("constant", "lui t, hi; the next reader of t is addi t, t, lo",
         "move t, imm32 (a DPU immediate holds 32 bits)", (1, 0), "C",
         f"{_ISA} (MOVEri: 32-bit immediate); {_SAMPLE} (`move r0, 3425280`, `move r1, 131072`: constants "
         "rv32i builds with lui + addi)"),
    Rule("call", "auipc t; then jalr ra|x0, t, off (a call, a tail call)", "call r23, f (jump f)", (0, 1), "C",
         f"{_CODEGEN} §2 (`call r23, __mulsi3`); {_SAMPLE} (`jump 0x80001228`: a jump names its target)"),
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
    # the DPU runtime's calls the SDK inlines (cnmtune.costmodel.analysis.lowering.BUILTINS)
    Rule("inline-dma", "a call (auipc ra + jalr ra) to the runtime's mram_read (mram_write) with a "
         "constant size n", "ldma wram, mram, n/8 - 1 (sdma): one instruction, the size its immediate",
         (0, 1), "C",
         f"{_SDK_MRAM}; {_SAMPLE} (`ldma r3, r4, 255`: a 2048-byte mram_read in a loop, no call); "
         "DPU_ISA.md §5 (ldma 10, sdma 5 in the user kernels of 4 real binaries, which call no mram_read)"),
    Rule("inline-dma-length", "a call (auipc ra + jalr ra) to the runtime's mram_read (mram_write) whose "
         "size n is not a constant",
         "move t, -1; lsr_add t, t, n, 3; lsl_add t, wram, t, 24; ldma t, mram, 0 (sdma): the length "
         "n/8 - 1 rides in the top byte of the WRAM address", (0, 4), "C",
         f"{_SDK_MRAM}; {_LISTING}: `__builtin_dpu_ldma(to, from, nb_of_bytes)` with nb_of_bytes = "
         "wsize % 2048 is these four words at 0x80000308-0x80000320 (three of them in objdump_sample.txt)"),
    Rule("inline-me", "a call (auipc ra + jalr ra) to the runtime's me()",
         "move d, id: the thread-id register", (0, 1), "C",
         "the SDK's syslib defs.h (me() is static inline, `return __builtin_dpu_tid();`, 'the value of the "
         f"special register id'); {_SAMPLE} (`move r4, id`, `move r0, id, z, ...`)"),
    Rule("builtin-operand", "addi a, s, 0 (mv) into an argument register of an inlined mram_read or "
         "mram_write, or addi a2, x0, n (li) of its constant size, that nothing but the builtin reads",
         "nothing: the builtin reads s itself, and a constant size is its immediate", (0,), "D",
         f"{_LISTING}: ldma and sdma read the registers the address arithmetic wrote, with no argument "
         "moves before them as before a call (`move r0, 272; call r23, barrier_wait`)"),
    Rule("inlined-body", "an instruction of the runtime's mram_read, mram_write or me wrapper",
         "nothing: the SDK's are static inline (mram.h, defs.h), no function of theirs is in IRAM", (0,), "C",
         f"{_SDK_MRAM}; defs.h (as inline-me); DPU_ISA.md §1 (the runtime functions of 4 real binaries: no "
         "mram_read, mram_write or me among them)"),
)}

#: The rules that name a single rv32i instruction (it stays one DPU instruction, free to fuse).
SINGLE_RULES = frozenset({"one-to-one", "move", "neg", "not", "zero-jump", "swapped-compare", "set-compare"})
#: The rules of a call to the DPU runtime that the SDK inlines: on the DPU it is no call.
INLINE_CALL_RULES = frozenset({"inline-dma", "inline-dma-length", "inline-me"})
