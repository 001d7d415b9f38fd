"""TS: time-series matching, the matrix profile of a series against one query (PrIM), own version.

For start positions i of the series the kernel computes an integer z-normalised distance to
the query,
    dist(i) = 2 (m - (dot(i) - m mean_s(i) mean_q) / (std_s(i) std_q))
in int32 arithmetic with C's truncating signed division, where dot(i) is the dot product of
the subsequence with the query; it reports the smallest distance and its (first) position.

Size = the series length n (PrIM's -n). Parameter `query_len` (m, default 256 as in PrIM)
must be a multiple of the block's element count 2^BL / 4 (and at least 4).

Compile time: BL, log2 of the block in bytes (default 8 = the 256-byte blocks of 64 elements
that PrIM always uses, as its Makefile never passes BL). Each tasklet allocates six blocks of
WRAM (two for the series, the query, the dot products, the means, the deviations), so
16 tasklets run up to BL = 8, 8 tasklets up to BL = 10; the workload refuses the rest.

Inputs as PrIM (no randomness, so the seed is unused): n is rounded up to a multiple of
DPUs x tasklets x m, and the whole padded series is series[i] = i mod 127; query[i] =
i mod 127. The host computes the subsequence statistics as PrIM does, with double prefix
sums over the first n - m start positions, truncated to int32: the mean, and as deviation
sqrt(sum of squares / m) (PrIM subtracts the squared mean from a still-zero array, so its
"deviation" is the root mean square); the query's mean and true standard deviation.

Host side as PrIM: each DPU owns slice = n / DPUs consecutive start positions. Per DPU
(parallel pushes, equal sizes): the query (m elements) at heap offset 0, the series from the
DPU's first position (slice + m elements, zeros past the end) at 4m, the means (slice + m) at
4(2m + slice), the deviations (slice + m) after them. Arguments {ts_length, query_length,
query_mean, query_std, slice_per_dpu, exclusion_zone, kernel, reserved} by a serial copy_to
per DPU. The DPU work is PrIM's: every DPU evaluates its start positions 0..slice-m-1 (padded
ones included; its last m positions are left out, so with one tasklet and n <= DPUs x m no
position is evaluated and the result is "none": distance INT32_MAX, index -1), in groups of 2^BL/4 with PrIM's dot-product
loop (dpu/task.c). After the launch the host pulls DPU_RESULTS ({min_dist, min_index} per
tasklet) and keeps the minimum; the reference evaluates the same positions.

Remaining differences from PrIM:
- the minimum and its position are verified exactly over the evaluated positions (PrIM
  compares the value only, with its host evaluating positions 0..n-m-2, and ignores DPU
  minima <= 0): host side only;
- DPU_RESULTS entries are 8 bytes (PrIM's 16 carry two unused max fields): host transfer only.
"""

from typing import ClassVar

import numpy as np

from cnmtune.dpu.memory_map import MRAM_SIZE
from cnmtune.errors import KernelError
from cnmtune.runtime.device import DPU_MRAM_HEAP_POINTER_NAME
from cnmtune.runtime.workload import Workload

MAX_DATA_VAL = 127
NO_DIST = np.iinfo(np.int32).max  # a tasklet's minimum when it has no position


def c_div(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    """C's signed division: the quotient truncated toward zero."""
    q = np.abs(num) // np.abs(den)
    return np.where((num < 0) != (den < 0), -q, q)


class TimeSeries(Workload):
    name = "ts"
    defines = {"BL": 8}
    define_choices = {"BL": tuple(range(3, 11))}
    tuned_defines = ("BL",)
    nr_tasklets = 16
    sizes = {"small": 512, "default": 65_536, "large": 524_288}
    params: ClassVar[dict[str, object]] = {"query_len": 256}

    def __init__(self, size, nr_dpus, nr_tasklets, defines=None, seed=0, query_len=None):
        super().__init__(size, nr_dpus, nr_tasklets, defines, seed)
        self.query_len = int(self.params["query_len"] if query_len is None else query_len)
        block = 1 << int(self.config["BL"])
        elems = block // 4
        if self.query_len < 4 or self.query_len % elems:
            raise KernelError(f"{self.name}: query_len={self.query_len} must be a multiple of {elems} "
                              "(the elements of a 2^BL-byte block) and at least 4")
        self.check_wram(6 * block)

    @property
    def length(self) -> int:
        """The series length rounded up to a multiple of DPUs x tasklets x m, as PrIM."""
        unit = self.nr_dpus * self.tasklets * self.query_len
        return -(-self.size // unit) * unit

    @property
    def slice(self) -> int:
        return self.length // self.nr_dpus

    def processed_size(self):
        """The start positions the DPUs evaluate (at least 1): DPUs x (slice - m)."""
        return max(1, self.length - self.nr_dpus * self.query_len)

    def inputs(self):
        return {"series": (np.arange(self.length) % MAX_DATA_VAL).astype(np.int32),
                "query": (np.arange(self.query_len) % MAX_DATA_VAL).astype(np.int32)}

    def _statistics(self, series: np.ndarray, query: np.ndarray) -> tuple[np.ndarray, np.ndarray, int, int]:
        """PrIM's host statistics: per start position < n - m the truncated mean and root mean
        square (zero beyond), and the query's truncated mean and standard deviation."""
        m, profile = self.query_len, self.length - self.query_len
        x = series.astype(np.float64)
        s1 = np.concatenate([[0.0], np.cumsum(x)])
        s2 = np.concatenate([[0.0], np.cumsum(x * x)])
        means, rms = np.zeros(self.length, np.int32), np.zeros(self.length, np.int32)
        means[:profile] = ((s1[m:m + profile] - s1[:profile]) / m).astype(np.int32)
        rms[:profile] = np.sqrt((s2[m:m + profile] - s2[:profile]) / m).astype(np.int32)
        q = query.astype(np.float64)
        return means, rms, int(q.mean()), int(np.sqrt(((q - q.mean()) ** 2).mean()))

    def _evaluated(self) -> np.ndarray:
        """The start positions PrIM's DPUs evaluate: 0..slice-m-1 of every DPU's slice."""
        local = np.arange(self.slice - self.query_len)
        return (np.arange(self.nr_dpus)[:, None] * self.slice + local).ravel()

    def reference(self, inputs):
        series, query = inputs["series"], inputs["query"]
        m = self.query_len
        means, rms, mean_q, std_q = self._statistics(series, query)
        at = self._evaluated()
        dots = np.correlate(series.astype(np.int64), query.astype(np.int64), "valid")[at]
        num = dots - np.int64(m) * means[at] * mean_q
        dist = (2 * (m - c_div(num, rms[at].astype(np.int64) * std_q))).astype(np.int32)
        if not at.size:  # slice = m (one tasklet, n <= DPUs x m): no position, as on PrIM's DPUs
            return {"min_dist": np.array([NO_DIST], np.int32), "min_index": np.array([-1], np.int64)}
        best = int(np.argmin(dist))
        return {"min_dist": np.array([dist[best]], np.int32), "min_index": np.array([at[best]], np.int64)}

    def execute(self, device, inputs):
        series, query = inputs["series"], inputs["query"]
        m, slice_, d = self.query_len, self.slice, self.nr_dpus
        if 4 * (m + 3 * (slice_ + m)) > MRAM_SIZE:
            raise KernelError(f"{self.name}: {slice_} positions per DPU do not fit in MRAM")
        means, rms, mean_q, std_q = self._statistics(series, query)
        padded = {k: np.concatenate([v, np.zeros(m, np.int32)]) for k, v in
                  (("series", series), ("means", means), ("rms", rms))}
        parts = {k: [v[p * slice_:(p + 1) * slice_ + m] for p in range(d)] for k, v in padded.items()}
        args = np.array([self.length, m, mean_q, std_q, slice_, 0, 0, 0], np.int64).astype(np.uint32)
        for dpu in range(d):
            device.copy_to(dpu, "DPU_INPUT_ARGUMENTS", args)
        device.push_to(DPU_MRAM_HEAP_POINTER_NAME, [query] * d)
        device.push_to(DPU_MRAM_HEAP_POINTER_NAME, parts["series"], offset=4 * m)
        device.push_to(DPU_MRAM_HEAP_POINTER_NAME, parts["means"], offset=4 * (2 * m + slice_))
        device.push_to(DPU_MRAM_HEAP_POINTER_NAME, parts["rms"], offset=4 * (3 * m + 2 * slice_))
        device.launch()
        best, best_index = NO_DIST, -1
        for dpu, raw in enumerate(device.push_from("DPU_RESULTS", 8 * self.tasklets)):
            rows = np.frombuffer(raw, np.int32).reshape(self.tasklets, 2)
            for dist, index in zip(rows[:, 0], rows[:, 1].view(np.uint32)):
                if dist < best:  # DPUs and tasklets in position order: the first minimum wins
                    best, best_index = int(dist), dpu * slice_ + int(index)
        return {"min_dist": np.array([best], np.int32), "min_index": np.array([best_index], np.int64)}
