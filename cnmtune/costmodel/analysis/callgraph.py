"""Loop weights across kernel calls: each instruction weighted as if kernel calls were inlined.

At -O0 a helper called inside a loop keeps its own function and its loops start at depth 0;
at -O2 the same helper is inlined one level deeper. To weigh both alike, a kernel function's
*entry weight* is the sum, over the direct call sites that reach it from other kernel
functions, of the caller's entry weight times the site's loop weight in its function
(cnmtune.costmodel.analysis.trips: ``loop_scale * loop_weight ** loop_power``); a kernel
function nobody calls directly (main, tasklet entry points, functions called through a
pointer) has entry weight 1. Its *entry depth* is the deepest caller entry depth plus site
depth. An instruction then weighs its entry weight times its own loop weight and sits at
``entry_depth + depth``. Recursive calls (edges inside a strongly connected component of the
call graph) add nothing. Runtime and softlib functions keep weight 1 and depth 0.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import numpy as np

from cnmtune.costmodel.analysis.calls import CallSite
from cnmtune.costmodel.analysis.frontend import DecodedProgram
from cnmtune.costmodel.analysis.program import KERNEL


def inlined_weights(program: DecodedProgram, sites: list[CallSite],
                    loop_weight: float) -> tuple[np.ndarray, np.ndarray]:
    """Per-instruction loop weight and loop depth, including the weight and depth of kernel callers."""
    own = program.loop_scale * np.float64(loop_weight) ** program.loop_power
    depth = program.loop_depth
    n = len(program.functions)
    entry_weight = np.ones(n, dtype=np.float64)
    entry_depth = np.zeros(n, dtype=np.int32)
    edges: dict[tuple[int, int], list[int]] = {}
    for site in sites:
        if site.callee_function is None or not site.exact:
            continue
        caller = int(program.function_of[site.index])
        callee = site.callee_function
        if program.functions[caller].region == program.functions[callee].region == KERNEL:
            edges.setdefault((caller, callee), []).append(site.index)
    preds: dict[int, list[int]] = {}
    succs: dict[int, list[int]] = {}
    for caller, callee in edges:
        preds.setdefault(callee, []).append(caller)
        succs.setdefault(caller, []).append(callee)
    for component in components_callers_first(dict.fromkeys(f for edge in edges for f in edge), succs):
        members = set(component)
        for v in component:
            incoming = [(u, i) for u in preds.get(v, ()) if u not in members for i in edges[(u, v)]]
            if incoming:
                entry_weight[v] = sum(entry_weight[u] * own[i] for u, i in incoming)
                entry_depth[v] = max(entry_depth[u] + depth[i] for u, i in incoming)
    fn = program.function_of
    return entry_weight[fn] * own, entry_depth[fn] + depth


def components_callers_first(nodes: Iterable[int], succs: Mapping[int, Sequence[int]]) -> list[list[int]]:
    """The strongly connected components of the graph of ``nodes`` and edges ``succs``, each after
    every component with an edge into it (Tarjan's algorithm, iterative: it closes a component
    after every component the component reaches, so its order reversed)."""
    index: dict[int, int] = {}
    low: dict[int, int] = {}
    stack: list[int] = []
    on_stack: set[int] = set()
    closed: list[list[int]] = []
    for root in nodes:
        if root in index:
            continue
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        work = [(root, iter(succs.get(root, ())))]
        while work:
            v, successors = work[-1]
            for w in successors:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(succs.get(w, ()))))
                    break
                if w in on_stack:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[v])
                if low[v] == index[v]:
                    component = []
                    while not component or component[-1] != v:
                        component.append(stack.pop())
                        on_stack.discard(component[-1])
                    closed.append(component)
    return closed[::-1]
