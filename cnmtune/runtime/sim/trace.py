"""Execution traces: per tasklet, the sequence of segments the timing model replays.

A segment is what a tasklet does between two timing-relevant events: some native issue
slots, some calls of table-charged routines (counted with their dynamic parameter), direct
MRAM accesses, and then one action (a DMA, a synchronisation, a boot, a counter read, stop).
Nothing in a trace depends on DpuConfig, so one functional run can be re-timed under any
configuration.
"""

from __future__ import annotations

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

    The routine arrays are empty when the segment called no table-charged routine.
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
        width = len(routines)

        def column(attr: str, dtype) -> np.ndarray:
            return np.fromiter((getattr(s, attr) for s in segments), dtype=dtype, count=len(segments))

        def matrix(attr: str) -> np.ndarray:
            out = np.zeros((len(segments), width), dtype=np.int64)
            for i, s in enumerate(segments):
                values = getattr(s, attr)
                if len(values):
                    out[i] = values
            return out

        return cls(routines, column("tasklet", np.int16), column("slots", np.int64),
                   column("instructions", np.int64), matrix("routine_counts"), matrix("routine_params"),
                   column("mram_accesses", np.int64), column("action", np.int8),
                   column("arg0", np.int64), column("arg1", np.int64))

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
