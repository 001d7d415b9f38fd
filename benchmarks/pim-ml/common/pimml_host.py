"""Host side shared by the four PIM-ML workloads (LiRQ, LiRnQ, LoRQ, LoRnQ): cnmtune's own.

Each workload.py (in lirq/, lirnq/, lorq/, lornq/) imports this module from the suite's
common/ directory and subclasses PimMlWorkload with its model constants. Their DPU programs
are the same common/pimml_task.c; each kernel's support/common.h selects the model.

Size = rows m of the training set (split over the DPUs). Parameters (constructor keywords,
also in `params`, `--param K=V`): iterations (gradient-descent steps, one launch each;
PIM-ML's default 100), n_features (n, even, at most MAX_ROWS; default 16) and learning_rate.

Host layout as PIM-ML: rows split as evenly as possible over the DPUs (the first m mod D get
one more); each DPU's count is padded to even and max_rows is the largest padded count. Every
DPU gets, by parallel pushes: the arguments {n_size, n_size_pad, nr_rows, max_rows,
start_row[T], rows_per_tasklet[T]} (uint32) in DPU_INPUT_ARGUMENTS; its rows of X as a
max_rows x n_pad block at heap offset 0; its Y (max_rows elements) after X. Logistic models
also broadcast the int16 sigmoid table to SIGMOID_LUT. Each tasklet gets consecutive rows in
pairs (PIM-ML's split: pairs/T each, the first pairs mod T tasklets one pair more). Then, per
iteration: push W (n_pad elements, after Y) -> launch -> parallel pull of DPU_RESULTS
(n_pad elements) -> the host adds the DPUs' gradients and updates W.

Weight update. INT32: g = sum over DPUs of (DPU gradient >> OFFSET) in int32, then
W = (int32) trunc(W - g * lr / (m / 2^(SHIFT_AMOUNT + OFFSET))) in float32. FLOAT: g = sum over
DPUs of (DPU gradient / m), W = W - g * lr (float32).

Verification: the reference replays the same training in numpy. INT32 emulates the DPU's
int32 arithmetic and the per-DPU shifts exactly, so the final weights must be equal; FLOAT
weights must agree within 0.01 (PIM-ML's tolerance), since the summation order differs.

Deliberate differences from PIM-ML:
- the weight update divides by m / 2^(SHIFT_AMOUNT + OFFSET) as a real number; PIM-ML divides
  by the integer m >> (SHIFT_AMOUNT + OFFSET), which is 0 for m < 2^16 in LiRnQ (and for
  m < 1024 in the others) and turns the weights into garbage;
- rows_per_cache (a run-time unsigned division on the DPU, as in PIM-ML) is rounded down to
  even, so every Y read stays 8-aligned for any even n (PIM-ML reads Y from a 4-byte-misaligned
  address when B / (4n) is odd, e.g. n = 10);
- X rows are stored at stride n_pad = n (n must be even, as PIM-ML requires);
- the reference replays the DPU arithmetic instead of PIM-ML's separate host training (whose
  fixed-point formulas differ from the DPU's), so the check is exact for INT32;
- int32 overflow wraps explicitly (unsigned arithmetic in C) instead of being undefined;
- FLOAT sigmoid: the Taylor series is evaluated entirely in float (PIM-ML's final
  1.0 / (1.0 + sum) is in double);
- the synthetic data comes from a seeded numpy generator (see each workload's inputs()).
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from cnmtune.dpu.memory_map import MRAM_SIZE
from cnmtune.errors import KernelError, VerificationError
from cnmtune.runtime.device import DPU_MRAM_HEAP_POINTER_NAME
from cnmtune.runtime.workload import Workload

SHIFT_AMOUNT = 10
SIGMOID_BOUNDARY = 20
LUT_SIZE = SIGMOID_BOUNDARY << SHIFT_AMOUNT
WRAM_BYTES = 65536
WRAM_RESERVED = 1536  # runtime globals, barrier, arguments
STACK_BYTES = 1024
ONE = np.float32(1.0)


def wrap32(a) -> np.ndarray:
    """int64 values reduced to int32 with wrap-around (kept as int64)."""
    a = np.asarray(a, dtype=np.int64)
    return ((a + (1 << 31)) & 0xFFFFFFFF) - (1 << 31)


def sigmoid_table() -> np.ndarray:
    """int16 sigma(i / 2^SHIFT) in fixed point, i = 1..LUT_SIZE (rounded to nearest)."""
    v = np.arange(1, LUT_SIZE + 1, dtype=np.float64) / (1 << SHIFT_AMOUNT)
    return np.floor((1 << SHIFT_AMOUNT) / (1 + np.exp(-v)) + 0.5).astype(np.int16)


def sigmoid_fixed(x: np.ndarray, table: np.ndarray) -> np.ndarray:
    one = 1 << SHIFT_AMOUNT
    idx = np.clip(np.abs(x), 1, LUT_SIZE) - 1
    looked = table[idx].astype(np.int64)
    s = np.where(x < 0, one - looked, looked)
    s = np.where(x == 0, one >> 1, s)
    s = np.where(x > LUT_SIZE, one, s)
    return np.where(x < -LUT_SIZE, 0, s)


def sigmoid_float(x: np.ndarray) -> np.ndarray:
    """The DPU's float sigmoid: e^-x by 100 Taylor terms, all in float32."""
    x = x.astype(np.float32)
    total = np.ones_like(x)
    term = np.ones_like(x)
    with np.errstate(over="ignore", invalid="ignore"):
        for i in range(1, 101):
            term = (term * (-x)) / np.float32(i)
            total = total + term
        s = ONE / (ONE + total)
    s = np.where(x == 0, np.float32(0.5), s)
    s = np.where(x >= 15, ONE, s)
    return np.where(x <= -15, np.float32(0), s).astype(np.float32)


class PimMlWorkload(Workload):
    """Batch gradient descent of a linear or logistic model; subclasses set the constants."""

    logistic: ClassVar[bool] = False
    quantized: ClassVar[bool] = True
    offset: ClassVar[int] = 0
    max_rows: ClassVar[int] = 16
    defines = {"BL": 10, "INT32": None}
    define_choices = {"BL": tuple(range(3, 12))}
    tuned_defines = ("BL",)
    flag_groups = {"element type": ("INT32", "FLOAT")}
    sizes = {"small": 256, "default": 8192, "large": 131_072}
    params: ClassVar[dict[str, object]] = {"iterations": 100, "n_features": 16, "learning_rate": 0.1}

    def __init__(self, size, nr_dpus, nr_tasklets, defines=None, seed=0, **params):
        super().__init__(size, nr_dpus, nr_tasklets, defines, seed, **params)
        self.iterations = int(self.param_values["iterations"])
        self.n = int(self.param_values["n_features"])
        self.lr = float(self.param_values["learning_rate"])
        if self.iterations < 1:
            raise KernelError(f"{self.name}: iterations must be positive, got {self.iterations}")
        if self.n < 2 or self.n % 2 or self.n > self.max_rows:
            raise KernelError(f"{self.name}: n_features must be even, in 2..{self.max_rows}; got {self.n}")
        block = 1 << int(self.config["BL"])
        if block < 2 * 4 * self.n:
            raise KernelError(f"{self.name}: BL={self.config['BL']} blocks hold fewer than two rows of "
                              f"{self.n} features; raise BL")
        wram = WRAM_RESERVED + self.max_rows * 4 * self.tasklets \
            + self.tasklets * (STACK_BYTES + 2 * block + 4 * self.n) + (2 * LUT_SIZE if self.logistic else 0)
        if wram > WRAM_BYTES:
            per = STACK_BYTES + 2 * block + 4 * self.n + self.max_rows * 4
            fixed = WRAM_RESERVED + (2 * LUT_SIZE if self.logistic else 0)
            raise KernelError(f"{self.name}: {self.tasklets} tasklets do not fit in WRAM with BL="
                              f"{self.config['BL']}; at most {(WRAM_BYTES - fixed) // per} tasklets")

    @property
    def is_float(self) -> bool:
        return self.flag("element type") == "FLOAT"

    @property
    def dtype(self) -> np.dtype:
        return np.dtype(np.float32 if self.is_float else np.int32)

    # ------------------------------------------------------------------ data
    def raw_data(self, rng) -> tuple[np.ndarray, np.ndarray]:
        """(X, Y) as real numbers (float64); subclasses define them."""
        raise NotImplementedError

    def launch_count(self):
        return self.iterations  # one per gradient-descent step

    def inputs(self):
        rng = np.random.default_rng(self.seed)
        x, y = self.raw_data(rng)
        if self.is_float:
            return {"X": x.astype(np.float32), "Y": y.astype(np.float32)}
        if self.quantized:  # reals to fixed point (truncation, as the C cast)
            x = np.trunc(x * (1 << SHIFT_AMOUNT))
            if not self.logistic:
                y = np.trunc(y * (1 << SHIFT_AMOUNT))
        return {"X": x.astype(np.int32), "Y": y.astype(np.int32)}

    # ------------------------------------------------------------------ layout
    def row_split(self) -> tuple[list[int], list[int]]:
        base, extra = divmod(self.size, self.nr_dpus)
        counts = [base + (d < extra) for d in range(self.nr_dpus)]
        return [sum(counts[:d]) for d in range(self.nr_dpus)], counts

    def tasklet_split(self, rows: int) -> tuple[list[int], list[int]]:
        """(start row, rows) per tasklet: consecutive pairs, the first pairs mod T get one more."""
        pairs = -(-rows // 2)
        base, extra = divmod(pairs, self.tasklets)
        counts = [2 * (base + (t < extra)) for t in range(self.tasklets)]
        return [sum(counts[:t]) for t in range(self.tasklets)], counts

    def initial_weights(self) -> np.ndarray:
        return np.full(self.n, ONE if self.is_float else 1 << SHIFT_AMOUNT, self.dtype)

    def update(self, w: np.ndarray, partials: list[np.ndarray]) -> np.ndarray:
        """The host step: add the DPUs' gradients and move the weights (see the docstring)."""
        lr = np.float32(self.lr)
        if self.is_float:
            g = np.zeros(self.n, np.float32)
            for p in partials:
                g = g + p[: self.n].astype(np.float32) / np.float32(self.size)
            return (w - g * lr).astype(np.float32)
        g = np.zeros(self.n, np.int64)
        for p in partials:
            g = wrap32(g + (p[: self.n].astype(np.int64) >> self.offset))
        divisor = np.float32(self.size / (1 << (SHIFT_AMOUNT + self.offset)))
        with np.errstate(over="ignore", invalid="ignore"):
            new = w.astype(np.float32) - (g.astype(np.float32) * lr) / divisor
            new = np.trunc(new)
            new = np.where(np.isfinite(new) & (np.abs(new) < 2.0 ** 31), new, -(2.0 ** 31))
        return new.astype(np.int32)

    # ------------------------------------------------------------------ DPU side
    def execute(self, device, inputs):
        x, y = inputs["X"], inputs["Y"]
        n = self.n
        starts, counts = self.row_split()
        max_rows = max(c + c % 2 for c in counts)
        block = 1 << int(self.config["BL"])
        x_bytes = max_rows * n * 4
        if x_bytes + max_rows * 4 + n * 4 + block > MRAM_SIZE:
            raise KernelError(f"{self.name}: {max_rows} rows x {n} features per DPU do not fit in MRAM")
        args, xs, ys = [], [], []
        for start, count in zip(starts, counts):
            t_start, t_rows = self.tasklet_split(count)
            args.append(np.array([n, n, count, max_rows, *t_start, *t_rows], dtype=np.uint32))
            mine = np.zeros((max_rows, n), self.dtype)
            mine[:count] = x[start:start + count]
            xs.append(mine)
            target = np.zeros(max_rows, self.dtype)
            target[:count] = y[start:start + count]
            ys.append(target)
        device.push_to("DPU_INPUT_ARGUMENTS", args)
        device.push_to(DPU_MRAM_HEAP_POINTER_NAME, xs)
        device.push_to(DPU_MRAM_HEAP_POINTER_NAME, ys, offset=x_bytes)
        if self.logistic:
            device.broadcast("SIGMOID_LUT", sigmoid_table())
        w = self.initial_weights()
        w_offset = x_bytes + max_rows * 4
        device.push_to(DPU_MRAM_HEAP_POINTER_NAME, [w] * self.nr_dpus, offset=w_offset)
        for iteration in range(self.iterations):
            device.launch()
            with device.inter_dpu():  # gather the gradients, hand out the next weights
                raw = device.push_from("DPU_RESULTS", n * 4)
                w = self.update(w, [np.frombuffer(r, self.dtype) for r in raw])
                if iteration + 1 < self.iterations:
                    device.push_to(DPU_MRAM_HEAP_POINTER_NAME, [w] * self.nr_dpus, offset=w_offset)
        return {"W": w}

    # ------------------------------------------------------------------ reference
    def dpu_gradient(self, x: np.ndarray, y: np.ndarray, w: np.ndarray) -> np.ndarray:
        """One DPU's gradient over its rows, with the DPU's arithmetic."""
        if self.is_float:
            dot = (x * w).sum(axis=1, dtype=np.float32)
            if self.logistic:
                return (x * (sigmoid_float(dot) - y)[:, None]).sum(axis=0, dtype=np.float64).astype(np.float32)
            return (-(x * (y - dot)[:, None])).sum(axis=0, dtype=np.float64).astype(np.float32)
        x64, y64, w64 = x.astype(np.int64), y.astype(np.int64), w.astype(np.int64)
        dot = wrap32(wrap32(x64 * w64).sum(axis=1))
        if self.logistic:
            arg = dot >> SHIFT_AMOUNT if self.quantized else dot
            err = wrap32(sigmoid_fixed(arg, sigmoid_table()) - wrap32(y64 << SHIFT_AMOUNT))
            shift = 2 * SHIFT_AMOUNT if self.quantized else SHIFT_AMOUNT
            return wrap32((wrap32(x64 * err[:, None]) >> shift).sum(axis=0))
        if self.quantized:
            err = wrap32(y64 - (dot >> SHIFT_AMOUNT))
            shift = 2 * SHIFT_AMOUNT
        else:
            err = wrap32(wrap32(y64 << SHIFT_AMOUNT) - dot)
            shift = SHIFT_AMOUNT
        return wrap32(-(wrap32(x64 * err[:, None]) >> shift).sum(axis=0))

    def reference(self, inputs):
        x, y = inputs["X"], inputs["Y"]
        starts, counts = self.row_split()
        w = self.initial_weights()
        for _ in range(self.iterations):
            partials = [self.dpu_gradient(x[s:s + c], y[s:s + c], w) for s, c in zip(starts, counts)]
            w = self.update(w, partials)
        return {"W": w}

    def verify(self, outputs, expected):
        if not self.is_float:
            return super().verify(outputs, expected)
        got, want = outputs.get("W"), expected["W"]
        if got is None or got.shape != want.shape:
            raise VerificationError(f"{self.name}: output 'W' missing or of the wrong shape")
        bad = ~(np.abs(got.astype(np.float64) - want) <= 0.01)
        if bad.any():
            first = int(np.flatnonzero(bad)[0])
            raise VerificationError(f"{self.name}: {int(bad.sum())} of {want.size} weights differ by more "
                                    f"than 0.01; first at {first}: got {got[first].item()!r}, "
                                    f"expected {want[first].item()!r}")
