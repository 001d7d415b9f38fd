"""The UPMEM SDK toolchain: a kernel compiled by the SDK's own clang and opt into a DPU ELF.

L2P's protocol, with the SDK's tools (FACTS.md §9; DESIGN.md "Real UPMEM"):
1. `dpu-upmem-dpurte-clang -O2 -Xclang -disable-llvm-passes -emit-llvm -c` per source, with the
   kernel's include directories and the variant's -D flags (NR_TASKLETS, STACK_SIZE_DEFAULT
   included): bitcode before any pass, which the pipeline transforms (the proxy's IR_FLAGS: not
   L2P's -O0 front end, whose noinline on every function no pipeline can undo);
2. the SDK's `opt` with the variant's pipeline (cnmtune.runtime.toolchain.opt);
3. `dpu-upmem-dpurte-clang -O<cg> -Xclang -disable-llvm-passes -DNR_TASKLETS=n
   -DSTACK_SIZE_DEFAULT=b *.bc -o prog.elf`: code generation and the SDK link. The driver turns
   those two -D flags into the linker's --defsym NR_TASKLETS / STACK_SIZE_TASKLET_<i> (the
   SDK's DPURTE.cpp), and -disable-llvm-passes keeps clang from optimising the IR again, so
   the pipeline alone decides the IR; -O<cg> only sets the code generator's level.
Every stage is cached by content (as in the proxy toolchain); the SDK version, the opt version
and the code-generation level are part of every key. The stages (``frontend``, ``optimize``,
``link``) and their command lines (``frontend_args``, ``optimize_args``, ``codegen_args``,
``link_args``) are public so that cnmtune-cc runs exactly the same ones.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from cnmtune.errors import (
    CompileError,
    IramOverflow,
    LinkError,
    PipelineError,
    ToolchainMissing,
    WramOverflow,
)
from cnmtune.runtime.toolchain.base import Binary, Toolchain, Variant, tasklet_defines
from cnmtune.runtime.toolchain.cache import BuildCache, content_key
from cnmtune.runtime.toolchain.dpu_layout import read_dpu_memory_use
from cnmtune.runtime.toolchain.opt import OptTool, is_unknown_pass_error
from cnmtune.runtime.toolchain.proxy import IR_FLAGS, IR_TAG
from cnmtune.runtime.upmem.sdk import UpmemSdk

_IRAM = re.compile(r"[^\n]*(?:region '?iram'?|'?iram'? overflowed|iram[^\n]*overflow)[^\n]*", re.I)
_WRAM = re.compile(r"[^\n]*(?:region '?wram'?|'?wram'? overflowed|wram[^\n]*overflow)[^\n]*", re.I)
TOOL_TIMEOUT_S = 600


def _run(args: list[str], what: str) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(args, capture_output=True, text=True, timeout=TOOL_TIMEOUT_S)
    except OSError as exc:
        raise ToolchainMissing(f"cannot run {args[0]}: {exc}") from exc
    except subprocess.TimeoutExpired as exc:
        raise CompileError(f"{what}: {Path(args[0]).name} did not finish within {TOOL_TIMEOUT_S} s") from exc


def _stage(out: Path, target: Path) -> None:
    """Move a finished tool output into the cache without a window for a half-written entry."""
    target.parent.mkdir(parents=True, exist_ok=True)
    staged = target.with_name(f".{target.name}.{os.getpid()}.{out.parent.name}")
    shutil.move(str(out), staged)
    staged.replace(target)


class UpmemToolchain(Toolchain):
    """The UPMEM SDK's clang and opt, driven as the L2P protocol does; emits real DPU ELFs."""

    kind = "upmem"

    def __init__(self, sdk: UpmemSdk | None = None, cache: BuildCache | None = None,
                 codegen_level: int = 2, sdk_dir: str | os.PathLike | None = None):
        # Code generation at -O2 by default, as PrIM's `dpu-upmem-dpurte-clang -O2` builds and
        # the proxy toolchain's default; codegen_level=0 for L2P's unflagged link.
        if codegen_level not in (0, 1, 2, 3):
            raise ValueError("codegen_level must be 0..3")
        self.sdk = sdk if sdk is not None else UpmemSdk.find(sdk_dir)
        self.cache = cache or BuildCache()
        self.codegen_level = codegen_level
        self._opt: OptTool | None = None
        self._identity: str | None = None

    @property
    def opt(self) -> OptTool:
        """The SDK's opt with its LLVM version (probed once)."""
        if self._opt is None:
            self._opt = OptTool.probe(self.sdk.opt)
        return self._opt

    @property
    def identity(self) -> str:
        if self._identity is None:
            _ = self.sdk.clang  # a missing driver is reported before anything runs
            self._identity = f"upmem-sdk{self.sdk.version}-llvm{self.opt.version}-cg{self.codegen_level}-{IR_TAG}"
        return self._identity

    @property
    def llvm_version(self) -> str:
        """LLVM version of the SDK's opt."""
        return self.opt.version

    def compile(self, variant: Variant, kernel_digest: str | None = None) -> Binary:
        start = time.perf_counter()
        elf_key = content_key(self.identity, kernel_digest or variant.kernel.digest(), *variant.define_flags(),
                              variant.pipeline.text)
        elf_path = self.cache.path("upmem-elf", elf_key, ".elf")
        cached = elf_path.is_file()
        if not cached:
            opt_args = self.opt.pipeline_args(variant.pipeline)  # an unknown pass fails before any compile
            bitcode = [self.optimize(variant, source, opt_args) for source in variant.kernel.sources]
            self.link(bitcode, elf_path, variant.nr_tasklets, variant.stack_size, variant.label)
            self.cache.added(elf_path)
        memory = read_dpu_memory_use(elf_path)
        elf_hash = hashlib.sha256(elf_path.read_bytes()).hexdigest()
        return Binary(variant, elf_path, elf_hash, self.identity, memory, time.perf_counter() - start, cached)

    def frontend_args(self, source: Path, output: Path, flags: Sequence[str]) -> list[str]:
        """Stage 1's command line: C -> bitcode before any pass (IR_FLAGS); `flags` are the
        build's -D/-I/... (a variant's include directories and defines)."""
        return [str(self.sdk.clang), *IR_FLAGS, "-emit-llvm", "-c", *flags, str(source), "-o", str(output)]

    def optimize_args(self, opt_args: Sequence[str], bitcode: Path, output: Path) -> list[str]:
        """Stage 2's command line: the SDK's opt with a pipeline's arguments (opt.pipeline_args)."""
        return [str(self.opt.path), *opt_args, str(bitcode), "-o", str(output)]

    def codegen_args(self, inputs: Sequence[Path], output: Path, flags: Sequence[str]) -> list[str]:
        """Stage 3's command line: code generation at -O<cg> without clang's own passes (the
        pipeline alone decides the IR); `flags` choose the output (-c, -S, ...) or, for a whole
        program, the tasklet defines of the link (stage 4 runs in the same call)."""
        return [str(self.sdk.clang), f"-O{self.codegen_level}", "-Xclang", "-disable-llvm-passes", *flags,
                *map(str, inputs), "-o", str(output)]

    def link_args(self, objects: Sequence[Path], output: Path, nr_tasklets: int, stack_size: int,
                  extra: Sequence[str] = ()) -> list[str]:
        """Stage 4's command line on objects already generated: the SDK link with the tasklet
        defines (the driver turns them into the linker's tasklet symbols) and `extra` (-L, -l, ...)."""
        return [str(self.sdk.clang), *tasklet_defines(nr_tasklets, stack_size), *map(str, objects), *extra,
                "-o", str(output)]

    def frontend(self, variant: Variant, source: Path) -> Path:
        """Stage 1: cached bitcode of one source of the variant before any pass (IR_FLAGS)."""
        key = content_key(self.identity, variant.kernel.digest(), str(source.relative_to(variant.kernel.root)),
                          *variant.define_flags())
        path = self.cache.path("upmem-ir", key, ".bc")
        if path.is_file():
            return path
        with tempfile.TemporaryDirectory(prefix="cnmtune-upmem-cc-") as tmp:
            out = Path(tmp) / "out.bc"
            flags = [*(f"-I{d}" for d in variant.kernel.include_dirs), *variant.define_flags()]
            proc = _run(self.frontend_args(source, out, flags), variant.label)
            if proc.returncode != 0 or not out.is_file():
                raise CompileError(f"{variant.label}: {source.name} does not compile (UPMEM SDK clang)",
                                   (proc.stderr or proc.stdout).strip())
            _stage(out, path)
        self.cache.added(path)
        return path

    def optimize(self, variant: Variant, source: Path, opt_args: Sequence[str]) -> Path:
        """Stage 2: cached bitcode of one source of the variant after the SDK's opt with `opt_args`
        (opt.pipeline_args of its pipeline); the front end's own bitcode when they are empty."""
        ir = self.frontend(variant, source)
        if not opt_args:
            return ir
        key = content_key(self.identity, ir.read_bytes(), *opt_args)
        path = self.cache.path("upmem-opt", key, ".bc")
        if path.is_file():
            return path
        with tempfile.TemporaryDirectory(prefix="cnmtune-upmem-opt-") as tmp:
            out = Path(tmp) / "out.bc"
            proc = _run(self.optimize_args(opt_args, ir, out), variant.label)
            if proc.returncode != 0 or not out.is_file():
                diagnostics = (proc.stderr or proc.stdout).strip()
                if is_unknown_pass_error(diagnostics):
                    first = diagnostics.splitlines()[0] if diagnostics else ""
                    raise PipelineError(f"{variant.label}: the UPMEM SDK's opt (LLVM {self.opt.version}) rejects "
                                        f"pipeline {variant.pipeline.text!r}: {first}")
                raise CompileError(f"{variant.label}: opt failed on {source.name} (UPMEM SDK)", diagnostics)
            _stage(out, path)
        self.cache.added(path)
        return path

    def link(self, bitcode: Sequence[Path], output: Path, nr_tasklets: int, stack_size: int, label: str) -> None:
        """Stages 3 and 4 in one SDK call, as the SDK builds a program: code generation of the
        optimised bitcode and the link with the tasklet defines into `output` (written atomically).
        A full IRAM or WRAM is an IramOverflow or WramOverflow, any other failure a LinkError."""
        with tempfile.TemporaryDirectory(prefix="cnmtune-upmem-ld-") as tmp:
            out = Path(tmp) / "out.elf"
            proc = _run(self.codegen_args(bitcode, out, tasklet_defines(nr_tasklets, stack_size)), label)
            if proc.returncode != 0 or not out.is_file():
                diagnostics = (proc.stderr or proc.stdout).strip()
                if match := _IRAM.search(diagnostics):
                    raise IramOverflow(f"{label}: IRAM overflow (UPMEM SDK linker): {match.group(0).strip()}")
                if match := _WRAM.search(diagnostics):
                    raise WramOverflow(f"{label}: WRAM overflow (UPMEM SDK linker): {match.group(0).strip()}")
                raise LinkError(f"{label}: link failed (UPMEM SDK)", diagnostics)
            _stage(out, output)
