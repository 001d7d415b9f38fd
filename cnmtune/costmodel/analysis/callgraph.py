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

import networkx as nx
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
    if edges:
        graph = nx.DiGraph(list(edges))
        dag = nx.condensation(graph)
        component = dag.graph["mapping"]
        for c in nx.topological_sort(dag):
            for v in dag.nodes[c]["members"]:
                incoming = [(u, i) for u in graph.predecessors(v) if component[u] != c
                            for i in edges[(u, v)]]
                if incoming:
                    entry_weight[v] = sum(entry_weight[u] * own[i] for u, i in incoming)
                    entry_depth[v] = max(entry_depth[u] + depth[i] for u, i in incoming)
    fn = program.function_of
    return entry_weight[fn] * own, entry_depth[fn] + depth
