"""The blocks of a PerfVec program representation, read from a recorded trace (no torch).

What a "block" is. A trace (runtime/sim/trace.py) records, per DPU and launch, each tasklet's
segments: the issue slots it executed between two timing events, its table-charged routine
calls, its direct MRAM accesses, and the action ending it (a DMA of so many bytes, a barrier, a
lock, ...). It records no program counters, so the proxy's basic blocks cannot be seen in it;
the segment is the finest unit whose time the DpuConfig decides. A segment is cut into the
parts the timing model prices separately, each a block:

- ISSUE: its issue slots (routines priced with the recording config's table, which the design
  space never varies), weighted by the slot count: PerfVec's sum over executed instructions,
  one DPU issue slot being one instruction. Features: the segment's length, and how many
  tasklets still run beside it (see below), since the revolver gives n runnable tasklets
  1 / max(period, n) slots per cycle each;
- MRAM: its direct MRAM accesses, weighted by their count (each a small DMA);
- the action (DMA_READ, DMA_WRITE, BARRIER, ...), weight 1; features: the DMA's bytes, or a
  barrier's participants;
- and one LAUNCH block per trace (the pipeline drains once at the end of a launch).

Every block also carries its trace's context: the tasklet count, slots per tasklet, DMA bytes
and transfers per slot, sync actions per tasklet. Time is not a sum of independent parts (DMA
latency hides behind other tasklets' issue until the engine saturates), and the context lets a
block's representation depend on the regime its program is in, as PerfVec's instruction
representations depend on the instructions around them.

"Tasklets beside it": a segment starting after x issue slots of its tasklet runs beside the
tasklets whose whole launch has more than x slots (an estimate that assumes the tasklets issue
at the same rate; it sees a tasklet 0 that works alone after the others stopped).

Identical blocks merge, their weights added: a loop's iterations make one block each, weighted
by the iteration count. An issue block's segment length is a feature in quarter octaves
(LENGTH_STEPS), so that segments of data-dependent length merge too and a long trace has a
bounded number of blocks; its weight, the slot count, is exact. A program's blocks are those of every launch, each launch's from the DPU
with the most recorded cycles (a launch takes as long as its slowest DPU).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np

from cnmtune.dpu.memory_map import MAX_TASKLETS
from cnmtune.runtime.sim.config import DpuConfig
from cnmtune.runtime.sim.timing import routine_cost_vectors
from cnmtune.runtime.sim.trace import Action, Trace
from cnmtune.runtime.sim.traces import TraceSet

__all__ = ["BLOCK_FEATURES", "BLOCK_SCHEMA_HASH", "ProgramBlocks", "program_blocks", "trace_blocks"]

_ACTIONS = tuple(Action)
KINDS = ("issue", "mram", "launch", *(a.name.lower() for a in _ACTIONS))
_ISSUE, _MRAM, _LAUNCH = range(3)
_CONTEXT = ("tasklets_frac", "tasklets_inv", "log_slots_per_tasklet", "log_dma_bytes_per_slot",
            "log_dma_transfers_per_kslot", "log_sync_per_tasklet")
#: Names of the feature columns of a block, in order.
BLOCK_FEATURES: tuple[str, ...] = (*(f"kind_{k}" for k in KINDS), "size", "beside_frac", "beside_inv",
                                   *(f"beside_{m}" for m in range(1, MAX_TASKLETS + 1)), *_CONTEXT)
#: Steps per octave of an issue block's segment length (its weight, the slot count, stays exact).
LENGTH_STEPS = 4
#: Identity of the block features (names, how they are computed): a model trained on others is refused.
BLOCK_SCHEMA_HASH = hashlib.sha256(f"perfvec-blocks-1;steps={LENGTH_STEPS};{','.join(BLOCK_FEATURES)}".encode()
                                   ).hexdigest()[:16]
_SIZE = len(KINDS)
_BESIDE = _SIZE + 1
_ONE_HOT = _BESIDE + 2
_SYNC = {int(a) for a in (Action.BARRIER, Action.ACQUIRE, Action.LOCK, Action.RELEASE, Action.SEM_TAKE,
                          Action.SEM_GIVE, Action.NOTIFY, Action.WAIT_FOR)}


@dataclass(frozen=True)
class ProgramBlocks:
    """A program as distinct blocks (float32 features, one row each) and their execution weights."""

    features: np.ndarray
    weights: np.ndarray
    launches: int

    def __post_init__(self) -> None:
        if self.features.shape != (len(self.weights), len(BLOCK_FEATURES)):
            raise ValueError(f"ProgramBlocks: features {self.features.shape} for {len(self.weights)} weights "
                             f"and {len(BLOCK_FEATURES)} columns")

    def __len__(self) -> int:
        return len(self.weights)

    @classmethod
    def merged(cls, parts: list[ProgramBlocks]) -> ProgramBlocks:
        """The blocks of all parts, identical rows merged (weights added), rows sorted."""
        features = np.concatenate([p.features for p in parts]) if parts else np.zeros((0, len(BLOCK_FEATURES)))
        weights = np.concatenate([p.weights for p in parts]) if parts else np.zeros(0)
        rows, inverse = np.unique(features.astype(np.float32), axis=0, return_inverse=True)
        summed = np.zeros(len(rows))
        np.add.at(summed, inverse.reshape(-1), weights)
        keep = summed > 0
        return cls(rows[keep], summed[keep], sum(p.launches for p in parts))


def _log2p(x) -> np.ndarray:
    return np.log2(1.0 + np.asarray(x, dtype=np.float64))


def _beside(trace: Trace, slots: np.ndarray) -> np.ndarray:
    """Per segment: how many tasklets run beside it (itself included), see the module docstring."""
    tasklet = trace.tasklet.astype(np.int64)
    totals = np.zeros(MAX_TASKLETS)
    np.add.at(totals, tasklet, slots)
    order = np.argsort(tasklet, kind="stable")  # program order within each tasklet
    cumulative = np.cumsum(slots[order])
    first_of_tasklet = np.searchsorted(tasklet[order], tasklet[order], side="left")
    before = np.empty(len(slots))
    before[order] = cumulative - slots[order] - np.concatenate(([0.0], cumulative))[first_of_tasklet]
    others = (totals[None, :] > before[:, None] + 1e-9).sum(axis=1) - (totals[tasklet] > before + 1e-9)
    return np.minimum(others + 1, MAX_TASKLETS)


def trace_blocks(trace: Trace, config: DpuConfig) -> ProgramBlocks:
    """The blocks of one DPU's trace of one launch, routines priced under `config`."""
    base, per = routine_cost_vectors(config, trace.routines)
    slots = (trace.slots + trace.routine_counts @ base + trace.routine_params @ per).astype(np.float64)
    action = trace.action.astype(np.int64)
    n = max(1, len(np.unique(trace.tasklet)))
    total = max(float(slots.sum()), 1.0)
    dma = np.isin(action, (int(Action.DMA_READ), int(Action.DMA_WRITE)))
    context = np.array([n / MAX_TASKLETS, 1.0 / n, _log2p(total / n) / 24,
                        _log2p(trace.arg0[dma].sum() / total) / 4,
                        _log2p(1000 * (dma.sum() + trace.mram_accesses.sum()) / total) / 8,
                        _log2p(np.isin(action, list(_SYNC)).sum() / n) / 8])
    beside = _beside(trace, slots)
    rows = len(trace)
    # per segment up to three blocks (issue, mram, action), then the launch
    kind = np.concatenate([np.full(rows, _ISSUE), np.full(rows, _MRAM),
                           np.searchsorted([int(a) for a in _ACTIONS], action) + 3, [_LAUNCH]])
    length = np.round(_log2p(slots) * LENGTH_STEPS) / LENGTH_STEPS  # quantised: see the module docstring
    size = np.concatenate([length / 24, np.zeros(rows),
                           np.where(dma, np.log2(np.maximum(trace.arg0, 1)) / 11,
                                    np.where(action == int(Action.BARRIER), trace.arg1 / MAX_TASKLETS, 0.0)), [0.0]])
    weights = np.concatenate([slots, trace.mram_accesses.astype(np.float64), np.ones(rows), [1.0]])
    with_beside = np.concatenate([beside, beside, beside, [n]])
    # merge identical blocks before building their feature rows (a trace has up to millions of segments)
    used = weights > 0
    keys, inverse = np.unique(np.stack([kind[used], size[used], with_beside[used]], axis=1), axis=0,
                              return_inverse=True)
    summed = np.zeros(len(keys))
    np.add.at(summed, inverse.reshape(-1), weights[used])
    kind, beside_of = keys[:, 0].astype(np.int64), keys[:, 2].astype(np.int64)
    features = np.zeros((len(keys), len(BLOCK_FEATURES)), dtype=np.float32)
    features[np.arange(len(keys)), kind] = 1.0
    features[:, _SIZE] = keys[:, 1]
    features[:, _BESIDE] = beside_of / MAX_TASKLETS
    features[:, _BESIDE + 1] = 1.0 / beside_of
    features[np.arange(len(keys)), _ONE_HOT + beside_of - 1] = 1.0
    features[:, _ONE_HOT + MAX_TASKLETS:] = context
    return ProgramBlocks.merged([ProgramBlocks(features, summed, 1)])


def program_blocks(trace_set: TraceSet) -> ProgramBlocks:
    """The blocks of a recorded run: every launch's, from its slowest DPU (routines priced under the
    recording config). Launches with the same trace (an iterative host's) are read once."""
    parts = []
    seen: dict[bytes, ProgramBlocks] = {}
    for launch in trace_set.launches:
        trace = launch.traces[int(np.argmax(launch.cycles))]
        key = _trace_digest(trace)
        if key not in seen:
            seen[key] = trace_blocks(trace, trace_set.config)
        parts.append(seen[key])
    return ProgramBlocks.merged(parts)


def _trace_digest(trace: Trace) -> bytes:
    digest = hashlib.sha256("\0".join(trace.routines).encode())
    for column in (trace.tasklet, trace.slots, trace.instructions, trace.routine_counts, trace.routine_params,
                   trace.mram_accesses, trace.action, trace.arg0, trace.arg1):
        digest.update(str(column.shape).encode())
        digest.update(np.ascontiguousarray(column).tobytes())
    return digest.digest()
