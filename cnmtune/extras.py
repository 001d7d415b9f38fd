"""Optional dependencies: the extra that brings each one, and one clear error when it is missing.

Compiling, reading features, scoring with the ONNX cost model, simulating, tuning and
cnmtune-cc need only the core dependencies. Training and fine-tuning (torch, scikit-learn),
Dask distributed execution, plots (matplotlib) and Parquet files (pyarrow) come with extras;
`make demo` and `make test` install all of them.
"""

from __future__ import annotations

from cnmtune.errors import MissingExtra

EXTRA_OF = {
    "torch": "train",
    "sklearn": "train",
    "threadpoolctl": "train",
    "dask": "distributed",
    "distributed": "distributed",
    "matplotlib": "plots",
    "pyarrow": "parquet",
}


def missing_extra(exc: ModuleNotFoundError) -> MissingExtra | None:
    """The MissingExtra behind `exc` when the missing module is an optional dependency, else None."""
    package = (exc.name or "").partition(".")[0]
    extra = EXTRA_OF.get(package)
    if extra is None:
        return None
    return MissingExtra(f"this needs {package}, which comes with the '{extra}' extra: "
                        f"pip install 'cnmtune[{extra}]'")
