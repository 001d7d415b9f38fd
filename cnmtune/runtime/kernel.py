"""A DPU kernel on disk: a directory with dpu/*.c and a workload.py.

The layout follows PrIM: device sources in dpu/, shared headers in support/ (added to the
include path), and workload.py declaring the compile-time defines the kernel understands.
Kernels of one suite may share code through the suite's common/ directory (a sibling of the
kernel directories): it is on the C include path, importable from workload.py, and part of
every such kernel's content hash.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import sys
from dataclasses import dataclass
from pathlib import Path

from cnmtune.errors import KernelError
from cnmtune.runtime.workload import Workload

_SOURCE_SUFFIXES = (".c", ".h", ".S", ".s", ".inc", ".py")
COMMON = "common"  # a suite's shared directory


@dataclass(frozen=True)
class Kernel:
    """A kernel directory resolved into its sources, include dirs and workload class."""

    name: str
    root: Path
    sources: tuple[Path, ...]
    include_dirs: tuple[Path, ...]
    workload: type[Workload]

    @classmethod
    def load(cls, path: str | Path) -> "Kernel":
        """Resolve a kernel directory; a clear KernelError if it is not one."""
        root = Path(path).resolve()
        if not root.is_dir():
            raise KernelError(f"kernel directory {path} does not exist")
        sources = tuple(sorted((root / "dpu").glob("*.c")))
        if not sources:
            raise KernelError(f"kernel directory {path} has no device sources (expected dpu/*.c)")
        include_dirs = tuple(d for d in (root / "dpu", root / "support", root.parent / COMMON) if d.is_dir())
        workload = _load_workload(root)
        return cls(workload.name or root.name, root, sources, include_dirs, workload)

    def digest(self) -> str:
        """SHA-256 over every source and header file of the kernel (names and contents)."""
        digest = hashlib.sha256()
        for directory in self.include_dirs:
            for parts in sorted(_source_files(directory)):
                path = os.path.join(directory, *parts)
                digest.update(os.path.relpath(path, self.root).encode() + b"\0")
                with open(path, "rb") as handle:
                    digest.update(handle.read())
        return digest.hexdigest()


def _source_files(directory: Path) -> list[tuple[str, ...]]:
    """The path parts, below `directory`, of every source file in its tree: the files that
    ``sorted(directory.rglob("*"))`` lists with a source suffix, in the same order once sorted
    (symbolic links to directories are not followed, those to files are). os.walk lists them in
    about a quarter of rglob's time, so va's digest takes 0.32 ms, not 0.49: a compile through
    ProxyToolchain.compile computes one unless its caller passes it."""
    found = []
    for root, _, names in os.walk(directory):
        below = os.path.relpath(root, directory)
        prefix = () if below == os.curdir else tuple(below.split(os.sep))
        found.extend((*prefix, name) for name in names
                     if os.path.splitext(name)[1] in _SOURCE_SUFFIXES and os.path.isfile(os.path.join(root, name)))
    return found


def _load_workload(root: Path) -> type[Workload]:
    script = root / "workload.py"
    if not script.is_file():
        return type(f"{root.name}Workload", (Workload,), {"name": root.name})
    module_name = f"cnmtune_kernel_{hashlib.sha256(str(script).encode()).hexdigest()[:12]}"
    spec = importlib.util.spec_from_file_location(module_name, script)
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    common = str(root.parent / COMMON)
    sys.path.insert(0, common)
    try:
        spec.loader.exec_module(module)
    except Exception as exc:  # user code: any failure is reported as a broken workload.py
        sys.modules.pop(module_name, None)
        raise KernelError(f"{script}: cannot import workload.py: {type(exc).__name__}: {exc}") from exc
    finally:
        sys.path.remove(common)
    found = [
        obj for obj in vars(module).values()
        if isinstance(obj, type) and issubclass(obj, Workload) and obj is not Workload
        and obj.__module__ == module_name
    ]
    if len(found) != 1:
        raise KernelError(f"{script}: expected exactly one Workload subclass, found {len(found)}")
    return found[0]
