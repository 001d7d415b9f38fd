"""Runtime call sites: direct calls by callee name, and ecall sites by service name.

A call is a ``jal``/``jalr`` that links a register (``jal ra, f``; ``auipc ra, hi`` +
``jalr ra, lo(ra)``; ``lui`` + ``jalr``), or a tail call (``jal x0`` or ``auipc``+``jalr x0``
to an address outside the calling function). A ``jalr`` whose target register was not just
set by ``auipc``/``lui`` is an indirect call with no callee name.

An ecall's service is the constant in a7 when it executes. It is found by forward constant
propagation over the function's CFG, through registers and stack slots (so ``li a7, N``, an
``li a7, N`` hoisted out of a loop and the -O0 spill ``li a0, N; sw a0, off(s0);
lw a7, off(s0)`` all resolve). Service numbers are named after the
``#define CNM_ECALL_<NAME> <n>`` lines of the DPU runtime's cnm_ecall.h; an unresolved a7 is
``UNKNOWN``, an unlisted number ``SERVICE_<n>``.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from cnmtune.costmodel.cfg import FunctionCfg
from cnmtune.costmodel.disasm import Function, Program
from cnmtune.costmodel.isa import OP_JAL, OP_JALR
from cnmtune.dpu.memory_map import INCLUDE_DIR
from cnmtune.errors import CnmtuneError

ECALL_HEADER = INCLUDE_DIR / "cnm_ecall.h"
UNKNOWN_SERVICE = "UNKNOWN"
_DEFINE = re.compile(r"#define\s+CNM_ECALL_([A-Z0-9_]+)\s+(\d+)")
_A7 = 17
_CALLEE_SAVED = frozenset({2, 3, 4, 8, 9, *range(18, 28)})
_MASK = 0xFFFFFFFF
_WRITES_RD = frozenset({"lui", "auipc", "jal", "jalr", "lb", "lh", "lw", "lbu", "lhu", "addi",
                        "slti", "sltiu", "xori", "ori", "andi", "slli", "srli", "srai", "add",
                        "sub", "sll", "slt", "sltu", "xor", "srl", "sra", "or", "and", "csrrw",
                        "csrrs", "csrrc", "csrrwi", "csrrsi", "csrrci"})
# Known constants: register -> value, and (base register, offset) stack slot -> value.
_State = tuple[dict[int, int], dict[tuple[int, int], int]]
_IMM_OPS = {"addi": lambda a, b: a + b, "xori": lambda a, b: a ^ b,
            "ori": lambda a, b: a | b, "andi": lambda a, b: a & b}
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


def load_services(header: Path | None = None) -> dict[int, str]:
    """Ecall service number -> name, read from the DPU runtime's cnm_ecall.h."""
    return dict(_load_services(str(header or ECALL_HEADER)))


@functools.lru_cache(maxsize=8)
def _load_services(path: str) -> tuple[tuple[int, str], ...]:
    try:
        text = Path(path).read_text()
    except OSError as exc:
        raise CnmtuneError(f"{path}: cannot read the ecall service table "
                           f"({exc.strerror or exc})") from None
    services = {int(number): name for name, number in _DEFINE.findall(text)}
    if not services:
        raise CnmtuneError(f"{path}: no '#define CNM_ECALL_<NAME> <n>' lines")
    return tuple(sorted(services.items()))


def call_sites(program: Program) -> list[CallSite]:
    """Every direct, tail and indirect call in ``program``."""
    f = program.fields
    opcode = f.keys & 0x7F  # the key's low bits are the opcode
    sites = []
    for i in np.flatnonzero((opcode == OP_JAL) | (opcode == OP_JALR)).tolist():
        fn = program.function_at(i)
        links = f.rd[i] != 0
        if f.opcode[i] == OP_JAL:
            target = (program.address(i) + f.imm_j[i]) & _MASK
        else:
            target = program.jalr_target(i)
            if target is None:
                if links:
                    sites.append(CallSite(i, None, None, None, False, tail=False))
                continue
        if not links and fn.address <= target < fn.address + 4 * fn.count:
            continue  # a jump inside the function
        sites.append(_site(program, i, target, tail=not links))
    return sites


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
    by_function: dict[int, list[int]] = {}
    for i, m in enumerate(program.mnemonics):
        if m == "ecall":
            by_function.setdefault(int(program.function_of[i]), []).append(i)
    sites = []
    for k, indices in by_function.items():
        fn, cfg = program.functions[k], cfgs[k]
        entry = None
        for i in indices:
            start = fn.first + cfg.leaders[cfg.block_of(i - fn.first)]
            # Most services are set in the ecall's own block; then no dataflow is needed.
            number = _a7_after(program, start, i, ({0: 0}, {}))
            if number is None:
                entry = entry or _block_entry_states(program, fn, cfg)
                state = entry[cfg.block_of(i - fn.first)]
                number = None if state is None else _a7_after(program, start, i, state)
            service = UNKNOWN_SERVICE if number is None else services.get(
                number, f"SERVICE_{number}")
            sites.append(EcallSite(i, number, service))
    return sorted(sites, key=lambda site: site.index)


def _a7_after(program: Program, start: int, end: int, state: _State) -> int | None:
    regs, slots = dict(state[0]), dict(state[1])
    _propagate(program, start, end, regs, slots)
    return regs.get(_A7)


def _block_entry_states(program: Program, fn: Function, cfg: FunctionCfg) -> list[_State | None]:
    """Constants known at the entry of each block (None: unreachable), by forward dataflow.

    The state at a block's entry keeps the registers and stack slots every visited
    predecessor leaves with the same value; it only shrinks, so the worklist terminates.
    """
    blocks = len(cfg.leaders)
    succs: list[list[int]] = [[] for _ in range(blocks)]
    for v, preds in enumerate(cfg.preds):
        for u in preds:
            succs[u].append(v)
    ends = [*(fn.first + start for start in cfg.leaders[1:]), fn.first + fn.count]
    entry: list[_State | None] = [None] * blocks
    exits: list[_State | None] = [None] * blocks
    entry[0] = ({0: 0}, {})
    work = [0]
    while work:
        b = work.pop()
        regs, slots = dict(entry[b][0]), dict(entry[b][1])
        _propagate(program, fn.first + cfg.leaders[b], ends[b], regs, slots)
        exits[b] = (regs, slots)
        for s in succs[b]:
            states = [exits[p] for p in cfg.preds[s] if exits[p] is not None]
            merged = ({r: v for r, v in states[0][0].items()
                       if all(st[0].get(r) == v for st in states[1:])},
                      {k: v for k, v in states[0][1].items()
                       if all(st[1].get(k) == v for st in states[1:])})
            if merged != entry[s]:
                entry[s] = merged
                work.append(s)
    return entry


def _propagate(program: Program, start: int, end: int, regs: dict[int, int],
               slots: dict[tuple[int, int], int]) -> None:
    """Track constant registers and stack slots through instructions [start, end)."""
    f, mnemonics = program.fields, program.mnemonics
    for i in range(start, end):
        m, rd = mnemonics[i], f.rd[i]
        value = None
        if m in _IMM_OPS and f.rs1[i] in regs:
            value = _IMM_OPS[m](regs[f.rs1[i]], f.imm_i[i]) & _MASK
        elif m == "lui":
            value = f.imm_u[i] & _MASK
        elif m in _REG_OPS and f.rs1[i] in regs and f.rs2[i] in regs:
            value = _REG_OPS[m](regs[f.rs1[i]], regs[f.rs2[i]]) & _MASK
        elif m == "lw":
            value = slots.get((f.rs1[i], f.imm_i[i]))
        elif m in ("sb", "sh", "sw"):
            base, offset = f.rs1[i], f.imm_s[i]
            for slot in [s for s in slots if s[0] == base and abs(s[1] - offset) < 4]:
                del slots[slot]
            if m == "sw" and f.rs2[i] in regs:
                slots[(base, offset)] = regs[f.rs2[i]]
        if m in ("jal", "jalr") and rd != 0:
            for r in [r for r in regs if r not in _CALLEE_SAVED and r != 0]:
                del regs[r]
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
