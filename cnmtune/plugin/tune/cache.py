"""The tuning cache: which pass pipeline `cnmtune tune` chose for a kernel source and its defines.

`cnmtune tune` records its result here; `cnmtune-cc` looks a source up before it compiles it
and applies the recorded pipeline instead of its -O level. One SQLite file,
``<cache dir>/tuning.sqlite`` (``$CNMTUNE_CACHE_DIR``, else ``$XDG_CACHE_HOME/cnmtune``, else
``~/.cache/cnmtune``, like the build cache), one row per key; a newer tune replaces the row.

The key of a compile (`TuningKey`, made by `key_for`):
- the toolchain kind ('proxy' or 'upmem');
- the SHA-256 of the source text and of every local header it includes (found by following
  ``#include "..."`` and ``#include <...>`` through the source's directory and the given include
  directories, recursively; headers found nowhere there, cnmtune's DPU headers and the C library,
  are the toolchain's, not the kernel's, and are left out). Paths are not part of it: a copy of
  the kernel elsewhere has the same key;
- the canonical defines: every -D with its value (a bare ``-DX`` is ``X=1``, as for the
  preprocessor), NR_TASKLETS (default 1, as in <defs.h>) and STACK_SIZE_DEFAULT (default 1024)
  always included, and, for a source in a kernel directory (``KERNEL/dpu/*.c`` next to
  ``KERNEL/workload.py``), the workload's default defines filled in, exactly as ``cnmtune tune``
  builds it: ``-DNR_TASKLETS=16`` and ``-DNR_TASKLETS=16 -DBL=10 -DINT32`` are one key for va.
"""

from __future__ import annotations

import datetime as _dt
import functools
import hashlib
import json
import re
import sqlite3
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from cnmtune.dpu.memory_map import DEFAULT_STACK_SIZE
from cnmtune.errors import CnmtuneError, KernelError
from cnmtune.runtime.toolchain.cache import TUNING_FILE, content_key, default_cache_dir
from cnmtune.runtime.workload import define_value

if TYPE_CHECKING:
    from cnmtune.plugin.tune.report import Candidate, TuneReport
    from cnmtune.plugin.tune.search import TuneSpec
    from cnmtune.runtime.kernel import Kernel
    from cnmtune.runtime.workload import DefineValue, Workload

__all__ = ["CACHE_FILE", "TunedEntry", "TuningCache", "TuningKey", "canonical_defines", "kernel_dir_of",
           "key_for", "record_tune"]

CACHE_FILE = TUNING_FILE  # beside the build cache, which reports it and never cleans it
TASKLETS, STACK = "NR_TASKLETS", "STACK_SIZE_DEFAULT"
_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*([<"])([^>"\n]+)[>"]', re.MULTILINE)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS tuned (
    key TEXT PRIMARY KEY,
    toolchain TEXT NOT NULL,
    source_hash TEXT NOT NULL,
    defines TEXT NOT NULL,
    pipeline TEXT NOT NULL,
    entry TEXT NOT NULL,
    recorded_at TEXT NOT NULL
)
"""


@dataclass(frozen=True)
class TuningKey:
    """What a tuned pipeline is valid for: toolchain kind, source content, canonical defines."""

    toolchain: str
    source_hash: str
    defines: tuple[tuple[str, str], ...]

    @property
    def digest(self) -> str:
        """The row key: SHA-256 over the three parts."""
        return content_key(self.toolchain, self.source_hash, *(f"{k}={v}" for k, v in self.defines))

    @property
    def defines_text(self) -> str:
        """'BL=10 INT32=1 NR_TASKLETS=16 STACK_SIZE_DEFAULT=1024'."""
        return " ".join(f"{k}={v}" for k, v in self.defines)

    def describe(self) -> str:
        """Short human form for notices: 'proxy, NR_TASKLETS=16, BL=10, ...'."""
        shown = [f"{k}={v}" for k, v in self.defines if k == TASKLETS]
        shown += [f"{k}={v}" for k, v in self.defines if k not in (TASKLETS, STACK)]
        return ", ".join([self.toolchain, *shown])


@dataclass(frozen=True)
class TunedEntry:
    """A recorded tuning result: the pipeline and how it was found and measured."""

    pipeline: str
    tasklets: int
    dpus: int | None = None
    measured_s: float | None = None
    predicted_s: float | None = None
    speedup_vs_default: float | None = None
    kernel: str = ""
    size: int | None = None
    source: str = ""
    chosen: bool = True  # the tuner's overall choice (False: the best measured at this tasklet count)
    toolchain_identity: str = ""
    tuner: dict = field(default_factory=dict)
    recorded_at: str = ""

    def to_dict(self) -> dict:
        """JSON-safe form."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping) -> TunedEntry:
        """Read a stored entry, ignoring fields a newer cnmtune may have added."""
        known = {f for f in cls.__dataclass_fields__}
        return cls(**{k: v for k, v in data.items() if k in known})


# -- the key ---------------------------------------------------------------------------------


def kernel_dir_of(source: str | Path) -> Path | None:
    """The kernel directory a source belongs to (``KERNEL/dpu/x.c`` with ``KERNEL/workload.py``)."""
    path = Path(source).resolve()
    root = path.parent.parent
    if path.parent.name == "dpu" and (root / "workload.py").is_file():
        return root
    return None


@functools.lru_cache(maxsize=16)
def _kernel(root: Path) -> Kernel | None:
    from cnmtune.runtime.kernel import Kernel

    try:
        return Kernel.load(root)
    except KernelError:
        return None


def _value(value: DefineValue) -> str:
    return "1" if value is None else str(value)


def canonical_defines(defines: Mapping[str, DefineValue],
                      workload: type[Workload] | None = None) -> tuple[tuple[str, str], ...]:
    """Sorted (name, value) pairs: NR_TASKLETS and STACK_SIZE_DEFAULT always present, bare
    defines as '1', and the workload's default defines filled in when a workload is given
    (if the defines are not valid for it, they are taken as they are)."""
    given = dict(defines)
    resolved: dict[str, DefineValue] = {k: define_value(v) if isinstance(v, str) else v
                                        for k, v in given.items() if k not in (TASKLETS, STACK)}
    if workload is not None:
        try:
            resolved = workload.resolve_defines(resolved)
        except KernelError:
            pass
    resolved[TASKLETS] = given.get(TASKLETS, 1)
    resolved[STACK] = given.get(STACK, DEFAULT_STACK_SIZE)
    return tuple(sorted((k, _value(v)) for k, v in resolved.items()))


def _find_header(name: str, quoted: bool, includer: Path, include_dirs: Sequence[Path]) -> Path | None:
    search = ([includer.parent] if quoted else []) + list(include_dirs)
    for directory in search:
        candidate = directory / name
        if candidate.is_file():
            return candidate.resolve()
    return None


def source_hash(sources: Iterable[str | Path], include_dirs: Sequence[str | Path] = ()) -> str:
    """SHA-256 over the sources and the local headers they include, recursively (see the module
    docstring); every file is hashed once, under the name it was included by."""
    dirs = [Path(d).resolve() for d in include_dirs]
    digest = hashlib.sha256()
    seen: set[Path] = set()

    def visit(path: Path, spelled: str) -> None:
        if path in seen:
            return
        seen.add(path)
        data = path.read_bytes()
        digest.update(content_key(spelled, data).encode())
        for match in _INCLUDE.finditer(data.decode("utf-8", "replace")):
            header = _find_header(match.group(2).strip(), match.group(1) == '"', path, dirs)
            if header is not None:
                visit(header, match.group(2).strip())

    for source in sources:
        visit(Path(source).resolve(), "")
    return digest.hexdigest()


def key_for(sources: str | Path | Iterable[str | Path], defines: Mapping[str, DefineValue], toolchain: str,
            include_dirs: Sequence[str | Path] = ()) -> TuningKey:
    """The tuning-cache key of compiling `sources` with `defines` on `toolchain` ('proxy' or
    'upmem'); `include_dirs` are the -I directories the compile searches (for local headers).
    A source in a kernel directory gets the workload's default defines filled in."""
    paths = [Path(sources)] if isinstance(sources, (str, Path)) else [Path(s) for s in sources]
    if not paths:
        raise ValueError("key_for needs at least one source")
    root = kernel_dir_of(paths[0])
    kernel = _kernel(root) if root is not None else None
    return TuningKey(toolchain, source_hash(paths, include_dirs),
                     canonical_defines(defines, kernel.workload if kernel is not None else None))


# -- the cache -------------------------------------------------------------------------------


class TuningCache:
    """The SQLite file of tuned pipelines; every call opens, uses and closes one connection."""

    def __init__(self, path: str | Path | None = None, timeout: float = 30.0):
        self.path = Path(path) if path is not None else default_cache_dir() / CACHE_FILE
        self.timeout = timeout

    def _connect(self) -> sqlite3.Connection:
        try:
            conn = sqlite3.connect(self.path, timeout=self.timeout, isolation_level=None)
            conn.execute(f"PRAGMA busy_timeout = {int(self.timeout * 1000)}")
            return conn
        except sqlite3.DatabaseError as exc:
            raise CnmtuneError(f"cannot open the tuning cache {self.path}: {exc}") from exc

    def lookup(self, key: TuningKey) -> TunedEntry | None:
        """The entry recorded for `key`, or None (also when the cache file does not exist yet)."""
        if not self.path.is_file():
            return None
        conn = self._connect()
        try:
            row = conn.execute("SELECT entry FROM tuned WHERE key = ?", (key.digest,)).fetchone()
        except sqlite3.OperationalError as exc:
            if "no such table" in str(exc):
                return None
            raise CnmtuneError(f"cannot read the tuning cache {self.path}: {exc}") from exc
        except sqlite3.DatabaseError as exc:
            raise CnmtuneError(f"cannot read the tuning cache {self.path} (corrupt? delete it): {exc}") from exc
        finally:
            conn.close()
        if row is None:
            return None
        try:
            return TunedEntry.from_dict(json.loads(row[0]))
        except (ValueError, TypeError) as exc:
            raise CnmtuneError(f"tuning cache {self.path}: unreadable entry for {key.describe()}: {exc}") from exc

    def record(self, key: TuningKey, entry: TunedEntry) -> None:
        """Store `entry` for `key`, replacing an older one (one transaction)."""
        if not entry.recorded_at:
            entry = TunedEntry.from_dict({**entry.to_dict(), "recorded_at": _now()})
        self.path.parent.mkdir(parents=True, exist_ok=True)
        conn = self._connect()
        try:
            with conn:
                conn.execute("BEGIN IMMEDIATE")
                conn.execute(_SCHEMA)
                conn.execute(
                    "INSERT OR REPLACE INTO tuned (key, toolchain, source_hash, defines, pipeline, entry, recorded_at)"
                    " VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (key.digest, key.toolchain, key.source_hash, key.defines_text, entry.pipeline,
                     json.dumps(entry.to_dict(), sort_keys=True), entry.recorded_at))
        except sqlite3.DatabaseError as exc:
            raise CnmtuneError(f"cannot write the tuning cache {self.path}: {exc}") from exc
        finally:
            conn.close()

    def entries(self) -> list[tuple[TuningKey, TunedEntry]]:
        """Every recorded (key, entry), oldest first."""
        if not self.path.is_file():
            return []
        conn = self._connect()
        try:
            rows = conn.execute("SELECT toolchain, source_hash, defines, entry FROM tuned "
                                "ORDER BY recorded_at").fetchall()
        except sqlite3.OperationalError as exc:
            if "no such table" in str(exc):
                return []
            raise CnmtuneError(f"cannot read the tuning cache {self.path}: {exc}") from exc
        finally:
            conn.close()
        out = []
        for toolchain, digest, defines, entry in rows:
            pairs = tuple(tuple(item.split("=", 1)) for item in defines.split())
            out.append((TuningKey(toolchain, digest, pairs), TunedEntry.from_dict(json.loads(entry))))
        return out


def _now() -> str:
    return _dt.datetime.now(_dt.UTC).replace(microsecond=0).isoformat()


# -- what `cnmtune tune` records -------------------------------------------------------------


def _verified(c: Candidate | None) -> bool:
    return c is not None and c.measured_s is not None and c.status == "verified"


def _best_by_tasklets(report: TuneReport) -> dict[int, Candidate]:
    """Per tasklet count of the tune's runs: the fastest by the tune's objective (the default build
    on a tie; for the chosen count that is the tuner's choice). Only builds with the tune's own defines count (the
    cache is keyed by them): a choice with tuned defines is for the user to adopt in both host and
    DPU builds."""
    best: dict[int, Candidate] = {}
    for c in [*([report.default] if report.default else []), *(report.runs or report.top)]:
        time = c.objective_s(report.objective)
        if _verified(c) and time is not None and not c.defines and \
                (c.tasklets not in best or time < best[c.tasklets].objective_s(report.objective)):
            best[c.tasklets] = c
    return best


def record_tune(cache: TuningCache, kernel: Kernel, spec: TuneSpec, report: TuneReport,
                toolchain_identity: str = "") -> list[tuple[TuningKey, TunedEntry]]:
    """Record a tune of `kernel` (built with the workload's defines updated by the tune's on the
    proxy toolchain) under the key of each of the kernel's sources with those defines: for every
    tasklet count the tune ran, the pipeline `_best_by_tasklets` picks (the tuner's choice for its
    own count; never one the default O2 build beat). Returns what was recorded."""
    defines = kernel.workload.resolve_defines(dict(spec.defines))
    tuner = {"size": report.size, "pipelines": spec.pipelines, "seed": spec.seed, "length": spec.length,
             "dpus": list(spec.dpus) if spec.dpus else None, "tasklets": list(spec.tasklets), "top_k": spec.top_k,
             "model": spec.model or "shipped", "sim_config": spec.sim_config, "params": dict(spec.params)}
    recorded = []
    for tasklets, c in sorted(_best_by_tasklets(report).items()):
        # the default build is named by its own pipeline, not by the first one with the same ELF
        pipeline = "O2" if c is report.default and "O2" in c.pipelines else c.pipeline
        entry = TunedEntry(
            pipeline=pipeline, tasklets=tasklets, dpus=c.dpus, measured_s=c.measured_s,
            predicted_s=c.predicted_s if c.predicted_s == c.predicted_s else None,  # NaN -> None
            speedup_vs_default=(report.default.measured_s / c.measured_s
                                if report.default is not None and report.default.measured_s and c.measured_s
                                else None),
            kernel=kernel.name, size=report.size, chosen=c is report.chosen, toolchain_identity=toolchain_identity,
            tuner=tuner, recorded_at=_now())
        for source in kernel.sources:
            key = key_for([source], {STACK: DEFAULT_STACK_SIZE, **defines, TASKLETS: tasklets}, "proxy",
                          kernel.include_dirs)
            sourced = TunedEntry.from_dict({**entry.to_dict(), "source": str(source)})
            cache.record(key, sourced)
            recorded.append((key, sourced))
    return recorded
