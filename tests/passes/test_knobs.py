"""LLVM knobs in pipelines: parsing, canonical text, and that a knob changes one build only."""

import hashlib

import pytest

from cnmtune.errors import PipelineError
from cnmtune.passes import Pipeline
from cnmtune.passes.knobs import KNOBS
from cnmtune.runtime.toolchain import ProxyToolchain, Variant


@pytest.mark.parametrize("text, canonical", [
    ("O2,unroll-count=4", "O2,unroll-count=4"),
    ("-O3 -unroll-count=8", "O3,unroll-count=8"),
    ("unroll-count=2, O2", "O2,unroll-count=2"),
    ("sroa,loop-unroll,unroll-count=2", "sroa,loop-unroll,unroll-count=2"),
])
def test_knobs_parse_to_canonical_text(text, canonical):
    pipeline = Pipeline.parse(text)
    assert pipeline.text == canonical and Pipeline.parse(canonical) == pipeline
    assert pipeline.knobs == (("unroll-count", int(canonical.rsplit("=", 1)[1])),)
    assert pipeline.id != Pipeline.parse(canonical.rsplit(",", 1)[0]).id  # knobs are part of the identity


@pytest.mark.parametrize("text, cause", [
    ("O2,unroll-count=65", "knob unroll-count takes an integer in 0..64, got '65'"),
    ("O2,unroll-count=x", "knob unroll-count takes an integer in 0..64, got 'x'"),
    ("O2,unroll-threshold=300", "unknown knob 'unroll-threshold' in 'unroll-threshold=300'; valid knobs: "
                                + ", ".join(KNOBS)),
    ("O0,unroll-count=4", "knobs need an optimising pipeline: O0 runs no pass"),
    ("unroll-count=4", "pipeline 'unroll-count=4' sets knobs but names no level or pass"),
    ("O2,unroll-count=4,unroll-count=2", "a knob is set twice: unroll-count=4, unroll-count=2"),
])
def test_bad_knobs_are_refused_with_the_cause(text, cause):
    with pytest.raises(PipelineError) as err:
        Pipeline.parse(text)
    assert str(err.value) == cause


def test_a_knob_changes_its_build_and_no_later_one(va):
    """In one process: O2 -> O2 with unroll-count=4 (more code) -> O2 again gives the first object."""
    toolchain = ProxyToolchain()
    ir = toolchain.frontend(Variant.of(va, "O2", 16), va.sources[0])

    def build(text: str) -> tuple[str, int]:
        """The object's hash and the assembly's line count of va's source under `text`."""
        obj = toolchain.codegen(toolchain.optimize(ir, Pipeline.parse(text)))
        asm = toolchain.codegen(toolchain.optimize(ir, Pipeline.parse(text)), "asm").decode()
        return hashlib.sha256(obj).hexdigest(), asm.count("\n")

    plain, plain_lines = build("O2")
    unrolled, unrolled_lines = build("O2,unroll-count=4")
    assert unrolled != plain and unrolled_lines > 1.5 * plain_lines
    assert build("O2") == (plain, plain_lines)
    assert build("O2,unroll-count=4")[0] == unrolled  # deterministic
    assert build("sroa,loop-rotate,loop-unroll,unroll-count=4")[0] != build("sroa,loop-rotate,loop-unroll")[0]
