"""Table-charged runtime routines: how their dynamic parameter is read, and native execution.

A table-charged routine (compiler_rt's soft multiply and divide) is priced by the DPU cost of
its UPMEM counterpart, which depends on its operands: ``RoutineKind`` says how the parameter is
computed at the routine's entry (``routine_param``). Where operands, ra and sp allow, the
interpreter computes the integer routines natively (``NativeOp``, ``native_call``,
``native_entry_ok``) instead of interpreting them; results are bit-identical (see
cnmtune.runtime.sim.interpreter).
"""

from __future__ import annotations

import enum

import numpy as np
from numba import njit

M32 = 0xFFFFFFFF


class RoutineKind(enum.IntEnum):
    """How the dynamic parameter of a table-charged routine is computed at its entry.

    bits(x) = number of significant bits of unsigned x (0 for 0); clz32(x) = 32 - bits(x).
    """

    NONE = 0  # param = 0
    MUL32 = 1  # param = max(1, bits(min(a0, a1))): the DPU's mul_step chain stops on the smaller operand
    UDIV32 = 2  # param = 32 if a1 == 0 else max(0, clz32(a1) - clz32(a0) + 1): div_step count
    SDIV32 = 3  # UDIV32's rule on |a0|, |a1| (|INT_MIN| = 2**31)
    MUL64 = 4  # x = a1:a0, y = a3:a2 (hi:lo); param = bits(min(x, y)) on 64 bits
    UDIV64 = 5  # x / y as above: 64 if y == 0 else max(0, clz64(y) - clz64(x) + 1)
    SDIV64 = 6  # UDIV64's rule on |x|, |y|


class NativeOp(enum.IntEnum):
    """What a table-charged routine computes when run_tasklet executes it natively (0: interpret).

    ilp32 (RISC-V C ABI): 32-bit x = a0, y = a1, result in a0; 64-bit x = a1:a0, y = a3:a2
    (hi:lo), result in a1:a0. C semantics: wrapping products, quotients truncated toward zero,
    remainders with the sign of the dividend. A zero divisor and INT_MIN / -1 (INT64_MIN / -1)
    are never computed natively: the routine runs instruction by instruction as usual.
    """

    NONE = 0
    MUL32 = 1  # __mulsi3
    UDIV32 = 2  # __udivsi3
    UMOD32 = 3  # __umodsi3
    DIV32 = 4  # __divsi3
    MOD32 = 5  # __modsi3
    MUL64 = 6  # __muldi3
    UDIV64 = 7  # __udivdi3
    UMOD64 = 8  # __umoddi3
    DIV64 = 9  # __divdi3
    MOD64 = 10  # __moddi3


# Stack bytes a native call must leave below sp: more than any of the NativeOp routines of
# zig's compiler_rt uses with its nested helpers (160 for __moddi3 -> __udivmoddi4 -> __muldi3 ->
# __mulsi3; tests/runtime/sim/test_native_routines.py checks each interpreted call's depth against it).
NATIVE_STACK_MARGIN = 256


@njit(cache=True, nogil=True)
def _bits(x):
    n = 0
    while x:
        x >>= 1
        n += 1
    return n


@njit(cache=True, nogil=True)
def _bits64(hi, lo):
    return 32 + _bits(hi) if hi else _bits(lo)


@njit(cache=True, nogil=True)
def _abs64(hi, lo):
    if hi & 0x80000000:  # two's complement negate of hi:lo
        return (~hi + (1 if lo == 0 else 0)) & M32, (-lo) & M32
    return hi, lo


@njit(cache=True, nogil=True)
def routine_param(kind, a0, a1, a2, a3):
    """The dynamic parameter of a routine of RoutineKind ``kind`` called with a0..a3."""
    a0, a1, a2, a3 = a0 & M32, a1 & M32, a2 & M32, a3 & M32
    if kind == 1 or kind == 4:
        if kind == 1:
            return max(1, _bits(min(a0, a1)))  # at least one mul_step runs
        if a1 < a3 or (a1 == a3 and a0 < a2):  # x < y on hi:lo pairs
            return _bits64(a1, a0)
        return _bits64(a3, a2)
    if kind == 2 or kind == 3:
        if kind == 3:  # |x| of a 32-bit two's complement value
            a0 = (-a0) & M32 if a0 & 0x80000000 else a0
            a1 = (-a1) & M32 if a1 & 0x80000000 else a1
        if a1 == 0:
            return 32
        return max(0, _bits(a0) - _bits(a1) + 1)  # clz(a1) - clz(a0) + 1
    if kind == 5 or kind == 6:
        xh, xl, yh, yl = a1, a0, a3, a2
        if kind == 6:
            xh, xl = _abs64(xh, xl)
            yh, yl = _abs64(yh, yl)
        if yh == 0 and yl == 0:
            return 64
        return max(0, _bits64(xh, xl) - _bits64(yh, yl) + 1)
    return 0


@njit(cache=True, nogil=True)
def _mul32(a, b):
    """(hi, lo) of the 64-bit product of two uint32 values held in int64 (no int64 overflow)."""
    a0, a1, b0, b1 = a & 0xFFFF, a >> 16, b & 0xFFFF, b >> 16
    p00, p01, p10 = a0 * b0, a0 * b1, a1 * b0
    mid = (p00 >> 16) + (p01 & 0xFFFF) + (p10 & 0xFFFF)
    return a1 * b1 + (p01 >> 16) + (p10 >> 16) + (mid >> 16), (p00 & 0xFFFF) | ((mid & 0xFFFF) << 16)


@njit(cache=True, nogil=True)
def native_call(op, a0, a1, a2, a3):
    """(done, a0, a1) of NativeOp ``op`` called with a0..a3; done = 0: not computable natively
    (zero divisor, signed overflow, unknown op), interpret the routine instead."""
    a0, a1, a2, a3 = np.int64(a0) & M32, np.int64(a1) & M32, np.int64(a2) & M32, np.int64(a3) & M32
    if op == 1:
        return 1, _mul32(a0, a1)[1], a1
    if op >= 2 and op <= 5:
        if a1 == 0:
            return 0, a0, a1
        if op <= 3:
            return 1, (a0 // a1 if op == 2 else a0 % a1), a1
        if a0 == 0x80000000 and a1 == M32:  # INT_MIN / -1 overflows (and INT_MIN % -1 with it)
            return 0, a0, a1
        nx, ny = a0 >> 31, a1 >> 31  # signs; magnitudes below (|INT_MIN| = 2**31)
        mx = ((-a0) & M32) if nx else a0
        my = ((-a1) & M32) if ny else a1
        if op == 4:
            q = mx // my
            return 1, ((-q) & M32) if nx != ny else q, a1
        rem = mx % my
        return 1, ((-rem) & M32) if nx else rem, a1
    if op == 6:  # low 64 bits of x * y = xl*yl + ((xl*yh + xh*yl) << 32)
        hi, lo = _mul32(a0, a2)
        return 1, lo, (hi + _mul32(a0, a3)[1] + _mul32(a1, a2)[1]) & M32
    if op >= 7 and op <= 10:
        if a2 == 0 and a3 == 0:
            return 0, a0, a1
        s32 = np.uint64(32)
        x = (np.uint64(a1) << s32) | np.uint64(a0)
        y = (np.uint64(a3) << s32) | np.uint64(a2)
        if op <= 8:
            u = x // y if op == 7 else x % y
            return 1, np.int64(u & np.uint64(M32)), np.int64(u >> s32)
        if a0 == 0 and a1 == 0x80000000 and a2 == M32 and a3 == M32:
            return 0, a0, a1  # INT64_MIN / -1 overflows (and INT64_MIN % -1 with it)
        nx, ny = a1 >> 31, a3 >> 31
        zero = np.uint64(0)  # uint64 throughout: mixing it with int64 would give float64
        ux = (zero - x) if nx else x  # wrapping negation: |INT64_MIN| = 2**63 fits uint64
        uy = (zero - y) if ny else y
        if op == 9:
            us = ux // uy
            if nx != ny:
                us = zero - us
        else:
            us = ux % uy
            if nx:
                us = zero - us
        return 1, np.int64(us & np.uint64(M32)), np.int64(us >> s32)
    return 0, a0, a1


@njit(cache=True, nogil=True)
def native_entry_ok(ret, sp, base, n, wlen):
    """Whether a native call may replace interpretation: ra (``ret``) is an aligned pc of the
    program, and sp is aligned and has NATIVE_STACK_MARGIN bytes of WRAM below it, so the routine
    itself could not have faulted. (Its stack use is not recorded in DpuState.stack_deepest: on a
    DPU these are UPMEM's own routines, whose frames are not zig's.)"""
    ridx = (ret - base) >> 2
    return (((ret | sp) & 3) == 0 and ridx >= 0 and ridx < n and sp <= wlen and sp >= NATIVE_STACK_MARGIN)
