"""Control-flow graphs and natural loops per function, and the loop depth of every instruction.

Basic blocks start at a function's entry, at every in-function branch or jump target and after
every branch or jump. Calls (``jal``/``jalr`` that link a register) do not end a block. Edges
follow branch targets, fall-through and direct jumps (``jal x0``, ``auipc``+``jalr x0``) that
stay in the function; a jump leaving the function is a tail call and an indirect ``jalr x0``
(return, jump table) has no known successor, so loops built only through jump tables are not
seen. Natural loops come from dominators (``immediate_dominators``): an edge u->h is a back
edge when h dominates u, the loop is h plus every node reaching u without passing h, and
loops sharing a header are one loop. An instruction's loop depth is the number of loops holding
it; irreducible cycles (no dominating header) add no depth.

``cfg_from_transfers`` builds blocks and loops from any ISA's list of control transfers; the
real-DPU decoder (cnmtune.costmodel.analysis.dpu_program) uses it with the branches and jumps it decodes.

The analysis of a function depends only on its bytes (branch, jal and auipc+jalr targets are
pc-relative; an absolute lui+jalr jump back into its own function is not something compilers
emit), so results are cached by those bytes: the runtime and compiler_rt functions shared by
all variants of a tuning run are analysed once per process.
"""

from __future__ import annotations

import bisect
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from cnmtune.costmodel.analysis.program import Function
from cnmtune.costmodel.analysis.rv32_program import Program
from cnmtune.costmodel.analysis.rv32_isa import OP_BRANCH, OP_JAL, OP_JALR

_CACHE_SIZE = 8192
_cache: OrderedDict[bytes, FunctionCfg] = OrderedDict()
_cache_lock = threading.Lock()


@dataclass(frozen=True)
class FunctionCfg:
    """Basic blocks, predecessor lists and natural loops of one function.

    Block b spans instructions [leaders[b], leaders[b + 1]) relative to the function's start.
    ``loop_headers`` and ``loop_bodies``: each natural loop's header block and its blocks.
    """

    leaders: tuple[int, ...]
    preds: tuple[tuple[int, ...], ...]
    block_depth: tuple[int, ...]
    loops: int
    max_depth: int
    loop_headers: tuple[int, ...] = ()
    loop_bodies: tuple[frozenset[int], ...] = ()

    def block_ranges(self, first: int, count: int) -> list[tuple[int, int]]:
        """The [start, end) instruction ranges of the blocks of the function of ``count``
        instructions at ``first``, in block order (the order of ``preds``)."""
        bounds = [*self.leaders, count]
        return [(first + a, first + b) for a, b in zip(bounds, bounds[1:])]

    def block_lengths(self, count: int) -> list[int]:
        """The instructions of each block of a function of ``count`` instructions."""
        return [end - start for start, end in self.block_ranges(0, count)]

    def successors(self) -> list[list[int]]:
        """Each block's successors: ``preds`` inverted, in block order."""
        succs: list[list[int]] = [[] for _ in self.preds]
        for block, preds in enumerate(self.preds):
            for p in preds:
                succs[p].append(block)
        return succs

    def block_of(self, offset: int) -> int:
        """The block holding the instruction ``offset`` places after the function's start."""
        return bisect.bisect_right(self.leaders, offset) - 1


def loop_depths(program: Program) -> tuple[np.ndarray, tuple[FunctionCfg, ...]]:
    """The loop depth of every instruction and the CFG of every function of ``program``."""
    cfgs = tuple(function_cfg(program, f) for f in program.functions)
    return instruction_depths(cfgs, program.functions), cfgs


def instruction_depths(cfgs: Sequence[FunctionCfg], functions: Sequence[Function]) -> np.ndarray:
    """The loop depth of every instruction of ``functions`` (in order; their CFGs: ``cfgs``)."""
    depths: list[int] = []
    lengths: list[int] = []  # of every block of every function, in order: one repeat for all
    for cfg, function in zip(cfgs, functions):
        depths.extend(cfg.block_depth)
        lengths.extend(cfg.block_lengths(function.count))
    return np.repeat(np.asarray(depths, dtype=np.int32), lengths)


def function_cfg(program: Program, function: Function) -> FunctionCfg:
    """The (cached) CFG and loops of one function."""
    first, count = function.first, function.count
    key = program.words[first:first + count].tobytes()
    with _cache_lock:
        cfg = _cache.get(key)
        if cfg is not None:
            _cache.move_to_end(key)
            return cfg
    cfg = _analyse(program, first, count)
    with _cache_lock:
        _cache[key] = cfg
        if len(_cache) > _CACHE_SIZE:
            _cache.popitem(last=False)
    return cfg


def _analyse(program: Program, first: int, count: int) -> FunctionCfg:
    f = program.fields
    opcode, rd = f.opcode, f.rd
    # (relative index of the control transfer, target or None, falls through?)
    transfers: list[tuple[int, int | None, bool]] = []
    for i in range(first, first + count):
        op = opcode[i]
        if op == OP_BRANCH:
            transfers.append((i - first, _inside(i - first, f.imm_b[i], count), True))
        elif op == OP_JAL and rd[i] == 0:
            transfers.append((i - first, _inside(i - first, f.imm_j[i], count), False))
        elif op == OP_JALR and rd[i] == 0:
            target = program.jalr_target(i)
            transfers.append((i - first, None if target is None else _inside(
                i - first, target - program.address(i), count), False))
    return cfg_from_transfers(transfers, count)


def cfg_from_transfers(transfers: list[tuple[int, int | None, bool]],
                       count: int) -> FunctionCfg:
    """The CFG and natural loops of a function of ``count`` instructions from its control
    transfers: (index of the transfer, target index inside the function or None, whether it
    can fall through), indices relative to the function's start, in increasing order."""
    leaders = {0}
    for i, target, _ in transfers:
        if target is not None:
            leaders.add(target)
        if i + 1 < count:
            leaders.add(i + 1)
    starts = sorted(leaders)
    block_of = {start: b for b, start in enumerate(starts)}
    ends = {i: (target, falls) for i, target, falls in transfers}
    edges = []
    for b, start in enumerate(starts):
        last = (starts[b + 1] if b + 1 < len(starts) else count) - 1
        target, falls = ends.get(last, (None, True))
        if target is not None:
            edges.append((b, block_of[target]))
        if falls and last + 1 < count:
            edges.append((b, b + 1))
    preds: list[list[int]] = [[] for _ in starts]
    succs: list[list[int]] = [[] for _ in starts]
    for u, v in edges:
        preds[v].append(u)
        succs[u].append(v)
    bodies: dict[int, set[int]] = {}
    # Most functions have no cycle at all: dominators are only worth their cost where one exists.
    if any(v <= u for u, v in edges) and _has_cycle(succs):
        bodies = _natural_loops(edges, preds, succs)
    depth = [0] * len(starts)
    for body in bodies.values():
        for b in body:
            depth[b] += 1
    return FunctionCfg(leaders=tuple(starts), preds=tuple(tuple(p) for p in preds),
                       block_depth=tuple(depth), loops=len(bodies), max_depth=max(depth),
                       loop_headers=tuple(bodies), loop_bodies=tuple(frozenset(b) for b in bodies.values()))


def _inside(index: int, offset: int, count: int) -> int | None:
    target = index + offset // 4
    return target if offset % 4 == 0 and 0 <= target < count else None


def _has_cycle(succs: list[list[int]]) -> bool:
    """Whether a cycle is reachable from block 0 (iterative depth-first search)."""
    state = [0] * len(succs)  # 0 unseen, 1 on the DFS stack, 2 done
    state[0] = 1
    stack = [(0, iter(succs[0]))]
    while stack:
        node, successors = stack[-1]
        for v in successors:
            if state[v] == 1:
                return True
            if state[v] == 0:
                state[v] = 1
                stack.append((v, iter(succs[v])))
                break
        else:
            state[node] = 2
            stack.pop()
    return False


def immediate_dominators(preds: list[list[int]], succs: list[list[int]]) -> dict[int, int]:
    """The immediate dominator of every block reachable from block 0 (block 0: itself), by the
    iterative algorithm of Cooper, Harvey and Kennedy ("A Simple, Fast Dominance Algorithm",
    2001) over a reverse postorder."""
    postorder, seen = [], {0}
    stack = [(0, iter(succs[0]))]
    while stack:
        node, successors = stack[-1]
        for v in successors:
            if v not in seen:
                seen.add(v)
                stack.append((v, iter(succs[v])))
                break
        else:
            postorder.append(node)
            stack.pop()
    number = {b: k for k, b in enumerate(postorder)}  # a dominator has the higher number
    idom = {0: 0}

    def common(a: int, b: int) -> int:
        while a != b:
            while number[a] < number[b]:
                a = idom[a]
            while number[b] < number[a]:
                b = idom[b]
        return a

    changed = True
    while changed:
        changed = False
        for b in reversed(postorder[:-1]):  # reverse postorder without block 0
            done = [p for p in preds[b] if p in idom]
            new = done[0]
            for p in done[1:]:
                new = common(p, new)
            if idom.get(b) != new:
                idom[b] = new
                changed = True
    return idom


def _natural_loops(edges: list[tuple[int, int]], preds: list[list[int]],
                   succs: list[list[int]]) -> dict[int, set[int]]:
    """The blocks of each natural loop, by header."""
    idom = immediate_dominators(preds, succs)

    def dominates(h: int, u: int) -> bool:
        while u != h:
            if u == 0:
                return False
            u = idom[u]
        return True

    bodies: dict[int, set[int]] = {}
    for u, h in edges:
        if u in idom and dominates(h, u):
            body = bodies.setdefault(h, {h})
            stack = [u] if u not in body else []
            body.update(stack)
            while stack:
                for p in preds[stack.pop()]:
                    if p not in body and p in idom:
                        body.add(p)
                        stack.append(p)
    return bodies
