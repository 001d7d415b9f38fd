"""The rv32i interpreter: decoding, every op, events and faults, routine accounting, real va."""

from __future__ import annotations

import numpy as np
import pytest
from sim_asm import assemble, to_bytes
from sim_va import load_elf, run_one_tasklet, setup_va, va_result

from cnmtune.runtime.sim.interpreter import DpuState, EventKind, FaultKind, Interpreter
from cnmtune.runtime.sim.routines import RoutineKind, routine_param
from cnmtune.runtime.sim.program import Op, decode_program
from cnmtune.runtime.toolchain import Variant

BASE = 0x80000000
M32 = 0xFFFFFFFF


def make(source: str, charge=None, routine=None, routine_kind=None, mram_bytes: int = 0):
    """Decode ``source`` at 0x80000000; return (interpreter, fresh state with pcs[0] at the start)."""
    program = decode_program(to_bytes(assemble(source)), BASE, charge, routine, routine_kind)
    state = DpuState(program.n_routines, mram_bytes)
    state.pcs[0] = BASE
    return Interpreter(program), state


def run(source: str, budget: int = 1 << 30, **kwargs):
    interp, state = make(source, **kwargs)
    return interp.run(0, state, budget), state


def s32(x: int) -> int:
    return x - (1 << 32) if x & 0x80000000 else x


# ---------------------------------------------------------------- decoding

def test_decode_fields_and_rewrites():
    words = assemble("""
        auipc a0, 0x12345
        lui zero, 1
        jal ra, 8
        jal zero, -4
        beq a0, a1, 6
        sw a1, -4(sp)
        srai t0, t1, 31
        fence
        fence.i
        ecall
        ebreak
    """) + [0x02B50533, 0x00001073, 0xFFFFFFFF, 0, 0x0200_1013]  # mul, csrrw, junk, 0, slli shamt[5]
    p = decode_program(to_bytes(words), BASE)
    assert [Op(o) for o in p.op] == [Op.LI, Op.NOP, Op.JAL, Op.J, Op.BEQ, Op.SW, Op.SRAI, Op.NOP,
                                     Op.NOP, Op.ECALL, Op.EBREAK] + [Op.ILLEGAL] * 5
    assert p.imm[0] == s32((BASE + 0x12345000) & M32) and p.rd[0] == 10
    assert p.imm[2] == s32(BASE + 12) and p.target[2] == 4 and p.target[3] == 2
    assert p.target[4] < -(2 ** 30)  # branch to a 2 mod 4 address: encoded as misaligned
    assert (p.rs1[5], p.rs2[5], p.imm[5]) == (2, 11, -4)
    assert (p.rd[6], p.rs1[6], p.imm[6]) == (5, 6, 31)
    assert (p.charge == 1).all() and (p.routine == -1).all() and p.n_routines == 0
    assert p.code.shape == (16, 8) and not p.code.flags.writeable


def test_decode_rejects_bad_tables():
    text = to_bytes(assemble("nop\nnop"))
    with pytest.raises(ValueError):
        decode_program(text, BASE, charge=[1])
    with pytest.raises(ValueError):
        decode_program(text, BASE, routine=[0, 2], routine_kind=[1, 1])
    assert decode_program(text, BASE, routine=[-1, 1]).n_routines == 2


# ---------------------------------------------------------------- ALU, loads, control flow

ALU_CASES = [
    ("add", 5, -3, 2), ("add", 0x7FFFFFFF, 1, 0x80000000), ("add", M32, 1, 0),
    ("sub", 3, 5, -2), ("sub", 0, 0x80000000, 0x80000000),
    ("sll", 1, 31, 0x80000000), ("sll", 3, 33, 6),  # shift amount: low 5 bits
    ("srl", 0x80000000, 31, 1), ("srl", -16, 2, 0x3FFFFFFC),
    ("sra", -16, 2, -4), ("sra", 0x80000000, 31, -1), ("sra", 0x40000000, 34, 0x10000000),
    ("slt", -1, 1, 1), ("slt", 1, -1, 0), ("slt", 5, 5, 0),
    ("sltu", -1, 1, 0), ("sltu", 1, -1, 1), ("sltu", 0, 1, 1),
    ("xor", 0xF0F0F0F0, 0xFF00FF00, 0x0FF00FF0), ("or", 0xF0, 0x0F, 0xFF), ("and", -1, 0x1234, 0x1234),
]
ALU_IMM_CASES = [
    ("addi", 5, -6, -1), ("addi", M32, 1, 0), ("slti", -5, -4, 1), ("slti", 0, -1, 0),
    ("sltiu", 5, -1, 1), ("sltiu", -1, 5, 0),  # the immediate is sign-extended, then unsigned
    ("xori", 0x0F, -1, ~0x0F), ("ori", 0x100, -2048, -2048 | 0x100), ("andi", -1, -8, -8),
    ("slli", 3, 4, 48), ("srli", -1, 28, 15), ("srai", -256, 4, -16), ("srai", 0x7FFFFFFF, 30, 1),
]


@pytest.mark.parametrize("op,a,b,want", ALU_CASES)
def test_register_alu_ops(op, a, b, want):
    event, state = run(f"li a0, {a}\nli a1, {b}\n{op} a2, a0, a1\necall")
    assert event.kind == EventKind.ECALL
    assert state.regs[0, 12] == want & M32


@pytest.mark.parametrize("op,a,imm,want", ALU_IMM_CASES)
def test_immediate_alu_ops(op, a, imm, want):
    event, state = run(f"li a0, {a}\n{op} a2, a0, {imm}\necall")
    assert event.kind == EventKind.ECALL and state.regs[0, 12] == want & M32


def test_loads_extend_and_stores_truncate():
    event, state = run("""
        li t0, 0x8081F2F3
        li t1, 0x100
        sw t0, 0(t1)
        lb a0, 0(t1)
        lbu a1, 0(t1)
        lh a2, 2(t1)
        lhu a3, 2(t1)
        lw a4, 0(t1)
        lb a5, 1(t1)
        li t2, 0x12345678
        sb t2, 8(t1)
        sh t2, 10(t1)
        lw a6, 8(t1)
        lw zero, 0(t1)
        ecall
    """)
    r = state.regs[0]
    assert event.kind == EventKind.ECALL and r[0] == 0
    assert (r[10], r[11], r[12], r[13], r[14], r[15]) == (
        0xFFFFFFF3, 0xF3, 0xFFFF8081, 0x8081, 0x8081F2F3, 0xFFFFFFF2)
    assert r[16] == 0x56780078
    assert bytes(state.wram[0x100:0x104]) == bytes([0xF3, 0xF2, 0x81, 0x80])
    assert state.mram_accesses[0] == 0


def test_direct_mram_access_is_counted():
    event, state = run("""
        li t1, 0x08000010
        li t0, -2
        sw t0, 0(t1)
        sh t0, 4(t1)
        lhu a0, 4(t1)
        lb a1, 0(t1)
        ecall
    """, mram_bytes=64)
    assert event.kind == EventKind.ECALL and state.mram_accesses[0] == 4
    assert (state.regs[0, 10], state.regs[0, 11]) == (0xFFFE, 0xFFFFFFFE)


BRANCH_CASES = [("beq", 3, 3, 1), ("beq", 3, 4, 0), ("bne", 3, 4, 1), ("bne", 3, 3, 0),
                ("blt", -1, 0, 1), ("blt", 0, -1, 0), ("blt", 2, 2, 0),
                ("bge", 0, -1, 1), ("bge", 2, 2, 1), ("bge", -1, 0, 0),
                ("bltu", 0, -1, 1), ("bltu", -1, 0, 0), ("bgeu", -1, 0, 1), ("bgeu", 0, -1, 0),
                ("bgeu", 7, 7, 1)]


@pytest.mark.parametrize("op,a,b,taken", BRANCH_CASES)
def test_branches(op, a, b, taken):
    event, state = run(f"li a0, {a}\nli a1, {b}\nli a2, 0\n{op} a0, a1, yes\nj done\n"
                       "yes:\nli a2, 1\ndone:\necall")
    assert state.regs[0, 12] == taken
    assert event.instructions == 8 + (2 if taken else 1)  # 3 li (6 words), branch, ecall + li or j


def test_backward_branch_loop():
    event, state = run("li a0, 10\nli a1, 0\nloop:\naddi a1, a1, 3\naddi a0, a0, -1\n"
                       "bne a0, zero, loop\necall")
    assert state.regs[0, 11] == 30 and event.instructions == 4 + 30 + 1


def test_jal_jalr_link_and_targets():
    event, state = run("""
        jal ra, f          # 0x00: ra = 0x04
        auipc t0, 0        # 0x04
        jalr t1, t0, 17    # 0x08: t1 = 0x0c, target 0x04 + 17 = 0x15 -> 0x14 (bit 0 cleared)
        ecall              # 0x0c (skipped)
        ecall              # 0x10 (skipped)
        mv a0, ra          # 0x14
        jalr t0, 12(t0)    # 0x18: rd == rs1: target uses the old t0 (0x04 + 12 = 0x10)
    f:
        lui a5, 0xABCDE    # 0x1c
        ret                # 0x20
    """)
    r = state.regs[0]
    assert event.kind == EventKind.ECALL and event.pc == BASE + 0x10
    assert (r[10], r[6], r[5], r[15]) == (BASE + 4, BASE + 0x0C, BASE + 0x1C, 0xABCDE000)


def test_ebreak_and_nops():
    event, state = run("fence\nnop\naddi zero, zero, 5\nebreak")
    assert (event.kind, event.pc, event.instructions, event.slots) == (EventKind.EBREAK, BASE + 12, 4, 4)
    assert state.regs[0, 0] == 0


# ---------------------------------------------------------------- events

def test_ecall_stops_at_the_ecall_and_resumes():
    interp, state = make("li a7, 1\necall\naddi a0, a0, 1\necall", charge=[1, 0, 1, 1, 1])
    event = interp.run(0, state, 100)
    assert (event.kind, event.pc, event.slots, event.instructions) == (EventKind.ECALL, BASE + 8, 2, 3)
    assert state.pcs[0] == BASE + 8
    state.regs[0, 10] = 41  # the service result
    state.pcs[0] += 4
    event = interp.run(0, state, 100)
    assert (event.kind, event.pc, event.slots, event.instructions) == (EventKind.ECALL, BASE + 16, 2, 2)
    assert state.regs[0, 10] == 42


def test_budget_is_in_slots_and_resumes_exactly():
    source = "li a0, 100\nloop:\naddi a1, a1, 1\naddi a0, a0, -1\nbne a0, zero, loop\necall"
    whole, state_whole = run(source)
    interp, state = make(source, charge=[1, 1, 1, 0, 1, 1])  # `addi a0` is free
    event = interp.run(0, state, 7)
    assert (event.kind, event.slots) == (EventKind.BUDGET, 7)
    # li (2 slots), two iterations (2 slots, 3 words each), addi a1: stops before the free addi
    assert event.pc == state.pcs[0] == BASE + 12 and event.instructions == 9
    total = event.instructions
    while event.kind == EventKind.BUDGET:
        event = interp.run(0, state, 5)
        total += event.instructions
    assert event.kind == EventKind.ECALL and total == whole.instructions
    assert (state.regs[0] == state_whole.regs[0]).all()
    capped = Interpreter(interp.program).run(0, make(source)[1], 1000, max_instructions=4)
    assert (capped.kind, capped.instructions) == (EventKind.BUDGET, 4)


def test_mram_grow_does_not_execute_the_access():
    interp, state = make("li t1, 0x08001000\nli t0, 77\nsw t0, 8(t1)\nlw a0, 8(t1)\necall")
    event = interp.run(0, state, 100)
    assert (event.kind, event.pc, event.address) == (EventKind.MRAM_GROW, BASE + 16, 0x08001008)
    assert (event.slots, event.instructions, state.mram_accesses[0]) == (4, 4, 0)
    state.grow_mram(event.address - 0x08000000 + 4)
    event = interp.run(0, state, 100)
    assert (event.kind, event.instructions, state.regs[0, 10]) == (EventKind.ECALL, 3, 77)
    assert state.mram_accesses[0] == 2 and len(state.mram) % 8 == 0


FAULT_CASES = [
    ("li t1, 0x10000\nlw a0, 0(t1)", FaultKind.MEMORY_OUT_OF_BOUNDS, 2, 0x10000),
    ("li t1, 0xF0000000\nlbu a0, 0(t1)", FaultKind.MEMORY_OUT_OF_BOUNDS, 2, 0xF0000000),
    ("li t1, 0x0C000000\nsb a0, 0(t1)", FaultKind.MEMORY_OUT_OF_BOUNDS, 2, 0x0C000000),
    ("li t1, 0x80000000\nlw a0, 4(t1)", FaultKind.MEMORY_OUT_OF_BOUNDS, 2, 0x80000004),
    ("li t1, 0x80000000\nsw a0, 4(t1)", FaultKind.WRITE_TO_IRAM, 2, 0x80000004),
    ("li t1, 0x102\nlw a0, 0(t1)", FaultKind.MISALIGNED, 2, 0x102),
    ("li t1, 0x101\nlh a0, 0(t1)", FaultKind.MISALIGNED, 2, 0x101),
    ("li t1, 0x08000006\nsw a0, 0(t1)", FaultKind.MISALIGNED, 2, 0x08000006),
    ("nop\n.word 0x02B50533", FaultKind.ILLEGAL_INSTRUCTION, 1, BASE + 4),  # mul
    ("nop\nnop", FaultKind.FETCH_OUT_OF_BOUNDS, 2, BASE + 8),  # falls off the end
    ("li t1, 0x1000\njalr ra, 0(t1)", FaultKind.FETCH_OUT_OF_BOUNDS, 3, 0x1000),
    ("auipc t1, 0\njalr ra, 6(t1)", FaultKind.FETCH_MISALIGNED, 2, BASE + 6),
    ("beq zero, zero, 6", FaultKind.FETCH_MISALIGNED, 1, BASE + 6),
    ("j -4", FaultKind.FETCH_OUT_OF_BOUNDS, 1, BASE - 4),
]


@pytest.mark.parametrize("source,fault,executed,address", FAULT_CASES)
def test_faults(source, fault, executed, address):
    event, state = run(source)
    assert (event.kind, event.fault, event.address) == (EventKind.FAULT, fault, address)
    assert event.instructions == event.slots == executed
    fetch = fault in (FaultKind.FETCH_OUT_OF_BOUNDS, FaultKind.FETCH_MISALIGNED)
    assert event.pc == state.pcs[0] == (address if fetch else BASE + 4 * executed)


def test_sp_below_the_stack_is_recorded_not_a_fault():
    """A DPU checks no stack: sp leaving it is no event; the deepest sp is kept for the report."""
    interp, state = make("li t0, 0x400\nmv sp, t0\naddi sp, sp, -16\naddi sp, sp, -16\naddi sp, sp, 32\necall")
    state.stack_deepest[0] = 0x400
    event = interp.run(0, state, 100)
    assert (event.kind, event.pc, event.instructions) == (EventKind.ECALL, BASE + 24, 7)  # li is lui + addi
    assert state.stack_deepest[0] == 0x3E0 and state.regs[0, 2] == 0x400


# ---------------------------------------------------------------- table-charged routines

ROUTINE_SOURCE = """
main:                       # words 0..15, charged
    li a0, 0x1234
    li a1, 0x00F00000
    call mul                # recorded: bits(min) = 13
    li a0, 7
    li a1, -1
    call mul                # recorded: bits(7) = 3
    li a0, 1000
    li a1, 3
    call div                # recorded: quotient bits = clz(3) - clz(1000) + 1 = 9
    ecall
mul:                        # word 16: routine 0 (MUL32)
    mv t0, ra
    li a0, 100
    li a1, 1
    call div                # nested: part of mul, not recorded
    mv ra, t0
    ret
div:                        # word 24: routine 1 (UDIV32)
    addi t2, t2, 1
    ret
"""


def _routine_program():
    n = len(assemble(ROUTINE_SOURCE))
    charge = np.array([1] * 16 + [0] * (n - 16), np.int8)  # routine bodies are table-charged
    routine = np.full(n, -1, np.int16)
    routine[16], routine[24] = 0, 1
    return make(ROUTINE_SOURCE, charge=charge, routine=routine,
                routine_kind=[RoutineKind.MUL32, RoutineKind.UDIV32])


def test_routine_entries_are_counted_with_their_parameter():
    interp, state = _routine_program()
    event = interp.run(0, state, 1000)
    assert event.kind == EventKind.ECALL and state.regs[0, 7] == 3  # div ran three times
    assert state.routine_acc[0].tolist() == [[2, 13 + 3], [1, 9]]
    assert event.slots == 16  # main's words only
    assert event.instructions == 16 + 2 * (8 + 2) + 2
    assert state.in_routine[0, 0] == -1 and (state.routine_acc[1:] == 0).all()


def test_routine_state_survives_events():
    source = "li a0, 6\nli a1, 9\ncall r\necall\nr:\nmv t0, ra\necall\nmv ra, t0\nret"
    routine = [-1] * 6 + [0, -1, -1, -1]
    interp, state = make(source, routine=routine, routine_kind=[RoutineKind.MUL32])
    event = interp.run(0, state, 100)
    assert event.pc == BASE + 28 and state.in_routine[0].tolist() == [0, BASE + 20]
    state.pcs[0] += 4
    event = interp.run(0, state, 100)
    assert event.pc == BASE + 20 and state.in_routine[0, 0] == -1
    assert state.routine_acc[0, 0].tolist() == [1, 3]  # bits(min(6, 9)) = 3


@pytest.mark.parametrize("kind,args,want", [
    (RoutineKind.NONE, (5, 6, 0, 0), 0),
    (RoutineKind.MUL32, (0, 5, 0, 0), 1),  # a zero operand still runs one mul_step
    (RoutineKind.MUL32, (M32, 0x80000000, 0, 0), 32),
    (RoutineKind.UDIV32, (1000, 3, 0, 0), 9), (RoutineKind.UDIV32, (3, 1000, 0, 0), 0),
    (RoutineKind.UDIV32, (5, 5, 0, 0), 1), (RoutineKind.UDIV32, (5, 0, 0, 0), 32),
    (RoutineKind.UDIV32, (0, 7, 0, 0), 0),
    (RoutineKind.SDIV32, ((-1000) & M32, 3, 0, 0), 9), (RoutineKind.SDIV32, (0x80000000, 1, 0, 0), 32),
    (RoutineKind.SDIV32, (1000, (-3) & M32, 0, 0), 9), (RoutineKind.SDIV32, (1, 0, 0, 0), 32),
    (RoutineKind.MUL64, (0, 1 << 8, 5, 2), 34),  # x = 2**40, y = 2**33 + 5
    (RoutineKind.MUL64, (3, 0, 0, 1), 2),
    (RoutineKind.UDIV64, (0, 1 << 8, 3, 0), 40), (RoutineKind.UDIV64, (0, 1, 0, 0), 64),
    (RoutineKind.UDIV64, (0, 0x80000000, 1, 0), 64),
    (RoutineKind.SDIV64, (0, (-(1 << 8)) & M32, 3, 0), 40),  # x = -2**40
    (RoutineKind.SDIV64, (0, 1, M32, M32), 33),  # 2**32 / -1
])
def test_routine_param_formulas(kind, args, want):
    assert routine_param(int(kind), *args) == want


# ---------------------------------------------------------------- real va ELF

@pytest.mark.parametrize("pipeline,bl", [("O0", 10), ("O2", 10), ("O2", 4), ("O0", 4)])
def test_va_end_to_end(toolchain, va, pipeline, bl):
    binary = toolchain.compile(Variant.of(va, pipeline, 1, {"BL": bl}))
    loaded = load_elf(binary.elf_path)
    assert Op.ILLEGAL not in set(loaded.interpreter.program.op.tolist())
    elements = 4096 + 6  # a last block that is cut short
    a, b = setup_va(loaded, elements)
    totals = run_one_tasklet(loaded)
    expected = (a.astype(np.int64) + b).astype(np.int32)  # wraps like int32
    assert totals["exit_code"] == 0
    assert np.array_equal(va_result(loaded, elements), expected)
    assert totals["slots"] == totals["instructions"] > 4 * elements
    assert loaded.state.mram_accesses[0] == 0  # va moves MRAM data by DMA only
