"""Pipeline parsing, canonical text, ids and the vocabulary."""

import pytest

from cnmtune.errors import PipelineError
from cnmtune.passes import EXCLUDED, LEVELS, NAMES, PASSES, Pipeline, random_pipeline, standard_levels


@pytest.mark.parametrize("text", LEVELS)
def test_levels_parse(text):
    assert Pipeline.parse(text) == Pipeline(level=text)
    assert Pipeline.parse("-" + text).text == text


def test_pass_sequence_parse_and_canonical_text():
    pipeline = Pipeline.parse(" sroa, instcombine,loop-rotate,-loop-unroll,simplifycfg ")
    assert pipeline.passes == ("sroa", "instcombine", "loop-rotate", "loop-unroll", "simplifycfg")
    assert pipeline.text == "sroa,instcombine,loop-rotate,loop-unroll,simplifycfg"
    assert Pipeline.parse(pipeline.text) == pipeline
    assert pipeline.id == Pipeline.parse("-sroa -instcombine -loop-rotate -loop-unroll -simplifycfg").id
    assert pipeline.id != Pipeline.parse("instcombine,sroa,loop-rotate,loop-unroll,simplifycfg").id


@pytest.mark.parametrize("text, unknown, closest", [
    ("sroa,licm-typo", "licm-typo", ""),
    ("sroa,loop-unrol", "loop-unrol", " (closest: loop-unroll, loop-unroll-and-jam"),
    ("O2,nosuchpass", "nosuchpass", ""),  # after a level too: the typo is the cause, not the level
    ("nosuchpass,O2", "nosuchpass", ""),
])
def test_an_unknown_pass_is_named_with_its_closest_names_in_one_short_line(text, unknown, closest):
    with pytest.raises(PipelineError) as err:
        Pipeline.parse(text)
    message = str(err.value)
    assert message.startswith(f"unknown pass {unknown!r}{closest}")
    assert message.endswith(f"`cnmtune passes` lists the {len(NAMES)} valid ones") and len(message) < 160


@pytest.mark.parametrize("text", ["", "  ", "sroa,,dce", "O9", "loop-unroll<count=4>", "function(sroa)"])
def test_malformed_pipelines_are_refused(text):
    with pytest.raises(PipelineError):
        Pipeline.parse(text)


def test_level_and_passes_are_exclusive():
    with pytest.raises(PipelineError):
        Pipeline(level="O2", passes=("sroa",))
    for text in ("O2,sroa", "sroa,O2"):
        with pytest.raises(PipelineError, match="either an optimisation level or a pass sequence, not both"):
            Pipeline.parse(text)
    with pytest.raises(PipelineError, match="unknown optimisation level 'O5'"):
        Pipeline.parse("sroa,O5")
    assert Pipeline() == Pipeline(level="O0")


def test_vocabulary_is_the_llvmlite_transform_set():
    import llvmlite.binding as llvm

    manager = llvm.create_new_module_pass_manager()
    for info in PASSES:
        assert callable(getattr(manager, info.adder)), info.name
    adders = {m for m in dir(manager) if m.startswith("add_") and m.endswith("_pass")}
    not_transforms = {a for a in adders if any(k in a for k in ("printer", "viewer", "aa_eval", "module_debug_info"))}
    covered = {info.adder for info in PASSES}
    excluded = {"add_internalize_pass", "add_refprune_pass"}
    assert adders - not_transforms - covered == excluded
    assert set(EXCLUDED) == {"internalize", "refprune"}
    assert len(NAMES) == len(set(NAMES)) >= 40


def test_enumeration_is_seeded():
    assert random_pipeline(10, seed=3) == random_pipeline(10, seed=3)
    assert random_pipeline(10, seed=3) != random_pipeline(10, seed=4)
    assert len(random_pipeline(20, seed=0).passes) == 20
    assert [p.text for p in standard_levels()] == list(LEVELS)


def test_pipeline_set_l2p_style():
    from cnmtune.passes import pipeline_set

    pipelines = pipeline_set(1004, seed=1)
    assert [p.text for p in pipelines[:4]] == ["O0", "O1", "O2", "O3"]
    assert len({p.text for p in pipelines}) == 1004
    assert all(len(p.passes) == 10 for p in pipelines[4:])
    assert pipeline_set(50, seed=1) == pipelines[:50]  # reproducible prefix


def test_pipeline_set_variable_length():
    from cnmtune.passes import pipeline_set

    pipelines = pipeline_set(200, seed=3, length=None, min_length=2, max_length=30)
    lengths = {len(p.passes) for p in pipelines[4:]}
    assert min(lengths) >= 2 and max(lengths) <= 30 and len(lengths) > 10
    with pytest.raises(ValueError):
        pipeline_set(10, length=None, min_length=5, max_length=2)
