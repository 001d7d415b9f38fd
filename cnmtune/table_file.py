"""Write a table (a header and rows) to a .csv or .parquet file, atomically."""

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
