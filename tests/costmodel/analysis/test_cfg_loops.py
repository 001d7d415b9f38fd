"""CFG, natural loops, call sites, ecall services and caller weights on hand-built programs."""

from __future__ import annotations

import random

import networkx as nx
import numpy as np

from cnmtune.costmodel.analysis.callgraph import components_callers_first, inlined_weights
from cnmtune.costmodel.analysis.calls import argument_constants, call_sites, ecall_sites
from cnmtune.costmodel.analysis.cfg import function_cfg, immediate_dominators, loop_depths
from rv32_asm import assemble, decoded, program

SERVICES = {4: "MRAM_READ", 5: "MRAM_WRITE", 8: "BARRIER_WAIT"}


def depths(lines) -> list[int]:
    depth, _ = loop_depths(program(assemble(lines)))
    return depth.tolist()


def test_straight_line_code_has_one_block_and_no_loop():
    p = program(assemble([("addi", "a0", "zero", 1), ("addi", "a0", "a0", 2), ("ret",)]))
    cfg = function_cfg(p, p.functions[0])
    assert cfg.leaders == (0,) and cfg.loops == 0 and cfg.max_depth == 0


def test_backward_branch_is_a_loop_of_depth_one():
    assert depths([("addi", "a0", "zero", 10),
                   "loop:", ("addi", "a0", "a0", -1), ("bne", "a0", "zero", "loop"),
                   ("ret",)]) == [0, 1, 1, 0]


def test_three_nested_loops_as_at_O0():
    lines = [("addi", "t0", "zero", 0),
             "l1:", ("bge", "t0", "a0", "end1"), ("addi", "t1", "zero", 0),
             "l2:", ("bge", "t1", "a0", "end2"), ("addi", "t2", "zero", 0),
             "l3:", ("bge", "t2", "a0", "end3"), ("addi", "t2", "t2", 1), ("jal", "zero", "l3"),
             "end3:", ("addi", "t1", "t1", 1), ("jal", "zero", "l2"),
             "end2:", ("addi", "t0", "t0", 1), ("jal", "zero", "l1"),
             "end1:", ("ret",)]
    assert depths(lines) == [0, 1, 1, 2, 2, 3, 3, 3, 2, 2, 1, 1, 0]
    p = program(assemble(lines))
    cfg = function_cfg(p, p.functions[0])
    assert (cfg.loops, cfg.max_depth) == (3, 3)


def test_sibling_loops_share_a_depth():
    assert depths(["a:", ("addi", "a0", "a0", -1), ("bne", "a0", "zero", "a"),
                   "b:", ("addi", "a1", "a1", -1), ("bne", "a1", "zero", "b"),
                   ("ret",)]) == [1, 1, 1, 1, 0]


def test_irreducible_cycle_is_not_a_natural_loop():
    # Both A and B are entered from the entry block: neither dominates the other.
    p = program(assemble([("beq", "a0", "zero", "b"),
                          "a:", ("addi", "a1", "a1", 1), ("jal", "zero", "b"),
                          "b:", ("addi", "a2", "a2", 1), ("bne", "a2", "a3", "a"),
                          ("ret",)]))
    cfg = function_cfg(p, p.functions[0])
    assert cfg.loops == 0 and set(cfg.block_depth) == {0}


def test_immediate_dominators_agree_with_networkx_on_random_graphs():
    """Cooper-Harvey-Kennedy against networkx.immediate_dominators: unreachable blocks, self
    loops, repeated edges and irreducible cycles included."""
    rng = random.Random(11)
    for _ in range(500):
        n = rng.randint(1, 25)
        edges = [(rng.randrange(n), rng.randrange(n)) for _ in range(rng.randint(0, 3 * n))]
        edges += [(b, b + 1) for b in range(n - 1) if rng.random() < 0.6]
        preds: list[list[int]] = [[] for _ in range(n)]
        succs: list[list[int]] = [[] for _ in range(n)]
        for u, v in edges:
            preds[v].append(u)
            succs[u].append(v)
        graph = nx.DiGraph()
        graph.add_nodes_from(range(n))
        graph.add_edges_from(edges)
        expected = {**nx.immediate_dominators(graph, 0), 0: 0}  # networkx >= 3.5 leaves the start out
        assert immediate_dominators(preds, succs) == expected, edges


def test_call_graph_components_agree_with_networkx_callers_first():
    """Tarjan's components (callgraph.components_callers_first) against networkx's, on random
    graphs with self loops, repeated edges and cycles: the same components, each after every
    component with an edge into it."""
    rng = random.Random(12)
    for _ in range(500):
        n = rng.randint(1, 25)
        edges = [(rng.randrange(n), rng.randrange(n)) for _ in range(rng.randint(0, 2 * n))]
        succs: dict[int, list[int]] = {}
        for u, v in edges:
            succs.setdefault(u, []).append(v)
        nodes = dict.fromkeys(x for edge in edges for x in edge)
        components = components_callers_first(nodes, succs)
        graph = nx.DiGraph(edges)
        assert sorted(map(sorted, components)) == sorted(map(sorted, nx.strongly_connected_components(graph)))
        position = {v: k for k, component in enumerate(components) for v in component}
        assert all(position[u] <= position[v] for u, v in edges), edges


def test_calls_do_not_end_blocks_and_analysis_is_cached_by_bytes():
    words = assemble([("addi", "a0", "zero", 1), ("call", 5), ("addi", "a0", "a0", 1),
                      ("ret",), ("ret",)])
    spans = [("f", 0, 5), ("g", 5, 1)]
    p, q = program(words, spans), program(words, spans)
    cfg = function_cfg(p, p.functions[0])
    assert cfg.leaders == (0,)
    assert function_cfg(q, q.functions[0]) is cfg


def test_call_sites_name_direct_tail_and_indirect_callees():
    words = assemble([("call", 6), ("jal", "ra", 6), ("jalr", "ra", "a5", 0),
                      ("jal", "zero", 7), ("ret",), ("ret",),
                      ("ret",), ("ret",)])
    p = program(words, [("f", 0, 6), ("g", 6, 1), ("h", 7, 1)])
    sites = {(s.index, s.callee, s.tail) for s in call_sites(p)}
    assert sites == {(1, "g", False), (2, "g", False), (3, None, False), (4, "h", True)}


def test_ret_is_not_a_call_and_an_unknown_register_is_an_indirect_call():
    p = program(assemble([("jalr", "ra", "a5", 0), ("jalr", "zero", "a5", 0), ("ret",)]))
    assert [(s.index, s.callee) for s in call_sites(p)] == [(0, None)]


def test_a_callee_loaded_from_a_constant_pool_is_named():
    # The large code model: the callee's address is a word of data memory (a constant pool),
    # loaded from a link-time address; at -O0 it is spilled and reloaded for another call.
    g = 0x80000000 + 4 * 8
    words = assemble([("lui", "t0", 0), ("addi", "t0", "t0", 0x10), ("lw", "t1", "t0", 0),
                      ("sw", "t1", "s0", -12), ("jalr", "ra", "t1", 0),
                      ("lw", "a5", "s0", -12), ("jalr", "ra", "a5", 0), ("ret",),
                      ("ret",),
                      ("lui", "t0", 0), ("lw", "t1", "t0", 0x10), ("jalr", "zero", "t1", 0)])
    p = program(words, [("f", 0, 8), ("g", 8, 1), ("h", 9, 3)], data={0x10: [g]})
    sites = [(s.index, s.callee, s.exact, s.tail) for s in call_sites(p)]
    assert sites == [(4, "g", True, False), (6, "g", True, False), (11, "g", True, True)]


def test_a_table_entry_picked_by_a_loaded_index_stays_indirect():
    # kernels[args.kernel]: the index is read from memory (a host-written variable), so the
    # entry it selects is unknown, whatever the initial image holds.
    g = 0x80000000 + 4 * 7
    words = assemble([("lui", "a1", 0), ("lw", "a2", "a1", 0x20), ("addi", "a3", "a1", 0x10),
                      ("add", "a3", "a3", "a2"), ("lw", "a5", "a3", 0),
                      ("jalr", "ra", "a5", 0), ("ret",),
                      ("ret",)])
    p = program(words, [("f", 0, 7), ("g", 7, 1)], data={0x10: [g], 0x20: [0]})
    assert [(s.index, s.callee) for s in call_sites(p)] == [(5, None)]


def test_a_loaded_callee_hoisted_out_of_a_loop_resolves_by_dataflow():
    g = 0x80000000 + 4 * 7
    words = assemble([("lui", "t0", 0), ("lw", "s0", "t0", 0x10),
                      "loop:", ("jalr", "ra", "s0", 0), ("addi", "a0", "a0", -1),
                      ("bne", "a0", "zero", "loop"), ("ret",), ("ret",),
                      ("ret",)])
    p = program(words, [("f", 0, 7), ("g", 7, 1)], data={0x10: [g]})
    assert [(s.index, s.callee) for s in call_sites(p)] == [(2, "g")]


def ecall_services(lines) -> list[str]:
    p = program(assemble(lines))
    _, cfgs = loop_depths(p)
    return [s.service for s in ecall_sites(p, cfgs, SERVICES)]


def test_ecall_service_from_li_and_from_an_O0_stack_spill():
    assert ecall_services([("addi", "a7", "zero", 4), ("ecall",),
                           ("addi", "a0", "zero", 5), ("sw", "a0", "s0", -12),
                           ("lw", "a7", "s0", -12), ("ecall",), ("ret",)]) \
        == ["MRAM_READ", "MRAM_WRITE"]


def test_ecall_service_hoisted_out_of_a_loop_resolves_by_dataflow():
    assert ecall_services([("addi", "a7", "zero", 8),
                           "loop:", ("ecall",), ("addi", "a0", "a0", -1),
                           ("bne", "a0", "zero", "loop"), ("ret",)]) == ["BARRIER_WAIT"]


def test_ecall_service_differing_on_two_paths_is_unknown_and_unlisted_is_numbered():
    assert ecall_services([("beq", "a0", "zero", "x"), ("addi", "a7", "zero", 4),
                           ("jal", "zero", "y"),
                           "x:", ("addi", "a7", "zero", 5),
                           "y:", ("ecall",), ("addi", "a7", "zero", 99), ("ecall",),
                           ("ret",)]) == ["UNKNOWN", "SERVICE_99"]


def test_a_callee_inside_a_loop_inherits_the_call_site_depth():
    words = assemble(["loop:", ("call", "g"), ("addi", "a0", "a0", -1),
                      ("bne", "a0", "zero", "loop"), ("ret",),
                      "g:", ("addi", "a1", "a1", -1), ("bne", "a1", "zero", "g"), ("ret",)])
    p = decoded(words, [("f", 0, 5), ("g", 5, 3)])
    weights, depth = inlined_weights(p, list(p.call_sites), 10.0)
    assert p.loop_depth.tolist() == [1, 1, 1, 1, 0, 1, 1, 0]
    assert depth.tolist() == [1, 1, 1, 1, 0, 2, 2, 1]
    np.testing.assert_allclose(weights, [10, 10, 10, 10, 1, 100, 100, 10])


def test_a_call_forgets_the_stack_slots_whose_address_the_function_passes():
    # f stores 256 in a local and reloads it as mram_read's size after a call to g. When f
    # gives g the local's address (a0 = s0 - 20), g may have rewritten it; otherwise not.
    def size_at_mram_read(pointer_base: str) -> dict[int, int]:
        words = assemble([("addi", "a2", "zero", 256), ("sw", "a2", "s0", -20),
                          ("addi", "a0", pointer_base, -20), ("call", 9),
                          ("lw", "a2", "s0", -20), ("call", 10), ("ret",),
                          ("ret",),
                          ("ret",)])
        p = program(words, [("f", 0, 9), ("g", 9, 1), ("mram_read", 10, 1)])
        return argument_constants(p, loop_depths(p)[1], call_sites(p), {"mram_read": 12})

    assert size_at_mram_read("t0") == {7: 256}
    assert size_at_mram_read("s0") == {}
