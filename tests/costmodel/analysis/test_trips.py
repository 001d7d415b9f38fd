"""Trip-count-aware loop weights on hand-built rv32 programs (cnmtune.costmodel.analysis.trips)."""

from __future__ import annotations

import numpy as np

from cnmtune.costmodel.analysis.callgraph import inlined_weights
from cnmtune.costmodel.analysis.cfg import loop_depths
from cnmtune.costmodel.analysis.features import features_of
from cnmtune.costmodel.analysis.rv32_facts import rv32_loop_facts
from rv32_asm import assemble, decoded, program

W = 10.0


def rv32_facts(lines):
    p = program(assemble(lines))
    return rv32_loop_facts(p, loop_depths(p)[1])


def weights(lines) -> list[float]:
    p = decoded(assemble(lines))
    return inlined_weights(p, list(p.call_sites), W)[0].tolist()


def test_a_loop_with_constant_start_and_bound_weighs_its_trip_count():
    assert weights([("addi", "t0", "zero", 0), ("addi", "t1", "zero", 16),
                    "loop:", ("lw", "a1", "a0", 0), ("addi", "a0", "a0", 4), ("addi", "t0", "t0", 1),
                    ("blt", "t0", "t1", "loop"), ("ret",)]) == [1, 1, 16, 16, 16, 16, 1]
    # counting down to zero from a constant: the bound is x0
    assert weights([("addi", "t0", "zero", 12),
                    "loop:", ("addi", "t0", "t0", -3), ("bne", "t0", "zero", "loop"), ("ret",)]) == [1, 4, 4, 1]


def test_a_pointer_loop_to_a_runtime_bound_weighs_loop_weight_per_element():
    """Unrolled k times (k consecutive offsets of one width, a step of k widths), a loop weighs 1/k."""
    plain = [("lw", "a1", "a0", 0), ("addi", "a0", "a0", 4), ("bne", "a0", "a2", "loop")]
    unrolled = [("lw", "a1", "a0", 0), ("lw", "a3", "a0", 4), ("lw", "a4", "a0", 8), ("lw", "a5", "a0", 12),
                ("addi", "a0", "a0", 16), ("bne", "a0", "a2", "loop")]
    assert weights(["loop:", *plain, ("ret",)]) == [W] * 3 + [1]
    assert weights(["loop:", *unrolled, ("ret",)]) == [W / 4] * 6 + [1]  # 4 elements an iteration
    # bytes: the unit is the access width, so a byte loop stepping 1 weighs like a word loop stepping 4
    assert weights(["loop:", ("lbu", "a1", "a0", 0), ("addi", "a0", "a0", 1), ("bltu", "a0", "a2", "loop"),
                    ("ret",)]) == [W] * 3 + [1]


def test_unrolling_lowers_the_weighted_count_by_the_loop_overhead_it_removes():
    def weighted_total(body) -> float:
        features = features_of(decoded(assemble(["loop:", *body, ("ret",)])), loop_weight=W)
        return sum(features.weighted_kernel_histogram.values())

    plain = weighted_total([("lw", "a1", "a0", 0), ("add", "a3", "a3", "a1"), ("addi", "a0", "a0", 4),
                            ("bne", "a0", "a2", "loop")])
    unrolled = weighted_total([("lw", "a1", "a0", 0), ("add", "a3", "a3", "a1"), ("lw", "a1", "a0", 4),
                               ("add", "a3", "a3", "a1"), ("addi", "a0", "a0", 8), ("bne", "a0", "a2", "loop")])
    assert plain == 4 * W + 1 and unrolled == 6 * W / 2 + 1 < plain


def test_a_loop_stepping_a_block_or_a_stride_keeps_the_constant_weight():
    # an index stepping 2 without memory through it; a pointer stepping a 2 KiB block, read once
    assert weights(["loop:", ("slli", "a1", "t0", 2), ("addi", "t0", "t0", 2), ("blt", "t0", "a2", "loop"),
                    ("ret",)]) == [W] * 3 + [1]
    assert weights(["loop:", ("lw", "a1", "a0", 0), ("lw", "a3", "a0", 8), ("addi", "a0", "a0", 2048),
                    ("bltu", "a0", "a2", "loop"), ("ret",)]) == [W] * 4 + [1]
    # unrolled twice, counted down by an index register: the pointers tell the factor
    assert weights(["loop:", ("lw", "a1", "a0", 0), ("lw", "a3", "a0", 4), ("addi", "a0", "a0", 8),
                    ("addi", "t0", "t0", -2), ("bne", "t0", "zero", "loop"), ("ret",)]) == [W / 2] * 5 + [1]


def test_a_loop_without_a_constant_bound_or_an_induction_keeps_the_constant_weight():
    # -O0: the counter lives in a stack slot (load, add, store), the bound in a register set outside
    assert weights(["loop:", ("lw", "t0", "s0", -12), ("addi", "t0", "t0", 1), ("sw", "t0", "s0", -12),
                    ("lw", "t0", "s0", -12), ("blt", "t0", "a2", "loop"), ("ret",)]) == [W] * 5 + [1]
    # a bound the loop writes is not a bound
    assert weights(["loop:", ("addi", "t0", "t0", 1), ("addi", "a2", "a2", -1), ("add", "a2", "a2", "a1"),
                    ("blt", "t0", "a2", "loop"), ("ret",)]) == [W] * 4 + [1]


def test_nested_loops_multiply_their_factors():
    lines = [("addi", "t0", "zero", 0), ("addi", "t1", "zero", 4),
             "outer:", ("add", "a3", "a0", "zero"),
             "inner:", ("lw", "a1", "a3", 0), ("addi", "a3", "a3", 4), ("bne", "a3", "a2", "inner"),
             ("addi", "t0", "t0", 1), ("blt", "t0", "t1", "outer"), ("ret",)]
    assert weights(lines) == [1, 1, 4, 4 * W, 4 * W, 4 * W, 4, 4, 1]


def test_rv32_facts_read_shifts_of_a_register_by_a_constant():
    facts = rv32_facts([("slli", "t0", "t0", 3), ("srli", "a0", "a0", 2), ("slli", "a1", "a0", 1),
                        ("slli", "zero", "zero", 1)])
    assert facts.self_shift == [3, -2, 0, 0] and facts.self_add == [0] * 4


def test_rv32_facts_read_steps_constants_memory_and_compares():
    facts = rv32_facts([
        ("addi", "t0", "zero", 7), ("lui", "t1", 2), ("addi", "a0", "a0", -4), ("addi", "a1", "a0", 4),
        ("lw", "a1", "a0", 8), ("sw", "a1", "a0", 0), ("lbu", "a2", "a0", 1),
        ("bne", "a0", "zero", 0), ("bltu", "a0", "a1", 0), ("addi", "zero", "zero", 0)])
    assert facts.writes == [(5,), (6,), (10,), (11,), (11,), (), (12,), (), (), ()]
    assert facts.self_add == [0, 0, -4, 0, 0, 0, 0, 0, 0, 0]
    assert facts.constant == [7, 2 << 12, None, None, None, None, None, None, None, None]
    assert facts.mem_base == [-1, -1, -1, -1, 10, 10, 10, -1, -1, -1]
    assert facts.mem_width == [0, 0, 0, 0, 4, 4, 1, 0, 0, 0]
    assert facts.mem_offset == [0, 0, 0, 0, 8, 0, 1, 0, 0, 0]
    assert facts.compare == [None] * 7 + [(10, None, 0), (10, 11, None), None]


def test_without_inductions_the_weights_are_the_depth_powers_of_before():
    p = decoded(assemble([("addi", "t0", "zero", 0),
                          "l1:", ("lw", "t1", "s0", 0), ("beq", "t1", "zero", "end"),
                          "l2:", ("lw", "t2", "s0", 4), ("bne", "t2", "zero", "l2"),
                          ("jal", "zero", "l1"), "end:", ("ret",)]))
    np.testing.assert_allclose(inlined_weights(p, list(p.call_sites), W)[0], W ** p.loop_depth)


def test_a_pointer_walking_a_block_to_its_end_weighs_the_block_over_the_step():
    # start = s0 + 8, bound = s0 + 1024: (1024 - 8) / 8 = 127 trips, as one pass over a WRAM block
    assert weights([("addi", "a0", "s0", 8), ("addi", "a2", "s0", 1024),
                    "loop:", ("lw", "a1", "a0", 0), ("addi", "a0", "a0", 8), ("bne", "a0", "a2", "loop"),
                    ("ret",)]) == [1, 1, 127, 127, 127, 1]
    # two definitions of the bound reach the loop: a runtime bound
    assert weights([("beq", "a3", "zero", "other"), ("addi", "a2", "s0", 64), ("jal", "zero", "go"),
                    "other:", ("addi", "a2", "s0", 128),
                    "go:", ("addi", "a0", "s0", 0),
                    "loop:", ("lw", "a1", "a0", 0), ("addi", "a0", "a0", 4), ("bne", "a0", "a2", "loop"),
                    ("ret",)]) == [1, 1, 1, 1, 1, W, W, W, 1]
    # the base moves inside the loop: no trip count
    assert weights([("addi", "a0", "s0", 0), ("addi", "a2", "s0", 64),
                    "loop:", ("lw", "a1", "a0", 0), ("addi", "a0", "a0", 4), ("add", "s0", "s0", "a1"),
                    ("bne", "a0", "a2", "loop"), ("ret",)]) == [1, 1, W, W, W, W, 1]


def test_a_counter_kept_in_a_stack_slot_is_an_induction():
    # -O0: i = 0; while (i < 64) i++; the counter and the bound go through memory and registers
    assert weights([("addi", "t0", "zero", 0), ("sw", "t0", "s0", -20),
                    "loop:", ("lw", "t0", "s0", -20), ("addi", "t1", "zero", 64), ("bge", "t0", "t1", "end"),
                    ("lw", "t0", "s0", -20), ("addi", "t0", "t0", 1), ("sw", "t0", "s0", -20),
                    ("jal", "zero", "loop"),
                    "end:", ("ret",)]) == [1, 1] + [64] * 7 + [1]
    # the bound in another slot, set from a constant before the loop; the step of 2
    assert weights([("sw", "zero", "s0", -20), ("addi", "t0", "zero", 10), ("sw", "t0", "s0", -24),
                    "loop:", ("lw", "t0", "s0", -20), ("lw", "t1", "s0", -24), ("bge", "t0", "t1", "end"),
                    ("lw", "t0", "s0", -20), ("addi", "t0", "t0", 2), ("sw", "t0", "s0", -20),
                    ("jal", "zero", "loop"),
                    "end:", ("ret",)]) == [1, 1, 1] + [5] * 7 + [1]


def test_a_counter_in_a_stack_slot_loaded_in_the_header_and_stored_in_a_latch_elsewhere():
    # LLVM's rotated loop without mem2reg: the header loads i, the latch (laid out before it) adds
    # 1, stores i and tests the value it stored; two paths through the body meet at the latch
    assert weights([("sw", "zero", "s0", -12), ("addi", "a5", "zero", 256), ("jal", "zero", "head"),
                    "latch:", ("addi", "a6", "a6", 1), ("sw", "a6", "s0", -12), ("bgeu", "a6", "a5", "end"),
                    "head:", ("lw", "a6", "s0", -12), ("lw", "t1", "a0", 0), ("beq", "t1", "zero", "latch"),
                    ("sw", "t1", "a0", 4), ("jal", "zero", "latch"),
                    "end:", ("ret",)]) == [1, 1, 1] + [256] * 8 + [1]
    # where one path into the latch reloads the register from elsewhere, the paths disagree: no count
    assert weights([("sw", "zero", "s0", -12), ("addi", "a5", "zero", 256), ("jal", "zero", "head"),
                    "latch:", ("addi", "a6", "a6", 1), ("sw", "a6", "s0", -12), ("bgeu", "a6", "a5", "end"),
                    "head:", ("lw", "a6", "s0", -12), ("lw", "t1", "a0", 0), ("beq", "t1", "zero", "latch"),
                    ("lw", "a6", "a0", 4), ("jal", "zero", "latch"),
                    "end:", ("ret",)]) == [1, 1, 1] + [W] * 8 + [1]
    # entered in the middle of the latch, at its test: there the register is the constant 0 on the
    # way in and the slot's word (stored just before) on the way round; the slot holds 0 on the way in
    assert weights([("addi", "a6", "zero", 0), ("sw", "zero", "s0", -12), ("addi", "a4", "zero", 255),
                    ("jal", "zero", "test"),
                    "latch:", ("addi", "a6", "a6", 1), ("sw", "a6", "s0", -12),
                    "test:", ("bltu", "a4", "a6", "end"),
                    ("lw", "a6", "s0", -12), ("lw", "t1", "a0", 0), ("beq", "t1", "zero", "latch"),
                    ("sw", "t1", "a0", 4), ("jal", "zero", "latch"),
                    "end:", ("ret",)]) == [1, 1, 1, 1] + [255] * 8 + [1]
    # a counter kept in a register and also spilled every iteration: the branch stays on the register
    assert weights([("addi", "a3", "zero", 0), ("addi", "a5", "zero", 256), ("jal", "zero", "head"),
                    "latch:", ("addi", "a3", "a3", 1),
                    "head:", ("sw", "a3", "s0", -28), ("bgeu", "a3", "a5", "end"), ("lw", "t1", "a0", 0),
                    ("beq", "t1", "zero", "latch"), ("sw", "t1", "a0", 4), ("jal", "zero", "latch"),
                    "end:", ("ret",)]) == [1, 1, 1] + [256] * 7 + [1]


def test_the_trip_count_comes_from_the_exit_test_not_a_branch_inside_the_body():
    # for (j = 0; j < 32; j++) if (j == 0) ...: the `bne j, zero` skips a block of the body; read as
    # the exit test it gave start 0, bound 0 and one trip (ts's inner loop at BL=5 under O2)
    assert weights([("addi", "t0", "zero", 0), ("addi", "t1", "zero", 32),
                    "loop:", ("bne", "t0", "zero", "skip"), ("addi", "a3", "a3", 1),
                    "skip:", ("addi", "t0", "t0", 1), ("blt", "t0", "t1", "loop"), ("ret",)]) == [1, 1] + [32] * 4 + [1]


def test_a_bound_the_loop_recomputes_from_a_register_it_does_not_write_is_a_bound():
    # the bound t1 = a4 + 4 is set again every iteration from a4, which the loop leaves alone: 28 + 4 trips
    assert weights([("addi", "t0", "zero", 0), ("addi", "a4", "zero", 28),
                    "loop:", ("addi", "t1", "a4", 4), ("addi", "t0", "t0", 1), ("bne", "t0", "t1", "loop"),
                    ("ret",)]) == [1, 1] + [32] * 3 + [1]
    # recomputed from a register the loop also writes: no bound
    assert weights([("addi", "t0", "zero", 0), ("addi", "a4", "zero", 28),
                    "loop:", ("addi", "t1", "a4", 4), ("addi", "a4", "a4", 1), ("addi", "t0", "t0", 1),
                    ("bne", "t0", "t1", "loop"), ("ret",)]) == [1, 1] + [W] * 4 + [1]


def test_a_counter_an_unrolled_loop_steps_once_per_copy_of_its_body_steps_their_sum():
    # for (i = 0; i < 64; i++) unrolled twice: each copy has its `if` and its `i++`, both on every
    # iteration's path (bitonic's compare-exchange loop under unroll-count=2): 64 / 2 trips
    assert weights([("addi", "t0", "zero", 0), ("addi", "t1", "zero", 64),
                    "loop:", ("beq", "a1", "zero", "skip1"), ("sw", "t0", "a0", 0),
                    "skip1:", ("addi", "t0", "t0", 1), ("beq", "a2", "zero", "skip2"), ("sw", "t0", "a0", 4),
                    "skip2:", ("addi", "t0", "t0", 1), ("blt", "t0", "t1", "loop"),
                    ("ret",)]) == [1, 1] + [32] * 7 + [1]
    # one of the two steps only where the `if` holds: no induction
    assert weights([("addi", "t0", "zero", 0), ("addi", "t1", "zero", 64),
                    "loop:", ("addi", "t0", "t0", 1), ("beq", "a1", "zero", "skip"), ("addi", "t0", "t0", 1),
                    "skip:", ("blt", "t0", "t1", "loop"), ("ret",)]) == [1, 1] + [W] * 4 + [1]


def test_a_register_shifted_by_a_constant_is_an_induction():
    # for (d = 256; d > 0; d >>= 1): 256, 128, ..., 1, nine trips; by 2 bits from 64: 64, 16, 4, 1
    assert weights([("addi", "t0", "zero", 256),
                    "loop:", ("lw", "a1", "a0", 0), ("srli", "t0", "t0", 1), ("bne", "t0", "zero", "loop"),
                    ("ret",)]) == [1] + [9] * 3 + [1]
    assert weights([("addi", "t0", "zero", 64),
                    "loop:", ("srli", "t0", "t0", 2), ("bne", "t0", "zero", "loop"), ("ret",)]) == [1] + [4] * 2 + [1]
    # for (m = 2; m < 1024; m <<= 1): 2, 4, ..., 512
    assert weights([("addi", "t0", "zero", 2), ("addi", "t1", "zero", 1024),
                    "loop:", ("slli", "t0", "t0", 1), ("bltu", "t0", "t1", "loop"), ("ret",)]) == [1, 1] + [9] * 2 + [1]
    # from a runtime start, or shifted left towards zero: the constant weight
    assert weights(["loop:", ("srli", "a0", "a0", 1), ("bne", "a0", "zero", "loop"), ("ret",)]) == [W] * 2 + [1]
    assert weights([("addi", "t0", "zero", 2),
                    "loop:", ("slli", "t0", "t0", 1), ("bne", "t0", "zero", "loop"), ("ret",)]) == [1] + [W] * 2 + [1]
