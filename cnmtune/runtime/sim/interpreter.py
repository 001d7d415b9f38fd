"""A numba-jitted rv32i interpreter: runs one tasklet of one DPU until the next event.

The architectural state lives in caller-owned numpy arrays (``DpuState``); ``run_tasklet`` is
the njit entry point (callable from other njit code, e.g. a jitted scheduler, with no Python
dispatch per event) and ``Interpreter.run`` is its thin Python wrapper. ``run_segment`` is the
co-simulation's entry point: run_tasklet plus the services that need no Python (ME, valid DMAs),
so that a segment usually costs one call.

Accounting per executed instruction: ``slots += charge[i]`` (nothing while the tasklet is inside
a table-charged routine: helpers it calls are part of its price) and ``instructions += 1``. The
budget is in issue **slots** (plus an optional raw-instruction cap, for safety against loops in
zero-charge code). Direct loads/stores to MRAM are counted per tasklet in
``mram_accesses`` (one per load/store *instruction*, whatever its width).

Table-charged routines: when execution reaches a word with ``routine[i] >= 0`` and the tasklet
is not inside a routine, ``routine_acc[t, id] += (1, param)`` with param from ``RoutineKind``,
and the tasklet is inside until its pc equals the ra it had at the entry. Nested entries are
part of the outer routine and not recorded. ``in_routine[t] = (id or -1, return address)``
persists across calls, events and context switches.

Native routines: a routine whose ``routine_native[id]`` is a ``NativeOp`` (compiler_rt's integer
multiply/divide, selected by name in image.py; see cnmtune.runtime.sim.routines) is not entered when its operands, ra and sp allow
(``native_call``, ``native_entry_ok``; otherwise it is interpreted as above): the entry is
recorded exactly as above, a0 (and a1) receive the C result and the tasklet continues at ra,
counted as ONE raw instruction and no slot. Slots, routine_acc, events and results are those of
interpretation; only raw-instruction counts (and with them the raw-instruction cap) and the dead
stack space below sp, which the routine would have scribbled on, differ.
"""

from __future__ import annotations

import enum
from typing import NamedTuple

import numpy as np
from numba import njit

from cnmtune.dpu.memory_map import MAX_TASKLETS, MRAM_BASE, MRAM_OFFSET_MASK, MRAM_SIZE, WRAM_SIZE
from cnmtune.runtime.sim.program import (
    C_CHARGE, CHARGE_MASK, C_IMM, C_OP, C_RD, C_ROUTINE, C_RS1, C_RS2, C_TARGET, MISALIGNED_TARGET_BASE,
    MISALIGNED_TARGET_LIMIT, DecodedProgram, Op)
from cnmtune.runtime.sim.routines import M32, native_call, native_entry_ok, routine_param

IRAM_REGION_BYTES = 4 * 1024 * 1024  # dpu.ld's iram region: stores anywhere in it are WRITE_TO_IRAM
# out[] = kind, pc, slots, instructions, fault, address, then what the caller would otherwise read
# back from the state: routine entries recorded in routine_acc by this run, the id and param of
# the last of them (-1, 0 if none), a0, a1, a2, a7 at the return (an ECALL's arguments), and
# mram_accesses[t] after the run.
OUT_SIZE = 14
OUT_EVENT = 6  # len(Event): the fields of out[] that Interpreter.run reports
_NEVER = -(2 ** 62)  # an instruction index no pc can have (a misaligned return address)


class EventKind(enum.IntEnum):
    """Why run_tasklet returned."""

    ECALL = 1  # stopped AT an ecall (already charged); service it, then pcs[t] += 4
    BUDGET = 2  # slot budget (or instruction cap) used up; pc = next instruction
    FAULT = 3  # the instruction at pc did not execute and is not counted (see FaultKind)
    MRAM_GROW = 4  # MRAM access at address >= len(mram): grow mram and run again (not executed)
    EBREAK = 5  # stopped AT an ebreak (charged, like ECALL)


class FaultKind(enum.IntEnum):
    """What went wrong in a FAULT event; ``address`` tells where."""

    NONE = 0
    MEMORY_OUT_OF_BOUNDS = 1  # data address outside WRAM/MRAM (atomic region and IRAM loads too)
    MISALIGNED = 2  # load/store address not naturally aligned
    ILLEGAL_INSTRUCTION = 3  # undecodable word; address = pc
    FETCH_OUT_OF_BOUNDS = 4  # pc outside the program; address = pc
    WRITE_TO_IRAM = 5  # store into the IRAM region
    FETCH_MISALIGNED = 6  # jump/branch to a pc that is not 4-aligned; address = pc




# Plain ints for the jitted code (numba freezes module globals as constants).
_ECALL, _BUDGET, _FAULT, _GROW, _EBREAK = 1, 2, 3, 4, 5
_F_OOB, _F_MISALIGNED, _F_ILLEGAL, _F_FETCH, _F_IRAM, _F_FETCH_MIS = 1, 2, 3, 4, 5, 6
# Memory classification results: 0/1 are accesses, the rest are events.
_IN_WRAM, _IN_MRAM, _M_GROW, _M_MISALIGNED, _M_OOB, _M_IRAM = 0, 1, 2, 3, 4, 5
_MRAM_BASE, _MRAM_SIZE, _IRAM_BASE = MRAM_BASE, MRAM_SIZE, 0x80000000
(_ILLEGAL, _NOP, _LI, _ADDI, _SLTI, _SLTIU, _XORI, _ORI, _ANDI, _SLLI, _SRLI, _SRAI, _ADD, _SUB,
 _SLL, _SLT, _SLTU, _XOR, _SRL, _SRA, _OR, _AND, _LB, _LH, _LW, _LBU, _LHU, _SB, _SH, _SW,
 _BEQ, _BNE, _BLT, _BGE, _BLTU, _BGEU, _JAL, _J, _JALR, _ECALL_OP, _EBREAK_OP) = range(41)
assert _EBREAK_OP == Op.EBREAK and _LW == Op.LW and _JALR == Op.JALR


@njit(cache=True, nogil=True)
def _pc_of(idx, base):
    """The pc of an instruction index (inverse of program.target_address's encodings)."""
    if idx < MISALIGNED_TARGET_LIMIT:
        return ((idx - MISALIGNED_TARGET_BASE) << 2) | 2
    return (base + 4 * idx) & M32


@njit(cache=True, nogil=True)
def _classify(addr, align_mask, wlen, mlen, store):
    """Where a data access of an aligned width lands (_IN_*), or why it cannot (_M_*)."""
    if addr & align_mask:
        return _M_MISALIGNED
    if addr < wlen:
        return _IN_WRAM
    off = addr - _MRAM_BASE
    if 0 <= off < _MRAM_SIZE:
        return _IN_MRAM if off < mlen else _M_GROW
    if store and _IRAM_BASE <= addr < _IRAM_BASE + IRAM_REGION_BYTES:
        return _M_IRAM
    return _M_OOB


@njit(cache=True, nogil=True)
def _load_small(m8, m16, off, op):
    if op == _LB:
        return (np.int64(m8[off]) ^ 0x80) - 0x80
    if op == _LBU:
        return np.int64(m8[off])
    v = np.int64(m16[off >> 1])
    return (v ^ 0x8000) - 0x8000 if op == _LH else v


@njit(cache=True, nogil=True)
def _store_small(m8, m16, off, op, v):
    if op == _SB:
        m8[off] = v & 0xFF
    else:
        m16[off >> 1] = v & 0xFFFF


@njit(cache=True, nogil=True)
def run_tasklet(code, text_address, routine_kind, routine_native, t, regs, pcs, wram, mram, stack_deepest,
                routine_acc, in_routine, mram_accesses, budget, max_instructions, out):
    """Run tasklet t from pcs[t] until an event; fill out[:OUT_SIZE] and return the EventKind value.

    budget: issue slots; max_instructions: raw-instruction cap. routine_native: NativeOp per
    routine id (all 0: interpret every routine). len(mram) must be a multiple of 8. On return
    pcs[t], regs[t], in_routine[t], routine_acc[t], mram_accesses[t] and memory are up to date.
    """
    n = code.shape[0]
    base = np.int64(text_address)
    r = regs[t]
    r[0] = 0  # whatever the caller left there: x0 reads as 0 and is never written below
    w16, w32 = wram.view(np.uint16), wram.view(np.uint32)
    m16, m32 = mram.view(np.uint16), mram.view(np.uint32)
    wlen, mlen = np.int64(wram.shape[0]), np.int64(mram.shape[0])
    deepest = np.int64(stack_deepest[t])
    cur = in_routine[t, 0]
    ret_idx = _NEVER
    live = np.int64(-1 if cur < 0 else 0)  # a mask; 0 inside a priced routine: its helpers are in its price
    if cur >= 0:
        ret = in_routine[t, 1]
        ret_idx = (ret - base) >> 2 if (ret & 3) == 0 else _NEVER
    slots = np.int64(0)
    count = np.int64(0)
    macc = np.int64(0)
    entries = np.int64(0)  # routine entries recorded in routine_acc[t] by this run
    last_rid = np.int64(-1)
    last_param = np.int64(0)
    ev = 0
    fault = 0
    memk = -1  # a failed data access: its _M_* classification
    faddr = np.int64(0)
    idx = (np.int64(pcs[t]) - base) >> 2
    if pcs[t] & 3:  # the pc itself cannot be fetched: fault before anything else
        ev, fault, faddr = _FAULT, _F_FETCH_MIS, np.int64(pcs[t])
    while ev == 0:
        if slots >= budget or count >= max_instructions:
            ev = _BUDGET
            break
        if idx < 0 or idx >= n:  # fell off the program or jumped outside it
            ev, fault = _FAULT, _F_FETCH
            faddr = _pc_of(idx, base)
            if idx < MISALIGNED_TARGET_LIMIT:
                fault = _F_FETCH_MIS
            break
        c = code[idx, C_CHARGE]  # charge | ROUTINE_ENTRY if a routine entry: one test for the common case
        if c > CHARGE_MASK or idx == ret_idx:
            if idx == ret_idx:  # back at the return address: routine left (_NEVER when outside)
                cur = -1
                ret_idx = _NEVER
                live = np.int64(-1)
            c &= CHARGE_MASK
            rid = code[idx, C_ROUTINE]
            if rid >= 0 and cur < 0:
                nat = routine_native[rid]
                if nat != 0:  # a native call: the routine's effect without entering it
                    ret = np.int64(r[1])
                    if native_entry_ok(ret, np.int64(r[2]), base, n, wlen):
                        done, x0, x1 = native_call(nat, r[10], r[11], r[12], r[13])
                        if done:
                            param = routine_param(routine_kind[rid], np.int64(r[10]), np.int64(r[11]),
                                                  np.int64(r[12]), np.int64(r[13]))
                            routine_acc[t, rid, 0] += 1
                            routine_acc[t, rid, 1] += param
                            entries += 1
                            last_rid, last_param = np.int64(rid), np.int64(param)
                            in_routine[t, 1] = ret
                            r[10] = x0
                            r[11] = x1
                            count += 1  # no slot: the entry word of a priced routine is free
                            idx = (ret - base) >> 2
                            continue
                cur = rid
                live = np.int64(0)
                ret = np.int64(r[1])
                ret_idx = (ret - base) >> 2 if (ret & 3) == 0 else _NEVER
                in_routine[t, 1] = ret
                param = routine_param(routine_kind[rid], np.int64(r[10]), np.int64(r[11]),
                                      np.int64(r[12]), np.int64(r[13]))
                routine_acc[t, rid, 0] += 1
                routine_acc[t, rid, 1] += param
                entries += 1
                last_rid, last_param = np.int64(rid), np.int64(param)
        slots += c & live
        count += 1
        op = code[idx, C_OP]
        rd = code[idx, C_RD]
        a = np.int64(r[code[idx, C_RS1]])
        b = np.int64(r[code[idx, C_RS2]])
        imm = np.int64(code[idx, C_IMM])
        nxt = idx + 1
        # ---- ops that write rd fall through to the write-back below; the rest `continue`.
        if op == _ADDI:
            v = a + imm
        elif op == _LW:
            addr = (a + imm) & M32
            k = _classify(addr, 3, wlen, mlen, False)
            if k == _IN_WRAM:
                v = np.int64(w32[addr >> 2])
            elif k == _IN_MRAM:
                v = np.int64(m32[(addr - _MRAM_BASE) >> 2])
                macc += 1
            else:
                memk, faddr = k, addr
                break
            if rd == 0:
                idx = nxt
                continue
        elif op == _SW:
            addr = (a + imm) & M32
            k = _classify(addr, 3, wlen, mlen, True)
            if k == _IN_WRAM:
                w32[addr >> 2] = b
            elif k == _IN_MRAM:
                m32[(addr - _MRAM_BASE) >> 2] = b
                macc += 1
            else:
                memk, faddr = k, addr
                break
            idx = nxt
            continue
        elif op == _ADD:
            v = a + b
        elif op >= _BEQ and op <= _BGEU:
            if op == _BEQ:
                taken = a == b
            elif op == _BNE:
                taken = a != b
            elif op == _BLT:
                taken = (a ^ 0x80000000) < (b ^ 0x80000000)
            elif op == _BGE:
                taken = (a ^ 0x80000000) >= (b ^ 0x80000000)
            elif op == _BLTU:
                taken = a < b
            else:
                taken = a >= b
            idx = np.int64(code[idx, C_TARGET]) if taken else nxt
            continue
        elif op == _LI:
            v = imm
        elif op == _J:
            idx = np.int64(code[idx, C_TARGET])
            continue
        elif op == _JAL:
            v = imm  # the link value pc + 4, predecoded
            nxt = np.int64(code[idx, C_TARGET])
        elif op == _JALR:
            dest = (a + imm) & (M32 - 1)
            v = (base + 4 * nxt) & M32
            nxt = (dest - base) >> 2
            if dest & 3:
                nxt = MISALIGNED_TARGET_BASE + (dest >> 2)
            if rd == 0:
                idx = nxt
                continue
        elif op == _SLLI or op == _SLL:
            v = a << ((imm if op == _SLLI else b) & 31)
        elif op == _SRLI or op == _SRL:
            v = a >> ((imm if op == _SRLI else b) & 31)
        elif op == _SRAI or op == _SRA:
            v = ((a ^ 0x80000000) - 0x80000000) >> ((imm if op == _SRAI else b) & 31)
        elif op == _SUB:
            v = a - b
        elif op == _ANDI or op == _AND:
            v = a & ((imm & M32) if op == _ANDI else b)
        elif op == _ORI or op == _OR:
            v = a | ((imm & M32) if op == _ORI else b)
        elif op == _XORI or op == _XOR:
            v = a ^ ((imm & M32) if op == _XORI else b)
        elif op == _SLTI or op == _SLT:
            v = 1 if (a ^ 0x80000000) < (((imm if op == _SLTI else b) & M32) ^ 0x80000000) else 0
        elif op == _SLTIU or op == _SLTU:
            v = 1 if a < ((imm & M32) if op == _SLTIU else b) else 0
        elif op >= _LB and op <= _LHU:
            addr = (a + imm) & M32
            k = _classify(addr, 1 if (op == _LH or op == _LHU) else 0, wlen, mlen, False)
            if k == _IN_WRAM:
                v = _load_small(wram, w16, addr, op)
            elif k == _IN_MRAM:
                v = _load_small(mram, m16, addr - _MRAM_BASE, op)
                macc += 1
            else:
                memk, faddr = k, addr
                break
            if rd == 0:
                idx = nxt
                continue
        elif op == _SB or op == _SH:
            addr = (a + imm) & M32
            k = _classify(addr, 1 if op == _SH else 0, wlen, mlen, True)
            if k == _IN_WRAM:
                _store_small(wram, w16, addr, op, b)
            elif k == _IN_MRAM:
                _store_small(mram, m16, addr - _MRAM_BASE, op, b)
                macc += 1
            else:
                memk, faddr = k, addr
                break
            idx = nxt
            continue
        elif op == _NOP:
            idx = nxt
            continue
        elif op == _ECALL_OP or op == _EBREAK_OP:
            ev = _ECALL if op == _ECALL_OP else _EBREAK
            break
        else:  # ILLEGAL
            ev, fault, faddr = _FAULT, _F_ILLEGAL, (base + 4 * idx) & M32
            break
        # ---- write-back (rd != 0 here); sp writes record the deepest stack (DpuState.stack_deepest)
        r[rd] = v
        if rd == 2:
            sp = np.int64(v & M32)
            sp = sp - (np.int64(1) << 32) if sp >= 0x80000000 else sp  # below address 0 is deeper still
            if sp < deepest:
                deepest = sp
        idx = nxt
    # ---- translate memory classifications into events; undo the charge of what did not run.
    if memk == _M_GROW:
        ev = _GROW
    elif memk >= 0:
        fault = _F_MISALIGNED if memk == _M_MISALIGNED else (_F_OOB if memk == _M_OOB else _F_IRAM)
        ev = _FAULT
    if ev == _GROW or (ev == _FAULT and fault != _F_FETCH and fault != _F_FETCH_MIS):
        slots -= code[idx, C_CHARGE] & CHARGE_MASK & live
        count -= 1
    if ev == _FAULT and (fault == _F_FETCH or fault == _F_FETCH_MIS):
        pc = faddr
    else:
        pc = _pc_of(idx, base)
    pcs[t] = pc
    in_routine[t, 0] = cur
    mram_accesses[t] += macc
    out[0] = ev
    out[1] = pc
    out[2] = slots
    out[3] = count
    out[4] = fault
    out[5] = faddr
    out[6] = entries
    out[7] = last_rid
    out[8] = last_param
    out[9] = r[10]
    out[10] = r[11]
    out[11] = r[12]
    out[12] = r[17]
    out[13] = mram_accesses[t]
    stack_deepest[t] = deepest
    return ev


# run_segment's services (cnm_ecall.h numbers, checked against abi.Service in dpu.py)
SERVICE_ME, SERVICE_MRAM_READ, SERVICE_MRAM_WRITE = 1, 4, 5


@njit(cache=True, nogil=True)
def dma_bytes(n):
    """The bytes a DMA of run-time size `n` moves, as the DPU decodes it: the SDK puts n / 8 - 1 in
    the top byte of ldma/sdma's WRAM register (`move r2, -1; lsr_add r0, r2, n, 3; lsl_add r0, wram,
    r0, 24; ldma r0, mram, 0` in an SDK objdump of a variable-size mram_read) and the engine moves
    (1 + that byte) * 8 bytes (uPIMulator, logic.go ExecuteLdmaDmaRri). So a size of 8..2048 in
    steps of 8 is itself, 12 moves 8, and 0 moves 2048: PrIM's BS reads its remaining 0 bytes
    and verifies on UPMEM hardware. The SDK refuses a constant size outside the rule at compile
    time (cnmtune's mram.h too); the DPU checks nothing at run time."""
    return ((((n >> 3) - 1) & 0xFF) + 1) << 3


@njit(cache=True, nogil=True)
def dma_offset(address):
    """The MRAM byte a DMA at `address` starts from, as the engine decodes it: the offset in the
    bank (memory_map.MRAM_OFFSET_MASK), aligned down to 8 like both of its addresses."""
    return address & MRAM_OFFSET_MASK & ~7
# run_segment's out[]: run_tasklet's out[:OUT_SIZE] of the last run, then these totals of the call
_SEG_SLOTS, _SEG_INSTRUCTIONS, _SEG_ENTRIES, _SEG_RID, _SEG_PARAM, _SEG_DMA = range(OUT_SIZE, OUT_SIZE + 6)
SEGMENT_OUT_SIZE = OUT_SIZE + 6
_SLOT_BUDGET = 2 ** 62


@njit(cache=True, nogil=True)
def run_segment(code, text_address, routine_kind, routine_native, t, regs, pcs, wram, mram, stack_deepest,
                routine_acc, in_routine, mram_accesses, left, out):
    """run_tasklet (no slot budget) until an event the caller must see, servicing what needs no Python.

    The co-simulation's per-segment loop (dpu.py, _Functional.step) in one call for the common
    cases: an ECALL of ME sets a0 = t, moves pc past the ecall and runs on; an ECALL of MRAM_READ
    or MRAM_WRITE whose size and addresses are valid and whose MRAM range lies inside the
    allocated mram is performed (bytes copied, pc past the ecall, out[_SEG_DMA] = 1 for a read, 2
    for a write) and returned. Every other event (other services, an invalid DMA or one needing a
    larger mram, MRAM_GROW, faults, the instruction cap) is returned untouched, as run_tasklet
    reported it in out[:OUT_SIZE]. left: raw instructions left; each run gets max(left - executed
    so far, 1). out[OUT_SIZE:] = slots, instructions and routine entries summed over the call's
    runs, the last entry's routine id and param (-1, 0 if none), then the DMA flag (0 if none).
    out must hold SEGMENT_OUT_SIZE values.
    """
    slots = np.int64(0)
    count = np.int64(0)
    entries = np.int64(0)
    rid = np.int64(-1)
    param = np.int64(0)
    done = 0
    while True:
        ev = run_tasklet(code, text_address, routine_kind, routine_native, t, regs, pcs, wram, mram, stack_deepest,
                         routine_acc, in_routine, mram_accesses, _SLOT_BUDGET, max(left - count, 1), out)
        slots += out[2]
        count += out[3]
        if out[6]:
            entries += out[6]
            rid = out[7]
            param = out[8]
        if ev != _ECALL:
            break
        a7 = out[12]
        if a7 == SERVICE_ME:
            pcs[t] = (out[1] + 4) & 0xFFFFFFFF
            regs[t, 10] = t
            continue
        if a7 == SERVICE_MRAM_READ or a7 == SERVICE_MRAM_WRITE:
            n = dma_bytes(out[11])
            out[11] = n  # what every consumer of the ecall (the DMA engine, the timing) sees
            if a7 == SERVICE_MRAM_READ:
                m, w = out[9], out[10]
            else:
                m, w = out[10], out[9]
            offset = dma_offset(m)
            if (((w | m) & 7) == 0 and 0 <= w <= WRAM_SIZE - n
                    and offset <= MRAM_SIZE - n and offset + n <= mram.shape[0]):
                pcs[t] = (out[1] + 4) & 0xFFFFFFFF
                if a7 == SERVICE_MRAM_READ:
                    wram[w:w + n] = mram[offset:offset + n]
                    done = 1
                else:
                    mram[offset:offset + n] = wram[w:w + n]
                    done = 2
        break
    out[_SEG_SLOTS] = slots
    out[_SEG_INSTRUCTIONS] = count
    out[_SEG_ENTRIES] = entries
    out[_SEG_RID] = rid
    out[_SEG_PARAM] = param
    out[_SEG_DMA] = done


class Event(NamedTuple):
    """What stopped a run: kind, pc (of the ecall / faulting word), slots and raw instructions
    executed by this run, fault kind and address (data address, or pc for fetch faults)."""

    kind: EventKind
    pc: int
    slots: int
    instructions: int
    fault: FaultKind = FaultKind.NONE
    address: int = 0


# Enum lookups by value without the (slow) Enum constructor on the per-event path.
_EVENT_KINDS = (None, *EventKind)
_FAULT_KINDS = tuple(FaultKind)
assert all(k.value == i for i, k in enumerate(_FAULT_KINDS))


class DpuState:
    """The arrays run_tasklet reads and writes for one DPU (all owned by the caller).

    regs uint32[24, 32], pcs uint32[24], wram uint8[65536], mram uint8[n] (n % 8 == 0, grown on
    MRAM_GROW), stack_deepest int64[24] (the lowest sp a tasklet reached, signed; below its
    stack it overflowed, which a DPU does not check, so neither does run_tasklet:
    cnmtune.runtime.sim.dpu reports it), routine_acc int64[24, R, 2]
    (count, param sum), in_routine int64[24, 2] (routine id or -1, return address),
    mram_accesses int64[24] (direct MRAM load/store instructions).
    """

    def __init__(self, n_routines: int = 0, mram_bytes: int = 0):
        self.regs = np.zeros((MAX_TASKLETS, 32), np.uint32)
        self.pcs = np.zeros(MAX_TASKLETS, np.uint32)
        self.wram = np.zeros(WRAM_SIZE, np.uint8)
        self.mram = np.zeros(_round8(mram_bytes), np.uint8)
        self.stack_deepest = np.full(MAX_TASKLETS, M32, np.int64)
        self.routine_acc = np.zeros((MAX_TASKLETS, n_routines, 2), np.int64)
        self.in_routine = np.zeros((MAX_TASKLETS, 2), np.int64)
        self.in_routine[:, 0] = -1
        self.mram_accesses = np.zeros(MAX_TASKLETS, np.int64)

    def grow_mram(self, min_bytes: int) -> None:
        """Grow mram (zero-filled, at least doubling, capped at 64 MiB) to hold min_bytes."""
        self.mram = grown_mram(self.mram, min_bytes)


@njit(cache=True, nogil=True)
def grown_mram(mram, min_bytes):
    """mram itself if it holds min_bytes, else a zero-filled copy at least twice as large (<= 64 MiB)."""
    if min_bytes <= mram.shape[0]:
        return mram
    size = min(MRAM_SIZE, max(_round8(min_bytes), 2 * mram.shape[0], 1 << 16))
    grown = np.zeros(size, np.uint8)
    grown[:mram.shape[0]] = mram
    return grown


@njit(cache=True, nogil=True)
def _round8(n):
    return (n + 7) & ~7


class Interpreter:
    """Runs tasklets of one predecoded program on a DpuState.

    Not thread-safe (it reuses one output buffer): use one Interpreter per thread; they can
    share the program. run_tasklet itself releases the GIL.
    """

    def __init__(self, program: DecodedProgram):
        self.program = program
        self._out = np.zeros(OUT_SIZE, np.int64)

    def run(self, t: int, state: DpuState, budget: int,
            max_instructions: int = 2 ** 62) -> Event:
        """Run tasklet t from state.pcs[t] until an event; budget is in issue slots."""
        p, out = self.program, self._out
        if state.routine_acc.shape[1] != p.n_routines:
            raise ValueError(f"routine_acc has {state.routine_acc.shape[1]} routines, "
                             f"the program {p.n_routines}")
        run_tasklet(p.code, p.text_address, p.routine_kind, p.routine_native, t, state.regs,
                    state.pcs, state.wram, state.mram, state.stack_deepest,
                    state.routine_acc, state.in_routine, state.mram_accesses, budget,
                    max_instructions, out)
        kind, pc, slots, count, fault, address = out.tolist()[:OUT_EVENT]
        return Event(_EVENT_KINDS[kind], pc, slots, count, _FAULT_KINDS[fault], address)
