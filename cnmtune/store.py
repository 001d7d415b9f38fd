"""The dataset store: every compile, feature vector and run recorded in one SQLite file.

One file, WAL journal, versioned schema (``PRAGMA user_version``) migrated step by step, one
transaction per step. Every write runs in one ``BEGIN IMMEDIATE`` transaction (``batch()``),
so a crash mid-batch leaves no partial rows, and every ``record_*`` is an upsert on its
natural key, so re-running a generation is idempotent. Lookups by natural key hit unique
indexes: "is this done?" is one indexed query.

Concurrency: open one ``Store`` per process (or per thread; a connection is not shared across
threads). Any number of processes may write to the same file at once; writers queue on the
SQLite lock for up to ``timeout`` seconds. WAL needs a local filesystem (not NFS).

Claims let writers share work instead of repeating it: a unit of work (any text key) is claimed
in one transaction by a ``ClaimOwner`` (host, pid, start time) under a lease the owner renews.
Another owner skips a claimed unit unless the lease expired or the owner's process is gone
from this host; the owner releases it in the transaction that records its result.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import astuple, dataclass, fields
from enum import StrEnum
from pathlib import Path
from typing import Self

from cnmtune.claims import ClaimOwner
from cnmtune.errors import CnmtuneError, SchemaMismatch, StoreError
from cnmtune.store_schema import MIGRATIONS, SCHEMA_VERSION
from cnmtune.table_file import write_table

__all__ = [
    "SCHEMA_VERSION", "ClaimOwner", "CompileRecord", "RunRecord", "Status", "Store", "StoreError",
    "StoreStats", "TrainingRow", "canonical_pipeline", "defines_key",
]


class Status(StrEnum):
    """Outcome of a compile or a run; everything but OK is excluded from training."""

    OK = "ok"
    COMPILE_ERROR = "compile_error"
    IRAM_OVERFLOW = "iram_overflow"
    WRAM_OVERFLOW = "wram_overflow"
    FAULT = "fault"
    TIMEOUT = "timeout"
    WRONG_RESULT = "wrong_result"
    ERROR = "error"


BASELINE_PIPELINE = "O0"
#: Appended to a simulator config hash to key runs that simulated only some DPUs (sim-sampled).
SAMPLED_SUFFIX = "+sampled"
_TRAINING_PARAMS = {"baseline": BASELINE_PIPELINE, "sampled": SAMPLED_SUFFIX}  # _TRAINING_SQL's, but :schema


def sampled_config_hash(config_hash: str) -> str:
    """The store key of sampled runs under a simulator config: not the full runs its hash keys."""
    return config_hash + SAMPLED_SUFFIX


def canonical_pipeline(text: str) -> str:
    """Canonical pipeline text ('-O2' -> 'O2'); text outside the vocabulary is kept, trimmed."""
    from cnmtune.passes.pipeline import Pipeline

    try:
        return Pipeline.parse(text).text
    except CnmtuneError:
        return ",".join(p.strip() for p in text.strip().split(","))


def defines_key(defines: Mapping[str, object] | None) -> str:
    """Canonical key of a set of -D defines: 'A=1;B' sorted by name ('' for none)."""
    if not defines:
        return ""
    return ";".join(k if v is None else f"{k}={v}" for k, v in sorted(defines.items()))


@dataclass(frozen=True)
class CompileRecord:
    """One compile of a kernel under a pipeline, defines and tasklet count."""

    kernel: str
    pipeline: str
    defines: str
    tasklets: int
    elf_hash: str | None
    status: Status
    error: str = ""
    seconds: float = 0.0
    iram_bytes: int | None = None

    @property
    def ok(self) -> bool:
        """True when the compile produced a usable binary."""
        return self.status is Status.OK


@dataclass(frozen=True)
class RunRecord:
    """One simulated (or real) run of a kernel's host program with a binary, on a DPU configuration
    and input size; ``defines`` the compile's (as CompileRecord's, the host reads them too) and
    ``params`` the workload parameters (both in ``defines_key`` form). ``config_hash`` names the
    timing its kernel time was simulated under (DpuConfig.hash), ``link_hash`` the link model that
    priced its transfer time (DpuConfig.link_hash): a refitted link model keeps the kernel time."""

    kernel: str
    elf_hash: str
    dpus: int
    tasklets: int
    size: int
    config_hash: str
    status: Status
    cycles: int | None = None
    kernel_seconds: float | None = None
    transfer_seconds: float | None = None
    verified: bool = False
    error: str = ""
    seconds: float = 0.0
    device: str = ""
    defines: str = ""
    params: str = ""
    link_hash: str = ""  # DpuConfig.link_hash of the link model that priced transfer_seconds

    @property
    def ok(self) -> bool:
        """True when the run finished and its result was verified."""
        return self.status is Status.OK and self.verified


@dataclass(frozen=True)
class TrainingRow:
    """One training sample: a valid compile joined with a verified run (and its features)."""

    kernel: str
    pipeline: str
    defines: str
    elf_hash: str
    dpus: int
    tasklets: int
    size: int
    config_hash: str
    cycles: int | None
    kernel_seconds: float
    transfer_seconds: float | None
    link_hash: str
    speedup: float | None
    features: Mapping[str, float] | None = None


@dataclass(frozen=True)
class StoreStats:
    """Counts of a store: per kernel, per status, and how often binaries repeat."""

    pipelines: int
    compiles: int
    runs: int
    features: int
    distinct_elfs: int
    compiles_per_kernel: Mapping[str, int]
    runs_per_kernel: Mapping[str, int]
    compile_status: Mapping[str, int]
    run_status: Mapping[str, int]
    duplicate_binary_ratio: float
    samples: int = 0
    generations: int = 0
    generation_seconds: float = 0.0
    generated_runs: int = 0

    @property
    def samples_per_second(self) -> float:
        """Training samples in the store per second of recorded generation (wall clock)."""
        return self.samples / self.generation_seconds if self.generation_seconds else 0.0

    @property
    def simulations_per_second(self) -> float:
        """Runs recorded by generation sessions per second of their wall clock."""
        return self.generated_runs / self.generation_seconds if self.generation_seconds else 0.0


_COMPILE_SELECT = (
    "SELECT c.kernel, p.text, c.defines, c.tasklets, c.elf_hash, c.status, c.error,"
    " c.seconds, c.iram_bytes FROM compiles c JOIN pipelines p ON p.id = c.pipeline_id"
)
_RUN_COLUMNS = ("kernel, elf_hash, dpus, tasklets, size, config_hash, status, cycles, kernel_seconds,"
                " transfer_seconds, verified, error, seconds, device, defines, params, link_hash")
_RUN_NAMES = _RUN_COLUMNS.replace(" ", "").split(",")
_RUN_KEY = ("kernel", "defines", "params", "elf_hash", "dpus", "tasklets", "size", "config_hash")
_RUN_UPSERT = (
    f"INSERT INTO runs ({_RUN_COLUMNS}) VALUES ({', '.join('?' * len(_RUN_NAMES))})"
    f" ON CONFLICT ({', '.join(_RUN_KEY)}) DO UPDATE SET "
    + ", ".join(f"{c} = excluded.{c}" for c in _RUN_NAMES if c not in _RUN_KEY)
)
_TRAINING_SQL = """
WITH good AS (
  SELECT c.kernel, p.text AS pipeline, c.defines, r.elf_hash, r.dpus, r.tasklets, r.size,
         r.config_hash, r.cycles, r.kernel_seconds, r.transfer_seconds, r.link_hash
  FROM compiles c JOIN pipelines p ON p.id = c.pipeline_id
  JOIN runs r ON r.kernel = c.kernel AND r.defines = c.defines AND r.elf_hash = c.elf_hash
    AND r.tasklets = c.tasklets AND r.params = ''
  WHERE c.status = 'ok' AND r.status = 'ok' AND r.kernel_seconds > 0
    AND (r.verified = 1 OR (r.device = 'sim-sampled' AND EXISTS (
      SELECT 1 FROM runs v WHERE v.kernel = r.kernel AND v.defines = r.defines AND v.elf_hash = r.elf_hash
        AND v.verified = 1)))
), fewest AS (
  SELECT kernel, size, REPLACE(config_hash, :sampled, '') AS sim, MIN(dpus) AS dpus FROM good
  WHERE pipeline = :baseline AND tasklets = 1 GROUP BY kernel, size, sim
), base AS (
  SELECT g.kernel, g.size, f.sim, MIN(g.kernel_seconds) AS seconds
  FROM good g JOIN fewest f ON f.kernel = g.kernel AND f.size = g.size
    AND f.sim = REPLACE(g.config_hash, :sampled, '') AND f.dpus = g.dpus
  WHERE g.pipeline = :baseline AND g.tasklets = 1 GROUP BY g.kernel, g.size, f.sim
)
SELECT g.*, b.seconds / g.kernel_seconds AS speedup {feat_cols}
FROM good g LEFT JOIN base b
  ON b.kernel = g.kernel AND b.size = g.size AND b.sim = REPLACE(g.config_hash, :sampled, '')
{feat_join}
ORDER BY g.kernel, g.size, g.pipeline, g.defines, g.dpus, g.tasklets, g.config_hash
"""


class Store:
    """The SQLite dataset store; a context manager that closes its connection."""

    def __init__(self, path: str | os.PathLike, timeout: float = 60.0):
        """Open (creating or migrating) the store at ``path``."""
        self.path = Path(path)
        self._depth = 0
        self._conn = None
        try:
            self._conn = sqlite3.connect(self.path, timeout=timeout, isolation_level=None)
            self._conn.execute(f"PRAGMA busy_timeout = {int(timeout * 1000)}")
            self._enable_wal(timeout)
            self._conn.execute("PRAGMA synchronous = NORMAL")
            self._conn.execute("PRAGMA foreign_keys = ON")
        except sqlite3.DatabaseError as exc:
            if self._conn is not None:
                self._conn.close()
            raise StoreError(f"cannot open store {self.path}: {_why(self.path, exc)}") from exc
        try:
            self._migrate()
        except BaseException as exc:
            self._conn.close()
            if isinstance(exc, sqlite3.DatabaseError):
                raise StoreError(f"cannot open store {self.path}: {_why(self.path, exc)}") from exc
            raise

    def _enable_wal(self, timeout: float) -> None:
        # Switching a new file to WAL takes an exclusive lock that SQLite's busy handler does
        # not wait for: processes opening the same new store at once retry here instead.
        deadline = time.monotonic() + timeout
        while True:
            try:
                self._conn.execute("PRAGMA journal_mode = WAL")
                return
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) or time.monotonic() > deadline:
                    raise
                time.sleep(0.01)

    # -- lifecycle ------------------------------------------------------------------------

    def close(self) -> None:
        """Close the connection."""
        self._conn.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        self.close()
        if isinstance(exc, sqlite3.DatabaseError):  # a page read or written inside the block
            raise StoreError(f"{self.path}: {_why(self.path, exc)}") from exc

    @property
    def connection(self) -> sqlite3.Connection:
        """The open connection, for the store's companion modules (store_retimes); write inside batch()."""
        return self._conn

    @property
    def version(self) -> int:
        """Schema version of the open file."""
        return self._conn.execute("PRAGMA user_version").fetchone()[0]

    def _migrate(self) -> None:
        if self.version > SCHEMA_VERSION:
            raise SchemaMismatch(f"store {self.path} has schema version {self.version}; this "
                                 f"cnmtune reads up to version {SCHEMA_VERSION}: upgrade cnmtune")
        while self.version < SCHEMA_VERSION:
            with self.batch():  # re-read inside the lock: another process may have migrated
                current = self.version
                if current >= SCHEMA_VERSION:
                    break
                for statement in MIGRATIONS[current]:
                    self._conn.execute(statement)
                self._conn.execute(f"PRAGMA user_version = {current + 1}")

    @contextmanager
    def batch(self) -> Iterator[Store]:
        """One write transaction: all writes inside commit together or not at all (nests)."""
        if self._depth:
            self._depth += 1
            try:
                yield self
            finally:
                self._depth -= 1
            return
        self._conn.execute("BEGIN IMMEDIATE")
        self._depth = 1
        try:
            yield self
        except BaseException:
            self._conn.execute("ROLLBACK")
            raise
        else:
            self._conn.execute("COMMIT")
        finally:
            self._depth = 0

    # -- pipelines and compiles ------------------------------------------------------------

    def add_pipeline(self, text: str) -> int:
        """Id of the pipeline with this canonical text, inserting it once."""
        canon = canonical_pipeline(text)
        with self.batch():
            self._conn.execute("INSERT INTO pipelines (text) VALUES (?) ON CONFLICT DO NOTHING",
                               (canon,))
            return self._conn.execute("SELECT id FROM pipelines WHERE text = ?",
                                      (canon,)).fetchone()[0]

    def record_compile(self, rec: CompileRecord) -> None:
        """Insert or update the compile keyed by (kernel, pipeline, defines, tasklets)."""
        with self.batch():
            pid = self.add_pipeline(rec.pipeline)
            self._conn.execute(
                "INSERT INTO compiles (kernel, pipeline_id, defines, tasklets, elf_hash, status,"
                " error, seconds, iram_bytes) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
                " ON CONFLICT (kernel, pipeline_id, defines, tasklets) DO UPDATE SET"
                " elf_hash = excluded.elf_hash, status = excluded.status, error = excluded.error,"
                " seconds = excluded.seconds, iram_bytes = excluded.iram_bytes",
                (rec.kernel, pid, rec.defines, rec.tasklets, rec.elf_hash, Status(rec.status).value,
                 rec.error, rec.seconds, rec.iram_bytes))

    def find_compile(self, kernel: str, pipeline_text: str, defines_key: str,
                     tasklets: int) -> CompileRecord | None:
        """The recorded compile for this key, or None when it was never compiled."""
        row = self._conn.execute(
            _COMPILE_SELECT + " WHERE c.kernel = ? AND p.text = ? AND c.defines = ?"
            " AND c.tasklets = ?", (kernel, canonical_pipeline(pipeline_text), defines_key,
                                    tasklets)).fetchone()
        return None if row is None else _compile(row)

    def compiles_for_elf(self, elf_hash: str) -> list[CompileRecord]:
        """Every compile that produced this binary."""
        rows = self._conn.execute(_COMPILE_SELECT + " WHERE c.elf_hash = ? ORDER BY c.id",
                                  (elf_hash,))
        return [_compile(row) for row in rows]

    def compiles(self) -> list[CompileRecord]:
        """Every recorded compile, in insertion order."""
        return [_compile(row) for row in self._conn.execute(_COMPILE_SELECT + " ORDER BY c.id")]

    # -- features --------------------------------------------------------------------------

    def record_features(self, elf_hash: str, schema_hash: str,
                        features: Mapping[str, float]) -> None:
        """Insert or replace the feature dict of a binary under a feature schema."""
        data = json.dumps({str(k): float(v) for k, v in features.items()})
        with self.batch():
            self._conn.execute(
                "INSERT INTO features (elf_hash, schema_hash, data) VALUES (?, ?, ?)"
                " ON CONFLICT (elf_hash, schema_hash) DO UPDATE SET data = excluded.data",
                (elf_hash, schema_hash, data))

    def features(self, elf_hash: str, schema_hash: str) -> dict[str, float] | None:
        """The feature dict of a binary under a schema (names in recorded order), or None."""
        row = self._conn.execute("SELECT data FROM features WHERE elf_hash = ? AND schema_hash = ?",
                                 (elf_hash, schema_hash)).fetchone()
        return None if row is None else json.loads(row[0])

    def featured(self, schema_hash: str) -> set[str]:
        """The binaries (ELF hashes) that have features under a schema."""
        rows = self._conn.execute("SELECT elf_hash FROM features WHERE schema_hash = ?", (schema_hash,))
        return {r[0] for r in rows}

    # -- runs ------------------------------------------------------------------------------

    def record_run(self, rec: RunRecord) -> None:
        """Insert or update the run keyed by (kernel, defines, params, elf_hash, dpus, tasklets, size,
        config_hash)."""
        values = [getattr(rec, c) for c in _RUN_NAMES]
        values[6], values[10] = Status(rec.status).value, int(rec.verified)
        with self.batch():
            self._conn.execute(_RUN_UPSERT, values)

    def find_run(self, kernel: str, defines: str, elf_hash: str, dpus: int, tasklets: int, size: int,
                 config_hash: str, params: str = "") -> RunRecord | None:
        """The recorded run for this key, or None when it was never run."""
        row = self._conn.execute(
            f"SELECT {_RUN_COLUMNS} FROM runs WHERE kernel = ? AND defines = ? AND params = ? AND elf_hash = ?"
            " AND dpus = ? AND tasklets = ? AND size = ? AND config_hash = ?",
            (kernel, defines, params, elf_hash, dpus, tasklets, size, config_hash)).fetchone()
        return None if row is None else _run(row)

    def runs(self) -> list[RunRecord]:
        """Every recorded run, in insertion order."""
        return [_run(r) for r in self._conn.execute(f"SELECT {_RUN_COLUMNS} FROM runs ORDER BY id")]

    def run_keys(self, config_hash: str) -> dict[tuple[str, str, str, int, int, int], Status]:
        """Status of every recorded run with default parameters under a DpuConfig, by (kernel,
        defines, elf_hash, dpus, tasklets, size)."""
        rows = self._conn.execute("SELECT kernel, defines, elf_hash, dpus, tasklets, size, status FROM runs"
                                  " WHERE config_hash = ? AND params = ''", (config_hash,))
        return {tuple(r[:6]): Status(r[6]) for r in rows}

    # -- generation sessions ---------------------------------------------------------------

    def start_generation(self, spec: Mapping[str, object], executor: str, workers: int,
                         started: float) -> int:
        """Record the start of a generation session; returns its id."""
        with self.batch():
            cur = self._conn.execute(
                "INSERT INTO generations (started, spec, executor, workers) VALUES (?, ?, ?, ?)",
                (started, json.dumps(spec, sort_keys=True), executor, workers))
            return cur.lastrowid

    def update_generation(self, generation: int, seconds: float, compiles: int, runs: int,
                          finished: bool = False) -> None:
        """Bring a session's wall time and counts up to date (call inside the batch it covers)."""
        with self.batch():
            self._conn.execute("UPDATE generations SET seconds = ?, compiles = ?, runs = ?,"
                               " finished = ? WHERE id = ?",
                               (seconds, compiles, runs, int(finished), generation))

    # -- claims ----------------------------------------------------------------------------

    def claim(self, units: Iterable[str], owner: ClaimOwner, lease: float) -> list[str]:
        """Claim for ``lease`` seconds every unit that no live owner holds; returns those claimed.

        A unit held by another owner is taken over when its lease expired or its owner is
        gone; one transaction, so two owners never both get a unit.
        """
        now = time.time()
        claimed = []
        with self.batch():
            for unit in units:
                row = self._conn.execute("SELECT host, pid, started, expires FROM claims"
                                         " WHERE unit = ?", (unit,)).fetchone()
                if row is not None and row[3] > now:
                    holder = ClaimOwner(*row[:3])
                    if holder != owner and not holder.gone():
                        continue
                self._conn.execute(
                    "INSERT INTO claims (unit, host, pid, started, expires) VALUES (?, ?, ?, ?, ?)"
                    " ON CONFLICT (unit) DO UPDATE SET host = excluded.host, pid = excluded.pid,"
                    " started = excluded.started, expires = excluded.expires",
                    (unit, *astuple(owner), now + lease))
                claimed.append(unit)
        return claimed

    def renew(self, owner: ClaimOwner, lease: float) -> None:
        """Extend every claim of ``owner`` to ``lease`` seconds from now (its heartbeat)."""
        with self.batch():
            self._conn.execute("UPDATE claims SET expires = ? WHERE host = ? AND pid = ?"
                               " AND started = ?", (time.time() + lease, *astuple(owner)))

    def release(self, owner: ClaimOwner, units: Iterable[str]) -> None:
        """Drop the claims ``owner`` holds on ``units`` (one taken over by another stays)."""
        with self.batch():
            self._conn.executemany("DELETE FROM claims WHERE unit = ? AND host = ? AND pid = ?"
                                   " AND started = ?", ((u, *astuple(owner)) for u in units))

    # -- views -----------------------------------------------------------------------------

    def training_view(self, schema_hash: str | None = None) -> list[TrainingRow]:
        """Valid compiles x verified runs, with speedup over the (fewest DPUs, 1 tasklet, O0) baseline.

        A run counts when verified, or when it is a sampled run (``sim-sampled``: outputs not
        checkable) of a binary verified elsewhere. The baseline is the fastest O0 run at 1 tasklet
        on the fewest DPUs that have one, same kernel, size and simulator config (a sampled run's
        hash without ``SAMPLED_SUFFIX``; 1 DPU where the grid has it, as in L2P); speedup is None
        without one. With ``schema_hash`` only samples with features under it, attached to them.
        """
        if schema_hash is None:
            sql, params = _TRAINING_SQL.format(feat_cols="", feat_join=""), _TRAINING_PARAMS
        else:
            sql = _TRAINING_SQL.format(
                feat_cols=", f.data", feat_join="JOIN features f ON f.elf_hash = g.elf_hash"
                                                " AND f.schema_hash = :schema")
            params = {**_TRAINING_PARAMS, "schema": schema_hash}
        out = []
        decoded: dict[str, dict[str, float]] = {}  # one dict per binary: rows of an ELF share it
        for row in self._conn.execute(sql, params):
            feats = None
            if schema_hash is not None:
                feats = decoded.get(row[3])
                if feats is None:
                    feats = decoded[row[3]] = json.loads(row[13])
            out.append(TrainingRow(*row[:13], features=feats))
        return out

    def stats(self) -> StoreStats:
        """Counts per kernel and status; duplicate-binary ratio = 1 - distinct ELFs / binaries."""
        q = self._conn.execute

        def count(table: str) -> int:
            return q(f"SELECT COUNT(*) FROM {table}").fetchone()[0]

        binaries, distinct = q("SELECT COUNT(elf_hash), COUNT(DISTINCT elf_hash)"
                               " FROM compiles").fetchone()
        runs_per_kernel = q("SELECT kernel, COUNT(*) FROM runs GROUP BY kernel ORDER BY kernel")
        return StoreStats(
            pipelines=count("pipelines"), compiles=count("compiles"), runs=count("runs"),
            features=count("features"), distinct_elfs=distinct,
            compiles_per_kernel=dict(q("SELECT kernel, COUNT(*) FROM compiles GROUP BY kernel"
                                       " ORDER BY kernel")),
            runs_per_kernel=dict(runs_per_kernel),
            compile_status=dict(q("SELECT status, COUNT(*) FROM compiles GROUP BY status"
                                  " ORDER BY status")),
            run_status=dict(q("SELECT status, COUNT(*) FROM runs GROUP BY status ORDER BY status")),
            duplicate_binary_ratio=(1.0 - distinct / binaries) if binaries else 0.0,
            samples=q(f"SELECT COUNT(*) FROM ({_TRAINING_SQL.format(feat_cols='', feat_join='')})",
                      _TRAINING_PARAMS).fetchone()[0],
            **dict(zip(("generations", "generation_seconds", "generated_runs"), q(
                "SELECT COUNT(*), COALESCE(SUM(seconds), 0), COALESCE(SUM(runs), 0)"
                " FROM generations").fetchone())),
        )

    # -- export ----------------------------------------------------------------------------

    def export(self, path: str | os.PathLike, table: str = "training",
               schema_hash: str | None = None, metadata: Mapping[str, str] | None = None) -> Path:
        """Write one table ('training', 'compiles', 'runs') to .csv or .parquet by suffix.

        The training table gets one column per feature (prefixed 'f.') when ``schema_hash``
        is given. ``metadata`` goes into a Parquet file's key-value metadata (ignored for CSV).
        The file is written next to its target and renamed, so no half file is kept.
        """
        header, rows = self._table(table, schema_hash)
        return write_table(path, header, rows, metadata)

    def _table(self, table: str, schema_hash: str | None) -> tuple[list[str], list[tuple]]:
        if table == "compiles":
            recs: list = self.compiles()
            header = [f.name for f in fields(CompileRecord)]
        elif table == "runs":
            recs = self.runs()
            header = [f.name for f in fields(RunRecord)]
        elif table == "training":
            train = self.training_view(schema_hash)
            names = list(train[0].features or {}) if train else []
            header = [f.name for f in fields(TrainingRow)][:-1] + [f"f.{n}" for n in names]
            rows = [astuple(r)[:-1] + tuple((r.features or {}).get(n) for n in names)
                    for r in train]
            return header, rows
        else:
            raise StoreError(f"unknown table {table!r}; valid: training, compiles, runs")
        return header, [tuple(getattr(r, h).value if isinstance(getattr(r, h), Status)
                              else getattr(r, h) for h in header) for r in recs]


def _why(path: Path, exc: sqlite3.DatabaseError) -> str:
    """Why SQLite refused the store at `path`, in words: permissions, a busy or corrupt file."""
    if not path.parent.is_dir():
        return f"no directory {path.parent} to hold it"
    if path.is_dir():
        return "a directory, not a store file"
    writable = os.access(path.parent, os.W_OK) and (not path.exists() or os.access(path, os.W_OK))
    if isinstance(exc, sqlite3.OperationalError) and not writable:  # WAL writes files beside the store
        return f"no permission to write in {path.parent}, where SQLite keeps the store and its WAL files ({exc})"
    if isinstance(exc, sqlite3.OperationalError):  # e.g. locked past the timeout, a disk I/O error
        return str(exc)
    return f"not a readable cnmtune store ({exc})"


def _compile(row: tuple) -> CompileRecord:
    return CompileRecord(*row[:5], Status(row[5]), *row[6:])


def _run(row: tuple) -> RunRecord:
    return RunRecord(*row[:6], Status(row[6]), *row[7:10], bool(row[10]), *row[11:])
