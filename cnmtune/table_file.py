"""Tables (a header and rows) in .csv or .parquet files: written atomically, read back."""

from __future__ import annotations

import csv
import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from cnmtune.errors import StoreError


def write_table(path: str | os.PathLike, header: Sequence[str], rows: Sequence[tuple],
                metadata: Mapping[str, str] | None = None) -> Path:
    """Write ``rows`` under ``header`` to .csv or .parquet by the file's suffix; ``metadata`` goes
    into a Parquet file's key-value metadata (ignored for CSV). The file is written next to its
    target and renamed, so no half file is kept."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in (".csv", ".parquet"):
        raise StoreError(f"cannot export to {path}: use a .csv or .parquet file name")
    tmp = path.with_name(path.name + ".tmp")
    try:
        if suffix == ".csv":
            with open(tmp, "w", newline="") as fh:
                writer = csv.writer(fh)
                writer.writerow(header)
                writer.writerows(rows)
        else:
            try:
                import pyarrow
                import pyarrow.parquet
            except ImportError as exc:
                raise StoreError("export to .parquet needs the package 'pyarrow' (pip "
                                 "install pyarrow), or export to .csv") from exc
            columns = {name: [r[i] for r in rows] for i, name in enumerate(header)}
            arrow = pyarrow.table(columns).replace_schema_metadata(dict(metadata or {}))
            pyarrow.parquet.write_table(arrow, tmp, compression="zstd")
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return path


def read_table(path: str | os.PathLike) -> tuple[list[str], list[tuple], dict[str, str]]:
    """The header, rows and metadata of a .csv or .parquet file as ``write_table`` writes it; CSV
    cells are text (empty for None) and CSV has no metadata."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in (".csv", ".parquet"):
        raise StoreError(f"cannot read {path}: use a .csv or .parquet file")
    if not path.is_file():
        raise StoreError(f"no file {path}")
    if suffix == ".csv":
        with open(path, newline="") as fh:
            reader = csv.reader(fh)
            header = next(reader, None)
            if header is None:
                raise StoreError(f"{path} is empty: no header row")
            return header, [tuple(row) for row in reader], {}
    arrow, metadata = read_parquet(path)
    columns = arrow.to_pydict()
    return list(columns), list(zip(*columns.values())), metadata


def read_parquet(path: Path):
    """A Parquet file as a pyarrow Table and its key-value metadata as text; a file pyarrow cannot
    read is one StoreError naming it."""
    import pyarrow
    import pyarrow.parquet

    try:
        table = pyarrow.parquet.read_table(path)
    except (OSError, pyarrow.ArrowException) as exc:
        raise StoreError(f"{path}: not a readable Parquet file ({exc})") from None
    return table, {k.decode(): v.decode() for k, v in (table.schema.metadata or {}).items()}
