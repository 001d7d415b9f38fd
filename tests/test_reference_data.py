"""The shipped reference dataset (cnmtune/data/reference.parquet, v3) matches what it claims."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from cnmtune.costmodel import model_schema
from cnmtune.runtime.registry import expand_kernels, find_kernel

REFERENCE = Path(__file__).resolve().parents[1] / "cnmtune" / "data" / "reference.parquet"
COLUMNS = ("kernel", "pipeline", "defines", "elf_hash", "dpus", "tasklets", "size", "config_hash",
           "kernel_seconds", "speedup")


@pytest.fixture(scope="module")
def table():
    return pq.read_table(REFERENCE, columns=list(COLUMNS)).to_pydict()


def test_reference_covers_every_kernel_over_sizes_knobs_and_the_tuners_grid(table):
    kernels = set(table["kernel"])
    assert kernels == set(expand_kernels(["prim", "pim-ml"]))
    sizes, pipelines = {}, {}
    for kernel, pipeline, size in zip(table["kernel"], table["pipeline"], table["size"]):
        sizes.setdefault(kernel, set()).add(size)
        pipelines.setdefault(kernel, set()).add(pipeline)
    for kernel in kernels:  # a ladder up to the default preset (fewer where MRAM or the per-DPU limit stops it)
        workload = find_kernel(kernel).workload
        assert len(sizes[kernel]) >= 3 and min(sizes[kernel]) == workload.preset("small"), kernel
        assert {"O0", "O1", "O2", "O3", "O2,unroll-count=8"} <= pipelines[kernel] and len(pipelines[kernel]) >= 40
    assert set(table["dpus"]) == {1, 4, 16, 64} and set(table["tasklets"]) == {1, 2, 4, 8, 16, 20, 24}
    assert any(t < d for d, t in zip(table["dpus"], table["tasklets"]))  # beyond L2P's tasklets >= DPUs


def test_reference_features_follow_the_current_schema():
    schema = model_schema()
    file = pq.ParquetFile(REFERENCE)
    assert file.schema_arrow.metadata[b"cnmtune.feature_schema_hash"] == schema.hash.encode()
    assert [c for c in file.schema_arrow.names if c.startswith("f.")] == [f"f.{name}" for name in schema.names]


def test_reference_targets_are_consistent_and_mlp_is_not_gemv(table):
    seconds = np.asarray(table["kernel_seconds"], dtype=np.float64)
    speedup = np.asarray([np.nan if s is None else s for s in table["speedup"]], dtype=np.float64)
    assert np.all(seconds > 0) and np.isfinite(speedup).mean() > 0.999 and np.all(speedup[np.isfinite(speedup)] > 0)
    # the baseline of a (kernel, size): the fastest O0 run at 1 tasklet on the fewest DPUs that have one
    base: dict[tuple, tuple[int, float]] = {}
    for s, k, z, p, d, t in zip(speedup, table["kernel"], table["size"], table["pipeline"], table["dpus"],
                                table["tasklets"]):
        if p == "O0" and t == 1 and np.isfinite(s):
            fewest, best = base.get((k, z), (d, s))
            base[(k, z)] = (d, s) if d < fewest else (fewest, max(best, s) if d == fewest else best)
    with_speedup = {(k, z) for k, z, s in zip(table["kernel"], table["size"], speedup) if np.isfinite(s)}
    assert set(base) == with_speedup and len(with_speedup) >= 70  # a few sampling-check runs have no baseline
    assert all(s == pytest.approx(1.0) for _, s in base.values())
    # gemv and mlp build the same binaries; mlp launches them once per layer (3 times)
    gemv = {key: s for key, s in _keyed(table, "gemv")}
    ratios = [s / gemv[key] for key, s in _keyed(table, "mlp") if key in gemv]
    assert len(ratios) > 1000 and 2.4 < min(ratios) and max(ratios) < 3.1


def _keyed(table, kernel):
    for i, k in enumerate(table["kernel"]):
        if k == kernel:
            yield (table["elf_hash"][i], table["dpus"][i], table["tasklets"][i], table["size"][i],
                   table["config_hash"][i]), table["kernel_seconds"][i]


@pytest.mark.parametrize(("kernel", "pipeline", "dpus", "tasklets"),
                         [("va", "O2,unroll-count=4", 4, 16), ("mlp", "O0", 1, 4)])
def test_reference_rows_reproduce_with_this_code(kernel, pipeline, dpus, tasklets):
    """Rebuilt and re-simulated now, a row at the kernel's small size gives its recorded ELF,
    features and cycles: the shipped data (and the model trained on it) follow the current
    toolchain, lowering and timing model."""
    from cnmtune.costmodel import model_features
    from cnmtune.runtime.execute import run_binary
    from cnmtune.runtime.sim.config import DpuConfig
    from cnmtune.runtime.toolchain import ProxyToolchain, Variant
    from cnmtune.store import defines_key

    found = find_kernel(kernel)
    defines = dict(found.workload.defines)
    rows = pq.read_table(REFERENCE, filters=(pc.field("kernel") == kernel) & (pc.field("pipeline") == pipeline)
                         & (pc.field("dpus") == dpus) & (pc.field("tasklets") == tasklets)
                         & (pc.field("size") == found.workload.preset("small"))
                         & (pc.field("defines") == defines_key(defines))).to_pylist()
    assert len(rows) == 1
    row = rows[0]
    binary = ProxyToolchain().compile(Variant.of(found, pipeline, tasklets, defines))
    assert binary.elf_hash == row["elf_hash"]
    config = DpuConfig.calibrated()
    assert config.hash == row["config_hash"]
    result = run_binary(binary, dpus, row["size"], config)
    assert result.verified and result.cycles == row["cycles"]
    schema = model_schema()
    features = model_features(binary.elf_path).vector(schema)
    np.testing.assert_array_equal(features, [row[f"f.{name}"] for name in schema.names])
