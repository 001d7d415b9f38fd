"""Running a Pipeline on an llvmlite module, in-process."""

from __future__ import annotations

import functools
import threading

import llvmlite.binding as llvm

from cnmtune.errors import PipelineError
from cnmtune.passes.knobs import knobs_text, process_knobs
from cnmtune.passes.pipeline import Pipeline
from cnmtune.passes.vocabulary import BY_NAME

# clang's inliner thresholds for -Os and -Oz (llvm/lib/Analysis/InlineCost.cpp:
# OptSizeThreshold = 75, OptMinSizeThreshold = 25).
_SIZE_LEVEL_INLINE_THRESHOLD = {"Os": 75, "Oz": 25}

_parsed_lock = threading.Lock()  # one clone (or parse) in a context at a time
# IRs kept parsed: twice a tune's tasklet counts (8), each an IR of its own (NR_TASKLETS), which a
# tune's compile job visits in turn for each pipeline: with 4 kept, every compile parsed again. A
# parse is ~0.2 MiB for gemv's IR, and every knob process keeps its own
KEPT_PARSES = 16


def _level_pass_manager(level: str, target_machine: llvm.TargetMachine):
    speed = 2 if level in _SIZE_LEVEL_INLINE_THRESHOLD else int(level[1])
    options = llvm.create_pipeline_tuning_options(speed_level=speed)
    if level in _SIZE_LEVEL_INLINE_THRESHOLD:
        options.loop_unrolling = False
        options.loop_vectorization = False
        options.slp_vectorization = False
        options.inlining_threshold = _SIZE_LEVEL_INLINE_THRESHOLD[level]
    builder = llvm.create_pass_builder(target_machine, options)
    return builder, builder.getModulePassManager()


def apply_pipeline(module: llvm.ModuleRef, pipeline: Pipeline, target_machine: llvm.TargetMachine) -> None:
    """Transform `module` in place with `pipeline`; O0 leaves it untouched. The pipeline's knobs must
    be this process's (cnmtune.passes.knobs: LLVM options cannot be set for one run only)."""
    if pipeline.knobs != process_knobs():
        raise PipelineError(f"pipeline {pipeline.text} needs LLVM knobs {knobs_text(pipeline.knobs) or 'none'} "
                            f"but this process runs with {knobs_text(process_knobs()) or 'none'}: optimise it in "
                            "a process started for its knobs (the proxy toolchain does)")
    if pipeline.level == "O0":
        return
    if pipeline.is_level:
        builder, manager = _level_pass_manager(pipeline.level, target_machine)
    else:
        builder = llvm.create_pass_builder(target_machine, llvm.create_pipeline_tuning_options(speed_level=0))
        manager = llvm.create_new_module_pass_manager()
        for name in pipeline.passes:
            getattr(manager, BY_NAME[name].adder)()
    manager.run(module, builder)


def optimize_ir(ir: str, pipeline: Pipeline, target_machine: llvm.TargetMachine,
                own_context: bool = False) -> llvm.ModuleRef:
    """A clone of `ir`'s module, parsed once into LLVM's global context or, with `own_context`,
    into a context of the IR's own, with `pipeline` run on it (apply_pipeline's rule on knobs
    holds) and verified."""
    module = _parsed_clone(ir, own_context)
    apply_pipeline(module, pipeline, target_machine)
    module.verify()
    return module


@functools.lru_cache(maxsize=KEPT_PARSES)
def _kept_parse(ir: str, own_context: bool) -> llvm.ModuleRef:
    """`ir` parsed into LLVM's global context or one of its own, for the last KEPT_PARSES IRs; never
    optimised itself: a tune optimises one IR with many pipelines, and a clone costs 0.5 ms where a
    parse of va's IR costs 1.2 ms (the clone's code is the parse's: the 20 suite kernels at O1-O3, Os
    and 12 random pipelines each, the same objects byte for byte)."""
    return llvm.parse_assembly(ir, context=llvm.create_context() if own_context else None)


def _parsed_clone(ir: str, own_context: bool) -> llvm.ModuleRef:
    """A fresh module of `ir`: a clone of its kept parse."""
    with _parsed_lock:
        return _kept_parse(ir, own_context).clone()
