"""How a console command's process ends: without the interpreter's last garbage collections."""

import atexit
import gc
from functools import cache


@cache  # once per process: the tests run many commands in theirs
def skip_exit_collections() -> None:
    """Freeze every object still alive when this process exits, after its exit handlers ran.

    While the interpreter tears its modules down it collects garbage, walking every object the
    command loaded (numba's, llvmlite's, torch's): 0.1-0.5 s of each command. Frozen objects are
    not walked. Registered at the command's start, the freeze runs after every handler registered
    later (multiprocessing's, Dask's, tempfile's), and the exit still flushes the streams, frees
    each object as its module goes and keeps the exit code. Cyclic garbage left at exit is no longer
    collected, so its finalizers do not run: Python does not promise that they do, cnmtune closes
    what it writes, and the UPMEM host harness frees its DPUs when its pipe closes.
    """
    atexit.register(gc.freeze)
