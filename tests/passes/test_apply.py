"""Running pipelines in-process: a module of its own per run, however often an IR is optimised."""

import llvmlite.binding as llvm

from cnmtune.passes import Pipeline, apply_pipeline, random_pipeline
from cnmtune.passes.apply import optimize_ir
from cnmtune.runtime.toolchain import Variant


def test_each_optimisation_of_an_ir_starts_from_its_unoptimised_parse(toolchain, va):
    """The IR's kept parse is cloned, never optimised itself: O0 after O2 is still the parse, and
    each pipeline's code is the code of the pipeline run on a fresh parse."""
    ir = toolchain.frontend(Variant.of(va, "O0", 16), va.sources[0])
    machine = toolchain.target_machine()
    unoptimized = str(optimize_ir(ir, Pipeline.parse("O0"), machine))
    assert str(optimize_ir(ir, Pipeline.parse("O2"), machine)) != unoptimized
    assert str(optimize_ir(ir, Pipeline.parse("O0"), machine)) == unoptimized
    for pipeline in (Pipeline.parse("O2"), Pipeline.parse("O3"), random_pipeline(20, seed=7)):
        parsed = llvm.parse_assembly(ir)
        apply_pipeline(parsed, pipeline, machine)
        assert machine.emit_object(optimize_ir(ir, pipeline, machine)) == machine.emit_object(parsed), pipeline.text
