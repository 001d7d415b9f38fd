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
            for file in sorted(directory.rglob("*")):
                if file.is_file() and file.suffix in _SOURCE_SUFFIXES:
                    digest.update(os.path.relpath(file, self.root).encode() + b"\0")
                    digest.update(file.read_bytes())
        return digest.hexdigest()


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
