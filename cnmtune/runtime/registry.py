"""The kernel registry: kernels by name (the suite shipped with cnmtune, and the user's) or by path.

Search order: the directories in $CNMTUNE_KERNEL_PATH (os.pathsep-separated; each holds kernel
directories), then the suites of this checkout (benchmarks/prim, benchmarks/pim-ml,
benchmarks/micro). A name matches a workload's `name` or a directory name, case-insensitively
(PrIM's HST-S is `hst-s`).
"""

from __future__ import annotations

import functools
import os
from pathlib import Path
from typing import NamedTuple

from cnmtune.errors import KernelError
from cnmtune.runtime.kernel import Kernel
from cnmtune.runtime.workload import parse_define

SUITES = ("prim", "pim-ml", "micro")
_BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


def kernel_roots() -> list[Path]:
    """Directories that hold kernel directories, in search order."""
    user = [Path(p) for p in os.environ.get("CNMTUNE_KERNEL_PATH", "").split(os.pathsep) if p]
    return [root for root in (*user, *(_BENCHMARKS / suite for suite in SUITES)) if root.is_dir()]


def kernel_dirs() -> list[Path]:
    """Every kernel directory under the roots (a directory with dpu/*.c)."""
    return [d for root in kernel_roots() for d in sorted(root.iterdir()) if any((d / "dpu").glob("*.c"))]


def list_kernels() -> list[Kernel]:
    """All registered kernels, loaded (first of a name wins, as in the search order)."""
    seen: dict[str, Kernel] = {}
    for directory in kernel_dirs():
        kernel = Kernel.load(directory)
        seen.setdefault(kernel.name.lower(), kernel)
    return list(seen.values())


def expand_kernels(items: list[str]) -> list[str]:
    """Kernel names or paths, with each suite name ('prim', 'pim-ml', 'micro') replaced by its kernels."""
    out: list[str] = []
    for item in items:
        if item in SUITES and not Path(item).is_dir():
            out += [Kernel.load(d).name for d in kernel_dirs() if d.parent == _BENCHMARKS / item]
        else:
            out.append(item)
    return list(dict.fromkeys(out))


def find_kernel(name_or_path: str | Path) -> Kernel:
    """A kernel by directory path, or by registered name."""
    path = Path(name_or_path)
    if path.is_dir():
        return Kernel.load(path)
    wanted = str(name_or_path).lower()
    for directory in kernel_dirs():
        if directory.name.lower() == wanted:
            return Kernel.load(directory)
    for kernel in list_kernels():
        if kernel.name.lower() == wanted:
            return kernel
    if path.exists():
        raise KernelError(f"{name_or_path} is not a directory: a kernel directory (dpu/*.c and workload.py) "
                          "was expected")
    names = ", ".join(sorted(k.name for k in list_kernels()))
    raise KernelError(f"no kernel named or at {name_or_path!r}; registered kernels: {names}")


def find_runnable_kernel(name_or_path: str | Path) -> Kernel:
    """A kernel found as `find_kernel` finds it that can also run: it has a workload.py (host side, sizes)."""
    kernel = find_kernel(name_or_path)
    if not (kernel.root / "workload.py").is_file():
        raise KernelError(f"{name_or_path} is not a kernel directory (no workload.py): no host side to run, "
                          "no sizes")
    return kernel


class DeclaredRun(NamedTuple):
    """What a workload declares of one run of its host program, both cost-model inputs."""

    launches: int  # DPU launches (Workload.launch_count)
    processed_size: int  # the size after the host's padding (Workload.processed_size)


@functools.lru_cache(maxsize=None)
def declared_run(kernel: str, defines: str, size: int, dpus: int, tasklets: int) -> DeclaredRun:
    """The launches and processed size of one run of a registered kernel's host program at its
    default parameters; ``defines`` in the store's key form ('BL=8;INT32'). Every run checks the
    launches against the device, so they are the count of the runs a dataset records."""
    values = dict(parse_define(item) for item in filter(None, defines.split(";")))
    workload = _runnable_kernel(kernel).workload(size, dpus, tasklets, values)
    return DeclaredRun(workload.launch_count(), workload.processed_size())


_runnable_kernel = functools.lru_cache(maxsize=None)(find_runnable_kernel)
