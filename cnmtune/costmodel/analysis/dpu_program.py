"""A real UPMEM DPU ELF decoded: a mnemonic per instruction, its function, its control flow.

``decode_dpu(image)`` matches every 8-byte slot of .text against the encoding table
(cnmtune.costmodel.analysis.dpu_isa), attributes each instruction to the function symbol holding it
and to a region, reads its branch, jump or call target, and runs the self-checks of
shared/upmem/DPU_ISA.md §3 on every binary. The first failure raises DpuDecodeError naming the
check, the address and the function; a binary that fails one is never turned into a histogram:

- ``decodable words``: every slot holds a 48-bit word (upper 16 bits zero) that some form
  matches (zero words outside every function symbol are padding);
- ``unambiguous words``: no word is left with two mnemonics;
- ``branch targets``: every pc field (conditional jumps, ops with a condition and a pc,
  acquire/release, stop) and every direct ``jump``/``call`` target lies inside .text;
- ``call targets``: a direct ``call`` lands exactly on the entry of a function symbol;
- ``bootstrap stop``: ``__bootstrap`` (else the function at 0x80000000) ends in a ``stop``
  whose pc is its own index, as crt0's ``stop true, __sys_end`` does.
A wrong encoding revision fails these at once (only ~19 % of random words decode at all).

Target fields hold IRAM instruction indices: address = 0x80000000 + 8 * index (LLD drops the
IRAM base and divides by 8, DPU_ISA.md §1). Each instruction gets a ``flow`` kind:

- BRANCH: a form with a pc operand; goes to pc when its condition holds, else falls through.
  With the condition ``true`` (code 1 of every condition field of 4 bits or more: all seven
  ``, true,`` words of the objdump sample) it always goes: GOTO.
- GOTO: also ``jump off``, the direct unconditional jump.
- CALL: ``call rc, off``, a direct call; ICALL: ``call rc, ra[, off | rb]`` through a register.
- IJUMP: ``jump ra[, off]``: a return (``jump r23``) or a jump table; no known successor.
- HALT: ``stop`` and ``fault`` end the thread. A stop's pc is where a rebooted thread resumes:
  it is bounds-checked, not followed.

Real binaries carry no region symbols, so regions come from function names (the SDK 2020.x
runtime and compiler-rt names; ``regions_known`` stays True): softlib is the soft multiply,
divide and float routines (``__mulsi3``, ``__div32``, ``__udiv32``, ``__addsf3``, ...), runtime
is ``__bootstrap`` and every other ``__`` name, the runtime and libc functions of the schema's
call vocabulary and the SDK library families (``mram_``, ``barrier_``, ``seqread_``, ...); the
rest is the user's kernel.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from cnmtune.costmodel.analysis.calls import CallSite
from cnmtune.costmodel.analysis.cfg import FunctionCfg, cfg_from_transfers
from cnmtune.costmodel.analysis.program import KERNEL, RUNTIME, SOFTLIB, Function, text_functions
from cnmtune.costmodel.analysis.dpu_isa import AMBIGUOUS, UNKNOWN, DpuEncodingTable, encoding_table
from cnmtune.costmodel.analysis.elf import ElfImage
from cnmtune.costmodel.analysis.schema import RUNTIME_ROUTINES
from cnmtune.dpu.memory_map import IRAM_BASE
from cnmtune.errors import DpuDecodeError

SLOT = 8
PLAIN, BRANCH, GOTO, CALL, ICALL, IJUMP, HALT = range(7)
FLOW_NAMES = ("plain", "branch", "goto", "call", "icall", "ijump", "halt")

_FLOW_OF_FORM = {"CALLri": CALL, "CALLrr": ICALL, "CALLrri": ICALL, "CALLrrr": ICALL,
                 "JUMPi": GOTO, "JUMPr": IJUMP, "JUMPri": IJUMP, "CALLzri": IJUMP,
                 "CALLzrr": IJUMP, "STOP": HALT, "STOPci": HALT, "FAULTi": HALT}
_SOFTLIB = re.compile(
    r"__(?:(?:u?(?:div|mod)|mul|ashl|ashr|lshr)(?:[sdt]i3|\d+)"
    r"|(?:add|sub|mul|div|neg|cmp|eq|ne|lt|le|gt|ge|unord)[sdt]f[23]"
    r"|float(?:un)?[sdt]i[sdt]f|fix(?:uns)?[sdt]f[sdt]i|(?:extend|trunc)[sdt]f[sdt]f2"
    r"|(?:clz|ctz|popcount|ffs|parity|bswap)[sd]i2)")
_RUNTIME_PREFIXES = ("__", "mram_", "barrier_", "mutex_", "sem_", "handshake_", "perfcounter_",
                     "mem_", "fsb_", "buddy_", "seqread_", "seqwrite_", "atomic_", "dma_")
_RUNTIME_NAMES = frozenset(RUNTIME_ROUTINES)


def dpu_region(name: str) -> str:
    """The region of a DPU function by its name: softlib, runtime or kernel (see the module)."""
    if _SOFTLIB.fullmatch(name):
        return SOFTLIB
    if name in _RUNTIME_NAMES or name.startswith(_RUNTIME_PREFIXES):
        return RUNTIME
    return KERNEL


@dataclass(frozen=True)
class DpuProgram:
    """The decoded .text of a DPU ELF: one entry per 8-byte slot, plus its functions.

    ``forms`` index the encoding table; ``mnemonics`` are as objdump writes them, or the
    operations they encode when decoded with ``shorthands=False``. ``targets`` are the slot
    indices (into .text) that branches, jumps and calls name, -1 for none.
    """

    name: str
    text_address: int
    words: np.ndarray
    forms: np.ndarray
    mnemonics: list[str]
    shorthands: bool
    functions: tuple[Function, ...]
    function_of: np.ndarray
    padding: np.ndarray
    flow: np.ndarray
    targets: np.ndarray

    def address(self, index: int) -> int:
        """The address of instruction ``index``."""
        return self.text_address + SLOT * index

    def function_at(self, index: int) -> Function:
        """The function holding instruction ``index``."""
        return self.functions[int(self.function_of[index])]


def decode_dpu(image: ElfImage, shorthands: bool = True,
               table: DpuEncodingTable | None = None) -> DpuProgram:
    """Decode and check every instruction of a DPU ELF (from ``load_dpu_elf``)."""
    table = table or encoding_table()
    words = np.frombuffer(image.text, dtype="<u8")
    n = len(words)
    base = image.text_address
    if base < IRAM_BASE:
        raise DpuDecodeError(f"{image.name}: DPU .text at 0x{base:08x} lies outside IRAM "
                             f"(0x{IRAM_BASE:08x}...)", "text address", base)
    functions, is_symbol, function_of, covered = text_functions(
        image, n, lambda name, _: dpu_region(name), slot=SLOT)
    padding = (words == 0) & ~covered
    forms = table.match(words)
    program = DpuProgram(image.name, base, words, forms, [], shorthands, functions, function_of,
                         padding, np.zeros(n, dtype=np.int8), np.full(n, -1, dtype=np.int64))
    _check_words(program, table)
    flow, targets = _control_flow(program, table)
    starts = {f.first for f, symbol in zip(functions, is_symbol) if symbol}
    _check_targets(program, table, flow, targets, starts)
    mnemonics = table.names(np.where(padding, table.index("NOP"), forms), shorthands)
    for i in np.flatnonzero(padding).tolist():
        mnemonics[i] = ""
    relative = np.where(targets >= 0, targets - (base - IRAM_BASE) // SLOT, -1)
    program = DpuProgram(image.name, base, words, forms, mnemonics, shorthands, functions,
                         function_of, padding, flow, relative)
    _check_bootstrap(program, table)
    return program


def _fail(program: DpuProgram, check: str, index: int, what: str) -> DpuDecodeError:
    fn = program.function_at(index).name
    address = program.address(index)
    return DpuDecodeError(f"{program.name}: DPU decoder self-check '{check}' failed: {what} at "
                          f"0x{address:08x} (in {fn})", check, address, fn)


def _check_words(program: DpuProgram, table: DpuEncodingTable) -> None:
    live = ~program.padding
    unknown = np.flatnonzero(live & (program.forms == UNKNOWN))
    if unknown.size:
        i = int(unknown[0])
        raise _fail(program, "decodable words", i,
                    f"word 0x{int(program.words[i]):016x} matches no form of the SDK 2020.x "
                    f"DPU encoding ({unknown.size} of {int(live.sum())} words do not decode)")
    ambiguous = np.flatnonzero(live & (program.forms == AMBIGUOUS))
    if ambiguous.size:
        i = int(ambiguous[0])
        names = sorted({table.forms[k].mnemonic
                        for k in table.candidates(int(program.words[i]))})
        raise _fail(program, "unambiguous words", i,
                    f"word 0x{int(program.words[i]):016x} decodes as {' or '.join(names)}")


def _control_flow(program: DpuProgram, table: DpuEncodingTable) -> tuple[np.ndarray, np.ndarray]:
    """The flow kind and absolute target index (IRAM slot, -1 none) of every instruction."""
    flow_of_form, wide_cc = _form_flows(table)
    forms = np.where(program.padding, table.index("NOP"), program.forms)
    flow = flow_of_form[forms]  # a copy: fancy indexing
    words = program.words
    pc = table.operand(words, forms, "pc")
    direct = (flow == CALL) | (flow == GOTO)
    targets = np.where(direct, table.operand(words, forms, "off"), pc)
    cc = table.operand(words, forms, "cc")
    always = (cc == 1) & wide_cc[forms]
    flow[(flow == BRANCH) & always] = GOTO
    flow[(forms == table.index("STOPci")) & ~always] = PLAIN
    return flow, targets


@lru_cache(maxsize=4)
def _form_flows(table: DpuEncodingTable) -> tuple[np.ndarray, np.ndarray]:
    """The flow kind of every form, and whether its condition field has 4 bits or more."""
    flow = np.array([_FLOW_OF_FORM.get(f.name, BRANCH if "pc" in f.operands else PLAIN)
                     for f in table.forms], dtype=np.int8)
    wide_cc = np.array([sum(bin(m).count("1") for op, _, m, _ in f.fields if op == "cc") >= 4
                        for f in table.forms])
    return flow, wide_cc


def _check_targets(program: DpuProgram, table: DpuEncodingTable, flow: np.ndarray,
                   targets: np.ndarray, starts: set[int]) -> None:
    n = len(program.words)
    first = (program.text_address - IRAM_BASE) // SLOT
    relative = targets - first
    outside = np.flatnonzero((targets >= 0) & ((relative < 0) | (relative >= n)))
    if outside.size:
        i = int(outside[0])
        name = table.forms[int(program.forms[i])].mnemonic
        end = program.address(n)
        raise _fail(program, "branch targets", i,
                    f"{name} targets 0x{IRAM_BASE + SLOT * int(targets[i]):08x}, outside "
                    f".text [0x{program.text_address:08x}, 0x{end:08x})")
    for i in np.flatnonzero(flow == CALL).tolist():
        at = int(relative[i])
        if at not in starts:
            fn = program.function_at(at)
            where = f"{fn.name}+0x{SLOT * (at - fn.first):x}" if at != fn.first else fn.name
            raise _fail(program, "call targets", i,
                        f"call targets 0x{program.address(at):08x} ({where}), not the entry "
                        "of a function symbol")


def _check_bootstrap(program: DpuProgram, table: DpuEncodingTable) -> None:
    boot = next((f for f in program.functions if f.name == "__bootstrap"), None) \
        or next((f for f in program.functions if f.address == IRAM_BASE), None)
    if boot is None:
        raise DpuDecodeError(
            f"{program.name}: DPU decoder self-check 'bootstrap stop' failed: no __bootstrap "
            f"function and no function at 0x{IRAM_BASE:08x}", "bootstrap stop")
    last = boot.first + boot.count - 1
    if int(program.forms[last]) != table.index("STOPci"):
        what = table.forms[int(program.forms[last])].mnemonic \
            if program.mnemonics[last] else "a zero word"
        raise _fail(program, "bootstrap stop", last,
                    f"{boot.name} ends in '{what}', not a stop with a pc")
    if int(program.targets[last]) != last:
        target = program.address(int(program.targets[last]))
        raise _fail(program, "bootstrap stop", last,
                    f"the stop ending {boot.name} targets 0x{target:08x}, not itself")


def dpu_cfgs(program: DpuProgram) -> tuple[FunctionCfg, ...]:
    """The CFG and natural loops of every function (branches and jumps inside it)."""
    transfers: list[list[tuple[int, int | None, bool]]] = [[] for _ in program.functions]
    moves = np.flatnonzero(np.isin(program.flow, (BRANCH, GOTO, IJUMP, HALT)))
    for i, kind, k, target in zip(moves.tolist(), program.flow[moves].tolist(),
                                  program.function_of[moves].tolist(),
                                  program.targets[moves].tolist()):
        fn = program.functions[k]
        inside = target - fn.first if kind in (BRANCH, GOTO) and 0 <= target - fn.first \
            < fn.count else None
        transfers[k].append((i - fn.first, inside, kind == BRANCH))
    return tuple(cfg_from_transfers(t, f.count) for t, f in zip(transfers, program.functions))


def dpu_call_sites(program: DpuProgram) -> list[CallSite]:
    """Direct calls, tail jumps (an unconditional jump leaving its function) and indirect
    calls, in address order."""
    sites = []
    for i in np.flatnonzero(np.isin(program.flow, (CALL, GOTO, ICALL))).tolist():
        kind, target = int(program.flow[i]), int(program.targets[i])
        if kind == ICALL:
            sites.append(CallSite(i, None, None, None, False, tail=False))
            continue
        caller = program.function_at(i)
        if kind == GOTO and caller.first <= target < caller.first + caller.count:
            continue
        k = int(program.function_of[target])
        fn = program.functions[k]
        exact = fn.first == target
        name = fn.name if exact else f"{fn.name}+0x{SLOT * (target - fn.first):x}"
        sites.append(CallSite(i, program.address(target), name, k, exact, tail=kind == GOTO))
    return sites

