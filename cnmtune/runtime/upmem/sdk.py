"""Finding an installed UPMEM SDK: its compiler driver, its opt and its dpu-pkg-config.

Where cnmtune looks, in order, and only there (an explicit place is never second-guessed):
1. the directory given as ``sdk_dir`` (``--sdk-dir DIR`` on the command line),
2. the directory in ``$CNMTUNE_UPMEM_SDK``,
3. ``dpu-upmem-dpurte-clang`` on ``PATH`` (what ``source upmem_env.sh`` sets up), passing over
   cnmtune's own shim of that name (``cnmtune app env``, cnmtune.runtime.hostapi.build).
A directory may be the SDK root (holding ``bin/``) or its ``bin/`` itself. The SDK's own
``opt`` is used, never a system one: only the SDK's LLVM knows the DPU target (FACTS.md §9).
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from cnmtune.errors import ToolchainMissing

CLANG = "dpu-upmem-dpurte-clang"
OPT = "opt"
PKG_CONFIG = "dpu-pkg-config"
ENV_VAR = "CNMTUNE_UPMEM_SDK"
#: Written into cnmtune's shim of the SDK's compiler (cnmtune.runtime.hostapi.build), so PATH lookups pass it over.
SHIM_MARKER = "served by cnmtune-cc"
HOW_TO = (f"install the UPMEM SDK and `source /path/to/upmem-sdk/upmem_env.sh` (puts {CLANG} on PATH), "
          f"or pass --sdk-dir /path/to/upmem-sdk, or set {ENV_VAR}=/path/to/upmem-sdk")


def _executable(path: Path) -> bool:
    return path.is_file() and os.access(path, os.X_OK)


def _is_shim(path: Path) -> bool:
    """Whether ``path`` is cnmtune's shim for the SDK's compiler (cnmtune-cc under the SDK's name)."""
    try:
        with path.open("rb") as file:
            return SHIM_MARKER.encode() in file.read(4096)
    except OSError:
        return False


@dataclass(frozen=True)
class UpmemSdk:
    """An installed UPMEM SDK: the bin directory holding its tools and how it was found."""

    bin_dir: Path
    found_via: str  # "--sdk-dir", "CNMTUNE_UPMEM_SDK" or "PATH"

    @classmethod
    def find(cls, sdk_dir: str | os.PathLike | None = None) -> "UpmemSdk":
        """Locate the SDK (see the module docstring); ToolchainMissing says where it looked."""
        if sdk_dir is not None:
            return cls._in_dir(Path(sdk_dir), "--sdk-dir")
        if env := os.environ.get(ENV_VAR):
            return cls._in_dir(Path(env), ENV_VAR)
        on_path = [Path(found) for entry in os.environ.get("PATH", os.defpath).split(os.pathsep)
                   if entry and (found := shutil.which(CLANG, path=entry))]
        link = next((path for path in on_path if not _is_shim(path)), None)
        if link is None:
            what = (f"the only {CLANG} on PATH is cnmtune's shim ({on_path[0]}, from `cnmtune app env`), not the "
                    f"SDK's" if on_path else f"{CLANG} is not on PATH")
            raise ToolchainMissing(
                f"UPMEM SDK not found: {what}, no --sdk-dir was given and {ENV_VAR} is not set; {HOW_TO}")
        # a PATH entry may be a symlink into the SDK tree; its opt sits next to the real driver
        bin_dir = next((d for d in (link.parent, link.resolve().parent) if _executable(d / OPT)), link.parent)
        return cls(bin_dir, "PATH")

    @classmethod
    def _in_dir(cls, directory: Path, via: str) -> "UpmemSdk":
        for candidate in (directory / "bin", directory):
            if _executable(candidate / CLANG):
                return cls(candidate.resolve(), via)
        raise ToolchainMissing(
            f"UPMEM SDK not found: no executable {CLANG} in {directory / 'bin'} or {directory} "
            f"(given by {via}={directory}); {HOW_TO}")

    @property
    def root(self) -> Path:
        """The SDK installation root (the parent of its bin directory)."""
        return self.bin_dir.parent

    def tool(self, name: str) -> Path:
        """Path of one of the SDK's executables; ToolchainMissing if this SDK lacks it."""
        path = self.bin_dir / name
        if not _executable(path):
            extra = " (cnmtune runs the SDK's own opt: a system opt has no DPU target)" if name == OPT else ""
            raise ToolchainMissing(
                f"the UPMEM SDK in {self.bin_dir} (found via {self.found_via}) has no executable {name}{extra}; "
                f"{HOW_TO}")
        return path

    @property
    def clang(self) -> Path:
        """The DPU compiler driver, dpu-upmem-dpurte-clang."""
        return self.tool(CLANG)

    @property
    def opt(self) -> Path:
        """The SDK's LLVM optimiser."""
        return self.tool(OPT)

    @property
    def pkg_config(self) -> Path:
        """dpu-pkg-config: host compile and link flags of the SDK's host library."""
        return self.tool(PKG_CONFIG)

    @functools.cached_property
    def version(self) -> str:
        """SDK version: `dpu-pkg-config --modversion dpu`, else share/upmem/version, else 'unknown'."""
        if _executable(self.bin_dir / PKG_CONFIG):
            try:
                proc = subprocess.run([str(self.bin_dir / PKG_CONFIG), "--modversion", "dpu"],
                                      capture_output=True, text=True, timeout=60)
                if proc.returncode == 0 and proc.stdout.strip():
                    return proc.stdout.strip().splitlines()[0]
            except OSError:
                pass
        try:
            # "UPMEM DPU SDK version 2025.1.0 - build ..." (the SDK's share/upmem/version)
            text = (self.root / "share" / "upmem" / "version").read_text()
            if match := re.search(r"version\s+(\S+)", text):
                return match.group(1)
        except OSError:
            pass
        return "unknown"
