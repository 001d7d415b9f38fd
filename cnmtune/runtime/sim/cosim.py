"""One DPU launch co-simulated in a single jitted call: the interpreter and the timing model together.

timing.DpuTimeline defines the timing model and dpu._Functional the functional side of a
segment; run together from Python they cost about 40 us per segment, which bounds event-heavy
kernels (many short segments between DMAs and synchronisations) to under 1 M instructions per
second. `cosimulate` is the same two loops in one compiled function: each step of DpuTimeline.run,
_act, _dma, _delay, _leave and _resume, and of _Functional.step and _service, is performed here in
the same order with the same floating-point operations, so cycles, per-tasklet accounts and the
trace are identical to theirs (tests/runtime/sim/test_cosim.py compares them segment by segment).

Two differences of form, none of result:
- Resumes that an action causes (the barrier's waiters, the notifier and its waiter, ...) are
  queued and run right after the action, in the order DpuTimeline runs them. Between them the
  action only touches other tasklets' accounts, so nothing they read differs.
- Sums of routine costs and of the tasklets' slots are taken in index order, where numpy may pair
  terms differently. They are exact, and so equal, when every routine cost is an integer, which
  the launch requires (`exact_costs`); other cost tables run on the Python path.

A print service (printf, puts, putchar) keeps a copy of WRAM, from which dpu.py formats the text
after the call; past PRINT_LIMIT prints in one launch the call stops with status PRINTS and
dpu.py runs the launch again on the Python path.
Errors stop the launch and are reported by status and `info` (see the constants); dpu.py words them.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from cnmtune.dpu.abi import Service
from cnmtune.dpu.memory_map import MAX_TASKLETS, MRAM_BASE, MRAM_SIZE, WRAM_SIZE
from cnmtune.runtime.sim.config import DpuConfig
from cnmtune.runtime.sim.interpreter import SEGMENT_OUT_SIZE, EventKind, dma_offset, grown_mram, run_segment
from cnmtune.runtime.sim.timing import COUNT_CYCLES, COUNT_INSTRUCTIONS, EALREADY, PERF_GRANULARITY, SPIN_SLOTS
from cnmtune.runtime.sim.trace import Action

# statuses (info[] holds tasklet, pc, then what the message needs)
OK, FAULT, BUDGET, EBREAK, UNKNOWN_SERVICE, FAULT_SERVICE, SYNC_OBJECT, DMA_ERROR, DEADLOCK, PRINTS, \
    TABLE_FULL = range(11)
PRINT_LIMIT = 64  # WRAM copies kept for prints in one launch (64 KiB each)
INFO_SIZE = 8
# timing[] fields (floats): see timing_parameters
T_PERIOD, T_READ_ALPHA, T_WRITE_ALPHA, T_BETA, T_OVERHEAD, T_PORT, T_DIRECT_BYTES = range(7)

# plain ints for the jitted code (numba freezes module globals as constants)
_T = MAX_TASKLETS
_IDLE, _RUN, _DMA, _SYNC, _DONE, _READY = range(6)  # tasklet states, as DpuTimeline's
_MRAM, _ACT, _NEXT = range(3)  # what a ready tasklet does next, as DpuTimeline's
(_A_DMA_READ, _A_DMA_WRITE, _A_BARRIER, _A_ACQUIRE, _A_RELEASE, _A_SEM_TAKE, _A_SEM_GIVE, _A_NOTIFY, _A_WAIT_FOR,
 _A_BOOT, _A_PERF_CONFIG, _A_PERF_GET, _A_STOP, _A_LOCK) = (int(a) for a in (
    Action.DMA_READ, Action.DMA_WRITE, Action.BARRIER, Action.ACQUIRE, Action.RELEASE, Action.SEM_TAKE,
    Action.SEM_GIVE, Action.NOTIFY, Action.WAIT_FOR, Action.BOOT, Action.PERF_CONFIG, Action.PERF_GET, Action.STOP,
    Action.LOCK))
_S_STOP, _S_ME, _S_FAULT, _S_MRAM_READ, _S_MRAM_WRITE, _S_PRINTF, _S_PUTS, _S_PUTCHAR = (int(s) for s in (
    Service.STOP, Service.ME, Service.FAULT, Service.MRAM_READ, Service.MRAM_WRITE, Service.PRINTF, Service.PUTS,
    Service.PUTCHAR))
_S_LAST = int(max(Service))
_ECALL, _BUDGET, _GROW, _EBREAK = (int(k) for k in (EventKind.ECALL, EventKind.BUDGET, EventKind.MRAM_GROW,
                                                     EventKind.EBREAK))
TABLE_SIZE = 256  # distinct barriers, semaphores or pending handshake waits in one launch (TABLE_FULL beyond)
_KEYS = TABLE_SIZE
_M32 = 0xFFFFFFFF


def timing_parameters(config: DpuConfig) -> np.ndarray:
    """The DpuConfig values cosimulate reads, at T_*."""
    values = np.zeros(7)
    values[T_PERIOD], values[T_READ_ALPHA], values[T_WRITE_ALPHA] = (config.revolver_period, config.dma_read_alpha,
                                                                     config.dma_write_alpha)
    values[T_BETA], values[T_OVERHEAD] = config.dma_beta, config.dma_engine_overhead
    values[T_PORT] = 1.0 - config.wram_dma_share  # DpuTimeline's port_capacity, the same expression
    values[T_DIRECT_BYTES] = config.mram_direct_access_bytes
    return values


def exact_costs(base: np.ndarray, per: np.ndarray) -> bool:
    """Whether every routine cost is a (finite) integer: then cosimulate's sums equal numpy's."""
    costs = np.concatenate([base, per])
    return bool(np.isfinite(costs).all() and (costs == np.round(costs)).all() and (np.abs(costs) < 2 ** 31).all())


@njit(cache=True, nogil=True)
def _before(keys, seqs, a, b):
    return keys[a] < keys[b] or (keys[a] == keys[b] and seqs[a] < seqs[b])


@njit(cache=True, nogil=True)
def _swap(keys, seqs, ts, a, b):
    keys[a], keys[b] = keys[b], keys[a]
    seqs[a], seqs[b] = seqs[b], seqs[a]
    ts[a], ts[b] = ts[b], ts[a]


@njit(cache=True, nogil=True)
def _push(keys, seqs, ts, n, key, seq, t):
    """Push (key, seq, t) on the binary heap of n entries; heapq's order on (key, seq, t) tuples."""
    i = n
    keys[i], seqs[i], ts[i] = key, seq, t
    while i > 0:
        parent = (i - 1) >> 1
        if not _before(keys, seqs, i, parent):
            break
        _swap(keys, seqs, ts, i, parent)
        i = parent
    return n + 1


@njit(cache=True, nogil=True)
def _pop(keys, seqs, ts, n):
    """Remove the least entry of the heap of n entries; return its tasklet."""
    t = ts[0]
    n -= 1
    keys[0], seqs[0], ts[0] = keys[n], seqs[n], ts[n]
    i = 0
    while True:
        least, left = i, 2 * i + 1
        if left < n and _before(keys, seqs, left, least):
            least = left
        if left + 1 < n and _before(keys, seqs, left + 1, least):
            least = left + 1
        if least == i:
            return t
        _swap(keys, seqs, ts, i, least)
        i = least


@njit(cache=True, nogil=True)
def _find(keys, used, key):
    """Index of `key` in a small table (linear search), -1 if absent."""
    for i in range(keys.shape[0]):
        if used[i] and keys[i] == key:
            return i
    return -1


@njit(cache=True, nogil=True)
def _slot_of(keys, used, key):
    """Index of `key` in a small table, taking a free slot for it if absent; -1 if the table is full."""
    i = _find(keys, used, key)
    if i < 0:
        for i in range(keys.shape[0]):
            if not used[i]:
                used[i], keys[i] = True, key
                return i
        return -1
    return i


@njit(cache=True, nogil=True)
def _enqueue(queue, n, t, has_value, value):
    """Queue tasklet t's resume (with `value` in a0 if has_value) behind the n queued; return n + 1."""
    queue[n, 0], queue[n, 1], queue[n, 2] = t, has_value, value
    return n + 1


@njit(cache=True, nogil=True)
def _block(state, since, t, now):
    """Tasklet t waits on synchronisation from `now` (DpuTimeline._block)."""
    state[t] = _SYNC
    since[t] = now


@njit(cache=True, nogil=True)
def _unblock(sync_wait, since, t, now):
    """A blocked tasklet's wait ends `now` (DpuTimeline._leave of a tasklet in _SYNC)."""
    sync_wait[t] += now - since[t]
    since[t] = now


@njit(cache=True, nogil=True)
def _transfer(state, since, wake_keys, wake_seqs, wake_ts, wake_n, dma, t, now, engine_free, seq, nbytes, alpha,
              beta, overhead, direction):
    """Tasklet t's DMA of nbytes on the one engine (DpuTimeline._dma): it starts when the engine is
    free, occupies it beta * nbytes + overhead and wakes t alpha + beta * nbytes after its start.
    Returns the new (engine_free, seq, wake_n); direction 0 counts read bytes, 1 written."""
    start = now if now >= engine_free else engine_free
    state[t] = _DMA
    since[t] = now
    seq += 1
    wake_n = _push(wake_keys, wake_seqs, wake_ts, wake_n, start + alpha + beta * nbytes, seq, t)
    dma[direction] += nbytes
    dma[2] += 1
    return start + beta * nbytes + overhead, seq, wake_n


@njit(cache=True, nogil=True)
def _take_first(queues, counts, i):
    """Pop the first tasklet of FIFO i."""
    first = queues[i, 0]
    counts[i] -= 1
    for k in range(counts[i]):
        queues[i, k] = queues[i, k + 1]
    return first


@njit(cache=True, nogil=True)
def _grow_rows(rows, n):
    if n < rows.shape[0]:
        return rows
    bigger = np.empty((max(2 * rows.shape[0], 1),) + rows.shape[1:], rows.dtype)
    bigger[:n] = rows
    return bigger


@njit(cache=True, nogil=True)
def cosimulate(code, text_address, kinds, natives, regs, pcs, wram, mram, stack_deepest, acc, in_routine,
               mram_accesses, budget, base, per, timing, action_of):
    """Run one launch from tasklet 0's boot until every tasklet stopped (see the module docstring).

    The state arrays are dpu.DpuState's, prepared as _Functional prepares them; base/per are the
    routine costs (integer-valued), timing the DpuConfig values at T_*, action_of the trace Action
    of each service number (0 where the service has none). Returns (status, info, mram, now,
    issue, dma_wait, sync_wait, slots, instructions, dma (read bytes, write bytes, transfers),
    actions (each tasklet's last action), rows, single, multi_index, multi_counts, multi_params
    (the trace columns as Trace.from_arrays takes them), prints (service, a0, a1), printed (their WRAM)).
    """
    period, read_alpha, write_alpha = timing[T_PERIOD], timing[T_READ_ALPHA], timing[T_WRITE_ALPHA]
    beta, overhead, port_capacity = timing[T_BETA], timing[T_OVERHEAD], timing[T_PORT]
    direct_bytes = np.int64(timing[T_DIRECT_BYTES])
    n_routines = base.shape[0]
    out = np.zeros(SEGMENT_OUT_SIZE, np.int64)
    info = np.zeros(INFO_SIZE, np.int64)
    # tasklets (DpuTimeline's lists)
    state = np.zeros(_T, np.int64)
    since = np.zeros(_T)
    pending = np.full(_T, _ACT, np.int64)
    resume_value = np.zeros(_T, np.int64)
    has_value = np.zeros(_T, np.bool_)
    actions = np.zeros(_T, np.int64)
    arg0s = np.zeros(_T, np.int64)
    arg1s = np.zeros(_T, np.int64)
    accesses_of = np.zeros(_T, np.int64)
    issue = np.zeros(_T)
    dma_wait = np.zeros(_T)
    sync_wait = np.zeros(_T)
    slots_of = np.zeros(_T)
    instructions_of = np.zeros(_T, np.int64)
    dma = np.zeros(3, np.int64)
    now = virtual = engine_free = perf_base = perf_slots_base = 0.0
    perf_mode = COUNT_CYCLES
    running = seq = executed = 0
    ready = np.zeros(_T, np.int64)
    ready_head = ready_count = 0
    run_keys, run_seqs, run_ts = np.zeros(_T), np.zeros(_T, np.int64), np.zeros(_T, np.int64)
    wake_keys, wake_seqs, wake_ts = np.zeros(_T), np.zeros(_T, np.int64), np.zeros(_T, np.int64)
    run_n = wake_n = 0
    # synchronisation
    bits = np.zeros(256, np.bool_)
    lock_waiters, lock_count = np.zeros((256, _T), np.int64), np.zeros(256, np.int64)
    barrier_keys, barrier_used = np.zeros(_KEYS, np.int64), np.zeros(_KEYS, np.bool_)
    arrived, arrived_count = np.zeros((_KEYS, _T), np.int64), np.zeros(_KEYS, np.int64)
    sem_keys, sem_used, sem_value = np.zeros(_KEYS, np.int64), np.zeros(_KEYS, np.bool_), np.zeros(_KEYS, np.int64)
    sem_started = np.zeros(_KEYS, np.bool_)
    sem_waiters, sem_count = np.zeros((_KEYS, _T), np.int64), np.zeros(_KEYS, np.int64)
    wait_keys, wait_used, wait_value = np.zeros(_KEYS, np.int64), np.zeros(_KEYS, np.bool_), np.zeros(_KEYS, np.int64)
    notifying = np.zeros(_T, np.bool_)
    # resumes an action causes: (tasklet, has value, value)
    queue = np.zeros((2 * _T + 2, 3), np.int64)
    # the trace
    rows = np.empty((1024, 7), np.int64)
    single = np.empty((1024, 3), np.int64)
    multi_index = np.empty((16, 1), np.int64)
    multi_counts = np.empty((16, n_routines), np.int64)
    multi_params = np.empty((16, n_routines), np.int64)
    n_rows = n_single = n_multi = 0
    # the prints: (service, a0, a1) and the WRAM they read
    prints = np.empty((0, 3), np.int64)
    printed = np.empty((0, WRAM_SIZE), np.uint8)
    n_prints = 0

    n_queue = _enqueue(queue, 0, 0, 0, 0)  # boot tasklet 0
    status = OK
    while True:
        # ---- the resumes queued so far: _Functional.step, then DpuTimeline._resume's bookkeeping
        for q in range(n_queue):
            t = queue[q, 0]
            if queue[q, 1]:
                value = queue[q, 2]
                regs[t, 10] = value & _M32
                if actions[t] == _A_PERF_GET or actions[t] == _A_PERF_CONFIG:  # 64-bit results only
                    regs[t, 11] = (value >> 32) & _M32
            slots = instructions = entries = rid = param = 0
            moved = False  # a DMA left to do here (to grow mram, or to report its error)
            action = arg0 = arg1 = 0
            while True:
                run_segment(code, text_address, kinds, natives, t, regs, pcs, wram, mram, stack_deepest, acc,
                            in_routine, mram_accesses, budget - executed, out)
                kind, pc, a0, a1, a2, a7, done = out[0], out[1], out[9], out[10], out[11], out[12], out[19]
                slots += out[14]
                instructions += out[15]
                executed += out[15]
                if out[16]:
                    entries += out[16]
                    rid, param = out[17], out[18]
                if done:
                    action, arg0 = (_A_DMA_READ if done == 1 else _A_DMA_WRITE), a2
                    break
                if kind == _ECALL:
                    if a7 == _S_MRAM_READ or a7 == _S_MRAM_WRITE:
                        pcs[t] = (pc + 4) & _M32
                        action, arg0 = (_A_DMA_READ if a7 == _S_MRAM_READ else _A_DMA_WRITE), a2
                        moved = True
                        break
                    info[0], info[1], info[2], info[3] = t, pc, a7, a0
                    if a7 > _S_LAST:
                        status = UNKNOWN_SERVICE
                        break
                    pcs[t] = (pc + 4) & _M32
                    if a7 == _S_ME:
                        regs[t, 10] = t
                        continue
                    if a7 == _S_PRINTF or a7 == _S_PUTS or a7 == _S_PUTCHAR:
                        if n_prints == PRINT_LIMIT:
                            status = PRINTS
                            break
                        printed = _grow_rows(printed, n_prints)
                        printed[n_prints] = wram
                        prints = _grow_rows(prints, n_prints)
                        prints[n_prints, 0], prints[n_prints, 1], prints[n_prints, 2] = a7, a0, a1
                        n_prints += 1
                        continue
                    if a7 == _S_FAULT:
                        status = FAULT_SERVICE
                        break
                    if a7 == _S_STOP:
                        pcs[t] = pc
                        action = _A_STOP
                        break
                    action = action_of[a7]
                    if action == _A_BARRIER or action == _A_SEM_TAKE or action == _A_SEM_GIVE:
                        if not 0 <= a0 < WRAM_SIZE - 3:
                            status = SYNC_OBJECT
                            break
                        initial = np.int64(wram[a0 + 2])
                        arg0, arg1 = a0, (initial - 256 if action != _A_BARRIER and initial > 127 else initial)
                    elif action == _A_ACQUIRE or action == _A_RELEASE or action == _A_LOCK:
                        arg0 = a0 & 0xFF
                    else:
                        arg0, arg1 = a0, a1
                    break
                if kind == _GROW:
                    mram = grown_mram(mram, out[5] - MRAM_BASE + 8)
                    continue
                info[0], info[1], info[2], info[3] = t, pc, out[4], out[5]
                status = BUDGET if kind == _BUDGET else EBREAK if kind == _EBREAK else FAULT
                break
            if status != OK:
                break
            # price the segment's routine entries (routine_acc[t] is all zero again afterwards)
            if not entries:
                priced = np.float64(slots)
            elif entries == 1:
                acc[t, rid, 0] = 0
                acc[t, rid, 1] = 0
                single = _grow_rows(single, n_single)
                single[n_single, 0], single[n_single, 1], single[n_single, 2] = n_rows, rid, param
                n_single += 1
                priced = slots + (base[rid] + param * per[rid])
            else:
                multi_index = _grow_rows(multi_index, n_multi)
                multi_counts = _grow_rows(multi_counts, n_multi)
                multi_params = _grow_rows(multi_params, n_multi)
                multi_index[n_multi, 0] = n_rows
                by_count = by_param = 0.0
                for k in range(n_routines):
                    multi_counts[n_multi, k] = acc[t, k, 0]
                    multi_params[n_multi, k] = acc[t, k, 1]
                    by_count += acc[t, k, 0] * base[k]
                    by_param += acc[t, k, 1] * per[k]
                    acc[t, k, 0] = 0
                    acc[t, k, 1] = 0
                n_multi += 1
                priced = slots + (by_count + by_param)
            accesses = out[13]
            if accesses:
                mram_accesses[t] = 0
            if moved:  # _Functional._dma
                read = action == _A_DMA_READ
                mram_addr = a0 if read else a1
                offset = dma_offset(mram_addr)
                wram_addr = (a1 if read else a0) & ~7
                if not 0 <= wram_addr <= WRAM_SIZE - a2 or offset > MRAM_SIZE - a2:  # a2: dma_bytes
                    info[0], info[1], info[2], info[3], info[4], info[5] = t, pc, read, mram_addr, wram_addr, a2
                    status = DMA_ERROR
                    break
                end = offset + a2
                if end > mram.shape[0]:
                    mram = grown_mram(mram, end)
                if read:
                    wram[wram_addr:wram_addr + a2] = mram[offset:end]
                else:
                    mram[offset:end] = wram[wram_addr:wram_addr + a2]
            rows = _grow_rows(rows, n_rows)
            rows[n_rows, 0], rows[n_rows, 1], rows[n_rows, 2], rows[n_rows, 3] = t, slots, instructions, accesses
            rows[n_rows, 4], rows[n_rows, 5], rows[n_rows, 6] = action, arg0, arg1
            n_rows += 1
            actions[t], arg0s[t], arg1s[t], accesses_of[t] = action, arg0, arg1, accesses
            slots_of[t] += priced
            instructions_of[t] += instructions
            pending[t] = _MRAM if accesses else _ACT
            if priced <= 1e-9:
                state[t] = _READY
                ready[(ready_head + ready_count) % _T] = t
                ready_count += 1
            else:
                state[t] = _RUN
                since[t] = now
                running += 1
                seq += 1
                run_n = _push(run_keys, run_seqs, run_ts, run_n, virtual + priced, seq, t)
        if status != OK:
            break
        n_queue = 0
        # ---- DpuTimeline.run's _drain_ready: one ready tasklet at a time, its resumes right after it
        if ready_count:
            t = ready[ready_head]
            ready_head = (ready_head + 1) % _T
            ready_count -= 1
            step = pending[t]
            if step == _ACT:
                action, a0, a1 = actions[t], arg0s[t], arg1s[t]
                if action == _A_DMA_READ or action == _A_DMA_WRITE:
                    read = action == _A_DMA_READ
                    engine_free, seq, wake_n = _transfer(state, since, wake_keys, wake_seqs, wake_ts, wake_n, dma, t,
                                                         now, engine_free, seq, a0, read_alpha if read else write_alpha,
                                                         beta, overhead, 0 if read else 1)
                    pending[t] = _NEXT
                elif action == _A_BARRIER:
                    b = _slot_of(barrier_keys, barrier_used, a0)
                    if b < 0:
                        status, info[0] = TABLE_FULL, t
                        break
                    arrived[b, arrived_count[b]] = t
                    arrived_count[b] += 1
                    if arrived_count[b] >= max(a1, 1):
                        barrier_used[b] = False
                        for k in range(arrived_count[b] - 1):  # _wake each waiter: _leave now, resume queued
                            _unblock(sync_wait, since, arrived[b, k], now)
                            n_queue = _enqueue(queue, n_queue, arrived[b, k], 0, 0)
                        arrived_count[b] = 0
                        n_queue = _enqueue(queue, n_queue, t, 0, 0)
                    else:
                        _block(state, since, t, now)
                elif action == _A_ACQUIRE or action == _A_LOCK:
                    if not bits[a0]:
                        bits[a0] = True
                        n_queue = _enqueue(queue, n_queue, t, 1, 0)
                    elif action == _A_ACQUIRE:  # _delay: re-try at the next issue slot at the earliest
                        _block(state, since, t, now)
                        seq += 1
                        wake_n = _push(wake_keys, wake_seqs, wake_ts, wake_n, now + SPIN_SLOTS * period, seq, t)
                        pending[t] = _NEXT
                        has_value[t] = True
                        resume_value[t] = 1
                    else:
                        lock_waiters[a0, lock_count[a0]] = t
                        lock_count[a0] += 1
                        _block(state, since, t, now)
                elif action == _A_RELEASE:
                    if lock_count[a0]:  # hand the bit straight to the first spinner
                        waiter = _take_first(lock_waiters, lock_count, a0)
                        _unblock(sync_wait, since, waiter, now)
                        n_queue = _enqueue(queue, n_queue, waiter, 1, 0)
                    else:
                        bits[a0] = False
                    n_queue = _enqueue(queue, n_queue, t, 0, 0)
                elif action == _A_SEM_TAKE or action == _A_SEM_GIVE:
                    s = _slot_of(sem_keys, sem_used, a0)
                    if s < 0:
                        status, info[0] = TABLE_FULL, t
                        break
                    if not sem_started[s]:  # a semaphore starts at its initial count
                        sem_started[s] = True
                        sem_value[s] = a1
                    if action == _A_SEM_TAKE:
                        sem_value[s] -= 1
                        if sem_value[s] < 0:
                            sem_waiters[s, sem_count[s]] = t
                            sem_count[s] += 1
                            _block(state, since, t, now)
                        else:
                            n_queue = _enqueue(queue, n_queue, t, 0, 0)
                    else:
                        sem_value[s] += 1
                        if sem_count[s]:
                            waiter = _take_first(sem_waiters, sem_count, s)
                            _unblock(sync_wait, since, waiter, now)
                            n_queue = _enqueue(queue, n_queue, waiter, 0, 0)
                        n_queue = _enqueue(queue, n_queue, t, 0, 0)
                elif action == _A_NOTIFY:
                    w = _find(wait_keys, wait_used, t)
                    if w < 0:
                        notifying[t] = True
                        _block(state, since, t, now)
                    else:  # the notifier's next segment first (see DpuTimeline._act)
                        wait_used[w] = False
                        n_queue = _enqueue(queue, n_queue, t, 0, 0)
                        _unblock(sync_wait, since, wait_value[w], now)
                        n_queue = _enqueue(queue, n_queue, wait_value[w], 1, 0)
                elif action == _A_WAIT_FOR:
                    if _find(wait_keys, wait_used, a0) >= 0:
                        n_queue = _enqueue(queue, n_queue, t, 1, EALREADY)
                    elif 0 <= a0 < _T and notifying[a0]:
                        notifying[a0] = False
                        _unblock(sync_wait, since, a0, now)
                        n_queue = _enqueue(queue, n_queue, a0, 0, 0)
                        n_queue = _enqueue(queue, n_queue, t, 1, 0)
                    else:
                        w = _slot_of(wait_keys, wait_used, a0)
                        if w < 0:
                            status, info[0] = TABLE_FULL, t
                            break
                        wait_value[w] = t
                        _block(state, since, t, now)
                elif action == _A_BOOT:
                    if 0 <= a0 < _T and state[a0] == _IDLE:
                        n_queue = _enqueue(queue, n_queue, a0, 0, 0)
                    n_queue = _enqueue(queue, n_queue, t, 0, 0)
                elif action == _A_PERF_CONFIG or action == _A_PERF_GET:
                    if perf_mode == COUNT_INSTRUCTIONS:
                        counted = slots_of.sum() - perf_slots_base
                    else:
                        counted = now - perf_base
                    previous = np.int64(counted) // PERF_GRANULARITY * PERF_GRANULARITY
                    if action == _A_PERF_CONFIG:
                        if a0 == COUNT_CYCLES or a0 == COUNT_INSTRUCTIONS:
                            perf_mode = a0
                        if a1:
                            perf_base = now
                            perf_slots_base = slots_of.sum()
                    n_queue = _enqueue(queue, n_queue, t, 1, previous)
                else:  # _A_STOP
                    state[t] = _DONE
                    since[t] = now
            elif step == _NEXT:
                n_queue = _enqueue(queue, n_queue, t, has_value[t], resume_value[t])
                has_value[t] = False
            else:  # _MRAM: the segment's direct MRAM accesses, as one DMA after its issue slots
                pending[t] = _ACT
                engine_free, seq, wake_n = _transfer(state, since, wake_keys, wake_seqs, wake_ts, wake_n, dma, t, now,
                                                     engine_free, seq, accesses_of[t] * direct_bytes,
                                                     read_alpha * accesses_of[t], beta, overhead, 0)
            continue
        # ---- advance model time to the next segment end, DMA completion or timed wake-up
        if run_n == 0 and wake_n == 0:
            info[:] = 0
            for t in range(_T):
                if state[t] == _SYNC:
                    info[0] |= 1 << t  # the blocked tasklets
            if info[0]:
                status = DEADLOCK
            break
        sharing = engine_free > now
        demand = running / port_capacity if sharing else np.float64(running)
        rate = 1.0 / (demand if demand > period else period)
        t_run = now + (run_keys[0] - virtual) / rate if run_n else np.inf
        t_dma = wake_keys[0] if wake_n else np.inf
        t_next = t_dma if t_dma < t_run else t_run
        if sharing and engine_free < t_next:
            t_next = engine_free
        if now > t_next:
            t_next = now
        virtual += (t_next - now) * rate
        now = t_next
        limit = virtual + 1e-9
        while run_n and run_keys[0] <= limit:
            t = _pop(run_keys, run_seqs, run_ts, run_n)
            run_n -= 1
            running -= 1
            issue[t] += now - since[t]
            since[t] = now
            state[t] = _READY
            ready[(ready_head + ready_count) % _T] = t
            ready_count += 1
        limit = now + 1e-9
        while wake_n and wake_keys[0] <= limit:
            t = _pop(wake_keys, wake_seqs, wake_ts, wake_n)
            wake_n -= 1
            if state[t] == _DMA:
                dma_wait[t] += now - since[t]
            else:
                sync_wait[t] += now - since[t]
            since[t] = now
            state[t] = _READY
            ready[(ready_head + ready_count) % _T] = t
            ready_count += 1
    return (status, info, mram, now, issue, dma_wait, sync_wait, slots_of, instructions_of, dma, actions,
            rows[:n_rows], single[:n_single], multi_index[:n_multi, 0], multi_counts[:n_multi], multi_params[:n_multi],
            prints[:n_prints], printed[:n_prints])
