"""The simulator's native code: compiled by numba on first use, then loaded from numba's disk cache.

Every jitted function of the simulator is ``@njit(cache=True)``: numba keeps the machine code in
``__pycache__`` next to the source, in the user's cache directory when the package directory is
not writable, or under ``$NUMBA_CACHE_DIR``. Only the first run after an install (or an upgrade)
compiles, which takes about a minute on two cores. `watch_compiles` (installed by the package
cnmtune.runtime.sim) says so once on stderr when a compile actually happens (a cache load is
silent) and adds up the compile time, so that `Stopwatch` leaves it out of reported simulation
times.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field

from numba.core import event

__all__ = ["Stopwatch", "compile_seconds", "watch_compiles"]

_NOTE = "cnmtune: compiling the simulator's native code (once, about a minute; cached in {})"


class _CompileWatch(event.Listener):
    """Times the outermost numba compiles (callees compile inside them) and notes the first one."""

    def __init__(self):
        self.depth, self.started, self.seconds, self.noted, self.listening = 0, 0.0, 0.0, False, False

    def on_start(self, ev) -> None:
        if self.depth == 0:
            self.started = time.perf_counter()
            dispatcher = ev.data["dispatcher"]
            if not self.noted and dispatcher.py_func.__module__.startswith("cnmtune."):
                self.noted = True
                print(_NOTE.format(dispatcher.stats.cache_path), file=sys.stderr, flush=True)
        self.depth += 1

    def on_end(self, ev) -> None:
        self.depth -= 1
        if self.depth == 0:
            self.seconds += time.perf_counter() - self.started


_WATCH = _CompileWatch()


def watch_compiles() -> None:
    """Listen to numba's compile events from now on (idempotent)."""
    if not _WATCH.listening:
        event.register("numba:compile", _WATCH)
        _WATCH.listening = True


def compile_seconds() -> float:
    """Seconds this process has spent compiling jitted code (cache loads excluded)."""
    return _WATCH.seconds


@dataclass
class Stopwatch:
    """Wall seconds since it was made, less the JIT compiles in between (they are not simulation)."""

    start: float = field(default_factory=time.perf_counter)
    compiled: float = field(default_factory=compile_seconds)

    def seconds(self) -> float:
        """Seconds so far, compiles excluded."""
        return time.perf_counter() - self.start - (compile_seconds() - self.compiled)
