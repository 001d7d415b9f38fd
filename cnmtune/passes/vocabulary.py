"""The pass vocabulary: every IR transform llvmlite can apply, under its LLVM new-PM name.

Each entry maps the textual pass name (as `opt -passes=` spells it) to the llvmlite
pass-manager method that adds it. Analysis printers, viewers and verifiers are not
transforms and are left out; so are the two transforms in EXCLUDED.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class PassInfo:
    """One transform pass: its new-PM name, the llvmlite adder and a short description."""

    name: str
    adder: str
    module_only: bool
    summary: str


def _p(name: str, adder: str, summary: str, module_only: bool = False) -> PassInfo:
    return PassInfo(name, adder, module_only, summary)


PASSES: tuple[PassInfo, ...] = (
    _p("adce", "add_aggressive_dce_pass", "aggressive dead code elimination"),
    _p("aggressive-instcombine", "add_aggressive_instcombine_pass", "expensive peephole combines"),
    _p("always-inline", "add_always_inliner_pass", "inline always_inline functions", True),
    _p("argpromotion", "add_argument_promotion_pass", "promote by-reference arguments to values", True),
    _p("break-crit-edges", "add_break_critical_edges_pass", "split critical CFG edges"),
    _p("constmerge", "add_constant_merge_pass", "merge duplicate global constants", True),
    _p("dce", "add_dead_code_elimination_pass", "dead code elimination"),
    _p("deadargelim", "add_dead_arg_elimination_pass", "remove dead function arguments", True),
    _p("dse", "add_dead_store_elimination_pass", "dead store elimination"),
    _p("function-attrs", "add_post_order_function_attributes_pass", "infer function attributes bottom-up", True),
    _p("globaldce", "add_global_dead_code_eliminate_pass", "remove unreachable globals", True),
    _p("globalopt", "add_global_opt_pass", "optimise global variables", True),
    _p("instcombine", "add_instruction_combine_pass", "peephole instruction combining"),
    _p("instnamer", "add_instruction_namer_pass", "name anonymous values (no code change)"),
    _p("ipsccp", "add_ipsccp_pass", "interprocedural sparse conditional constant propagation", True),
    _p("jump-threading", "add_jump_threading_pass", "thread jumps over known conditions"),
    _p("lcssa", "add_lcssa_pass", "loop-closed SSA form"),
    _p("loop-deletion", "add_loop_deletion_pass", "delete loops without side effects"),
    _p("loop-extract", "add_loop_extract_pass", "extract top-level loops into functions", True),
    _p("loop-reduce", "add_loop_strength_reduce_pass", "loop strength reduction"),
    _p("loop-rotate", "add_loop_rotate_pass", "rotate loops into do-while form"),
    _p("loop-simplify", "add_loop_simplify_pass", "canonicalise loops (preheader, single latch)"),
    _p("loop-unroll", "add_loop_unroll_pass", "unroll loops"),
    _p("loop-unroll-and-jam", "add_loop_unroll_and_jam_pass", "unroll outer loops and fuse inner bodies"),
    _p("lower-atomic", "add_lower_atomic_pass", "lower atomic IR to plain loads and stores"),
    _p("lower-invoke", "add_lower_invoke_pass", "lower invoke to call"),
    _p("lower-switch", "add_lower_switch_pass", "lower switch to branches"),
    _p("memcpyopt", "add_mem_copy_opt_pass", "optimise memcpy/memset patterns"),
    _p("mergefunc", "add_merge_functions_pass", "merge identical functions", True),
    _p("newgvn", "add_new_gvn_pass", "global value numbering (NewGVN)"),
    _p("partial-inliner", "add_partial_inliner_pass", "inline function entry regions", True),
    _p("reassociate", "add_reassociate_pass", "reassociate commutative expressions"),
    _p("reg2mem", "add_register_to_memory_pass", "demote SSA registers to stack slots"),
    _p("rpo-function-attrs", "add_rpo_function_attrs_pass", "infer function attributes top-down", True),
    _p("sccp", "add_sccp_pass", "sparse conditional constant propagation"),
    _p("simplifycfg", "add_simplify_cfg_pass", "simplify the control-flow graph"),
    _p("sink", "add_sinking_pass", "sink instructions into successor blocks"),
    _p("sroa", "add_sroa_pass", "scalar replacement of aggregates (promotes allocas)"),
    _p("strip", "add_strip_symbols_pass", "strip local symbol names and debug info", True),
    _p("strip-dead-debug-info", "add_strip_dead_debug_info_pass", "drop unused debug info", True),
    _p("strip-dead-prototypes", "add_strip_dead_prototype_pass", "drop unused declarations", True),
    _p("strip-debug-declare", "add_strip_debug_declare_pass", "drop dbg.declare intrinsics", True),
    _p("strip-nondebug", "add_strip_non_debug_symbols_pass", "strip non-debug symbol names", True),
    _p("tailcallelim", "add_tail_call_elimination_pass", "tail call elimination"),
    _p("unify-function-exit-nodes", "add_unify_function_exit_nodes_pass", "one return block per function"),
)

# Transforms llvmlite offers that are not in the vocabulary, and why.
EXCLUDED: dict[str, str] = {
    "internalize": "internalizes main and __host symbols, after which the program cannot be linked or driven",
    "refprune": "Numba reference-count pruning; no effect on C",
}

BY_NAME: dict[str, PassInfo] = {p.name: p for p in PASSES}
NAMES: tuple[str, ...] = tuple(p.name for p in PASSES)
