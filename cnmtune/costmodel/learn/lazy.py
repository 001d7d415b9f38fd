"""Lazy imports of the optional dependencies of learning (torch, scikit-learn, threadpoolctl).

Scoring needs only onnxruntime; training, fine-tuning and the tree baseline import their heavy
modules inside the functions that need them, under ``needs_extra()``, so that a library user
without the extra gets one MissingExtra naming it (the CLI reports it in one line) instead of
a bare ModuleNotFoundError.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from cnmtune.extras import missing_extra


@contextmanager
def needs_extra() -> Iterator[None]:
    """Turn a ModuleNotFoundError of an optional dependency into a MissingExtra naming its extra."""
    try:
        yield
    except ModuleNotFoundError as exc:
        error = missing_extra(exc)
        if error is None:
            raise
        raise error from None
