"""Checked re-timing: replay a recorded Trace under another DpuConfig only where that is exact.

Re-timing replays each tasklet's recorded segments through the timing model. That gives what
co-simulation under the new config would give if and only if the functional execution would
produce the same segments. The functional layer (runtime/sim/dpu.py) sees model time only
through what the timing model feeds back when a segment ends, so the Action list splits in two:

- actions that feed nothing back and impose no timing-dependent order: DMA_READ, DMA_WRITE,
  RELEASE, SEM_GIVE, NOTIFY, BOOT, STOP, and BARRIER (a barrier releases every participant
  whatever their arrival order);
- actions whose outcome is a timing fact: PERF_CONFIG / PERF_GET (counter values: cycles or
  issue slots; with CLOCKS_PER_SEC, patched to the frequency at load, a program converts them
  to seconds), ACQUIRE (the try-lock outcome 0/1: the trace holds the recorded number of spin
  iterations), WAIT_FOR (0, or EALREADY when another tasklet waits first), and the order in
  which tasklets pass contended synchronisation: LOCK and successful ACQUIRE grants per atomic
  bit, SEM_TAKE passes per semaphore. That order decides the order of critical sections, and
  so what each reads from shared WRAM/MRAM (a work queue under a mutex hands different items
  to different tasklets; mem_alloc under its lock hands out different buffers).

The rule (checked_retime): a trace is re-timed under a config only if replaying it there feeds
every tasklet the same sequence of values, and grants every atomic bit and every semaphore to
tasklets in the same order, as replaying it under the recording config did (the Signature,
taken when the trace is stored; that replay reproduces the co-simulation exactly). The check
runs during the replay and stops at the first difference (InvalidRetime names it). Counter
reads make every config that changes the DPU's timing fail the check (their values change);
a frequency change is refused outright for a trace with counter reads, because the replay
cannot see a program dividing counter values by CLOCKS_PER_SEC.

Why equal values and grant orders suffice: a program whose tasklets communicate through shared
memory only across the runtime's synchronisation (data-race free, as PrIM's kernels are) reads
the same shared values when the synchronisation order is the same, so every segment is the
same. A program with data races could still diverge; the simulator does not detect races
(neither does UPMEM hardware make them deterministic), so that assumption is documented, not
checked. DpuConfig fields that do not enter the DPU's timing (frequency, launch overhead and
the host-transfer constants) never change cycles; only they may differ without a replay.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, fields

import numpy as np

from cnmtune.errors import Deadlock, InvalidRetime
from cnmtune.runtime.sim.config import LINK_FIELDS, DpuConfig
from cnmtune.runtime.sim.timing import DpuTimeline, DpuTiming, routine_cost_vectors
from cnmtune.runtime.sim.trace import Action, Segment, Trace

__all__ = ["HOST_FIELDS", "InvalidRetime", "PreparedTrace", "Signature", "checked_retime", "counter_actions",
           "signature_of", "timing_key"]

# DpuConfig fields the DPU timeline never reads: cycles do not depend on them
HOST_FIELDS = LINK_FIELDS | {"frequency_hz", "launch_overhead_s"}

# signature channels: (kind, id)
BIT, SEM, VALUE = 0, 1, 2
_KIND_NAMES = {BIT: "atomic bit", SEM: "semaphore", VALUE: "tasklet"}
_EMPTY = np.zeros(0)


def timing_key(config: DpuConfig) -> tuple:
    """The DpuConfig fields that enter the DPU timeline: equal keys give equal cycles."""
    return tuple((f.name, getattr(config, f.name)) for f in fields(config) if f.name not in HOST_FIELDS)


def counter_actions(trace: Trace) -> bool:
    """Whether the trace reads or configures the performance counter."""
    return bool(np.isin(trace.action, (int(Action.PERF_GET), int(Action.PERF_CONFIG))).any())


@dataclass(frozen=True)
class Signature:
    """Everything time fed back into a replay, per channel, in order: the tasklets granted each
    atomic bit (LOCK, successful ACQUIRE), the tasklets passing each semaphore (SEM_TAKE), the
    values each tasklet resumed with (ACQUIRE, WAIT_FOR, counters)."""

    channels: dict[tuple[int, int], tuple[int, ...]]

    def to_arrays(self) -> dict[str, np.ndarray]:
        """Flat (kind, id, item) rows for storage, channel by channel."""
        rows = [(kind, ident, item) for (kind, ident), items in sorted(self.channels.items()) for item in items]
        table = np.array(rows, dtype=np.int64).reshape(-1, 3)
        return {"sig_kind": table[:, 0], "sig_id": table[:, 1], "sig_item": table[:, 2]}

    @classmethod
    def from_arrays(cls, kind: np.ndarray, ident: np.ndarray, item: np.ndarray) -> Signature:
        """Inverse of to_arrays."""
        channels: dict[tuple[int, int], list[int]] = defaultdict(list)
        for k, i, v in zip(kind.tolist(), ident.tolist(), item.tolist()):
            channels[(k, i)].append(v)
        return cls({key: tuple(items) for key, items in channels.items()})


def _channel_name(channel: tuple[int, int]) -> str:
    kind, ident = channel
    return f"{_KIND_NAMES[kind]} {ident}"


class _Diverged(Exception):
    pass


class _CheckedReplay:
    """A SegmentSource over pre-priced segments that records, or checks, what time feeds back."""

    def __init__(self, queues: dict[int, list[Segment]], expected: Signature | None):
        self._queues = {t: list(queue) for t, queue in queues.items()}
        self._last: dict[int, Segment] = {}
        self._expected = expected.channels if expected is not None else None
        self.seen: dict[tuple[int, int], list[int]] = defaultdict(list)

    def _observe(self, channel: tuple[int, int], item: int) -> None:
        seen = self.seen[channel]
        if self._expected is not None:
            want = self._expected.get(channel, ())
            position = len(seen)
            if position >= len(want) or want[position] != item:
                got = "an extra event" if position >= len(want) else f"{item} instead of {want[position]}"
                what = "resumes with" if channel[0] == VALUE else "is granted to tasklet"
                raise _Diverged(f"{_channel_name(channel)} {what} {got} at its event {position}")
        seen.append(item)

    def step(self, tasklet: int, now: float, value: int | None) -> Segment:
        last = self._last.get(tasklet)
        if last is not None:
            action = last.action
            if action == Action.LOCK or (action == Action.ACQUIRE and value == 0):
                self._observe((BIT, last.arg0), tasklet)
            elif action == Action.SEM_TAKE:
                self._observe((SEM, last.arg0), tasklet)
        if value is not None:
            self._observe((VALUE, tasklet), int(value))
        queue = self._queues.get(tasklet)
        if not queue:
            raise _Diverged(f"tasklet {tasklet} runs past the end of its recorded segments")
        segment = queue.pop()
        self._last[tasklet] = segment
        return segment

    def finish(self) -> None:
        """Fail unless the replay consumed every segment and every expected event."""
        left = [t for t, queue in self._queues.items() if queue]
        if left:
            raise _Diverged(f"tasklet {left[0]} stops before the end of its recorded segments")
        if self._expected is not None:
            for channel, want in self._expected.items():
                if len(self.seen.get(channel, ())) != len(want):
                    raise _Diverged(f"{_channel_name(channel)} sees {len(self.seen.get(channel, ()))} events, "
                                    f"recorded {len(want)}")


class PreparedTrace:
    """A trace with its segments priced once per routine-cost table (the sweep never changes
    routine costs, so every design point replays the same priced queues)."""

    def __init__(self, trace: Trace):
        self.trace = trace
        self._priced: dict[tuple, dict[int, list[Segment]]] = {}

    def queues(self, config: DpuConfig) -> dict[int, list[Segment]]:
        """Per tasklet, its segments priced under `config`, last first (pop order)."""
        key = config.routine_costs
        queues = self._priced.get(key)
        if queues is None:
            trace = self.trace
            base, per = routine_cost_vectors(config, trace.routines)
            # the same expression, in the same order, as TraceReplay: bit-identical slots
            slots = trace.slots + trace.routine_counts @ base + trace.routine_params @ per
            queues = {}
            actions = {int(a): a for a in Action}
            new = tuple.__new__
            for t, slot, instructions, accesses, action, arg0, arg1 in zip(
                    trace.tasklet.tolist(), np.asarray(slots, dtype=np.float64).tolist(),
                    trace.instructions.tolist(), trace.mram_accesses.tolist(), trace.action.tolist(),
                    trace.arg0.tolist(), trace.arg1.tolist()):
                queues.setdefault(t, []).append(new(Segment, (t, slot, instructions, _EMPTY, _EMPTY, accesses,
                                                              actions[action], arg0, arg1)))
            for queue in queues.values():
                queue.reverse()
            self._priced[key] = queues
        return queues


def signature_of(trace: PreparedTrace | Trace, config: DpuConfig, dpu: int = 0) -> tuple[DpuTiming, Signature]:
    """Replay under `config` (the recording config) and return its timing and its Signature."""
    prepared = trace if isinstance(trace, PreparedTrace) else PreparedTrace(trace)
    source = _CheckedReplay(prepared.queues(config), None)
    timing = DpuTimeline(config, prepared.trace.routines, source, dpu).run()
    return timing, Signature({k: tuple(v) for k, v in source.seen.items()})


def checked_retime(trace: PreparedTrace | Trace, config: DpuConfig, expected: Signature,
                   recorded: DpuConfig, dpu: int = 0) -> DpuTiming:
    """Re-time a trace recorded under `recorded` (whose replay gave `expected`) under `config`;
    InvalidRetime if that would not be exact (see the module docstring)."""
    prepared = trace if isinstance(trace, PreparedTrace) else PreparedTrace(trace)
    if config.frequency_hz != recorded.frequency_hz and counter_actions(prepared.trace):
        raise InvalidRetime(f"DPU {dpu}: the program reads the performance counter and the frequency changes "
                            "(values in seconds through CLOCKS_PER_SEC would change)")
    source = _CheckedReplay(prepared.queues(config), expected)
    try:
        timing = DpuTimeline(config, prepared.trace.routines, source, dpu).run()
        source.finish()
    except _Diverged as exc:
        raise InvalidRetime(f"DPU {dpu}: {exc}") from None
    except Deadlock as exc:  # only reachable after a divergence the check could not see first
        raise InvalidRetime(f"DPU {dpu}: the replay deadlocks ({exc})") from None
    return timing
