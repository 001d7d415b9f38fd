"""Build cnmtune's UPMEM host library and the tool shims a UPMEM project's Makefile calls.

`host_environment()` returns a directory in the build cache with
  lib/libdpu.a                  libdpu.c compiled against include/ (the SDK's header names)
  bin/dpu-pkg-config            `--cflags` -> -I<include>, `--libs` -> -L<lib> -ldpu, as the SDK's
  bin/dpu-upmem-dpurte-clang    cnmtune-cc, so Makefiles that name the SDK's DPU compiler use cnmtune's
  bin/cc                        only when the machine has no C compiler: zig's clang (ziglang)
and the environment to build and run a host program in (that bin/ first on PATH). The key is
the library's sources, the C compiler and the Python the library starts its simulator with.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from cnmtune.errors import ToolchainMissing
from cnmtune.runtime.toolchain.cache import BuildCache, content_key
from cnmtune.runtime.upmem.sdk import SHIM_MARKER

HERE = Path(__file__).resolve().parent
INCLUDE_DIR = HERE / "include"
LIBRARY_SOURCE = HERE / "libdpu.c"
WIRE_HEADER = HERE.parent / "upmem" / "wire.h"


def _c_compiler() -> list[str]:
    """The host C compiler: $CC, else cc, else zig's clang (the ziglang package cnmtune depends on)."""
    chosen = os.environ.get("CC")
    if chosen:
        return shlex.split(chosen)
    if shutil.which("cc"):
        return ["cc"]
    return [sys.executable, "-m", "ziglang", "cc"]


def _archiver(cc: list[str]) -> list[str]:
    """ar beside a system compiler, zig's with zig's."""
    if cc[0] != sys.executable and shutil.which("ar"):
        return ["ar"]
    return [sys.executable, "-m", "ziglang", "ar"]


def _script(path: Path, text: str) -> None:
    path.write_text(text)
    path.chmod(0o755)


def _sources() -> list[bytes]:
    """Everything the environment is made of: the library, its headers, and this module (the shims)."""
    parts = (LIBRARY_SOURCE, WIRE_HEADER, Path(__file__), *sorted(INCLUDE_DIR.glob("*.h")))
    return [p.read_bytes() for p in parts]


def _build(target: Path, cc: list[str]) -> None:
    with tempfile.TemporaryDirectory(prefix="cnmtune-hostapi-", dir=target.parent) as tmp:
        stage = Path(tmp) / "env"
        (stage / "lib").mkdir(parents=True)
        (stage / "bin").mkdir()
        obj = stage / "lib" / "libdpu.o"
        compile_args = [*cc, "-std=gnu11", "-O2", "-Wall", "-Wextra", "-fPIC", f"-I{INCLUDE_DIR}",
                        f'-DCNMTUNE_DEFAULT_PYTHON="{sys.executable}"', "-c", str(LIBRARY_SOURCE), "-o", str(obj)]
        steps = [compile_args, [*_archiver(cc), "rcs", str(stage / "lib" / "libdpu.a"), str(obj)]]
        for args in steps:
            try:
                done = subprocess.run(args, capture_output=True, text=True, timeout=300)
            except OSError as exc:
                raise ToolchainMissing(f"cannot build cnmtune's UPMEM host library: {shlex.join(args)}: {exc}") from exc
            if done.returncode != 0:
                raise ToolchainMissing(f"cannot build cnmtune's UPMEM host library ({shlex.join(args)}): "
                                       f"{done.stderr.strip()[-1500:]}")
        obj.unlink()
        lib = target / "lib"
        _script(stage / "bin" / "dpu-pkg-config",
                "#!/bin/sh\n# cnmtune's stand-in for the UPMEM SDK's dpu-pkg-config (package `dpu` only)\n"
                'out=""\nfor arg in "$@"; do\n  case "$arg" in\n'
                f"    --cflags) out=\"$out -I{INCLUDE_DIR}\" ;;\n"
                f"    --libs) out=\"$out -L{lib} -ldpu\" ;;\n"
                "    dpu) ;;\n"
                '    *) echo "dpu-pkg-config (cnmtune): unknown argument $arg" >&2; exit 1 ;;\n'
                '  esac\ndone\necho $out\n')
        _script(stage / "bin" / "dpu-upmem-dpurte-clang",
                f'#!/bin/sh\n# the UPMEM SDK\'s DPU compiler name, {SHIM_MARKER}\nexec "{sys.executable}" -c '
                '"from cnmtune.plugin.cc import main; main()" "$@"\n')
        if cc[0] == sys.executable:
            _script(stage / "bin" / "cc", f'#!/bin/sh\nexec "{sys.executable}" -m ziglang cc "$@"\n')
        try:
            stage.rename(target)
        except OSError:  # built concurrently by another process: theirs is as good
            if not (target / "lib" / "libdpu.a").is_file():
                raise


def host_environment(cache: BuildCache | None = None) -> tuple[Path, dict[str, str]]:
    """The shim directory (built on first use) and os.environ with its bin/ first on PATH."""
    cache = cache or BuildCache()
    cc = _c_compiler()
    # the shim names this checkout's include directory, so the key holds its path as well as its contents
    target = cache.path("hostapi", content_key("hostapi-1", *_sources(), *cc, sys.executable, str(INCLUDE_DIR)), "")
    if not (target / "lib" / "libdpu.a").is_file():
        target.parent.mkdir(parents=True, exist_ok=True)
        _build(target, cc)
        cache.added(target)
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([str(target / "bin"), *filter(None, [env.get("PATH")])])
    env.setdefault("CNMTUNE_PYTHON", sys.executable)
    return target, env
