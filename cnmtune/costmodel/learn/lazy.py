"""Lazy imports of the optional dependencies of learning (torch, scikit-learn, threadpoolctl).

Scoring needs only onnxruntime; training, fine-tuning and the tree baseline import their heavy
modules inside the functions that need them, under ``needs_extra()``, so that a library user
without the extra gets one MissingExtra naming it (the CLI reports it in one line) instead of
a bare ModuleNotFoundError.
"""

from __future__ import annotations

import importlib
import threading
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


def preload(module: str) -> None:
    """Import an optional heavy module (torch: ~3 s) in a background thread, e.g. while a tune
    compiles, so that its first use does not wait for it. Best effort: whatever stops the import
    is left to the first use to report (a module that is not installed), or to nobody when the
    process is exiting under it (a tune that failed early: torch imports concurrent.futures,
    which refuses to register its exit hook once the interpreter shuts down). Not a daemon
    thread: the process never exits mid-import."""
    def load() -> None:
        try:
            importlib.import_module(module)
        except Exception:  # best effort: see the docstring
            pass

    threading.Thread(target=load, name=f"preload-{module}").start()
