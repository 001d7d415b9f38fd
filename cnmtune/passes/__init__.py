"""LLVM pass pipelines: vocabulary, the Pipeline value type, enumeration and application."""

from cnmtune.passes.apply import apply_pipeline
from cnmtune.passes.enumerate import knob_pipelines, pipeline_set, random_pipeline, standard_levels
from cnmtune.passes.pipeline import LEVELS, Pipeline
from cnmtune.passes.vocabulary import EXCLUDED, NAMES, PASSES, PassInfo

__all__ = [
    "EXCLUDED", "LEVELS", "NAMES", "PASSES", "PassInfo", "Pipeline",
    "apply_pipeline", "knob_pipelines", "pipeline_set", "random_pipeline", "standard_levels",
]
