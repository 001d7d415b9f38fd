"""Import compiles and runs exported from another store (``cnmtune dataset export --table compiles``
or ``--table runs``), so that a generation can go on from them on another machine.

A record whose key the store already holds is kept as the store has it; the others are added in
one transaction (an import that fails adds nothing). Imported compiles carry no features: the next
``dataset generate`` compiles those binaries again for their features and repeats no imported run.
"""

from __future__ import annotations

import os
import types
import typing
from dataclasses import dataclass, fields
from pathlib import Path

from cnmtune.errors import StoreError
from cnmtune.store import CompileRecord, RunRecord, Status, Store
from cnmtune.table_file import read_table

_RECORDS: dict[str, type] = {"compiles": CompileRecord, "runs": RunRecord}
# columns a table gained after exports of it were made: an older export without them imports
# with their defaults (a run's link_hash '': the link model that priced it is not known)
_LATER_COLUMNS: dict[str, frozenset[str]] = {"compiles": frozenset(), "runs": frozenset({"link_hash"})}
_KINDS = {int: "an integer", float: "a number", bool: "true or false", str: "text",
          Status: f"a status ({', '.join(s.value for s in Status)})"}


@dataclass(frozen=True)
class ImportReport:
    """What an import did: the table it read, the rows it added and the rows the store already had."""

    path: Path
    table: str
    added: int
    kept: int


def import_table(store: Store, path: str | os.PathLike) -> ImportReport:
    """Add the compiles or runs of an export at `path` (.parquet or .csv) to `store`."""
    path = Path(path)
    header, rows, metadata = read_table(path)
    table = _table_of(path, header, metadata)
    record_type = _RECORDS[table]
    converters = _converters(record_type)
    csv_file = path.suffix.lower() == ".csv"  # a CSV file's line 1 is its header
    records = []
    for number, row in enumerate(rows, start=2 if csv_file else 1):
        where = f"{path}, {'line' if csv_file else 'row'} {number}"
        records.append(record_type(**{name: converters[name](value, where, name) for name, value in zip(header, row)}))
    added = 0
    with store.batch():
        for rec in records:
            if table == "compiles":
                if store.find_compile(rec.kernel, rec.pipeline, rec.defines, rec.tasklets) is None:
                    store.record_compile(rec)
                    added += 1
            elif store.find_run(rec.kernel, rec.defines, rec.elf_hash, rec.dpus, rec.tasklets, rec.size,
                                rec.config_hash, rec.params) is None:
                store.record_run(rec)
                added += 1
    return ImportReport(path, table, added, len(records) - added)


def _table_of(path: Path, header: list[str], metadata: dict[str, str]) -> str:
    """Which table an export holds: its Parquet metadata says so; else its columns must be one's."""
    for table, record_type in _RECORDS.items():
        names = {f.name for f in fields(record_type)}
        if set(header) in (names, names - _LATER_COLUMNS[table]) and metadata.get("cnmtune.table", table) == table:
            return table
    named = metadata.get("cnmtune.table")
    if named == "training":
        raise StoreError(f"{path} is a training export; import reads the compiles and runs tables "
                         "(cnmtune dataset export --table compiles|runs), which keep failures and every run")
    expected = "; ".join(f"{t}: {', '.join(f.name for f in fields(r))}" for t, r in _RECORDS.items())
    raise StoreError(f"{path} is not a compiles or runs export: its columns are {', '.join(header)}; "
                     f"expected {expected}")


def _converters(record_type: type) -> dict:
    """Per field, a function from a cell (typed from Parquet, text from CSV) to the field's type."""
    return {name: _converter(hint) for name, hint in typing.get_type_hints(record_type).items()}


def _converter(hint):
    optional = isinstance(hint, types.UnionType) and type(None) in hint.__args__
    base = next(a for a in hint.__args__ if a is not type(None)) if optional else hint

    def convert(value, where: str, name: str):
        if value is None or (value == "" and base is not str):
            if optional:
                return None
            raise StoreError(f"{where}: {name} is empty")
        if value == "" and optional:
            return None
        try:
            if base is bool:
                return value if isinstance(value, bool) else {"true": True, "false": False, "1": True,
                                                              "0": False}[str(value).lower()]
            return base(value)
        except (ValueError, KeyError) as exc:
            raise StoreError(f"{where}: {name} = {value!r} is not {_KINDS[base]}") from exc

    return convert
