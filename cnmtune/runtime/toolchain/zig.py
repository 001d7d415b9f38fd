"""The zig distribution from PyPI (package `ziglang`): its clang front end and its ld.lld.

`zig cc` is clang with zig's sysroot handling; `zig ld.lld` is LLVM's linker. zig builds its
compiler_rt (soft multiply, divide and floating point for rv32i) on first use; cnmtune finds
that archive once through `zig cc -v` and then calls ld.lld directly, which saves ~25 ms per link.
"""

from __future__ import annotations

import functools
import re
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

import ziglang

from cnmtune.errors import CompileError, ToolchainMissing

TARGET_FLAGS: tuple[str, ...] = (
    "-target", "riscv32-freestanding-none", "-mcpu=generic_rv32", "-mabi=ilp32",
)


@dataclass(frozen=True)
class ProcessResult:
    """Exit code and output of one tool invocation."""

    returncode: int
    stdout: str
    stderr: str


def zig_executable() -> Path:
    """Path of the zig binary shipped inside the ziglang package."""
    path = Path(ziglang.__file__).parent / "zig"
    if not path.is_file():
        raise ToolchainMissing(f"zig binary not found at {path}; reinstall with `pip install ziglang`")
    return path


def run(args: list[str], cwd: Path | None = None, timeout: float = 300) -> ProcessResult:
    """Run `zig ARGS...` and capture its output; CompileError if it does not finish within `timeout` s."""
    try:
        proc = subprocess.run(
            [str(zig_executable()), *args], cwd=cwd, capture_output=True, text=True, timeout=timeout
        )
    except subprocess.TimeoutExpired as exc:
        raise CompileError(f"zig {args[0] if args else ''} did not finish within {timeout:g} s") from exc
    return ProcessResult(proc.returncode, proc.stdout, proc.stderr)


@functools.lru_cache(maxsize=1)
def clang_version() -> str:
    """Version of the clang inside zig, e.g. '22.1.8'."""
    result = run(["cc", "--version"])
    match = re.search(r"clang version (\d+\.\d+\.\d+)", result.stdout)
    if result.returncode != 0 or not match:
        raise ToolchainMissing(f"`zig cc --version` failed: {result.stderr.strip() or result.stdout.strip()}")
    return match.group(1)


@functools.lru_cache(maxsize=1)
def compiler_rt_archive() -> Path:
    """zig's compiler_rt archive for rv32i/ilp32 (built by zig on first use, then cached by zig)."""
    with tempfile.TemporaryDirectory(prefix="cnmtune-zig-") as tmp:
        source = Path(tmp) / "probe.c"
        source.write_text("int main(void) { return 0; }\n")
        result = run(
            ["cc", *TARGET_FLAGS, "-fno-sanitize=all", "-ffreestanding", "-nostartfiles", "-v",
             "-Wl,-e,main", str(source), "-o", str(Path(tmp) / "probe.elf")]
        )
    match = re.search(r"(\S*libcompiler_rt\.a)", result.stderr)
    if result.returncode != 0 or not match or not Path(match.group(1)).is_file():
        raise ToolchainMissing(
            "could not locate zig's compiler_rt for riscv32: " + (result.stderr.strip()[-500:] or "no output")
        )
    return Path(match.group(1))
