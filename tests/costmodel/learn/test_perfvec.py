"""PerfVec for DPUs: blocks read from a real trace, the encoders' shapes, composition (a program is the
count-weighted sum of its blocks), ONNX export round trip and checks, and a small training run."""

from __future__ import annotations

import shutil

import numpy as np
import onnx
import pytest
import torch
from onnx import numpy_helper

from cnmtune.costmodel.learn.perfvec import PerfVecConfig, PerfVecData, PerfVecModel, accuracy, train_perfvec
from cnmtune.costmodel.learn.perfvec_blocks import BLOCK_FEATURES, KINDS, ProgramBlocks, program_blocks
from cnmtune.costmodel.learn.perfvec_onnx import BLOCKS_FILE, DESIGN_FILE, PerfVecScorer, export_perfvec
from cnmtune.errors import ModelError, SchemaMismatch
from cnmtune.plugin.sweep.design import DesignPoint
from cnmtune.plugin.sweep.evaluate import retime_points
from cnmtune.runtime.sim.design_space import TIMELINE_PARAMETERS, design_vector, sample_designs
from cnmtune.runtime.sim.timing import priced_slots
from cnmtune.runtime.sim.trace import Action
from cnmtune.runtime.sim.traces import obtain_trace_set
from cnmtune.runtime.toolchain import Variant

SMALL = PerfVecConfig(dim=8, width=16, depth=1)


@pytest.fixture(scope="module")
def va_set(tmp_path_factory, toolchain, va):
    """va at O2, 16 tasklets, on 1 DPU at its small size, recorded."""
    trace_set, _ = obtain_trace_set(Variant.of(va, "O2", 16), 1, va.workload.preset("small"),
                                    root=tmp_path_factory.mktemp("traces"), toolchain=toolchain)
    return trace_set


@pytest.fixture(scope="module")
def va_blocks(va_set) -> ProgramBlocks:
    return program_blocks(va_set)


def _column(name: str) -> int:
    return BLOCK_FEATURES.index(name)


def test_blocks_account_for_every_issue_slot_and_action_of_the_trace(va_set, va_blocks):
    [launch] = va_set.launches
    trace = launch.traces[0]
    kind = va_blocks.features[:, :len(KINDS)]
    assert (kind.sum(axis=1) == 1).all()  # one kind per block
    assert (va_blocks.features[:, _column("beside_1"):_column("beside_24") + 1].sum(axis=1) == 1).all()

    def weight(name: str) -> float:
        return float(va_blocks.weights[va_blocks.features[:, _column(f"kind_{name}")] == 1].sum())

    assert weight("issue") == pytest.approx(float(trace.slots.sum()) + priced_slots(trace, va_set.config))
    for action in (Action.DMA_READ, Action.DMA_WRITE, Action.BARRIER, Action.STOP):
        assert weight(action.name.lower()) == int((trace.action == int(action)).sum()) > 0
    assert weight("launch") == 1
    # a loop's iterations merge: far fewer blocks than segments
    assert len(va_blocks) < len(trace) / 3
    assert len(np.unique(va_blocks.features, axis=0)) == len(va_blocks)
    assert np.isfinite(va_blocks.features).all() and (va_blocks.weights > 0).all()


def test_shapes_of_the_representations():
    torch.manual_seed(0)
    model = PerfVecModel(SMALL).eval()
    blocks = torch.rand(5, len(BLOCK_FEATURES))
    designs = torch.from_numpy(design_vector(sample_designs(7, seed=1), TIMELINE_PARAMETERS)).float()
    with torch.no_grad():
        assert model.blocks(blocks).shape == (5, 8)
        assert model.program(blocks, torch.ones(5)).shape == (1, 8)
        assert model.designs(designs).shape == (7, 8)
        assert model(torch.rand(2, 8), designs).shape == (2, 7)
        assert (model.blocks(blocks) >= 0).all() and (model.designs(designs) >= 0).all()  # softplus


def test_a_program_of_two_blocks_is_the_weighted_sum_of_the_blocks(va_blocks):
    torch.manual_seed(0)
    model = PerfVecModel(SMALL).eval()
    features, weights = torch.from_numpy(va_blocks.features), torch.from_numpy(va_blocks.weights).float()
    with torch.no_grad():
        reps = model.blocks(features)
        pair = model.program(features[[2, 5]], weights[[2, 5]])
        torch.testing.assert_close(pair[0], weights[2] * reps[2] + weights[5] * reps[5], rtol=1e-6, atol=0)
        whole = model.program(features, weights)
        torch.testing.assert_close(whole[0], (weights[:, None] * reps).sum(dim=0), rtol=1e-5, atol=0)


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    torch.manual_seed(3)
    model = PerfVecModel(SMALL).eval()
    directory = export_perfvec(model, tmp_path_factory.mktemp("perfvec") / "model", data_hash="test")
    return model, directory


def test_onnx_round_trip_equals_torch(exported, va_blocks):
    model, directory = exported
    scorer = PerfVecScorer(directory)
    designs = design_vector(sample_designs(50, seed=2), TIMELINE_PARAMETERS)
    with torch.no_grad():
        features, weights = torch.from_numpy(va_blocks.features), torch.from_numpy(va_blocks.weights).float()
        want_blocks = model.blocks(features).numpy()
        want_program = model.program(features, weights)
        want_designs = model.designs(torch.from_numpy(designs).float()).numpy()
        want = model(want_program, torch.from_numpy(designs).float())[0].numpy()
    np.testing.assert_allclose(scorer.block_representations(va_blocks), want_blocks, rtol=1e-5, atol=1e-6)
    program = scorer.program(va_blocks)
    np.testing.assert_allclose(program, want_program.numpy(), rtol=1e-5)
    np.testing.assert_allclose(scorer.design_representations(designs), want_designs, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(scorer.log_cycles(program, designs), want, rtol=1e-5, atol=1e-5)


def test_composition_holds_through_onnx(exported, va_blocks):
    scorer = PerfVecScorer(exported[1])
    reps = scorer.block_representations(va_blocks)
    pair = ProgramBlocks(va_blocks.features[[1, 4]], va_blocks.weights[[1, 4]], 1)
    want = va_blocks.weights[1] * reps[1] + va_blocks.weights[4] * reps[4]
    np.testing.assert_allclose(scorer.program(pair)[0], want, rtol=1e-6)


def test_the_scorer_refuses_a_mixed_pair_and_a_damaged_file(exported, tmp_path):
    _, directory = exported
    torch.manual_seed(4)
    other = export_perfvec(PerfVecModel(SMALL), tmp_path / "other", data_hash="test")
    mixed = tmp_path / "mixed"
    mixed.mkdir()
    shutil.copy(directory / BLOCKS_FILE, mixed / BLOCKS_FILE)
    shutil.copy(other / DESIGN_FILE, mixed / DESIGN_FILE)
    with pytest.raises(ModelError, match="come from different trainings"):
        PerfVecScorer(mixed)
    graph = onnx.load(other / BLOCKS_FILE)  # a weight changed after export: the sealed digest differs
    weights = numpy_helper.to_array(graph.graph.initializer[0]).copy()
    weights.flat[0] += 1.0
    graph.graph.initializer[0].CopyFrom(numpy_helper.from_array(weights, graph.graph.initializer[0].name))
    onnx.save(graph, other / BLOCKS_FILE)
    with pytest.raises(ModelError, match="blocks.onnx: its weights or graph differ"):
        PerfVecScorer(other)
    with pytest.raises(ModelError, match="cannot read PerfVec model"):
        PerfVecScorer(tmp_path / "missing")
    with pytest.raises(SchemaMismatch, match=r"the model expects \[n, 8\]"):
        PerfVecScorer(directory).log_cycles(np.ones(8), np.ones((3, 4)))


def test_training_fits_exact_retimings_and_is_seeded(va_set, va_blocks):
    configs = sample_designs(24, seed=5)
    points = [DesignPoint((("design", i),), c) for i, c in enumerate(configs)]
    cycles = np.array([[sum(r.launch_cycles) for r in retime_points(va_set, points)]], dtype=np.float64)
    data = PerfVecData(("va",), ("va",), (va_blocks,), design_vector(configs, TIMELINE_PARAMETERS), cycles)
    first = train_perfvec(data, SMALL, epochs=60, patience=60, design_batch=8, seed=1, threads=1)
    assert first.val_losses[first.best_epoch] < first.val_losses[0] / 4
    assert first.train_losses[-1] < first.train_losses[0] / 4
    again = train_perfvec(data, SMALL, epochs=60, patience=60, design_batch=8, seed=1, threads=1)
    for (name, a), b in zip(first.model.state_dict().items(), again.model.state_dict().values()):
        assert torch.equal(a, b), name


def test_accuracy_counts_exact_pairs_only_and_ranks_designs_per_program():
    cycles = np.array([[100.0, 200.0, 300.0, np.nan], [50.0, 40.0, 30.0, 20.0]])
    perfect = accuracy(cycles, np.log(np.nan_to_num(cycles, nan=1.0)))
    assert perfect == {"mape": pytest.approx(0.0, abs=1e-9), "median_tau": 1.0, "pairs": 7, "programs": 2}
    reversed_second = np.log(np.array([[110.0, 220.0, 330.0, 1.0], [20.0, 30.0, 40.0, 50.0]]))
    scored = accuracy(cycles, reversed_second)
    assert scored["median_tau"] == 0.0  # taus 1 and -1
    assert scored["mape"] == pytest.approx(100 * (3 * 0.1 + 0.6 + 0.25 + 1 / 3 + 1.5) / 7)
