"""Loop facts of real DPU instructions (cnmtune.costmodel.analysis.dpu_facts): hand-assembled
loops and the words of the UPMEM objdump sample."""

from __future__ import annotations

from pathlib import Path

from cnmtune.costmodel.analysis.dpu_facts import dpu_loop_facts
from cnmtune.costmodel.analysis.dpu_program import decode_dpu, dpu_cfgs
from cnmtune.costmodel.analysis.elf import load_dpu_elf
from cnmtune.costmodel.analysis.frontend import decode
from dpu_asm import Asm, write_dpu_elf

SAMPLE = Path(__file__).parent / "data" / "dpu_objdump_sample.txt"
NZ = 3  # the condition nz of add's condition class (``add r2, r2, -1, nz, ...`` in the sample)
ZERO, ONE, ID, ID8 = 24, 25, 28, 31
NONE = ((), 0, None, -1, 0, None)


def rows(facts) -> list[tuple]:
    """(writes, self_add, constant, mem_base, mem_width, compare) of every instruction."""
    return list(zip(facts.writes, facts.self_add, facts.constant, facts.mem_base, facts.mem_width,
                    facts.compare))


def loops() -> Asm:
    """main: a counted word loop, a byte/doubleword loop to a register bound, a count-down
    ``add ..., nz, pc`` loop, then single instructions of the other fact rules."""
    a = Asm.calling_main()
    a.func("main")
    a("MOVEri", rc="r0", imm=0)
    a("MOVEri", rc="r3", imm=64)
    a("MOVEri", rc="r5", imm=10)
    a.label("counted")
    a("LWrri", rc="r1", ra="r2", off=0)
    a("ADDrri", rc="r2", ra="r2", imm=4)
    a("ADDrri", rc="r0", ra="r0", imm=1)
    a("JLTUrii", ra="r0", imm=16, pc="counted")
    a.label("bytes")
    a("SBrir", ra="r2", off=-1, rb="r1")
    a("LDrri", dc="d6", ra="r2", off=8)
    a("ADDrri", rc="r2", ra="r2", imm=1)
    a("JNEQrri", ra="r2", rb="r3", pc="bytes")
    a.label("down")
    a("LHUrri", rc="r8", ra="r22", off=2)
    a("ADDrrici", rc="r5", ra="r5", imm=-1, cc=NZ, pc="down")
    a("SUBrrici", rc="r9", ra="r9", imm=2, cc=NZ, pc="next")
    a.label("next")
    a("ADDrri", rc="r11", ra="zero", imm=-7)
    a("SUBrir", rc="r20", imm=100, ra="zero")
    a("MOVErr", rc="r12", ra="one")
    a("MOVErr", rc="r13", ra="r12")
    a("MOVErici", rc="r14", imm=5, cc=1, pc="always")
    a.label("always")
    a("MOVE_Sri", dc="d14", imm=-1)
    a("MOVE_Uri", dc="d16", imm=-1)
    a("ADD_Srri", dc="d16", rb="r16", imm=1)
    a("LW_Srri", dc="d18", ra="r2", off=4)
    a("SH_IDri", ra="r22", off=0)
    a("LDMArri", ra="r0", rb="r1", immDma=255)
    a("SUBrrrc", rc="r21", ra="r1", rb="r0", cc=2)
    a("ADDCrri", rc="r1", ra="r1", imm=1)
    a("JEQrri", ra="zero", rb="r3", pc="end")
    a("JNZri", ra="one", pc="end")
    a.label("end")
    a("JUMPr", ra="r23")
    return a


MAIN = [
    ((0,), 0, 0, -1, 0, None),  # move r0, 0
    ((3,), 0, 64, -1, 0, None),  # move r3, 64
    ((5,), 0, 10, -1, 0, None),  # move r5, 10
    ((1,), 0, None, 2, 4, None),  # counted: lw r1, r2, 0
    ((2,), 4, None, -1, 0, None),  # add r2, r2, 4
    ((0,), 1, None, -1, 0, None),  # add r0, r0, 1
    ((), 0, None, -1, 0, (0, None, 16)),  # jltu r0, 16, counted
    ((), 0, None, 2, 1, None),  # bytes: sb r2, -1, r1
    ((6, 7), 0, None, 2, 8, None),  # ld d6, r2, 8
    ((2,), 1, None, -1, 0, None),  # add r2, r2, 1
    ((), 0, None, -1, 0, (2, 3, None)),  # jneq r2, r3, bytes
    ((8,), 0, None, 22, 2, None),  # down: lhu r8, r22, 2
    ((5,), -1, None, -1, 0, (5, None, 0)),  # add r5, r5, -1, nz, down
    ((9,), -2, None, -1, 0, (9, None, 0)),  # sub r9, r9, 2, nz, next
    ((11,), 0, -7, -1, 0, None),  # next: add r11, zero, -7
    ((20,), 0, 100, -1, 0, None),  # sub r20, 100, zero
    ((12,), 0, 1, -1, 0, None),  # move r12, one
    ((13,), 0, None, -1, 0, None),  # move r13, r12
    ((14,), 0, 5, -1, 0, None),  # move r14, 5, true, always: a goto compares nothing
    ((14, 15), 0, -1, -1, 0, None),  # always: move.s d14, -1: both registers -1
    ((16, 17), 0, None, -1, 0, None),  # move.u d16, -1: the high register is 0
    ((16, 17), 0, None, -1, 0, None),  # add.s d16, r16, 1: a pair is no self-add
    ((18, 19), 0, None, 2, 4, None),  # lw.s d18, r2, 4
    ((), 0, None, 22, 2, None),  # sh_id r22, 0
    NONE,  # ldma r0, r1, 255: DMA, not a WRAM access
    ((21,), 0, None, -1, 0, None),  # sub r21, r1, r0, z: sets 1 or 0
    ((1,), 0, None, -1, 0, None),  # addc r1, r1, 1: adds the carry too
    ((), 0, None, -1, 0, (3, None, 0)),  # jeq zero, r3, end: zero read as 0
    NONE,  # jnz one, end: two constants
    NONE,  # end: jump r23
]


def test_every_fact_of_hand_assembled_loops():
    a = loops()
    program = decode_dpu(load_dpu_elf(a.elf()))
    assert program.mnemonics[a.index("main"):] == [
        "move", "move", "move", "lw", "add", "add", "jltu", "sb", "ld", "add", "jneq", "lhu", "add",
        "sub", "add", "sub", "move", "move", "move", "move.s", "move.u", "add.s", "lw.s", "sh_id",
        "ldma", "sub", "addc", "jeq", "jnz", "jump"]
    loop_facts = dpu_loop_facts(program, dpu_cfgs(program))
    facts = rows(loop_facts)
    assert facts[:2] == [((23,), 0, None, -1, 0, None), NONE]  # call r23, main; stop
    assert facts[a.index("main"):] == MAIN
    memory = [(m, o) for m, w, o in zip(program.mnemonics, loop_facts.mem_width, loop_facts.mem_offset) if w]
    assert memory == [("lw", 0), ("sb", -1), ("ld", 8), ("lhu", 2), ("lw.s", 4), ("sh_id", 0)]


def test_the_loops_weigh_their_trip_counts():
    """The facts drive cnmtune.costmodel.analysis.trips: 16 and 10 iterations from constant
    starts and bounds; the register-bounded byte loop, a runtime bound without unrolled accesses,
    weighs loop_weight."""
    a = loops()
    p = decode(a.elf())
    counted, after = a.index("counted"), a.index("next")
    assert p.loop_power[counted:after].tolist() == [0] * 4 + [1] * 4 + [0] * 3
    assert p.loop_scale[counted:after].tolist() == [16.0] * 4 + [1.0] * 4 + [10.0] * 2 + [1.0]


def test_a_counter_kept_in_the_stack_frame_weighs_its_trip_count():
    """-O0 as the UPMEM compiler emits it: ``i = 0`` stored to a word of the frame (r22), then
    load, add, store, and a branch on the reloaded word: the word is the induction, 16 trips."""
    a = Asm.calling_main()
    a.func("main")
    a("SWrii", ra="r22", off=-12, imm=0)
    a.label("loop")
    a("LWrri", rc="r0", ra="r22", off=-12)
    a("ADDrri", rc="r0", ra="r0", imm=1)
    a("SWrir", ra="r22", off=-12, rb="r0")
    a("LWrri", rc="r1", ra="r22", off=-12)
    a("JLTUrii", ra="r1", imm=16, pc="loop")
    a("JUMPr", ra="r23")
    p = decode(a.elf())
    loop = a.index("loop")
    assert p.loop_power[loop:loop + 5].tolist() == [0] * 5
    assert p.loop_scale[loop - 1:loop + 6].tolist() == [1.0] + [16.0] * 5 + [1.0]


def sample() -> dict[str, int]:
    """The sample's words by the text objdump printed."""
    lines = [line.split("|") for line in SAMPLE.read_text().splitlines()]
    return {text: int.from_bytes(bytes.fromhex(raw.replace(" ", "")), "little") for raw, text in lines}


# The SDK's crt0 __bootstrap and main's prologue (the sample's first 13 words), then words of
# the sample without a target, as main's body.
BOOTSTRAP = {
    "jnz id, __sys_start_thread": ((), 0, None, -1, 0, (ID, None, 0)),
    "sd zero, 16, 0": ((), 0, None, ZERO, 8, None),
    "move r23, 203": ((23,), 0, 203, -1, 0, None),
    "jeq r23, 200, __sys_start_thread": ((), 0, None, -1, 0, (23, None, 200)),
    "release r23, 0, nz, 0x80000028": NONE,
    "add r23, r23, -1, true, __sys_atomic_bit_clear": ((23,), -1, None, -1, 0, None),
    "jeq id, 14, 0x80000040": ((), 0, None, -1, 0, (ID, None, 14)),
    "boot id, 1": NONE,
    "ld d22, id8, 80": ((22, 23), 0, None, ID8, 8, None),
    "call r23, main": ((23,), 0, None, -1, 0, None),
    "stop true, __sys_end": NONE,
    "sd r22, 88, d22": ((), 0, None, 22, 8, None),
    "add r22, r22, 96": ((22,), 96, None, -1, 0, None),
}
BODY = {
    "sd r22, -72, d14": ((), 0, None, 22, 8, None),
    "lbu r0, zero, 28": ((0,), 0, None, ZERO, 1, None),
    "move r0, 272": ((0,), 0, 272, -1, 0, None),
    "lw r0, zero, 464": ((0,), 0, None, ZERO, 4, None),
    "lbs r1, r0, 302": ((1,), 0, None, 0, 1, None),
    "lhs r2, r0, 276": ((2,), 0, None, 0, 2, None),
    "lhu r0, r0, 276": ((0,), 0, None, 0, 2, None),
    "sb r0, 0, 1": ((), 0, None, 0, 1, None),
    "sb r0, 0, -1": ((), 0, None, 0, 1, None),
    "sb r2, 0, r1": ((), 0, None, 2, 1, None),
    "sw zero, 40, r0": ((), 0, None, ZERO, 4, None),
    # a word of the frame, but main has no loop whose trips it could count: no slot (stack_slots)
    "sw r22, -44, r0": ((), 0, None, 22, 4, None),
    "lbu r2, r0, -1": ((2,), 0, None, 0, 1, None),
    "ld d0, zero, 472": ((0, 1), 0, None, ZERO, 8, None),
    "ld d20, r22, -96": ((20, 21), 0, None, 22, 8, None),
    "ldma r3, r4, 255": NONE,
    "sdma r1, r2, 255": NONE,
    "move r1, 0": ((1,), 0, 0, -1, 0, None),
    "move r2, -1": ((2,), 0, -1, -1, 0, None),
    "move r0, 3425280": ((0,), 0, 3425280, -1, 0, None),
    "move r1, zero": ((1,), 0, 0, -1, 0, None),
    "move r4, id": ((4,), 0, None, -1, 0, None),
    "move.s d2, 0": ((2, 3), 0, 0, -1, 0, None),
    "move.u d0, r0": ((0, 1), 0, None, -1, 0, None),
    "add r1, r1, 2048": ((1,), 2048, None, -1, 0, None),
    "add r0, r0, 1": ((0,), 1, None, -1, 0, None),
    "add r1, r1, 7": ((1,), 7, None, -1, 0, None),
    "add r4, r4, r1": ((4,), 0, None, -1, 0, None),
    "and r0, r0, 0": ((0,), 0, 0, -1, 0, None),
    "and r1, r1, -8": ((1,), 0, None, -1, 0, None),
    "and r0, r2, -2048": ((0,), 0, None, -1, 0, None),
    "and r1, r2, 65535": ((1,), 0, None, -1, 0, None),
    "sub r0, r1, r0, z": ((0,), 0, None, -1, 0, None),
    "neg r0, r0": ((0,), 0, None, -1, 0, None),
    "extsh r0, r0": ((0,), 0, None, -1, 0, None),
    "lsl_add r14, r0, r0, 3": ((14,), 0, None, -1, 0, None),
    "mul_sl_sl r2, r4, r2": ((2,), 0, None, -1, 0, None),
    "div_step d0, r4, d0, 31": ((0, 1), 0, None, -1, 0, None),
    "jump r23": NONE,
}


def test_every_fact_of_real_sdk_words():
    words = sample()
    assert list(words)[:13] == list(BOOTSTRAP)
    data = write_dpu_elf([words[text] for text in [*BOOTSTRAP, *BODY]],
                         [("__bootstrap", 0, 11), ("main", 11, 2 + len(BODY))],
                         [("__sys_atomic_bit_clear", 3), ("__sys_start_thread", 6), ("__sys_end", 10)])
    program = decode_dpu(load_dpu_elf(data))
    assert program.mnemonics == [text.split()[0] for text in [*BOOTSTRAP, *BODY]]
    assert rows(dpu_loop_facts(program, dpu_cfgs(program))) == [*BOOTSTRAP.values(), *BODY.values()]


def test_a_register_shifted_by_a_constant_is_an_induction():
    """``lsr r0, r0, 1`` until r0 is zero, from 256: nine trips (lsl +s, lsr -s in self_shift)."""
    a = Asm.calling_main()
    a.func("main")
    a("MOVEri", rc="r0", imm=256)
    a.label("halve")
    a("LWrri", rc="r1", ra="r2", off=0)
    a("LSRrri", rc="r0", ra="r0", shift=1)
    a("LSLrri", rc="r3", ra="r3", shift=2)
    a("JNZri", ra="r0", pc="halve")
    a("JUMPr", ra="r23")
    halve = a.index("halve")
    program = decode_dpu(load_dpu_elf(a.elf()))
    assert dpu_loop_facts(program, dpu_cfgs(program)).self_shift[halve:halve + 4] == [0, -1, 2, 0]
    p = decode(a.elf())
    assert p.loop_scale[halve - 1:halve + 5].tolist() == [1.0] + [9.0] * 4 + [1.0]
