"""Call sites by callee name, and ecall sites by service name.

A call is a ``jal``/``jalr`` that links a register, or a tail call (``jal x0`` or ``jalr x0``
to an address outside the calling function). A ``jalr`` target is known when:

- the instruction just before it set the base register (``auipc ra, hi`` + ``jalr ra,
  lo(ra)``; ``lui`` + ``jalr``), the usual ``call`` sequence; or
- forward constant propagation (below) knows the base register and the target is an
  instruction of .text. This covers the large code model (llvmlite's default), where a
  callee's address is loaded from a constant pool in WRAM (``auipc``/``addi``/``lw`` +
  ``jalr``, at -O0 also spilled to the stack and reloaded), and calls through a ``const``
  table of function pointers indexed by a constant.

Any other ``jalr`` that links is an indirect call with no callee name; ``ret``
(``jalr x0, 0(ra)``) and unresolved ``jalr x0`` (returns, jump tables) are not calls.

Constant propagation runs forward over a function's CFG, through registers and stack slots
and through loads from link-time addresses of read-only data, which read the word the ELF
holds there (``Program.constant_word``). A writable global is not a constant, whatever the
ELF initialises it to: the host writes a ``__host`` variable before every launch, and the
program may store to any other. A value read from memory is never itself used as an address
to read from: a global's address loaded from a constant pool is known, the global's contents
are not. So a host-written ``__host`` index does not pick an entry of a function table. A
call is assumed to keep the callee-saved registers, to change any global, and to change the
stack slots of a frame whose address the function takes (``addi a1, s0, -96``: a loop that
loop-extract outlined returns its values through such pointers); slots of a frame whose
address never leaves its base register are kept.

An ecall's service is the constant in a7 when it executes (``li a7, N``, an ``li a7, N``
hoisted out of a loop and the -O0 spill ``li a0, N; sw a0, off(s0); lw a7, off(s0)`` all
resolve). Service numbers are named after the ``#define CNM_ECALL_<NAME> <n>`` lines of the DPU
runtime's cnm_ecall.h; an unresolved a7 is ``UNKNOWN``, an unlisted number ``SERVICE_<n>``.
Ecalls occur only in runtime functions: kernels call the runtime's services by name.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from cnmtune.costmodel.analysis.cfg import FunctionCfg, function_cfg
from cnmtune.costmodel.analysis.program import Function
from cnmtune.costmodel.analysis.rv32_program import Program
from cnmtune.costmodel.analysis.rv32_isa import OP_JAL, OP_JALR

UNKNOWN_SERVICE = "UNKNOWN"
_RA, _A7 = 1, 17
_CALLEE_SAVED = frozenset({2, 3, 4, 8, 9, *range(18, 28)})
_MASK = 0xFFFFFFFF
_WRITES_RD = frozenset({"lui", "auipc", "jal", "jalr", "lb", "lh", "lw", "lbu", "lhu", "addi",
                        "slti", "sltiu", "xori", "ori", "andi", "slli", "srli", "srai", "add",
                        "sub", "sll", "slt", "sltu", "xor", "srl", "sra", "or", "and", "csrrw",
                        "csrrs", "csrrc", "csrrwi", "csrrsi", "csrrci"})
# A known value: (value, loaded). ``loaded`` marks a value read from memory, or computed from
# one; it is never used as an address to read from.
_Known = tuple[int, bool]
# Known values: register -> value, and (base register, offset) slot -> value, where the base
# _ABSOLUTE keys a slot by its absolute address (a store to a link-time address).
_State = tuple[dict[int, _Known], dict[tuple[int, int], _Known]]
_ABSOLUTE = -1
_FRAME = frozenset({2, 8})  # sp, s0 (the frame pointer)
_ENTRY: _State = ({0: (0, False)}, {})
_IMM_OPS = {"addi": lambda a, b: a + b, "xori": lambda a, b: a ^ b,
            "ori": lambda a, b: a | b, "andi": lambda a, b: a & b,
            "slli": lambda a, b: a << (b & 31), "srli": lambda a, b: a >> (b & 31)}
_REG_OPS = {"add": lambda a, b: a + b, "sub": lambda a, b: a - b,
            "xor": lambda a, b: a ^ b, "or": lambda a, b: a | b}


@dataclass(frozen=True)
class CallSite:
    """One call instruction: where it is and whom it calls (target None when indirect).

    ``callee`` names the function at ``target`` (``name+0xoff`` inside a function,
    ``0x...`` outside .text); ``callee_function`` indexes program.functions (None outside
    .text) and ``exact`` says whether ``target`` is that function's entry.
    """

    index: int
    target: int | None
    callee: str | None
    callee_function: int | None
    exact: bool
    tail: bool


@dataclass(frozen=True)
class EcallSite:
    """One ``ecall`` instruction and the runtime service it requests."""

    index: int
    number: int | None
    service: str


def call_sites(program: Program,
               cfgs: tuple[FunctionCfg, ...] | None = None) -> list[CallSite]:
    """Every direct, tail and indirect call in ``program`` (``cfgs``: the functions' CFGs,
    computed on demand when not given)."""
    f = program.fields
    opcode = f.keys & 0x7F  # the key's low bits are the opcode
    sites: list[CallSite] = []
    unresolved: dict[int, dict[int, int]] = {}  # function -> {jalr index: base register}
    for i in np.flatnonzero((opcode == OP_JAL) | (opcode == OP_JALR)).tolist():
        if f.opcode[i] == OP_JAL:
            _add_site(program, sites, i, (program.address(i) + f.imm_j[i]) & _MASK)
            continue
        target = program.jalr_target(i)
        if target is not None:
            _add_site(program, sites, i, target)
        elif not (f.rd[i] == 0 and f.rs1[i] == _RA):  # not a return
            unresolved.setdefault(int(program.function_of[i]), {})[i] = f.rs1[i]
    for k, queries in unresolved.items():
        cfg = cfgs[k] if cfgs is not None else function_cfg(program, program.functions[k])
        for i, known in _values_before(program, program.functions[k], cfg, queries).items():
            target = None if known is None else (known[0] + f.imm_i[i]) & ~1 & _MASK
            if target is not None and program.index(target) is not None:
                _add_site(program, sites, i, target)
            elif f.rd[i] != 0:
                sites.append(CallSite(i, None, None, None, False, tail=False))
    return sorted(sites, key=lambda site: site.index)


def _add_site(program: Program, sites: list[CallSite], index: int, target: int) -> None:
    """Record the jump at ``index`` to ``target`` unless it is a jump inside its function."""
    fn = program.function_at(index)
    links = program.fields.rd[index] != 0
    if not links and fn.address <= target < fn.address + 4 * fn.count:
        return
    sites.append(_site(program, index, target, tail=not links))


def _site(program: Program, index: int, target: int, tail: bool) -> CallSite:
    at = program.index(target)
    if at is None:
        return CallSite(index, target, f"0x{target:08x}", None, False, tail)
    k = int(program.function_of[at])
    fn = program.functions[k]
    name = fn.name if fn.address == target else f"{fn.name}+0x{target - fn.address:x}"
    return CallSite(index, target, name, k, fn.address == target, tail)


def ecall_sites(program: Program, cfgs: tuple[FunctionCfg, ...],
                services: dict[int, str]) -> list[EcallSite]:
    """Every ``ecall`` in ``program`` with the service number a7 holds there."""
    by_function: dict[int, dict[int, int]] = {}
    for i, m in enumerate(program.mnemonics):
        if m == "ecall":
            by_function.setdefault(int(program.function_of[i]), {})[i] = _A7
    sites = []
    for k, queries in by_function.items():
        for i, known in _values_before(program, program.functions[k], cfgs[k], queries).items():
            number = None if known is None else known[0]
            service = UNKNOWN_SERVICE if number is None else services.get(
                number, f"SERVICE_{number}")
            sites.append(EcallSite(i, number, service))
    return sorted(sites, key=lambda site: site.index)


def _values_before(program: Program, fn: Function, cfg: FunctionCfg,
                   queries: dict[int, int]) -> dict[int, _Known | None]:
    """The known value of register ``queries[i]`` just before instruction i executes.

    Most values are set in the querying instruction's own block (``li a7, N``; ``auipc``/
    ``lw`` just before a ``jalr``); only the rest need the function's dataflow.
    """
    by_block: dict[int, dict[int, int]] = {}
    for i, reg in queries.items():
        by_block.setdefault(cfg.block_of(i - fn.first), {})[i] = reg
    found: dict[int, _Known | None] = {}
    entry: list[_State | None] | None = None
    clobbered = _clobbered_by_calls(program, fn)
    for b, block_queries in by_block.items():
        start, end = fn.first + cfg.leaders[b], max(block_queries) + 1
        _propagate(program, start, end, clobbered, dict(_ENTRY[0]), {}, block_queries, found)
        missing = {i: r for i, r in block_queries.items() if found[i] is None}
        if missing and b:
            entry = entry or _block_entry_states(program, fn, cfg, clobbered)
            state = entry[b]
            if state is not None:
                _propagate(program, start, end, clobbered, dict(state[0]), dict(state[1]), missing, found)
    return found


def _clobbered_by_calls(program: Program, fn: Function) -> frozenset[int]:
    """The slot bases whose slots a call may write: ``_ABSOLUTE`` (any global) and each frame
    register (sp, s0) whose value, plus an offset, the function copies to another register
    (the address of a local it may pass to the callee)."""
    f, mnemonics = program.fields, program.mnemonics
    taken: set[int] = set()
    for i in range(fn.first, fn.first + fn.count):
        if f.rd[i] in _FRAME:
            continue  # the prologue and epilogue moving the frame itself
        if mnemonics[i] == "addi":
            taken.update({int(f.rs1[i])} & _FRAME)
        elif mnemonics[i] == "add":
            taken.update({int(f.rs1[i]), int(f.rs2[i])} & _FRAME)
    return frozenset({_ABSOLUTE, *taken})


def _block_entry_states(program: Program, fn: Function, cfg: FunctionCfg,
                        clobbered: frozenset[int]) -> list[_State | None]:
    """Constants known at the entry of each block (None: unreachable), by forward dataflow.

    The state at a block's entry keeps the registers and stack slots every visited
    predecessor leaves with the same value; it only shrinks, so the worklist terminates.
    """
    ranges = cfg.block_ranges(fn.first, fn.count)
    succs = cfg.successors()
    entry: list[_State | None] = [None] * len(ranges)
    exits: list[_State | None] = [None] * len(ranges)
    entry[0] = (dict(_ENTRY[0]), {})
    work = [0]
    while work:
        b = work.pop()
        regs, slots = dict(entry[b][0]), dict(entry[b][1])
        _propagate(program, *ranges[b], clobbered, regs, slots)
        exits[b] = (regs, slots)
        for s in succs[b]:
            states = [exits[p] for p in cfg.preds[s] if exits[p] is not None]
            if len(states) == 1:
                merged = (dict(states[0][0]), dict(states[0][1]))
            else:
                merged = ({r: v for r, v in states[0][0].items()
                           if all(st[0].get(r) == v for st in states[1:])},
                          {k: v for k, v in states[0][1].items()
                           if all(st[1].get(k) == v for st in states[1:])})
            if merged != entry[s]:
                entry[s] = merged
                work.append(s)
    return entry


def _propagate(program: Program, start: int, end: int, clobbered: frozenset[int],
               regs: dict[int, _Known], slots: dict[tuple[int, int], _Known],
               queries: dict[int, int] | None = None, found: dict[int, _Known | None] | None = None) -> None:
    """Track known registers and slots through instructions [start, end), a call forgetting
    the slots of the ``clobbered`` bases; record in ``found`` the value of register
    ``queries[i]`` before each queried instruction i executes."""
    f, mnemonics = program.fields, program.mnemonics
    for i in range(start, end):
        if queries and i in queries:
            found[i] = regs.get(queries[i])
        m, rd = mnemonics[i], f.rd[i]
        value: _Known | None = None
        if m in _IMM_OPS and f.rs1[i] in regs:
            a, loaded = regs[f.rs1[i]]
            value = (_IMM_OPS[m](a, f.imm_i[i]) & _MASK, loaded)
        elif m == "lui":
            value = (f.imm_u[i] & _MASK, False)
        elif m == "auipc":
            value = ((program.address(i) + f.imm_u[i]) & _MASK, False)
        elif m in _REG_OPS and f.rs1[i] in regs and f.rs2[i] in regs:
            (a, la), (b, lb) = regs[f.rs1[i]], regs[f.rs2[i]]
            value = (_REG_OPS[m](a, b) & _MASK, la or lb)
        elif m == "lw":
            key = _slot(regs, f.rs1[i], f.imm_i[i])
            value = slots.get(key)
            if value is None and key[0] == _ABSOLUTE:
                word = program.constant_word(key[1])
                value = None if word is None else (word, True)
        elif m in ("sb", "sh", "sw"):
            base, offset = _slot(regs, f.rs1[i], f.imm_s[i])
            for slot in [s for s in slots if s[0] == base and abs(s[1] - offset) < 4]:
                del slots[slot]
            if m == "sw" and f.rs2[i] in regs:
                slots[(base, offset)] = regs[f.rs2[i]]
        if m in ("jal", "jalr") and rd != 0:
            for r in [r for r in regs if r not in _CALLEE_SAVED and r != 0]:
                del regs[r]
            for slot in [s for s in slots if s[0] in clobbered]:
                del slots[slot]  # the callee may write any global and the locals it is given
        elif m == "ecall":
            # A service returns in a0/a1 and keeps a7, like an asm statement with a7 as input.
            regs.pop(10, None)
            regs.pop(11, None)
        if m in _WRITES_RD and rd != 0:
            for slot in [s for s in slots if s[0] == rd]:
                del slots[slot]
            if value is None:
                regs.pop(rd, None)
            else:
                regs[rd] = value


def _slot(regs: dict[int, _Known], base: int, offset: int) -> tuple[int, int]:
    """The slot a load or store at ``offset(base)`` touches: absolute when ``base`` holds a
    link-time constant (not a value read from memory), else relative to the register."""
    known = regs.get(base)
    if known is not None and not known[1]:
        return _ABSOLUTE, (known[0] + offset) & _MASK
    return base, offset


def argument_constants(program: Program, cfgs: tuple[FunctionCfg, ...], sites: Sequence[CallSite],
                       registers: dict[str, int]) -> dict[int, int]:
    """The constant in register ``registers[callee]`` when each call to one of those callees
    executes (``li a2, 256``, a constant hoisted out of the loop, an -O0 spill and reload), by
    call-site index; calls where it is not a constant are left out."""
    by_function: dict[int, dict[int, int]] = {}
    for site in sites:
        register = registers.get(site.callee) if site.exact else None
        if register is not None:
            by_function.setdefault(int(program.function_of[site.index]), {})[site.index] = register
    out: dict[int, int] = {}
    for k, queries in by_function.items():
        for i, known in _values_before(program, program.functions[k], cfgs[k], queries).items():
            if known is not None:
                out[i] = known[0]
    return out
