"""Measure callbacks of a tune (TVM's measure_callback role): what happens after compiles and runs.

The tuner calls every callback with each batch of compile results and of run records; the one
cnmtune ships writes them to the store, so a later tune of the same kernel re-uses its runs.
"""

from __future__ import annotations

from collections.abc import Sequence

from cnmtune.plugin.jobs import CompileResult, record_results
from cnmtune.store import RunRecord, Store


class MeasureCallback:
    """Called after each batch of compiles and of runs; does nothing unless a subclass says so."""

    def compiled(self, results: Sequence[CompileResult]) -> None:
        """After the build phase, with every compile result (failures included)."""

    def measured(self, records: Sequence[RunRecord]) -> None:
        """After a batch of runs on the simulator."""


class RecordInStore(MeasureCallback):
    """Write compiles (with their features under `schema_hash`) and runs to the store."""

    def __init__(self, store: Store, schema_hash: str):
        self.store, self.schema_hash = store, schema_hash

    def compiled(self, results: Sequence[CompileResult]) -> None:
        record_results(self.store, results, self.schema_hash)

    def measured(self, records: Sequence[RunRecord]) -> None:
        record_results(self.store, records, self.schema_hash)
