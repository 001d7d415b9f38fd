"""Execution traces: per tasklet, the sequence of segments the timing model replays.

A segment is what a tasklet does between two timing-relevant events: some native issue
slots, some calls of table-charged routines (counted with their dynamic parameter), direct
MRAM accesses, and then one action (a DMA, a synchronisation, a boot, a counter read, stop).
Nothing in a trace depends on DpuConfig, so one functional run can be re-timed under any
configuration.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from enum import IntEnum
from typing import NamedTuple

import numpy as np


class Action(IntEnum):
    """What ends a segment."""

    DMA_READ = 1      # arg0 = bytes (MRAM -> WRAM); the tasklet waits for the transfer
    DMA_WRITE = 2     # arg0 = bytes (WRAM -> MRAM)
    BARRIER = 3       # arg0 = barrier address, arg1 = participants (initial_count)
    ACQUIRE = 4       # arg0 = atomic bit index; resumes with 0 (taken) or 1 (busy)
    RELEASE = 5       # arg0 = atomic bit index
    SEM_TAKE = 6      # arg0 = semaphore address, arg1 = initial count
    SEM_GIVE = 7      # arg0 = semaphore address, arg1 = initial count
    NOTIFY = 8        # handshake_notify: waits until someone waits for this tasklet
    WAIT_FOR = 9      # arg0 = notifier; resumes with 0 or EALREADY
    BOOT = 10         # arg0 = tasklet to start
    PERF_CONFIG = 11  # arg0 = counter mode, arg1 = reset; resumes with the previous value
    PERF_GET = 12     # resumes with the counter value
    STOP = 13         # the tasklet is done
    LOCK = 14         # arg0 = atomic bit index; a spin lock: resumes with 0 once the bit is taken


class Segment(NamedTuple):
    """One segment of one tasklet (see the module docstring).

    The routine arrays are empty when the segment called no table-charged routine, and also in
    segments a source hands the timing model already priced: then `slots` (a float) includes the
    routines' cost under the model's DpuConfig (TraceReplay, and the co-simulation in dpu.py).
    """

    tasklet: int
    slots: int
    instructions: int
    routine_counts: np.ndarray
    routine_params: np.ndarray
    mram_accesses: int
    action: Action
    arg0: int = 0
    arg1: int = 0


@dataclass(frozen=True)
class Trace:
    """All segments of one DPU for one launch, in the order the timing model consumed them."""

    routines: tuple[str, ...]
    tasklet: np.ndarray
    slots: np.ndarray
    instructions: np.ndarray
    routine_counts: np.ndarray
    routine_params: np.ndarray
    mram_accesses: np.ndarray
    action: np.ndarray
    arg0: np.ndarray
    arg1: np.ndarray

    @classmethod
    def from_segments(cls, routines: tuple[str, ...], segments: list[Segment]) -> "Trace":
        """Pack a list of segments into column arrays."""
        width, n = len(routines), len(segments)
        fields = list(zip(*segments)) if segments else [()] * len(Segment._fields)

        def column(k: int, dtype) -> np.ndarray:
            return np.fromiter(fields[k], dtype=dtype, count=n)

        def matrix(k: int) -> np.ndarray:
            out = np.zeros((n, width), dtype=np.int64)
            for i, values in enumerate(fields[k]):
                if len(values):
                    out[i] = values
            return out

        return cls(routines, column(0, np.int16), column(1, np.int64), column(2, np.int64), matrix(3), matrix(4),
                   column(5, np.int64), column(6, np.int8), column(7, np.int64), column(8, np.int64))

    @classmethod
    def from_columns(cls, routines: tuple[str, ...], rows: list[tuple[int, int, int, int, int, int, int]],
                     single: list[tuple[int, int, int]] = (),
                     multi: list[tuple[int, np.ndarray, np.ndarray]] = ()) -> Trace:
        """Pack segments given as rows (tasklet, slots, instructions, mram_accesses, action, arg0, arg1)
        and sparse routine entries: `single` (row, routine, param) for rows that entered one routine
        once, `multi` (row, counts, params) with full-width vectors for the others."""
        n, width = len(rows), len(routines)
        flat = np.fromiter(itertools.chain.from_iterable(rows), dtype=np.int64, count=7 * n)
        multi_counts, multi_params = np.zeros((len(multi), width), np.int64), np.zeros((len(multi), width), np.int64)
        for k, (_, row_counts, row_params) in enumerate(multi):
            multi_counts[k], multi_params[k] = row_counts, row_params
        return cls.from_arrays(routines, flat.reshape(n, 7), np.array(single, dtype=np.int64).reshape(-1, 3),
                               np.array([index for index, _, _ in multi], dtype=np.int64), multi_counts, multi_params)

    @classmethod
    def from_arrays(cls, routines: tuple[str, ...], rows: np.ndarray, single: np.ndarray, multi_index: np.ndarray,
                    multi_counts: np.ndarray, multi_params: np.ndarray) -> Trace:
        """from_columns with each argument an int64 array: rows (n, 7), single (m, 3), and the
        multi-entry rows as their indices (k,) with their counts and params (k, routines)."""
        n, width = len(rows), len(routines)
        tasklet, slots, instructions, accesses, action, arg0, arg1 = rows.T.copy()
        counts = np.zeros((n, width), dtype=np.int64)
        params = np.zeros((n, width), dtype=np.int64)
        if len(single):
            index, routine, param = single.T
            counts[index, routine] = 1
            params[index, routine] = param
        counts[multi_index] = multi_counts
        params[multi_index] = multi_params
        return cls(routines, tasklet.astype(np.int16), slots, instructions, counts, params, accesses,
                   action.astype(np.int8), arg0, arg1)

    def __len__(self) -> int:
        return len(self.tasklet)

    def segments_of(self, tasklet: int) -> list[Segment]:
        """The segments of one tasklet, in program order."""
        rows = np.flatnonzero(self.tasklet == tasklet)
        return [
            Segment(tasklet, int(self.slots[i]), int(self.instructions[i]), self.routine_counts[i],
                    self.routine_params[i], int(self.mram_accesses[i]), Action(int(self.action[i])),
                    int(self.arg0[i]), int(self.arg1[i]))
            for i in rows
        ]

    @property
    def instructions_total(self) -> int:
        """Raw rv32i instructions executed by the proxy (not DPU issue slots)."""
        return int(self.instructions.sum())
