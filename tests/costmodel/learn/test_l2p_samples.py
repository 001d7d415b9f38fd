"""Training samples from a real dataset store: arrays, splits, hashes and refusals."""

from __future__ import annotations

import hashlib
import sqlite3

import numpy as np
import pytest

from cnmtune.costmodel import model_schema
from cnmtune.costmodel.learn.samples import CONFIG_COLUMNS, input_matrix, load_samples
from cnmtune.errors import CnmtuneError, FeatureError, SchemaMismatch, StoreError
from cnmtune.store import Store


def test_arrays_follow_the_store(samples, l2p_db):
    schema = model_schema()
    with Store(l2p_db) as store:
        rows = [r for r in store.training_view(schema.hash) if r.speedup is not None]
    assert len(samples) == len(rows) > 100 and samples.dropped == 0
    assert samples.columns == (*schema.names, *CONFIG_COLUMNS) and samples.X.shape == (len(rows), len(samples.columns))
    assert samples.X.dtype == np.float32 and samples.y.dtype == np.float32 and samples.y.shape == (len(rows), 2)
    first = rows[0]
    np.testing.assert_allclose(samples.X[0, :len(schema)], list(first.features.values()), rtol=1e-6)
    # va and red pad nothing: their processed size is the nominal one
    np.testing.assert_allclose(samples.X[0, len(schema):], np.log2([first.dpus, first.tasklets, first.size, first.size, 1]))
    np.testing.assert_allclose(samples.y[0], np.log([first.kernel_seconds, first.speedup]), rtol=1e-6)
    assert samples.kernel_names == ["red", "va"]
    assert set(samples.groups) == {("red", first.size), ("va", first.size)}
    assert samples.configs[0] == (first.dpus, first.tasklets, first.size)


def keys(part) -> set:
    """(kernel, pipeline, DPUs, tasklets, size): unique per sample."""
    return set(zip(part.kernels.tolist(), part.pipelines.tolist(), part.configs))


def test_split_is_3_1_1_per_kernel_and_partitions_the_rows(samples):
    parts = samples.split(seed=0)
    for kernel in samples.kernel_names:
        n = int(np.sum(samples.kernels == kernel))
        counts = [int(np.sum(part.kernels == kernel)) for part in parts]
        assert counts[1] == counts[2] == round(n / 5) and sum(counts) == n
    assert len(keys(samples)) == len(samples)
    assert set().union(*map(keys, parts)) == keys(samples) and sum(map(len, parts)) == len(samples)


def test_split_is_seeded_and_per_kernel(samples):
    hashes = [p.data_hash for p in samples.split(seed=0)]
    assert hashes == [p.data_hash for p in samples.split(seed=0)]
    assert hashes != [p.data_hash for p in samples.split(seed=1)]
    # A kernel's split does not depend on which other kernels are loaded.
    assert samples.select(["va"]).split(seed=0)[0].data_hash == samples.split(seed=0)[0].select(["va"]).data_hash


def test_fraction_split_keeps_a_minimum_and_is_seeded(samples):
    va = samples.select(["va"])
    chosen, rest = va.fraction_split(0.01, seed=0)
    assert len(chosen) == 8 and len(rest) == len(va) - 8
    again, _ = va.fraction_split(0.01, seed=0)
    assert chosen.data_hash == again.data_hash != va.fraction_split(0.01, seed=1)[0].data_hash
    big, _ = va.fraction_split(0.5, seed=0)
    assert len(big) == round(len(va) / 2)
    with pytest.raises(CnmtuneError, match="fraction"):
        va.fraction_split(1.5)


def test_select_and_exclude(samples):
    assert samples.select(exclude=["va"]).kernel_names == ["red"]
    assert len(samples.select(["va", "red"])) == len(samples)
    with pytest.raises(CnmtuneError, match="no samples of kernel.*nope"):
        samples.select(["nope"])


def test_data_hash_is_sha256_of_the_arrays(samples):
    assert samples.data_hash == hashlib.sha256(samples.X.tobytes() + samples.y.tobytes()).hexdigest()
    changed = samples.take(np.arange(len(samples)))
    assert changed.data_hash == samples.data_hash
    changed.y[0, 0] += 1.0
    assert changed.take(np.arange(len(samples))).data_hash != samples.data_hash


def test_other_schema_is_a_schema_mismatch(l2p_db):
    other = model_schema(loop_weight=3.0)
    with pytest.raises(SchemaMismatch, match=f"none has features under schema .*{other.hash}"):
        load_samples(l2p_db, other)


def test_empty_or_missing_store_is_a_clear_error(tmp_path):
    Store(tmp_path / "empty.sqlite").close()
    with pytest.raises(CnmtuneError, match="no training samples") as info:
        load_samples(tmp_path / "empty.sqlite")
    assert not isinstance(info.value, SchemaMismatch)
    with pytest.raises(StoreError, match="no dataset store at"):
        load_samples(tmp_path / "missing.sqlite")
    assert not (tmp_path / "missing.sqlite").exists()


def test_nan_feature_is_refused_with_its_sample_and_column(l2p_db, tmp_path):
    copy = tmp_path / "copy.sqlite"
    with sqlite3.connect(l2p_db) as source, sqlite3.connect(copy) as target:
        source.backup(target)
    schema = model_schema()
    with Store(copy) as store:
        row = store.training_view(schema.hash)[0]
        store.record_features(row.elf_hash, schema.hash, {**row.features, "op:add": float("nan")})
    with pytest.raises(FeatureError, match=rf"{row.kernel}\[{row.pipeline}.*op:add is nan"):
        load_samples(copy)


def test_input_matrix_refuses_foreign_feature_names():
    schema = model_schema()
    with pytest.raises(SchemaMismatch, match="do not follow schema"):
        input_matrix([{"op:add": 1.0}], [1], [1], [1024], [1024], [1], schema)
    with pytest.raises(FeatureError, match="cfg:log2_dpus is -inf"):
        input_matrix([dict.fromkeys(schema.names, 0.0)], [0], [1], [1024], [1024], [1], schema)


# -- Parquet exports (the shipped reference dataset) and the split by binary ------------------

@pytest.fixture(scope="module")
def parquet(l2p_db, tmp_path_factory):
    """The training table of the test store exported as `cnmtune dataset export` writes it."""
    schema = model_schema()
    path = tmp_path_factory.mktemp("parquet") / "train.parquet"
    with Store(l2p_db) as store:
        store.export(path, "training", schema.hash, {"cnmtune.feature_schema_hash": schema.hash})
    return path


def test_parquet_export_loads_the_same_samples(parquet, samples):
    loaded = load_samples(parquet)
    assert loaded.data_hash == samples.data_hash and len(loaded) == len(samples)
    for name in ("kernels", "pipelines", "dpus", "tasklets", "sizes", "elf_hashes"):
        np.testing.assert_array_equal(getattr(loaded, name), getattr(samples, name))
    assert loaded.split(0)[2].data_hash == samples.split(0)[2].data_hash


def test_parquet_of_another_schema_is_refused(parquet, tmp_path):
    import pyarrow.parquet

    with pytest.raises(SchemaMismatch, match="exported under schema"):
        load_samples(parquet, model_schema(loop_weight=3.0))
    table = pyarrow.parquet.read_table(parquet)
    renamed = table.rename_columns([c.replace("f.op:add", "f.op:plus") for c in table.column_names])
    pyarrow.parquet.write_table(renamed.replace_schema_metadata({}), tmp_path / "renamed.parquet")
    with pytest.raises(SchemaMismatch, match="feature columns do not follow schema"):
        load_samples(tmp_path / "renamed.parquet")
    pyarrow.parquet.write_table(table.select(["kernel", "speedup"]), tmp_path / "bare.parquet")
    with pytest.raises(SchemaMismatch, match="no feature columns"):
        load_samples(tmp_path / "bare.parquet")
    (tmp_path / "junk.parquet").write_bytes(b"PAR1 nothing here")
    with pytest.raises(StoreError, match="not a readable Parquet file"):
        load_samples(tmp_path / "junk.parquet")


def test_split_by_binary_keeps_every_elf_in_one_part(samples):
    parts = samples.split(seed=0, by_binary=True)
    assert sum(map(len, parts)) == len(samples) and len(set().union(*map(keys, parts))) == len(samples)
    elfs = [set(p.elf_hashes.tolist()) for p in parts]
    assert not (elfs[0] & elfs[1] or elfs[0] & elfs[2] or elfs[1] & elfs[2])
    for kernel in samples.kernel_names:  # 3:1:1 over the kernel's distinct binaries
        n = len(set(samples.select([kernel]).elf_hashes.tolist()))
        assert [len(set(p.select([kernel]).elf_hashes.tolist())) for p in parts][1] == round(n / 5)
    assert [p.data_hash for p in parts] == [p.data_hash for p in samples.split(seed=0, by_binary=True)]
    unknown = samples.take(np.arange(len(samples)))
    object.__setattr__(unknown, "elf_hashes", None)
    with pytest.raises(CnmtuneError, match="needs the samples' ELF hashes"):
        unknown.split(0, by_binary=True)
