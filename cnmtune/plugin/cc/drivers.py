"""cnmtune-cc's two back ends: the proxy toolchain and the UPMEM SDK, one source or link at a time.

Both run the stages of their cnmtune toolchain (cnmtune.runtime.toolchain: ProxyToolchain's
front-end flags and command line, optimize, codegen and link command line; UpmemToolchain's
frontend, optimize, codegen and link command lines), with the user's flags in place of a kernel
variant's, so a build through cnmtune-cc gives the same program as ``cnmtune compile``; the
driver runs each command itself to echo it under -v and to report the tool's own diagnostics. Outputs appear only
when complete (written beside the target, then renamed).
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from cnmtune.atomic import atomic_write
from cnmtune.errors import CnmtuneError, ToolchainMissing
from cnmtune.plugin.cc.args import PROG, BuildFailed, Invocation
from cnmtune.plugin.cc.pipeline import choose_pipeline


class ProxyDriver:
    """Compiles and links with cnmtune's ProxyToolchain stages, one source or object at a time."""

    kind = "proxy"

    def __init__(self, inv: Invocation):
        from cnmtune.runtime.toolchain import ProxyToolchain

        self.inv = inv
        self.toolchain = ProxyToolchain()

    def _zig(self, args: list[str]):
        from cnmtune.runtime.toolchain import zig

        if self.inv.verbose:
            print(" ".join(shlex.quote(a) for a in [str(zig.zig_executable()), *args]), file=sys.stderr)
        return zig.run(args)

    def _cc(self, source: str, level: list[str], flags: list[str]) -> list[str]:
        """A `zig cc` command line of the proxy front end with the user's flags and warnings."""
        from cnmtune.runtime.toolchain.proxy import frontend_flags

        inv = self.inv
        return ["cc", *frontend_flags(level, [*inv.pp_flags, *inv.cc_flags, *flags], warnings=True), source]

    def _run(self, args: list[str]) -> str:
        """Run zig; the diagnostics of a failure are BuildFailed, else the warnings are returned."""
        from cnmtune.runtime.toolchain.proxy import diagnostics

        result = self._zig(args)
        if result.returncode != 0:
            raise BuildFailed(diagnostics(result.stderr) or f"zig {args[0]} failed (exit code {result.returncode})")
        return diagnostics(result.stderr)

    def preprocess(self, source: str, output: str | None, dep_args: list[str]) -> None:
        """-E, -M or -MM: the preprocessed source or its dependencies, on stdout or in `output`."""
        from cnmtune.runtime.toolchain.proxy import diagnostics

        args = [*self._cc(source, [], dep_args), *(["-o", output] if output else [])]
        if self.inv.deps.preprocess is None:
            args.insert(1, "-E")
        result = self._zig(args)
        if result.returncode != 0:
            raise BuildFailed(diagnostics(result.stderr))
        sys.stdout.write(result.stdout)
        _report(diagnostics(result.stderr))

    def depfile(self, source: str, target_file: Path, dep_args: list[str]) -> None:
        """Write the make dependency file of `source` (zig cc takes -MD only without -o, so the
        dependencies are listed by a preprocessor-only run; its warnings are the compile's, shown once)."""
        self._run(self._cc(source, [], [*dep_args, "-MF", str(target_file)]))

    def compile(self, source: str, kind: str, output: Path, emit: str) -> None:
        """Compile one source into `output`; emit is 'obj', 'asm', 'llvm-bc' or 'llvm-ll'."""
        from cnmtune.runtime.toolchain.proxy import function_sections

        inv = self.inv
        with tempfile.TemporaryDirectory(prefix="cnmtune-cc-") as tmp:
            if kind == "asm":
                out = Path(tmp) / "out.o"
                language = ["-x", inv.language] if inv.language else []
                _report(self._run([*self._cc(source, ["-O2"], [*language, "-S" if emit == "asm" else "-c"]),
                                   "-o", str(out)]))
                publish_file(out, output)
                return
            ll = Path(tmp) / "out.ll"
            flags = [*inv.pp_flags, *inv.cc_flags, *(["-x", "c"] if inv.language == "c" else [])]
            _report(self._run(self.toolchain.frontend_args(Path(source), ll, flags, warnings=True)))
            ir = function_sections(ll.read_text())
        pipeline = choose_pipeline(inv, source, self.kind)
        if inv.verbose:
            print(f"{PROG}: llvmlite: pipeline {pipeline.text}, rv32i code generation at "
                  f"-O{self.toolchain.codegen_level}", file=sys.stderr)
        try:
            module = self.toolchain.optimize(ir, pipeline)
        except RuntimeError as exc:  # LLVM itself failed on this IR and pipeline
            raise BuildFailed(f"{PROG}: error: {source}: LLVM failed with pipeline {pipeline.text}: {exc}") from None
        atomic_write(output, self.toolchain.codegen(module, emit))

    def link(self, objects: list[Path], output: Path) -> None:
        """Link objects with cnmtune's DPU runtime; the program must fit IRAM and WRAM."""
        from cnmtune.runtime.toolchain.base import tasklet_config
        from cnmtune.runtime.toolchain.layout import check_capacity, read_memory_use

        tasklets, stack = tasklet_config(self.inv.defines)
        with tempfile.TemporaryDirectory(prefix="cnmtune-cc-ld-") as tmp:
            out = Path(tmp) / "out.elf"
            _report(self._run(self.toolchain.link_args(objects, out, tasklets, stack, self.inv.ld_args)))
            try:
                check_capacity(read_memory_use(out), str(output))
            except CnmtuneError as exc:
                raise BuildFailed(f"{PROG}: error: {exc}") from None
            out.chmod(0o755)
            publish_file(out, output)


class UpmemDriver:
    """Compiles and links with UpmemToolchain's command lines (the UPMEM SDK's clang and opt)."""

    kind = "upmem"

    def __init__(self, inv: Invocation):
        from cnmtune.runtime.toolchain import UpmemToolchain
        from cnmtune.runtime.upmem.sdk import UpmemSdk

        self.inv = inv
        try:
            sdk = UpmemSdk.find()
            self.clang = str(sdk.clang)
        except ToolchainMissing as exc:
            raise ToolchainMissing(f"the UPMEM toolchain is not available (CNMTUNE_TOOLCHAIN=upmem): {exc}") from None
        self.toolchain = UpmemToolchain(sdk)

    def _run(self, args: list[str]) -> subprocess.CompletedProcess:
        if self.inv.verbose:
            print(" ".join(shlex.quote(a) for a in args), file=sys.stderr)
        try:
            return subprocess.run(args, capture_output=True, text=True)
        except OSError as exc:
            raise ToolchainMissing(f"cannot run {args[0]}: {exc}") from exc

    def _check(self, args: list[str]) -> str:
        """Run an SDK tool; its diagnostics on failure are BuildFailed, else its warnings are returned."""
        proc = self._run(args)
        if proc.returncode != 0:
            raise BuildFailed((proc.stderr or proc.stdout).strip()
                              or f"{Path(args[0]).name} failed (exit code {proc.returncode})")
        return proc.stderr.strip()

    def preprocess(self, source: str, output: str | None, dep_args: list[str]) -> None:
        """-E, -M or -MM: the preprocessed source or its dependencies, on stdout or in `output`."""
        inv = self.inv
        args = [self.clang, *(["-E"] if inv.deps.preprocess is None else []), *inv.pp_flags, *inv.cc_flags,
                *dep_args, source, *(["-o", output] if output else [])]
        proc = self._run(args)
        if proc.returncode != 0:
            raise BuildFailed(proc.stderr.strip())
        sys.stdout.write(proc.stdout)
        _report(proc.stderr.strip())

    def depfile(self, source: str, target_file: Path, dep_args: list[str]) -> None:
        """Write the make dependency file of `source` (its warnings are the compile's, shown once)."""
        inv = self.inv
        self._check([self.clang, *inv.pp_flags, *inv.cc_flags, *dep_args, "-MF", str(target_file), source])

    def compile(self, source: str, kind: str, output: Path, emit: str) -> None:
        """Compile one source into `output`; emit is 'obj', 'asm', 'llvm-bc' or 'llvm-ll'."""
        inv, toolchain = self.inv, self.toolchain
        flags = [*inv.pp_flags, *inv.cc_flags]
        with tempfile.TemporaryDirectory(prefix="cnmtune-cc-upmem-") as tmp:
            out = Path(tmp) / "out"
            if kind == "asm":
                _report(self._check([self.clang, *flags, "-S" if emit == "asm" else "-c", source, "-o", str(out)]))
                publish_file(out, output)
                return
            bitcode = Path(tmp) / "out.bc"
            _report(self._check(toolchain.frontend_args(Path(source), bitcode, flags)))
            opt_args = toolchain.opt.pipeline_args(choose_pipeline(inv, source, self.kind))
            if opt_args:
                optimized = Path(tmp) / "opt.bc"
                _report(self._check(toolchain.optimize_args(opt_args, bitcode, optimized)))
                bitcode = optimized
            if emit == "llvm-bc":
                publish_file(bitcode, output)
                return
            outputs = {"obj": ["-c"], "asm": ["-S"], "llvm-ll": ["-S", "-emit-llvm"]}[emit]
            _report(self._check(toolchain.codegen_args([bitcode], out, outputs)))
            publish_file(out, output)

    def link(self, objects: list[Path], output: Path) -> None:
        """The SDK link of generated objects, with the tasklet defines."""
        from cnmtune.runtime.toolchain.base import tasklet_config

        tasklets, stack = tasklet_config(self.inv.defines)
        with tempfile.TemporaryDirectory(prefix="cnmtune-cc-upmem-ld-") as tmp:
            out = Path(tmp) / "out.elf"
            _report(self._check(self.toolchain.link_args(objects, out, tasklets, stack, self.inv.link_flags)))
            publish_file(out, output)


def _report(text: str) -> None:
    """Show a tool's warnings as they are."""
    if text:
        print(text, file=sys.stderr)


def publish_file(produced: Path, output: Path) -> None:
    """Move a finished tool output into place by a rename (no half-written output)."""
    output.parent.mkdir(parents=True, exist_ok=True)
    staged = output.with_name(f".{output.name}.{os.getpid()}.tmp")
    try:
        shutil.move(str(produced), staged)
        staged.replace(output)
    except BaseException:
        staged.unlink(missing_ok=True)
        raise
