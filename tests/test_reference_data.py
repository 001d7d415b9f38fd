"""The shipped reference dataset (cnmtune/data/reference.parquet) matches what it claims."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from cnmtune.costmodel import model_schema
from cnmtune.runtime.registry import expand_kernels

REFERENCE = Path(__file__).resolve().parents[1] / "cnmtune" / "data" / "reference.parquet"


@pytest.fixture(scope="module")
def table():
    return pq.read_table(REFERENCE)


def test_reference_covers_every_kernel_with_the_l2p_grid(table):
    kernels = table.column("kernel").to_pylist()
    assert set(kernels) == set(expand_kernels(["prim", "pim-ml"]))
    pipelines = {}
    configs = {}
    for kernel, pipeline, dpus, tasklets in zip(kernels, table.column("pipeline").to_pylist(),
                                                table.column("dpus").to_pylist(),
                                                table.column("tasklets").to_pylist()):
        pipelines.setdefault(kernel, set()).add(pipeline)
        configs.setdefault(kernel, set()).add((dpus, tasklets))
        assert tasklets >= dpus
    assert all(len(p) >= 100 and {"O0", "O1", "O2", "O3"} <= p for p in pipelines.values())
    full = {(d, t) for d in (1, 2, 4, 8, 16) for t in (1, 2, 4, 8, 16) if t >= d}
    assert all(c == full or c == {(d, t) for d, t in full if t < 16} for c in configs.values())


def test_reference_features_follow_the_current_schema(table):
    schema = model_schema()
    assert table.schema.metadata[b"cnmtune.feature_schema_hash"] == schema.hash.encode()
    feature_columns = [c for c in table.column_names if c.startswith("f.")]
    assert feature_columns == [f"f.{name}" for name in schema.names]


def test_reference_targets_are_consistent(table):
    seconds = np.asarray(table.column("kernel_seconds").to_pylist())
    speedup = np.asarray(table.column("speedup").to_pylist())
    assert np.all(seconds > 0) and np.all(np.isfinite(speedup)) and np.all(speedup > 0)
    base = [(s, k) for s, k, p, d, t in zip(speedup, table.column("kernel").to_pylist(),
                                           table.column("pipeline").to_pylist(),
                                           table.column("dpus").to_pylist(),
                                           table.column("tasklets").to_pylist())
            if p == "O0" and d == 1 and t == 1]
    assert len(base) == 20 and all(s == pytest.approx(1.0) for s, _ in base)


@pytest.mark.parametrize(("kernel", "pipeline", "dpus", "tasklets"), [("va", "O2", 2, 16), ("red", "O0", 1, 4)])
def test_reference_rows_reproduce_with_this_code(table, kernel, pipeline, dpus, tasklets):
    """Rebuilt and re-simulated now, a row gives its recorded ELF, features and cycles: the shipped
    data (and the model trained on it) follow the current toolchain, lowering and timing model."""
    from cnmtune.costmodel import model_features
    from cnmtune.runtime.execute import run_binary
    from cnmtune.runtime.registry import find_kernel
    from cnmtune.runtime.sim.config import DpuConfig
    from cnmtune.runtime.toolchain import ProxyToolchain, Variant

    rows = table.filter((pc.field("kernel") == kernel) & (pc.field("pipeline") == pipeline)
                        & (pc.field("dpus") == dpus) & (pc.field("tasklets") == tasklets)).to_pylist()
    assert len(rows) == 1
    row = rows[0]
    binary = ProxyToolchain().compile(Variant.of(find_kernel(kernel), pipeline, tasklets))
    assert binary.elf_hash == row["elf_hash"]
    config = DpuConfig.calibrated()
    assert config.hash == row["config_hash"]
    result = run_binary(binary, dpus, row["size"], config)
    assert result.verified and result.cycles == row["cycles"]
    schema = model_schema()
    features = model_features(binary.elf_path).vector(schema)
    np.testing.assert_array_equal(features, [row[f"f.{name}"] for name in schema.names])
