"""Training samples: the store's training view as arrays, with the L2P splits.

A sample is one (binary, DPUs, tasklets, size) run. Its input row is the binary's feature
vector under a feature schema followed by ``CONFIG_COLUMNS``: DPUs, tasklets, the nominal size,
the size the DPUs process (the nominal size after the host's padding, ``Workload.processed_size``:
PrIM's TS pads a small series to DPUs x tasklets x 256 elements) and the DPU launches one run of
the kernel's host program makes (MLP launches GEMV's binary once per layer), all as log2. Both
sizes: the time follows the processed size, the speedup target's baseline the nominal one. Its
targets are ``log(kernel seconds)`` and ``log(speedup)`` over the (O0, fewest DPUs, 1 tasklet)
baseline, in ``TARGETS`` order. Rows without a speedup (no baseline run of their kernel, size
and simulator config) are dropped entirely, so every sample has both targets and one split
serves every model variant; ``SampleSet.dropped`` counts them.
"""

from __future__ import annotations

import hashlib
import os
import zlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

import numpy as np

from cnmtune.costmodel.analysis.schema import FeatureSchema, model_schema
from cnmtune.errors import CnmtuneError, FeatureError, SchemaMismatch, StoreError
from cnmtune.store import Store
from cnmtune.table_file import read_parquet
from cnmtune.wording import counted

#: Configuration columns appended to the schema's features, part of a model's input contract.
CONFIG_COLUMNS: tuple[str, ...] = ("cfg:log2_dpus", "cfg:log2_tasklets", "cfg:log2_size",
                                   "cfg:log2_processed_size", "cfg:log2_launches")
#: Target names, in the column order of ``SampleSet.y`` (both natural logs).
TARGETS: tuple[str, ...] = ("runtime", "speedup")
#: The L2P split per kernel: train : validation : test.
SPLIT_RATIOS: tuple[int, int, int] = (3, 1, 1)


def input_columns(schema: FeatureSchema) -> tuple[str, ...]:
    """The model input columns for a schema: its feature names, then ``CONFIG_COLUMNS``."""
    return (*schema.names, *CONFIG_COLUMNS)


def input_matrix(features: Sequence[Mapping[str, float]], dpus: Sequence[int],
                 tasklets: Sequence[int], sizes: Sequence[int], processed_sizes: Sequence[int],
                 launches: Sequence[int], schema: FeatureSchema,
                 labels: Sequence[str] | None = None) -> np.ndarray:
    """Model inputs (float32, ``[n, len(input_columns(schema))]``) from feature dicts and run
    configurations (``sizes``: nominal; ``processed_sizes``: ``Workload.processed_size`` of each run).

    Raises SchemaMismatch when a feature dict does not follow ``schema`` and FeatureError on a
    NaN or infinite value; ``labels`` name the rows in that message.
    """
    n = len(features)
    values = np.empty((n, len(schema)), dtype=np.float64)
    for i, feats in enumerate(features):
        if tuple(feats) != schema.names:
            raise SchemaMismatch(f"{_label(labels, i)}: features do not follow schema "
                                 f"{schema.version} ({schema.hash})")
        values[i] = np.fromiter(feats.values(), dtype=np.float64, count=len(schema))
    return _inputs(values, (dpus, tasklets, sizes, processed_sizes, launches), schema, labels)


def _inputs(values: np.ndarray, configs: tuple[Sequence[int], ...], schema: FeatureSchema,
            labels: Sequence[str] | None) -> np.ndarray:
    """Feature values ``[n, len(schema)]`` with the configuration columns appended, checked finite."""
    n = len(values)
    out = np.empty((n, len(schema) + len(CONFIG_COLUMNS)), dtype=np.float64)
    out[:, :len(schema)] = values
    with np.errstate(divide="ignore", invalid="ignore"):  # log2(0) = -inf is reported below
        out[:, len(schema):] = np.log2(np.column_stack(configs).astype(np.float64))
    bad = np.argwhere(~np.isfinite(out))
    if len(bad):
        row, col = bad[0]
        columns = input_columns(schema)
        raise FeatureError(f"{_label(labels, row)}: input column {columns[col]} is {out[row, col]} "
                           f"({len(bad)} non-finite value(s) in {n} row(s))")
    return out.astype(np.float32)


def _label(labels: Sequence[str] | None, i: int) -> str:
    return labels[i] if labels is not None else f"row {i}"


@dataclass(frozen=True, eq=False)
class SampleSet:
    """Inputs ``X`` (float32 [n, columns]) and log targets ``y`` (float32 [n, 2]) with row keys.

    The arrays are read-only by convention (``data_hash`` is computed once); ``take`` and
    ``select`` return new sets.
    """

    X: np.ndarray
    y: np.ndarray
    kernels: np.ndarray      # str, one per row
    pipelines: np.ndarray    # str
    dpus: np.ndarray         # int64
    tasklets: np.ndarray     # int64
    sizes: np.ndarray        # int64
    schema: FeatureSchema
    dropped: int = field(default=0)
    elf_hashes: np.ndarray | None = None  # str, one per row (None: unknown)

    def __len__(self) -> int:
        return len(self.X)

    @property
    def columns(self) -> tuple[str, ...]:
        """Names of the columns of ``X``."""
        return input_columns(self.schema)

    @property
    def groups(self) -> list[tuple[str, int]]:
        """The ranking group of every row: (kernel, size)."""
        return list(zip(self.kernels.tolist(), self.sizes.tolist()))

    @property
    def configs(self) -> list[tuple[int, int, int]]:
        """The (DPUs, tasklets, size) configuration of every row."""
        return list(zip(self.dpus.tolist(), self.tasklets.tolist(), self.sizes.tolist()))

    @property
    def kernel_names(self) -> list[str]:
        """The distinct kernels, sorted."""
        return sorted(set(self.kernels.tolist()))

    @cached_property
    def data_hash(self) -> str:
        """sha256 of the bytes of X and y: identifies the training data in model metadata."""
        digest = hashlib.sha256(np.ascontiguousarray(self.X).tobytes())
        digest.update(np.ascontiguousarray(self.y).tobytes())
        return digest.hexdigest()

    def take(self, index: np.ndarray) -> SampleSet:
        """The rows selected by an index array or boolean mask, in that order."""
        return SampleSet(self.X[index], self.y[index], self.kernels[index], self.pipelines[index],
                         self.dpus[index], self.tasklets[index], self.sizes[index], self.schema,
                         elf_hashes=None if self.elf_hashes is None else self.elf_hashes[index])

    def select(self, kernels: Iterable[str] | None = None,
               exclude: Iterable[str] | None = None) -> SampleSet:
        """Only the rows of ``kernels`` (all when None), minus those of ``exclude``."""
        mask = np.ones(len(self), dtype=bool)
        if kernels is not None:
            wanted = set(kernels)
            unknown = sorted(wanted - set(self.kernel_names))
            if unknown:
                raise CnmtuneError(f"no samples of kernel(s) {', '.join(unknown)}; the data has "
                                   f"{', '.join(self.kernel_names) or 'no kernels'}")
            mask &= np.isin(self.kernels, sorted(wanted))
        if exclude is not None:
            mask &= ~np.isin(self.kernels, sorted(set(exclude)))
        return self.take(mask)

    def split(self, seed: int = 0, by_binary: bool = False) -> tuple[SampleSet, SampleSet, SampleSet]:
        """Train, validation and test sets, 3:1:1 within every kernel (the L2P protocol).

        Pipelines that emit the same ELF give rows with identical inputs and targets, so a
        plain row split puts copies of many test rows into the training set. ``by_binary``
        splits the distinct ELF hashes 3:1:1 instead (all configurations of a binary land in
        one part): no binary is both trained on and tested, the harder and honest number.
        """
        if by_binary and self.elf_hashes is None:
            raise CnmtuneError("a split by binary needs the samples' ELF hashes (load them from a store "
                               "or a Parquet export that has the elf_hash column)")
        parts: list[list[np.ndarray]] = [[], [], []]
        total = sum(SPLIT_RATIOS)
        for kernel in self.kernel_names:
            rows = np.flatnonzero(self.kernels == kernel)
            rng = _kernel_rng(seed, kernel)
            if by_binary:
                hashes, inverse = np.unique(self.elf_hashes[rows], return_inverse=True)
                order = rng.permutation(len(hashes))
                n_val = n_test = round(len(hashes) * SPLIT_RATIOS[1] / total)
                n_train = len(hashes) - n_val - n_test
                part_of = np.empty(len(hashes), dtype=np.int64)
                for i, chunk in enumerate(np.split(order, [n_train, n_train + n_val])):
                    part_of[chunk] = i
                for i, part in enumerate(parts):
                    part.append(rows[part_of[inverse] == i])
                continue
            rows = rng.permutation(rows)
            n_val = n_test = round(len(rows) * SPLIT_RATIOS[1] / total)
            n_train = len(rows) - n_val - n_test
            for part, chunk in zip(parts, np.split(rows, [n_train, n_train + n_val])):
                part.append(chunk)
        return tuple(self.take(np.sort(np.concatenate(p))) for p in parts)  # type: ignore[return-value]

    def fraction_split(self, fraction: float, seed: int = 0,
                       minimum: int = 8) -> tuple[SampleSet, SampleSet]:
        """A seeded random ``fraction`` of the rows (at least ``minimum``) and the rest."""
        if not 0.0 < fraction < 1.0:
            raise CnmtuneError(f"fraction must be in (0, 1), got {fraction}")
        if len(self) < 2:
            raise CnmtuneError(f"cannot split {len(self)} sample(s) into a fine-tuning and a rest set")
        count = min(max(round(fraction * len(self)), minimum), len(self) - 1)
        order = np.random.default_rng(seed).permutation(len(self))
        return self.take(np.sort(order[:count])), self.take(np.sort(order[count:]))


def runtime_samples(X: np.ndarray, runtime_s: Sequence[float], kernel: str, pipelines: Sequence[str],
                    dpus: Sequence[int], tasklets: Sequence[int], sizes: Sequence[int],
                    schema: FeatureSchema) -> SampleSet:
    """Samples measured outside a dataset (e.g. the tuner's runs): the runtime target only.

    The speedup target is NaN (no baseline run was made), which fine-tuning leaves out of the
    loss; such a set is for ``finetune_on``, not for the metrics of ``evaluate``.
    """
    seconds = np.asarray(runtime_s, dtype=np.float64)
    if len(seconds) != len(X) or not (np.isfinite(seconds).all() and (seconds > 0).all()):
        raise FeatureError(f"{kernel}: runtime samples need one positive, finite time per input row")
    y = np.column_stack([np.log(seconds), np.full(len(seconds), np.nan)]).astype(np.float32)
    return SampleSet(X=np.ascontiguousarray(X, dtype=np.float32), y=y, kernels=np.full(len(X), kernel),
                     pipelines=np.array(pipelines, dtype=str), dpus=np.array(dpus, dtype=np.int64),
                     tasklets=np.array(tasklets, dtype=np.int64), sizes=np.array(sizes, dtype=np.int64),
                     schema=schema)


def _kernel_rng(seed: int, kernel: str) -> np.random.Generator:
    # Seeded by (seed, kernel name), so a kernel's split does not depend on the other kernels.
    return np.random.default_rng([seed, zlib.crc32(kernel.encode())])


def load_samples(db: str | os.PathLike | Store, schema: FeatureSchema | None = None) -> SampleSet:
    """The training samples of a dataset store under ``schema`` (default: the model's, ``model_schema()``).

    ``db`` is a SQLite store, or a ``.parquet`` export of its training table with features
    (``cnmtune dataset export``, e.g. the shipped ``cnmtune/data/reference.parquet``).
    """
    schema = model_schema() if schema is None else schema
    if isinstance(db, Store):
        return _from_store(db, schema)
    if not Path(db).is_file():  # opening a Store would create an empty one
        raise StoreError(f"no dataset store at {db}")
    if Path(db).suffix.lower() == ".parquet":
        return _from_parquet(Path(db), schema)
    with Store(db) as store:
        return _from_store(store, schema)


def _from_parquet(path: Path, schema: FeatureSchema) -> SampleSet:
    table, meta = read_parquet(path)
    stored_hash = meta.get("cnmtune.feature_schema_hash")
    if stored_hash is not None and stored_hash != schema.hash:
        raise SchemaMismatch(f"{path}: features were exported under schema {stored_hash}, not "
                             f"{schema.version} ({schema.hash}); re-export it with this cnmtune version")
    names = tuple(c[2:] for c in table.column_names if c.startswith("f."))
    if not names:
        raise SchemaMismatch(f"{path}: no feature columns (f.<name>); export the training table with "
                             "features (`cnmtune dataset export DB OUT.parquet`)")
    if names != schema.names:
        raise SchemaMismatch(f"{path}: its {len(names)} feature columns do not follow schema "
                             f"{schema.version} ({schema.hash}, {len(schema)} features)")
    required = ("kernel", "pipeline", "defines", "elf_hash", "dpus", "tasklets", "size", "kernel_seconds",
                "speedup")
    missing = [c for c in required if c not in table.column_names]
    if missing:
        raise StoreError(f"{path}: not a cnmtune training table (no column {', '.join(missing)})")
    speedup = table.column("speedup").to_numpy(zero_copy_only=False)
    keep = ~np.isnan(speedup.astype(np.float64))
    if not keep.any():
        raise CnmtuneError(f"{path}: none of {len(keep)} sample(s) has a speedup baseline")
    col = {c: table.column(c).to_numpy(zero_copy_only=False)[keep] for c in required}
    labels = [f"{k}[{p}, {counted(d, 'DPU')}, {counted(t, 'tasklet')}, size {z}]" for k, p, d, t, z in
              zip(col["kernel"], col["pipeline"], col["dpus"], col["tasklets"], col["size"])]
    values = np.column_stack([table.column(f"f.{n}").to_numpy(zero_copy_only=False).astype(np.float64)[keep]
                              for n in names])
    processed, launches = _declared(col["kernel"], col["defines"], col["size"], col["dpus"], col["tasklets"])
    X = _inputs(values, (col["dpus"], col["tasklets"], col["size"], processed, launches), schema, labels)
    with np.errstate(divide="ignore", invalid="ignore"):
        y = np.log(np.column_stack([col["kernel_seconds"], col["speedup"]]).astype(np.float64))
    bad = np.flatnonzero(~np.isfinite(y).all(axis=1))
    if len(bad):
        raise FeatureError(f"{labels[bad[0]]}: non-finite log target (kernel seconds "
                           f"{col['kernel_seconds'][bad[0]]}, speedup {col['speedup'][bad[0]]})")
    return SampleSet(
        X=X, y=y.astype(np.float32), kernels=col["kernel"].astype(str), pipelines=col["pipeline"].astype(str),
        dpus=col["dpus"].astype(np.int64), tasklets=col["tasklets"].astype(np.int64),
        sizes=col["size"].astype(np.int64), schema=schema, dropped=int((~keep).sum()),
        elf_hashes=col["elf_hash"].astype(str))


def _declared(kernels: Sequence[str], defines: Sequence[str], sizes: Sequence[int], dpus: Sequence[int],
              tasklets: Sequence[int]) -> tuple[list[int], list[int]]:
    """(processed sizes, launches per run) of each row's run: its kernel workload's declarations."""
    from cnmtune.runtime.registry import declared_run

    try:
        runs = [declared_run(str(k), str(d or ""), int(z), int(n), int(t))
                for k, d, z, n, t in zip(kernels, defines, sizes, dpus, tasklets)]
    except CnmtuneError as err:
        raise CnmtuneError(f"the launches and processed size of a sample come from its kernel's workload: "
                           f"{err}") from err
    return [r.processed_size for r in runs], [r.launches for r in runs]


def _from_store(store: Store, schema: FeatureSchema) -> SampleSet:
    rows = store.training_view(schema.hash)
    if not rows:
        available = len(store.training_view())
        if available:
            raise SchemaMismatch(f"{store.path}: {available} training sample(s) but none has features "
                                 f"under schema {schema.version} ({schema.hash}); regenerate the dataset "
                                 "with this cnmtune version")
        raise CnmtuneError(f"{store.path}: no training samples (generate some with `cnmtune dataset generate`)")
    kept = [r for r in rows if r.speedup is not None]
    if not kept:
        raise CnmtuneError(f"{store.path}: none of {len(rows)} sample(s) has a speedup baseline "
                           "(an O0 run with 1 tasklet, on the fewest DPUs, of the same kernel and size)")
    labels = [f"{r.kernel}[{r.pipeline}, {counted(r.dpus, 'DPU')}, {counted(r.tasklets, 'tasklet')}, size {r.size}]"
              for r in kept]
    processed, launches = _declared(*zip(*((r.kernel, r.defines, r.size, r.dpus, r.tasklets) for r in kept)))
    X = input_matrix([r.features for r in kept], [r.dpus for r in kept], [r.tasklets for r in kept],
                     [r.size for r in kept], processed, launches, schema, labels)
    y = np.log(np.array([[r.kernel_seconds, r.speedup] for r in kept], dtype=np.float64))
    bad = np.flatnonzero(~np.isfinite(y).all(axis=1))
    if len(bad):
        raise FeatureError(f"{labels[bad[0]]}: non-finite log target (kernel seconds "
                           f"{kept[bad[0]].kernel_seconds}, speedup {kept[bad[0]].speedup})")
    return SampleSet(
        X=X, y=y.astype(np.float32),
        kernels=np.array([r.kernel for r in kept], dtype=str),
        pipelines=np.array([r.pipeline for r in kept], dtype=str),
        dpus=np.array([r.dpus for r in kept], dtype=np.int64),
        tasklets=np.array([r.tasklets for r in kept], dtype=np.int64),
        sizes=np.array([r.size for r in kept], dtype=np.int64),
        schema=schema, dropped=len(rows) - len(kept),
        elf_hashes=np.array([r.elf_hash for r in kept], dtype=str))
