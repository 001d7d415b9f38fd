"""The timing model of one DPU: replays tasklet segments through the revolver pipeline and DMA engine.

Issue: a tasklet issues at most one instruction every `revolver_period` cycles and the DPU at
most one per cycle, so n runnable tasklets each advance at 1 / max(period, n) slots per cycle
(processor sharing; exact for the steady state of the revolver scheduler). DMA: the issuing
tasklet blocks; one engine per DPU serves requests in order, each occupying it for
beta * bytes (+ a fixed overhead) and completing alpha + beta * bytes after it starts. While the
engine transfers, its WRAM accesses take `wram_dma_share` of the pipeline's slots (the two share
the WRAM port), so the DPU issues at most 1 - share per cycle: n tasklets then advance at
1 / max(period, n / (1 - share)); below saturation the revolver, not the port, bounds them.
Synchronisation (barrier, semaphore, handshake, atomic bits) follows the UPMEM runtime's
semantics in model time. A tasklet spinning on a taken lock waits for its release without
issuing (a DPU spinner would issue an acquire every revolver period: the model is slightly
optimistic for the other tasklets' issue rate under heavy lock contention). The same engine drives live co-simulation (segments produced by the
functional layer on demand, counter values and lock results fed back) and pure replay of a
recorded Trace under another DpuConfig.
"""

from __future__ import annotations

import heapq
import math
from collections import deque
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from cnmtune.dpu.memory_map import MAX_TASKLETS
from cnmtune.errors import Deadlock
from cnmtune.runtime.sim.config import DpuConfig
from cnmtune.runtime.sim.trace import Action, Segment, Trace

EALREADY = 114  # errno.h / cnm_ecall.h CNM_ERR_EALREADY
SPIN_SLOTS = 2  # issue slots of one failed lock attempt (acquire + branch)
PERF_GRANULARITY = 16  # the runtime returns the hardware counter << 4 (FACTS.md section 2)
COUNT_CYCLES, COUNT_INSTRUCTIONS = 1, 2

_IDLE, _RUN, _DMA, _SYNC, _DONE, _READY = range(6)  # tasklet states
_MRAM, _ACT, _NEXT = range(3)  # what a READY tasklet does next: MRAM accesses, its action, next segment
_DMA_READ, _DMA_WRITE = Action.DMA_READ, Action.DMA_WRITE


class SegmentSource(Protocol):
    """Where the engine gets each tasklet's next segment."""

    def step(self, tasklet: int, now: float, value: int | None) -> Segment:
        """Run `tasklet` to its next action, first putting `value` (if any) in its a0/a1."""


@dataclass(frozen=True)
class DpuTiming:
    """Result of timing one DPU for one launch (cycles at the configured frequency)."""

    cycles: int
    issue_cycles: np.ndarray
    dma_wait_cycles: np.ndarray
    sync_wait_cycles: np.ndarray
    slots: np.ndarray
    instructions: np.ndarray
    dma_read_bytes: int
    dma_write_bytes: int
    dma_transfers: int

    @property
    def ipc(self) -> float:
        """DPU issue slots per cycle (1.0 is the pipeline's peak)."""
        return float(self.slots.sum()) / self.cycles if self.cycles else 0.0


def routine_cost_vectors(config: DpuConfig, routines: tuple[str, ...]) -> tuple[np.ndarray, np.ndarray]:
    """Per-routine (base, per-parameter) issue slots under `config`."""
    base, per = np.zeros(len(routines)), np.zeros(len(routines))
    for k, name in enumerate(routines):
        cost = config.routine_cost(name)
        if cost is None:
            raise ValueError(f"DpuConfig has no cost for routine {name!r}, which this trace charges by table")
        base[k], per[k] = cost.base, cost.per_param
    return base, per


def priced_slots(trace: Trace, config: DpuConfig) -> float:
    """Issue slots a trace spends in table-charged runtime routines (soft arithmetic, services)."""
    base, per = routine_cost_vectors(config, trace.routines)
    return float((trace.routine_counts @ base).sum() + (trace.routine_params @ per).sum())


def launch_timing(config: DpuConfig, now: float, issue, dma_wait, sync_wait, slots, instructions,
                  dma_read_bytes: int, dma_write_bytes: int, dma_transfers: int) -> DpuTiming:
    """The DpuTiming of a launch whose last tasklet stopped at model time `now`, from its accounts."""
    cycles = math.ceil(now + config.pipeline_depth) if now else 0
    return DpuTiming(cycles, np.array(issue, dtype=np.float64), np.array(dma_wait, dtype=np.float64),
                     np.array(sync_wait, dtype=np.float64), np.array(slots, dtype=np.float64),
                     np.array(instructions, dtype=np.int64), dma_read_bytes, dma_write_bytes, dma_transfers)


def deadlock_message(dpu: int, now: float, waits: list[tuple[int, Action | None]]) -> str:
    """The Deadlock text: each blocked tasklet with the action it is blocked in."""
    what = ", ".join(f"tasklet {t} in {action.name.lower() if action is not None else '?'}" for t, action in waits)
    return f"DPU {dpu}: deadlock at cycle {now:.0f}: every live tasklet is blocked ({what})"


class DpuTimeline:
    """Discrete-event timing of one DPU's tasklets (see the module docstring)."""

    def __init__(self, config: DpuConfig, routines: tuple[str, ...], source: SegmentSource, dpu: int = 0):
        self.config = config
        self.source = source
        self.dpu = dpu
        self._cost_base, self._cost_per = routine_cost_vectors(config, routines)
        n = MAX_TASKLETS
        self.state = [_IDLE] * n
        self.since = [0.0] * n
        self.current: list[Segment | None] = [None] * n
        self.pending = [_ACT] * n
        self.resume_value: list[int | None] = [None] * n
        # per-tasklet accounts as Python lists while running (numpy arrays in the DpuTiming)
        self.issue = [0.0] * n
        self.dma_wait = [0.0] * n
        self.sync_wait = [0.0] * n
        self.slots = [0.0] * n
        self.instructions = [0] * n
        self.now = 0.0
        self.engine_free = 0.0
        self.dma_bytes = [0, 0]
        self.dma_transfers = 0
        self.bits: set[int] = set()
        self.lock_waiters: dict[int, list[int]] = {}
        self.barriers: dict[int, list[int]] = {}
        self.semaphores: dict[int, int] = {}
        self.sem_waiters: dict[int, list[int]] = {}
        self.notifying: set[int] = set()
        self.waiting_for: dict[int, int] = {}
        self.perf_base = 0.0
        self.perf_mode = COUNT_CYCLES
        self.perf_slots_base = 0.0
        self._ready: deque[int] = deque()
        self.virtual = 0.0  # slots each running tasklet has issued so far (processor sharing)
        self._running = 0
        self._seq = 0
        self._run_heap: list[tuple[float, int, int]] = []  # (virtual finish, seq, tasklet)
        self._wake_heap: list[tuple[float, int, int]] = []  # (DMA completion or timed wake-up, seq, tasklet)

    # ---------------------------------------------------------------- public
    def run(self) -> DpuTiming:
        """Boot tasklet 0, run until every booted tasklet has stopped, return the timing.

        The loop inlines the per-segment work of the common cases (_dma, _resume: the hot path);
        other actions go through _act. `now` and `virtual` only change here, so
        their local copies stay valid while the methods it calls read self.now and self.virtual.
        """
        self._resume(0, None)
        cfg, period = self.config, self.config.revolver_period
        beta, overhead, read_alpha, write_alpha = cfg.dma_beta, cfg.dma_engine_overhead, cfg.dma_read_alpha, \
            cfg.dma_write_alpha
        port_capacity = 1.0 - cfg.wram_dma_share  # issue slots per cycle while the engine transfers
        run_heap, wake_heap, ready = self._run_heap, self._wake_heap, self._ready
        state, since = self.state, self.since
        pending_of, current, resume_value = self.pending, self.current, self.resume_value
        slots_of, instructions_of = self.slots, self.instructions
        heappop, heappush, popleft, inf = heapq.heappop, heapq.heappush, ready.popleft, math.inf
        step, act, segment_slots = self.source.step, self._act, self._segment_slots
        leave, to_ready = self._leave, self._to_ready
        now, virtual = self.now, self.virtual
        while True:
            while ready:  # _drain_ready
                t = popleft()
                pending, seg = pending_of[t], current[t]
                if pending == _ACT:
                    action = seg.action
                    if action == _DMA_READ or action == _DMA_WRITE:  # _act's DMA cases: _dma, inlined
                        nbytes = seg.arg0
                        engine_free = self.engine_free
                        start = engine_free if engine_free > now else now  # noqa: FURB136 (max(now, engine_free), no call)
                        self.engine_free = start + beta * nbytes + overhead
                        state[t] = _DMA
                        since[t] = now
                        self._seq = seq = self._seq + 1
                        read = action == _DMA_READ
                        heappush(wake_heap, (start + (read_alpha if read else write_alpha) + beta * nbytes, seq, t))
                        self.dma_bytes[0 if read else 1] += nbytes
                        self.dma_transfers += 1
                        pending_of[t] = _NEXT
                    else:
                        act(t, seg)
                elif pending == _NEXT:  # _resume, inlined
                    value = resume_value[t]
                    resume_value[t] = None
                    seg = step(t, now, value)
                    current[t] = seg
                    slots = seg.slots if not len(seg.routine_counts) else segment_slots(seg)
                    slots_of[t] += slots
                    instructions_of[t] += seg.instructions
                    pending_of[t] = _MRAM if seg.mram_accesses else _ACT
                    if slots <= 1e-9:
                        state[t] = _READY
                        ready.append(t)
                    else:
                        state[t] = _RUN
                        since[t] = now
                        self._running += 1
                        self._seq = seq = self._seq + 1
                        heappush(run_heap, (virtual + slots, seq, t))
                else:  # _MRAM
                    pending_of[t] = _ACT
                    self._dma(t, seg.mram_accesses * cfg.mram_direct_access_bytes, read_alpha * seg.mram_accesses, 0)
            if not run_heap and not wake_heap:
                return self._finish()
            running, engine_free = self._running, self.engine_free
            sharing = engine_free > now  # the engine transfers until engine_free, sharing the WRAM port
            demand = running / port_capacity if sharing else running
            rate = 1.0 / (demand if demand > period else period)  # noqa: FURB136 (1 / max(period, demand))
            t_run = now + (run_heap[0][0] - virtual) / rate if run_heap else inf
            t_dma = wake_heap[0][0] if wake_heap else inf
            t_next = t_dma if t_dma < t_run else t_run  # noqa: FURB136 (min(t_run, t_dma))
            if sharing and engine_free < t_next:  # the rate changes when the engine goes idle
                t_next = engine_free
            if now > t_next:  # noqa: PLR1730 (max(t_next, now))
                t_next = now
            virtual += (t_next - now) * rate
            self.virtual = virtual
            self.now = now = t_next
            # _leave + _to_ready of every tasklet whose segment or wait ends now
            limit = virtual + 1e-9
            while run_heap and run_heap[0][0] <= limit:
                t = heappop(run_heap)[2]
                self._running -= 1
                leave(t)
                to_ready(t)
            limit = now + 1e-9
            while wake_heap and wake_heap[0][0] <= limit:
                t = heappop(wake_heap)[2]
                leave(t)
                to_ready(t)

    def _finish(self) -> DpuTiming:
        """The DPU's timing once nothing runs or waits on a timer; tasklets still blocked are a deadlock."""
        blocked = [t for t in range(MAX_TASKLETS) if self.state[t] == _SYNC]
        if blocked:
            waits = [(t, self.current[t].action if self.current[t] is not None else None) for t in blocked]
            raise Deadlock(deadlock_message(self.dpu, self.now, waits))
        return launch_timing(self.config, self.now, self.issue, self.dma_wait, self.sync_wait, self.slots,
                             self.instructions, self.dma_bytes[0], self.dma_bytes[1], self.dma_transfers)

    # ---------------------------------------------------------------- internals
    def _enter(self, t: int, state: int) -> None:
        """Move tasklet t to `state` now, closing the time account of the state it leaves."""
        self.state[t] = state
        self.since[t] = self.now

    def _leave(self, t: int) -> None:
        elapsed = self.now - self.since[t]
        state = self.state[t]
        if state == _RUN:
            self.issue[t] += elapsed
        elif state == _DMA:
            self.dma_wait[t] += elapsed
        elif state == _SYNC:
            self.sync_wait[t] += elapsed
        self.since[t] = self.now

    def _to_ready(self, t: int) -> None:
        self.state[t] = _READY
        self._ready.append(t)

    def _block(self, t: int) -> None:
        self._enter(t, _SYNC)

    def _wake(self, t: int, value: int | None) -> None:
        """Resume a tasklet blocked on synchronisation."""
        self._leave(t)
        self._resume(t, value)

    def _segment_slots(self, seg: Segment) -> float:
        if not len(seg.routine_counts):  # already priced (replay) or no table-charged routines
            return seg.slots
        return seg.slots + float(seg.routine_counts @ self._cost_base + seg.routine_params @ self._cost_per)

    def _resume(self, t: int, value: int | None) -> None:
        """Get tasklet t's next segment from the source and start issuing it."""
        seg = self.source.step(t, self.now, value)
        self.current[t] = seg
        slots = seg.slots if not len(seg.routine_counts) else self._segment_slots(seg)
        self.slots[t] += slots
        self.instructions[t] += seg.instructions
        # direct loads/stores to MRAM are small DMAs, charged after the segment's issue slots
        self.pending[t] = _MRAM if seg.mram_accesses else _ACT
        if slots <= 1e-9:
            self._to_ready(t)
        else:
            self._enter(t, _RUN)
            self._running += 1
            self._seq += 1
            heapq.heappush(self._run_heap, (self.virtual + slots, self._seq, t))

    def _dma(self, t: int, nbytes: int, alpha: float, direction: int) -> None:
        cfg = self.config
        start = max(self.now, self.engine_free)
        self.engine_free = start + cfg.dma_beta * nbytes + cfg.dma_engine_overhead
        self._enter(t, _DMA)
        self._seq += 1
        heapq.heappush(self._wake_heap, (start + alpha + cfg.dma_beta * nbytes, self._seq, t))
        self.dma_bytes[direction] += nbytes
        self.dma_transfers += 1

    def _delay(self, t: int, cycles: float, value: int | None) -> None:
        """Resume tasklet t with `value` after `cycles` (accounted as synchronisation wait)."""
        self._enter(t, _SYNC)
        self._seq += 1
        heapq.heappush(self._wake_heap, (self.now + cycles, self._seq, t))
        self.pending[t] = _NEXT
        self.resume_value[t] = value

    def _act(self, t: int, seg: Segment) -> None:
        action, a0, a1 = seg.action, seg.arg0, seg.arg1
        cfg = self.config
        if action == Action.DMA_READ:
            self._dma(t, a0, cfg.dma_read_alpha, 0)
            self.pending[t] = _NEXT
        elif action == Action.DMA_WRITE:
            self._dma(t, a0, cfg.dma_write_alpha, 1)
            self.pending[t] = _NEXT
        elif action == Action.BARRIER:
            arrived = self.barriers.setdefault(a0, [])
            arrived.append(t)
            if len(arrived) >= max(a1, 1):
                del self.barriers[a0]
                for waiter in arrived[:-1]:
                    self._wake(waiter, None)
                self._resume(t, None)
            else:
                self._block(t)
        elif action == Action.ACQUIRE:
            if a0 in self.bits:
                # busy: the tasklet re-tries at its next issue slot at the earliest (a spin
                # iteration is an acquire and a branch on a DPU), so model time always advances
                self._delay(t, SPIN_SLOTS * cfg.revolver_period, 1)
            else:
                self.bits.add(a0)
                self._resume(t, 0)
        elif action == Action.LOCK:
            if a0 in self.bits:
                self.lock_waiters.setdefault(a0, []).append(t)
                self._block(t)
            else:
                self.bits.add(a0)
                self._resume(t, 0)
        elif action == Action.RELEASE:
            waiters = self.lock_waiters.get(a0)
            if waiters:  # hand the bit straight to the first spinner
                self._wake(waiters.pop(0), 0)
            else:
                self.bits.discard(a0)
            self._resume(t, None)
        elif action == Action.SEM_TAKE:
            count = self.semaphores.get(a0, a1) - 1
            self.semaphores[a0] = count
            if count < 0:
                self.sem_waiters.setdefault(a0, []).append(t)
                self._block(t)
            else:
                self._resume(t, None)
        elif action == Action.SEM_GIVE:
            self.semaphores[a0] = self.semaphores.get(a0, a1) + 1
            waiters = self.sem_waiters.get(a0)
            if waiters:
                self._wake(waiters.pop(0), None)
            self._resume(t, None)
        elif action == Action.NOTIFY:
            waiter = self.waiting_for.pop(t, None)
            if waiter is None:
                self.notifying.add(t)
                self._block(t)
            else:
                # the notifier's next segment first: it keeps issuing while the waiter is rescheduled, so
                # its memory effects come first (PrIM's UNI depends on it; no cycle count changes)
                self._resume(t, None)
                self._wake(waiter, 0)
        elif action == Action.WAIT_FOR:
            if a0 in self.waiting_for:
                self._resume(t, EALREADY)
            elif a0 in self.notifying:
                self.notifying.discard(a0)
                self._wake(a0, None)
                self._resume(t, 0)
            else:
                self.waiting_for[a0] = t
                self._block(t)
        elif action == Action.BOOT:
            if 0 <= a0 < MAX_TASKLETS and self.state[a0] == _IDLE:
                self._resume(a0, None)
            self._resume(t, None)
        elif action == Action.PERF_CONFIG:
            previous = self._perf_value()
            self.perf_mode = a0 if a0 in (COUNT_CYCLES, COUNT_INSTRUCTIONS) else self.perf_mode
            if a1:
                self.perf_base = self.now
                self.perf_slots_base = float(np.array(self.slots, dtype=np.float64).sum())
            self._resume(t, previous)
        elif action == Action.PERF_GET:
            self._resume(t, self._perf_value())
        elif action == Action.STOP:
            self._enter(t, _DONE)
        else:
            raise ValueError(f"unknown trace action {action!r}")

    def _perf_value(self) -> int:
        if self.perf_mode == COUNT_INSTRUCTIONS:
            counted = float(np.array(self.slots, dtype=np.float64).sum()) - self.perf_slots_base
        else:
            counted = self.now - self.perf_base
        return int(counted) // PERF_GRANULARITY * PERF_GRANULARITY


class TraceReplay:
    """A SegmentSource that replays a recorded Trace (re-timing without re-execution).

    Routine costs are priced for the whole trace at once (one matrix product), so each
    replayed segment carries its final slot count.
    """

    def __init__(self, trace: Trace, config: DpuConfig):
        base, per = routine_cost_vectors(config, trace.routines)
        slots = trace.slots + trace.routine_counts @ base + trace.routine_params @ per
        empty = np.zeros(0)
        self._queues: dict[int, list[Segment]] = {}
        actions = {int(a): a for a in Action}
        new = tuple.__new__
        for t, slot, instructions, accesses, action, arg0, arg1 in zip(
                trace.tasklet.tolist(), np.asarray(slots, dtype=np.float64).tolist(), trace.instructions.tolist(),
                trace.mram_accesses.tolist(), trace.action.tolist(), trace.arg0.tolist(), trace.arg1.tolist()):
            queue = self._queues.get(t)
            if queue is None:
                queue = self._queues[t] = []
            queue.append(new(Segment, (t, slot, instructions, empty, empty, accesses,
                                       actions[action] if action in actions else Action(action), arg0, arg1)))
        for queue in self._queues.values():
            queue.reverse()

    def step(self, tasklet: int, now: float, value: int | None) -> Segment:
        return self._queues[tasklet].pop()


def retime(trace: Trace, config: DpuConfig, dpu: int = 0) -> DpuTiming:
    """Time a recorded trace under `config`."""
    return DpuTimeline(config, trace.routines, TraceReplay(trace, config), dpu).run()
