"""The store's re-timing tables (schema version 6): the training data of the PerfVec design model.

- ``designs``: sampled DpuConfigs, by full config hash (DpuConfig.full_hash: kernel and link constants), with the sampler seed and index that drew them
  and the config as JSON (runtime/sim/traces.config_to_json);
- ``trace_sets``: one recorded run per unit of work (kernel, pipeline, tasklets, defines, DPUs,
  size, input seed): its trace-set directory and launch count, or why it could not be recorded;
- ``retimes``: a unit's exact re-timing under a design: the DPU cycles (per launch the slowest
  DPU's, summed), kernel and transfer seconds, or why the trace cannot be re-timed there.

Every write is one transaction; a generation that stops keeps what it wrote and goes on from it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import astuple, dataclass, fields

from cnmtune.store import Store

__all__ = ["DesignRow", "RetimeRecord", "TraceSetRecord", "add_designs", "designs", "record_retimes",
           "record_trace_set", "retimed", "retimes", "trace_set", "trace_sets"]

OK, INVALID = "ok", "invalid"  # a retime's status: exact cycles, or not re-timeable exactly


@dataclass(frozen=True)
class DesignRow:
    """A sampled design: its full config hash, the sampler's seed and index, the config as JSON text."""

    hash: str
    seed: int
    idx: int
    config: str


@dataclass(frozen=True)
class TraceSetRecord:
    """A unit's recorded run: where its trace set lives, or the status and error of a failure."""

    unit: str
    kernel: str
    pipeline: str
    tasklets: int
    defines: str
    dpus: int
    size: int
    seed: int
    status: str
    error: str = ""
    directory: str | None = None
    launches: int | None = None
    seconds: float = 0.0


@dataclass(frozen=True)
class RetimeRecord:
    """A unit re-timed under a design: cycles and seconds (status ok), or the reason it is not exact."""

    unit: str
    design_hash: str
    status: str
    cycles: int | None = None
    kernel_seconds: float | None = None
    transfer_seconds: float | None = None
    error: str = ""
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        """True when the cycles are an exact re-timing."""
        return self.status == OK


def _columns(record_type: type) -> str:
    return ", ".join(f.name for f in fields(record_type))


def _placeholders(record_type: type) -> str:
    return ", ".join("?" for _ in fields(record_type))


def add_designs(store: Store, rows: Iterable[DesignRow]) -> None:
    """Insert designs not yet stored (a design is its full config hash)."""
    with store.batch():
        store.connection.executemany(f"INSERT INTO designs ({_columns(DesignRow)}) VALUES"
                                     f" ({_placeholders(DesignRow)}) ON CONFLICT DO NOTHING",
                                     (astuple(r) for r in rows))


def designs(store: Store) -> list[DesignRow]:
    """Every stored design, by seed and index."""
    query = f"SELECT {_columns(DesignRow)} FROM designs ORDER BY seed, idx, hash"
    return [DesignRow(*r) for r in store.connection.execute(query)]


def record_trace_set(store: Store, record: TraceSetRecord) -> None:
    """Insert or replace a unit's recorded run."""
    with store.batch():
        store.connection.execute(f"INSERT OR REPLACE INTO trace_sets ({_columns(TraceSetRecord)}) VALUES"
                                 f" ({_placeholders(TraceSetRecord)})", astuple(record))


def trace_set(store: Store, unit: str) -> TraceSetRecord | None:
    """A unit's recorded run, if any."""
    row = store.connection.execute(f"SELECT {_columns(TraceSetRecord)} FROM trace_sets WHERE unit = ?",
                                   (unit,)).fetchone()
    return TraceSetRecord(*row) if row else None


def trace_sets(store: Store) -> list[TraceSetRecord]:
    """Every unit's recorded run, by unit."""
    query = f"SELECT {_columns(TraceSetRecord)} FROM trace_sets ORDER BY unit"
    return [TraceSetRecord(*r) for r in store.connection.execute(query)]


def record_retimes(store: Store, records: Iterable[RetimeRecord]) -> None:
    """Insert or replace re-timings, in one transaction."""
    with store.batch():
        store.connection.executemany(f"INSERT OR REPLACE INTO retimes ({_columns(RetimeRecord)}) VALUES"
                                     f" ({_placeholders(RetimeRecord)})", (astuple(r) for r in records))


def retimed(store: Store, unit: str) -> set[str]:
    """Hashes of the designs a unit has a re-timing for (exact or not)."""
    return {r[0] for r in store.connection.execute("SELECT design_hash FROM retimes WHERE unit = ?", (unit,))}


def retimes(store: Store) -> list[RetimeRecord]:
    """Every re-timing, by unit and design."""
    query = f"SELECT {_columns(RetimeRecord)} FROM retimes ORDER BY unit, design_hash"
    return [RetimeRecord(*r) for r in store.connection.execute(query)]
