"""Native execution of compiler_rt's integer multiply/divide helpers: results, accounting, timing.

Every check compares a program decoded with native routines (the default) against the same ELF
decoded with ``native=False``, which interprets zig's real compiler_rt code instruction by
instruction; the C semantics are checked against Python integers too.
"""

from __future__ import annotations

import numpy as np
import pytest

import cnmtune.runtime.sim.image as image_module
from cnmtune.runtime.sim.config import DpuConfig
from cnmtune.runtime.sim.device import SimDevice
from cnmtune.runtime.sim.image import NATIVE_OPS, ProgramImage
from cnmtune.runtime.sim.interpreter import DpuState, EventKind, FaultKind, Interpreter
from cnmtune.runtime.sim.routines import NATIVE_STACK_MARGIN, NativeOp, native_call
from cnmtune.runtime.sim.program import Op, decode_program
from cnmtune.runtime.toolchain import Variant

M32, M64 = (1 << 32) - 1, (1 << 64) - 1
CALLEE_SAVED = [1, 2, 3, 4, 8, 9, *range(18, 28)]  # ra, sp, gp, tp, s0..s11

OPS_SOURCE = """
#include <defs.h>
#include <stdint.h>
#define N 128
__host uint64_t X[N], Y[N];
__host uint64_t R[10][N];
#define NI __attribute__((noinline))
NI uint32_t f0(uint32_t x, uint32_t y) { return x * y; }
NI uint32_t f1(uint32_t x, uint32_t y) { return x / y; }
NI uint32_t f2(uint32_t x, uint32_t y) { return x % y; }
NI int32_t f3(int32_t x, int32_t y) { return x / y; }
NI int32_t f4(int32_t x, int32_t y) { return x % y; }
NI uint64_t f5(uint64_t x, uint64_t y) { return x * y; }
NI uint64_t f6(uint64_t x, uint64_t y) { return x / y; }
NI uint64_t f7(uint64_t x, uint64_t y) { return x % y; }
NI int64_t f8(int64_t x, int64_t y) { return x / y; }
NI int64_t f9(int64_t x, int64_t y) { return x % y; }
int main(void) {
    for (int i = me(); i < N; i += NR_TASKLETS) {
        uint64_t x = X[i], y = Y[i];
        R[0][i] = f0(x, y); R[1][i] = f1(x, y); R[2][i] = f2(x, y);
        R[3][i] = (uint32_t)f3(x, y); R[4][i] = (uint32_t)f4(x, y);
        R[5][i] = f5(x, y); R[6][i] = f6(x, y); R[7][i] = f7(x, y);
        R[8][i] = f8(x, y); R[9][i] = f9(x, y);
    }
    return 0;
}
"""
N = 128
ROUTINES = ("__mulsi3", "__udivsi3", "__umodsi3", "__divsi3", "__modsi3",
            "__muldi3", "__udivdi3", "__umoddi3", "__divdi3", "__moddi3")  # f0..f9 of OPS_SOURCE


# ---------------------------------------------------------------- C semantics in Python

def _signed(x: int, bits: int) -> int:
    return x - (1 << bits) if x >> (bits - 1) else x


def _tdiv(x: int, y: int) -> int:
    q = abs(x) // abs(y)
    return q if (x < 0) == (y < 0) else -q


def c_result(op: NativeOp, x: int, y: int) -> int | None:
    """What C computes for unsigned operands x, y of the op's width; None if undefined."""
    bits = 64 if op >= NativeOp.MUL64 else 32
    mask = (1 << bits) - 1
    kind = (op - 1) % 5  # mul, udiv, umod, div, mod
    if kind == 0:
        return (x * y) & mask
    if y == 0:
        return None
    if kind == 1:
        return x // y
    if kind == 2:
        return x % y
    sx, sy = _signed(x, bits), _signed(y, bits)
    if sx == -(1 << (bits - 1)) and sy == -1:
        return None
    q = _tdiv(sx, sy)
    return (q if kind == 3 else sx - q * sy) & mask


def operands(bits: int, seed: int, count: int) -> list[tuple[int, int]]:
    """Edge cases crossed with each other, then seeded random pairs of assorted magnitudes."""
    mask = (1 << bits) - 1
    top = 1 << (bits - 1)
    edges = {0, 1, 2, 3, 5, 7, 10, 0xFFFF, 0x10000, 12345, 0x55555555, top - 1, top, top + 1,
             mask, mask - 1, mask - 2, mask - 6, (-12345) & mask, 1 << (bits // 2), (1 << (bits // 2)) - 1}
    edges |= {1 << k for k in range(0, bits, 5)} | {(-(1 << k)) & mask for k in range(0, bits, 7)}
    if bits == 64:
        edges |= {M32, 1 << 32, (1 << 32) + 1, 0xFFFFFFFF00000000, 0x80000000, 0x7FFFFFFF,
                  0x80000000FFFFFFFF, 0x0000000100000000 - 1, 5 << 40, (-(5 << 40)) & mask}
    edges = sorted(v & mask for v in edges)
    pairs = [(x, y) for x in edges for y in edges]
    rng = np.random.default_rng(seed)
    for _ in range(count):
        bx, by = (int(b) for b in rng.integers(0, bits + 1, 2))  # random magnitudes
        x = int(rng.integers(0, 1 << 62)) | (int(rng.integers(0, 4)) << 62)
        y = int(rng.integers(0, 1 << 62)) | (int(rng.integers(0, 4)) << 62)
        x, y = x & ((1 << bx) - 1), y & ((1 << by) - 1)
        if rng.random() < 0.4:
            x = (-x) & mask
        if rng.random() < 0.4:
            y = (-y) & mask
        pairs.append((x, y))
    return pairs


# ---------------------------------------------------------------- a real ELF

@pytest.fixture(scope="module")
def ops_kernel(tmp_path_factory):
    from cnmtune.runtime import Kernel

    root = tmp_path_factory.mktemp("native_ops")
    (root / "dpu").mkdir()
    (root / "dpu" / "task.c").write_text(OPS_SOURCE)
    return Kernel.load(root)


@pytest.fixture(scope="module")
def ops_elf(toolchain, ops_kernel):
    return toolchain.compile(Variant.of(ops_kernel, "O2", 1)).elf_path


class Harness:
    """Calls one routine of a real ELF directly: a0..a3 set, ra at an ecall, sp at a stack top."""

    def __init__(self, elf):
        self.image = ProgramImage.load(elf)
        config = DpuConfig.calibrated()
        self.native, names = self.image.decode(config, native=True)
        self.interpreted, same = self.image.decode(config, native=False)
        assert names == same
        self.names = names
        self.entries = {f.name: f.address for f in self.image.functions}
        self.ecall = self.native.address_of(int(np.flatnonzero(self.native.op == Op.ECALL)[0]))
        self.sp = self.image.stack_top(0)
        self.state = DpuState(len(names))
        self.interpreters = {True: Interpreter(self.native), False: Interpreter(self.interpreted)}

    def call(self, native: bool, name: str, regs: tuple[int, int, int, int], ra: int | None = None,
             sp: int | None = None, budget: int = 1 << 20):
        state = self.state
        sp = self.sp if sp is None else sp
        state.regs[0] = 0
        state.regs[0, 10:14] = regs
        state.regs[0, 1] = self.ecall if ra is None else ra
        state.regs[0, 2] = sp
        state.regs[0, 8], state.regs[0, 9], state.regs[0, 27] = 0x1234, 0x5678, 0x9ABC
        state.pcs[0] = self.entries[name]
        state.stack_deepest[0] = sp
        state.routine_acc[:] = 0
        state.in_routine[0] = (-1, 0)
        event = self.interpreters[native].run(0, state, budget)
        observed = (event.kind, event.pc, event.slots, event.fault, event.address,
                    state.regs[0, CALLEE_SAVED].tolist(), state.routine_acc[0].tolist(),
                    state.in_routine[0].tolist())
        return observed, int(state.regs[0, 10]), int(state.regs[0, 11]), event.instructions


@pytest.fixture(scope="module")
def harness(ops_elf):
    return Harness(ops_elf)


def _regs(op: NativeOp, x: int, y: int, junk: int) -> tuple[int, int, int, int]:
    if op >= NativeOp.MUL64:
        return x & M32, x >> 32, y & M32, y >> 32
    return x, y, junk & M32, junk >> 32  # a2, a3 are not operands of the 32-bit routines


@pytest.mark.parametrize("name", ROUTINES)
def test_native_results_equal_interpreted_compiler_rt(harness, name):
    op = NATIVE_OPS[name]
    wide = op >= NativeOp.MUL64
    assert harness.native.routine_native[harness.names.index(name)] == op
    rng = np.random.default_rng(7)
    fallbacks = 0
    for x, y in operands(64 if wide else 32, seed=int(op), count=2000):
        regs = _regs(op, x, y, int(rng.integers(0, 1 << 62)))
        seen, lo, hi, count = harness.call(True, name, regs)
        want_seen, want_lo, want_hi, want_count = harness.call(False, name, regs)
        case = f"{name}({x:#x}, {y:#x})"
        # the interpreted routine's own stack fits the room a native call leaves (NATIVE_STACK_MARGIN)
        assert harness.sp - int(harness.state.stack_deepest[0]) <= NATIVE_STACK_MARGIN, case
        assert seen == want_seen, case  # event, slots, callee-saved registers, routine_acc
        assert seen[0] == EventKind.ECALL and seen[6][harness.names.index(name)][0] == 1, case
        assert lo == want_lo, case
        if wide:
            assert hi == want_hi, case
        expected = c_result(op, x, y)
        if expected is None:  # zero divisor, INT_MIN / -1: the real routine ran
            fallbacks += 1
            assert count == want_count and (lo, hi) == (want_lo, want_hi), case
        else:
            assert count == 2, case  # the native call and the ecall
            assert (hi << 32 | lo if wide else lo) == expected, case
    divides = op not in (NativeOp.MUL32, NativeOp.MUL64)
    assert (fallbacks > 0) == divides


@pytest.mark.parametrize("op", list(NativeOp)[1:])
def test_native_call_matches_c_semantics(op):
    wide = op >= NativeOp.MUL64
    for x, y in operands(64 if wide else 32, seed=100 + int(op), count=3000):
        a = _regs(op, x, y, 0xDEADBEEF_CAFEF00D)
        done, lo, hi = native_call(int(op), *a)
        expected = c_result(op, x, y)
        assert done == (expected is not None), (op, x, y)
        if done:
            assert (hi << 32 | lo if wide else lo) == expected, (op, x, y)
            assert wide or hi == a[1]  # a1 is left as it was
    assert native_call(0, 6, 7, 0, 0)[0] == 0 and native_call(11, 6, 7, 0, 0)[0] == 0


@pytest.mark.parametrize("ra_kind", ["misaligned", "below", "past_end"])
def test_bad_return_address_falls_back(harness, ra_kind):
    ra = {"misaligned": harness.ecall + 2, "below": 0x1000,
          "past_end": harness.native.address_of(harness.native.n)}[ra_kind]
    for name in ("__mulsi3", "__divdi3"):
        native = harness.call(True, name, (1000, 7, 3, 0), ra=ra)
        interpreted = harness.call(False, name, (1000, 7, 3, 0), ra=ra)
        assert native == interpreted
        fault = FaultKind.FETCH_MISALIGNED if ra_kind == "misaligned" else FaultKind.FETCH_OUT_OF_BOUNDS
        assert native[0][0] == EventKind.FAULT and native[0][3] == fault


def test_wram_room_and_alignment_fall_back(harness):
    args = (0x89ABCDEF, 0x80000123, 0x3, 0x80000000)  # __moddi3 of two negative 64-bit values
    # at a stack top: native
    assert harness.call(True, "__moddi3", args)[3] == 2
    # fewer than NATIVE_STACK_MARGIN bytes of WRAM below sp: interpreted (the real depth is 160 bytes)
    low = harness.call(True, "__moddi3", args, sp=NATIVE_STACK_MARGIN - 4)
    assert low == harness.call(False, "__moddi3", args, sp=NATIVE_STACK_MARGIN - 4)
    assert low[0][0] == EventKind.ECALL and low[3] > 2
    # a misaligned sp: the routine's own stores fault, so it is interpreted
    sp = harness.sp - 2
    native = harness.call(True, "__mulsi3", (6, 7, 0, 0), sp=sp)
    assert native == harness.call(False, "__mulsi3", (6, 7, 0, 0), sp=sp)
    assert native[0][0] == EventKind.FAULT and native[0][3] == FaultKind.MISALIGNED


def test_native_entry_inside_a_routine_is_not_native(harness):
    # __muldi3 calls __mulsi3 six times; when __muldi3 itself is interpreted (here: not enough
    # WRAM below sp for a native call), those nested entries are neither native nor recorded
    args = (0x12345678, 0x9ABCDEF0, 0x0FEDCBA9, 0x87654321)
    native = harness.call(True, "__muldi3", args, sp=NATIVE_STACK_MARGIN - 4)
    interpreted = harness.call(False, "__muldi3", args, sp=NATIVE_STACK_MARGIN - 4)
    assert native == interpreted and native[3] > 2
    counts = [row[0] for row in native[0][6]]
    assert counts[harness.names.index("__muldi3")] == 1 and sum(counts) == 1


# ---------------------------------------------------------------- decoding

def test_decode_program_native_table():
    text = bytes(8)
    p = decode_program(text, 0x80000000, routine=[0, 1], routine_kind=[1, 2])
    assert p.routine_native.tolist() == [0, 0] and not p.routine_native.flags.writeable
    p = decode_program(text, 0x80000000, routine=[0, 1], routine_kind=[1, 2], routine_native=[1, 2])
    assert p.routine_native.tolist() == [1, 2]
    with pytest.raises(ValueError):
        decode_program(text, 0x80000000, routine=[0, 1], routine_kind=[1, 2], routine_native=[1])
    with pytest.raises(ValueError):
        decode_program(text, 0x80000000, routine=[0, 1], routine_kind=[1, 2], routine_native=[1, -1])


def test_image_selects_native_ops_by_name(ops_elf, monkeypatch):
    image = ProgramImage.load(ops_elf)
    config = DpuConfig.calibrated()
    program, names = image.decode(config)
    assert set(ROUTINES) <= set(names)
    assert [int(v) for v in program.routine_native] == [int(NATIVE_OPS.get(n, 0)) for n in names]
    assert not image.decode(config, native=False)[0].routine_native.any()
    monkeypatch.setattr(image_module, "NATIVE_ROUTINES", False)
    assert not image.decode(config)[0].routine_native.any()
    assert image.decode(config, native=True)[0].routine_native.any()
    # a routine that is not priced is neither a routine nor native
    unpriced = config.with_(routine_costs=tuple(c for c in config.routine_costs if c.name != "__mulsi3"))
    program, names = image.decode(unpriced, native=True)
    assert "__mulsi3" not in names and "__muldi3" in names


# ---------------------------------------------------------------- compiled C on the device

def _ops_run(elf, native: bool, batches, tasklets: int, monkeypatch):
    monkeypatch.setattr(image_module, "NATIVE_ROUTINES", native)
    device = SimDevice(1)
    device.load(elf)
    results = []
    for xs, ys in batches:
        device.copy_to(0, "X", np.array(xs, np.uint64))
        device.copy_to(0, "Y", np.array(ys, np.uint64))
        device.launch()
        results.append(np.frombuffer(device.copy_from(0, "R", 10 * N * 8), np.uint64).reshape(10, N))
    return device, results


@pytest.mark.parametrize("pipeline,tasklets", [("O0", 3), ("O2", 4)])
def test_compiled_kernel_native_vs_interpreted(toolchain, ops_kernel, monkeypatch, pipeline, tasklets):
    elf = toolchain.compile(Variant.of(ops_kernel, pipeline, tasklets)).elf_path
    rng = np.random.default_rng(11)
    pairs = operands(64, seed=3, count=3 * N)
    rng.shuffle(pairs)
    pairs = pairs[: 4 * N]
    batches = [([x for x, _ in pairs[i:i + N]], [y for _, y in pairs[i:i + N]]) for i in range(0, 4 * N, N)]
    on, got = _ops_run(elf, True, batches, tasklets, monkeypatch)
    off, want = _ops_run(elf, False, batches, tasklets, monkeypatch)
    for (xs, ys), g, w in zip(batches, got, want):
        assert np.array_equal(g, w)
        for k, name in enumerate(ROUTINES):
            op = NATIVE_OPS[name]
            for i, (x, y) in enumerate(zip(xs, ys)):
                if op < NativeOp.MUL64:
                    x, y = x & M32, y & M32
                expected = c_result(op, x, y)
                if expected is not None:
                    assert int(g[k, i]) == expected, (name, x, y)
    for a, b in zip(on.launches, off.launches):
        for ta, tb, ra, rb in zip(a.timings, b.timings, a.traces, b.traces):
            assert ta.cycles == tb.cycles and np.array_equal(ta.slots, tb.slots)
            assert np.array_equal(ra.routine_counts, rb.routine_counts)
            assert np.array_equal(ra.routine_params, rb.routine_params)
            assert np.array_equal(ra.slots, rb.slots)
            assert ra.instructions_total * 3 < rb.instructions_total
    assert on.times.kernel_s == off.times.kernel_s


# ---------------------------------------------------------------- real kernels

@pytest.mark.parametrize("name,pipeline,tasklets", [
    ("gemv", "O0", 1), ("gemv", "O0", 16), ("gemv", "O2", 4), ("gemv", "O2", 11),
    ("lorq", "O0", 8), ("lorq", "O2", 1), ("lorq", "O2", 8),
])
def test_real_kernels_time_identically(toolchain, monkeypatch, name, pipeline, tasklets):
    from cnmtune.runtime.execute import run_binary
    from cnmtune.runtime.registry import find_kernel

    kernel = find_kernel(name)
    binary = toolchain.compile(Variant.of(kernel, pipeline, tasklets))
    size = kernel.workload.preset("small")
    results = {}
    for native in (False, True):
        monkeypatch.setattr(image_module, "NATIVE_ROUTINES", native)
        results[native] = run_binary(binary, 2, size)
    off, on = results[False], results[True]
    assert off.verified and on.verified
    assert (on.cycles, on.kernel_s, on.slots, on.routine_slots) == (off.cycles, off.kernel_s, off.slots,
                                                                    off.routine_slots)
    assert on.tasklets == off.tasklets and on.dma_read_bytes == off.dma_read_bytes
    assert on.instructions * 2 < off.instructions  # most raw instructions were inside the helpers
