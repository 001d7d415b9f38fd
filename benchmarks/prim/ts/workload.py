"""TS: time-series matching, the matrix profile of a series against one query (PrIM), own version.

For every start position i of the series (0 <= i <= n - m) the kernel computes an integer
z-normalised distance to the query,
    dist(i) = 2 (m - (dot(i) - m mean_s(i) mean_q) / (std_s(i) std_q))
in int32 arithmetic with C's truncating signed division, where dot(i) is the dot product of
the subsequence with the query and the means and standard deviations are truncated to int32;
it reports the smallest distance and its (first) position.

Size = the length n of the time series. Parameter `query_len` (m, default 256 as in PrIM)
must be a multiple of the block's element count 2^BL / 4 and at most n.

Compile time: BL, log2 of the block in bytes (default 8 = the 256-byte blocks of 64 elements
that PrIM always uses, as its Makefile never passes BL). Each tasklet allocates six blocks of
WRAM (two for the series, the query, the dot products, the means, the deviations), so
16 tasklets run up to BL = 8, 8 tasklets up to BL = 10; the workload refuses the rest.

Inputs: a seeded random walk with steps in -4..4, folded into 0..126 (PrIM uses i mod 127);
the query is a copy of the subsequence at a seeded position (PrIM's query is i mod 127 too).
The host precomputes each subsequence's mean and standard deviation with double-precision
prefix sums and truncates them to int32, and likewise the query's, as PrIM does.

Host side as PrIM: the number of start positions is rounded up to a multiple of
DPUs x tasklets x m; each DPU owns slice = that / DPUs consecutive start positions, and every
tasklet slice / tasklets of them. Per DPU (parallel pushes, equal sizes): the query (m
elements) at heap offset 0, the series from the DPU's first position (slice + m elements,
zero padded) at 4m, the means (slice) at 4(2m + slice), the deviations (slice) after them.
Arguments {slice, valid, query_len, query_mean, query_std, kernel, 2 x reserved} (8 x 32-bit)
by a serial copy_to per DPU (valid, the number of real positions, differs per DPU). After the
launch the host pulls DPU_RESULTS ({min_dist, min_index} per tasklet) and keeps the minimum.

Deliberate differences from PrIM:
- every start position 0..n-m is evaluated: PrIM caps each DPU at slice - m positions;
- padding positions are skipped (no distance computed; a partial last group computes only the
  dot products it needs), and deviations are at least 1 (no division by zero);
- the means and deviations arrays hold slice elements per DPU (PrIM slice + m);
- the minimum and its position are verified exactly (PrIM checks only the minimum value and
  ignores DPU minima <= 0).
"""

from typing import ClassVar

import numpy as np

from cnmtune.dpu.memory_map import MRAM_SIZE
from cnmtune.errors import KernelError
from cnmtune.runtime.device import DPU_MRAM_HEAP_POINTER_NAME
from cnmtune.runtime.workload import Workload

NO_INDEX = 0xFFFFFFFF


def window_stats(values: np.ndarray, m: int) -> tuple[np.ndarray, np.ndarray]:
    """Mean and standard deviation of every m-window, from double prefix sums, truncated to int32."""
    x = values.astype(np.float64)
    s1 = np.concatenate([[0.0], np.cumsum(x)])
    s2 = np.concatenate([[0.0], np.cumsum(x * x)])
    mean = (s1[m:] - s1[:-m]) / m
    var = (s2[m:] - s2[:-m]) / m - mean * mean
    std = np.sqrt(np.maximum(var, 0.0))
    return mean.astype(np.int32), np.maximum(std.astype(np.int32), 1)


def c_div(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    """C's signed division: the quotient truncated toward zero."""
    q = np.abs(num) // np.abs(den)
    return np.where((num < 0) != (den < 0), -q, q)


class TimeSeries(Workload):
    name = "ts"
    defines = {"BL": 8}
    define_choices = {"BL": tuple(range(3, 11))}
    nr_tasklets = 16
    sizes = {"small": 512, "default": 65_536, "large": 524_288}
    params: ClassVar[dict[str, object]] = {"query_len": 256}

    def __init__(self, size, nr_dpus, nr_tasklets, defines=None, seed=0, query_len=None):
        super().__init__(size, nr_dpus, nr_tasklets, defines, seed)
        self.query_len = int(self.params["query_len"] if query_len is None else query_len)
        block = 1 << int(self.config["BL"])
        elems = block // 4
        if self.query_len < 1 or self.query_len % elems:
            raise KernelError(f"{self.name}: query_len={self.query_len} must be a positive multiple of "
                              f"{elems} (the elements of a 2^BL-byte block)")
        if self.query_len > self.size:
            raise KernelError(f"{self.name}: query_len={self.query_len} exceeds the series length {self.size}")
        self.check_wram(6 * block)

    @property
    def positions(self) -> int:
        return self.size - self.query_len + 1

    @property
    def slice(self) -> int:
        unit = self.nr_dpus * self.tasklets * self.query_len
        return -(-self.positions // unit) * unit // self.nr_dpus

    def inputs(self):
        rng = np.random.default_rng(self.seed)
        walk = np.cumsum(rng.integers(-4, 5, self.size)) % 252
        series = np.where(walk > 126, 252 - walk, walk).astype(np.int32)  # fold into 0..126
        at = int(rng.integers(0, self.positions))
        return {"series": series, "query": series[at:at + self.query_len].copy()}

    def reference(self, inputs):
        series, query = inputs["series"], inputs["query"]
        m = self.query_len
        windows = np.lib.stride_tricks.sliding_window_view(series.astype(np.int64), m)
        dots = (windows @ query.astype(np.int64)).astype(np.int32)
        mean_s, std_s = window_stats(series, m)
        mean_q, std_q = (int(v[0]) for v in window_stats(query, m))
        with np.errstate(over="ignore"):
            num = (dots - np.int32(m) * mean_s * np.int32(mean_q)).astype(np.int64)
            den = (std_s * np.int32(std_q)).astype(np.int64)
            dist = (2 * (m - c_div(num, den).astype(np.int32))).astype(np.int32)
        best = int(np.argmin(dist))
        return {"min_dist": np.array([dist[best]], np.int32), "min_index": np.array([best], np.int64)}

    def execute(self, device, inputs):
        series, query = inputs["series"], inputs["query"]
        m, slice_, d = self.query_len, self.slice, self.nr_dpus
        if 4 * (2 * m + 3 * slice_) > MRAM_SIZE:
            raise KernelError(f"{self.name}: {slice_} positions per DPU do not fit in MRAM")
        mean_s, std_s = window_stats(series, m)
        mean_q, std_q = (int(v[0]) for v in window_stats(query, m))
        total = slice_ * d
        padded = np.zeros(total + m, np.int32)
        padded[: series.size] = series
        means, stds = np.zeros(total, np.int32), np.ones(total, np.int32)
        means[: self.positions], stds[: self.positions] = mean_s, std_s
        for dpu in range(d):
            valid = max(0, min(slice_, self.positions - dpu * slice_))
            args = np.array([slice_, valid, m, mean_q, std_q, 0, 0, 0], np.int64).astype(np.uint32)
            device.copy_to(dpu, "DPU_INPUT_ARGUMENTS", args)
        device.push_to(DPU_MRAM_HEAP_POINTER_NAME, [query] * d)
        device.push_to(DPU_MRAM_HEAP_POINTER_NAME, [padded[k * slice_:(k + 1) * slice_ + m] for k in range(d)],
                       offset=4 * m)
        device.push_to(DPU_MRAM_HEAP_POINTER_NAME, np.split(means, d), offset=4 * (2 * m + slice_))
        device.push_to(DPU_MRAM_HEAP_POINTER_NAME, np.split(stds, d), offset=4 * (2 * m + 2 * slice_))
        device.launch()
        best, best_index = np.iinfo(np.int32).max, -1
        for dpu, raw in enumerate(device.push_from("DPU_RESULTS", 8 * self.tasklets)):
            rows = np.frombuffer(raw, np.int32).reshape(self.tasklets, 2)
            for dist, index in zip(rows[:, 0], rows[:, 1].view(np.uint32)):
                if index != NO_INDEX and dist < best:  # DPUs and tasklets in position order
                    best, best_index = int(dist), dpu * slice_ + int(index)
        return {"min_dist": np.array([best], np.int32), "min_index": np.array([best_index], np.int64)}
