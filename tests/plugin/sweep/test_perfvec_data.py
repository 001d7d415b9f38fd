"""PerfVec training data: a variant recorded once and re-timed exactly under sampled designs, in the
store's re-timing tables; resumable; failures recorded once; read back as PerfVecData."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from cnmtune.plugin.sweep.design import DesignPoint
from cnmtune.plugin.sweep.evaluate import sweep_trace_set
from cnmtune.plugin.sweep.perfvec_data import RetimeSpec, generate_retimes, training_data
from cnmtune.runtime.sim.design_space import TIMELINE_PARAMETERS, design_vector, sample_designs
from cnmtune.runtime.sim.traces import load_trace_set
from cnmtune.store import Store
from cnmtune.store_retimes import designs, retimes, trace_sets
from tests.conftest import VA_DIR


@pytest.fixture(scope="module")
def generated(tmp_path_factory, toolchain):
    """va (its default build) on 1 DPU at its small size, re-timed under 3 designs."""
    root = tmp_path_factory.mktemp("perfvec-data")
    spec = RetimeSpec(kernels=("va",), designs=3, design_seed=4)
    with Store(root / "store.sqlite") as store:
        report = generate_retimes(store, spec, root / "traces", toolchain)
    return root, spec, report


def test_a_variant_is_recorded_once_and_retimed_exactly_under_each_design(generated):
    root, spec, report = generated
    assert (report.units, report.recorded, report.failed, report.retimed, report.invalid) == (1, 1, 0, 3, 0)
    configs = sample_designs(3, seed=4)
    with Store(root / "store.sqlite") as store:
        assert [d.hash for d in designs(store)] == [c.full_hash for c in configs]
        [unit] = trace_sets(store)
        rows = {r.design_hash: r for r in retimes(store)}
    assert unit.status == "ok" and unit.kernel == "va" and unit.launches == 1
    trace_set = load_trace_set(unit.directory)
    # the same cycles and seconds as the sweep's own re-timing of each design
    swept = sweep_trace_set(trace_set, [DesignPoint((("design", i),), c) for i, c in enumerate(configs)])
    for config, result in zip(configs, swept.results):
        row = rows[config.full_hash]
        assert result.method == "retimed" and row.ok
        assert row.cycles == sum(result.launch_cycles)
        assert (row.kernel_seconds, row.transfer_seconds) == (result.kernel_s, result.transfer_s)
    assert len({r.cycles for r in rows.values()}) == 3  # the designs change the time


def test_a_second_generation_retimes_only_the_new_designs(generated, toolchain):
    root, spec, _ = generated
    with Store(root / "store.sqlite") as store:
        before = {(r.unit, r.design_hash): r for r in retimes(store)}
        report = generate_retimes(store, RetimeSpec(kernels=("va",), designs=5, design_seed=4), root / "traces",
                                  toolchain)
        after = {(r.unit, r.design_hash): r for r in retimes(store)}
    assert (report.recorded, report.retimed) == (0, 2)  # loaded, not recorded again
    assert len(after) == 5 and all(after[key] == row for key, row in before.items())


def test_training_data_reads_the_store_back(generated):
    root, _, _ = generated
    with Store(root / "store.sqlite") as store:
        data, configs = training_data(store)
    assert data.kernels == ("va",) and data.cycles.shape == (1, len(configs)) and np.isfinite(data.cycles).all()
    np.testing.assert_array_equal(data.designs, design_vector(configs, TIMELINE_PARAMETERS))
    assert len(data.programs[0]) > 0


def test_a_variant_that_cannot_be_recorded_is_stored_once_with_its_cause(tmp_path, toolchain):
    broken = tmp_path / "va-broken"
    shutil.copytree(VA_DIR, broken)
    shutil.copytree(VA_DIR.parent / "common", tmp_path / "common")  # the suite's shared headers
    source = next((broken / "dpu").glob("*.c"))
    source.write_text(source.read_text() + "\nint broken(void) { return undeclared_name; }\n")
    spec = RetimeSpec(kernels=(str(broken),), designs=2)
    with Store(tmp_path / "store.sqlite") as store:
        first = generate_retimes(store, spec, tmp_path / "traces", toolchain)
        again = generate_retimes(store, spec, tmp_path / "traces", toolchain)
        [unit] = trace_sets(store)
        assert not retimes(store)
    assert (first.failed, first.recorded, again.failed) == (1, 0, 1)
    assert unit.status == "compile_error" and "undeclared_name" in unit.error and unit.directory is None
