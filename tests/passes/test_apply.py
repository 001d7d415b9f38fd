"""Running pipelines in-process: a module of its own per run, however often an IR is optimised."""

import llvmlite.binding as llvm

from cnmtune.passes import Pipeline, apply_pipeline, random_pipeline
from cnmtune.passes.apply import _kept_parse, optimize_ir
from cnmtune.plugin.tune.search import TUNE_TASKLETS
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


def test_a_tunes_compile_jobs_parse_each_tasklet_counts_ir_once(toolchain, va):
    """A compile job runs one pipeline at each tasklet count of a tune (NR_TASKLETS: an IR each),
    the next job the next pipeline at the same counts: the IRs stay parsed between jobs."""
    machine = toolchain.target_machine()
    irs = [toolchain.frontend(Variant.of(va, "O0", t), va.sources[0]) for t in TUNE_TASKLETS]
    assert len(set(irs)) == len(TUNE_TASKLETS)
    _kept_parse.cache_clear()
    for pipeline in (Pipeline.parse("O1"), random_pipeline(10, seed=3), Pipeline.parse("O2")):
        for ir in irs:
            optimize_ir(ir, pipeline, machine)
    assert _kept_parse.cache_info().misses == len(TUNE_TASKLETS)
