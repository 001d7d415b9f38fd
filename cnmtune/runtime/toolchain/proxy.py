"""The embedded default toolchain: UPMEM-style C compiled for an rv32i proxy of the DPU.

Four stages, each public so that cnmtune-cc runs exactly the same ones: ``frontend`` (C -> LLVM
IR with zig's clang as at -O2 before any LLVM pass, see IR_FLAGS; ``frontend_args`` is its command
line for any source and flags), ``optimize`` (the pass pipeline in-process with llvmlite),
``codegen`` (rv32i object code, assembly or bitcode with llvmlite) and ``link`` (cnmtune's DPU
linker script and runtime: in-process where cnmtune's linker makes ld.lld's bytes, else ld.lld,
whose command line is ``link_args``). ``compile(variant)`` composes them; every stage is cached
by content hash, the link by its objects' (pipelines that optimise to the same objects share one
link and one ELF).
"""

from __future__ import annotations

import functools
import hashlib
import re
import shutil
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import llvmlite
import llvmlite.binding as llvm

from cnmtune.atomic import atomic_write
from cnmtune.dpu.memory_map import INCLUDE_DIR, LINKER_SCRIPT, RUNTIME_DIR
from cnmtune.errors import CompileError, LinkError
from cnmtune.passes import Pipeline
from cnmtune.passes.apply import optimize_ir
from cnmtune.passes.knobs import process_knobs
from cnmtune.passes.target import CODEGEN_TAG, rv32_target_machine
from cnmtune.runtime.toolchain import linker, zig
from cnmtune.runtime.toolchain.base import Binary, Toolchain, Variant
from cnmtune.runtime.toolchain.cache import BuildCache, content_key
from cnmtune.runtime.toolchain.knob_process import knob_process
from cnmtune.runtime.toolchain.layout import check_capacity, read_memory_use
from cnmtune.runtime.toolchain.relocatable import NotRelocatable

# C diagnostics that the UPMEM SDK's clang (10 to 12) only warns about and that newer clang makes
# errors by default: int-conversion since clang 15, implicit-function-declaration, implicit-int
# and incompatible-function-pointer-types since clang 16, incompatible-pointer-types since clang 22
# (their release notes). Public DPU sources rely on them (a uint32_t address passed to
# mram_read), so every proxy front end keeps them warnings, as the SDK does; a -Werror in the
# build's flags makes them errors again (frontend_flags).
SDK_WARNINGS: tuple[str, ...] = tuple(f"-Wno-error={name}" for name in (
    "int-conversion", "implicit-function-declaration", "implicit-int", "incompatible-pointer-types",
    "incompatible-function-pointer-types"))
FRONTEND_FLAGS: tuple[str, ...] = (
    *zig.TARGET_FLAGS, "-ffreestanding", "-fno-sanitize=all", "-fno-stack-protector",
    "-fno-asynchronous-unwind-tables", "-fno-unwind-tables", "-g0",
    # zig cc hands clang a -c that clang reports unused with -S and -E: noise, and an error under -Werror
    "-Wno-unused-command-line-argument", *SDK_WARNINGS, "-w",
)
# The front end: the IR `clang -O2` makes before its LLVM passes run, which the pipeline then
# optimises. L2P's front end (-O0 -Xclang -disable-O0-optnone) drops optnone but keeps the
# noinline that -O0 puts on every function and the frame pointer, so no pipeline could inline a
# helper the way PrIM's `dpu-upmem-dpurte-clang -O2` build does (SEL's predicate was a call per
# element). This IR has no noinline, keeps inline hints, TBAA and lifetime markers; O0 (no
# passes) is this IR as it is.
IR_FLAGS: tuple[str, ...] = ("-O2", "-Xclang", "-disable-llvm-passes")
IR_TAG = "irO2"  # names IR_FLAGS in toolchain identities: ELFs of another front end are not reused
SECTIONS_TAG = "fsec"  # names function_sections in the proxy's identity (ELFs before it kept unused code)
# A function definition of clang's IR for C (-g0) with nothing after its attribute group: no
# section, comdat or alignment of its own.
_DEFINE = re.compile(r"^(define [^@\n]*@([-\w$.]+)\(.*\)(?: (?:local_)?unnamed_addr)?(?: #\d+)?)( \{)$", re.M)
EMITS: tuple[str, ...] = ("obj", "asm", "llvm-bc", "llvm-ll")
_ZIG_NOISE = "argument unused during compilation"
# clang's error at a place in a file (`task.c:21:26: error: ...`): a verdict on the sources, which
# the same sources and flags get again; a failure without one (zig's cache, the disk) may not recur
_SOURCE_ERROR = re.compile(r"^[^\s:][^:\n]*:\d+:\d+: (?:fatal )?error:", re.M)


@functools.lru_cache(maxsize=1)
def _dpu_tree_digest() -> str:
    """Digest of cnmtune's DPU headers, runtime sources and linker script."""
    digest = hashlib.sha256()
    for root in (INCLUDE_DIR, RUNTIME_DIR):
        for file in sorted(root.rglob("*")):
            if file.is_file():
                digest.update(str(file.relative_to(root.parent)).encode() + b"\0" + file.read_bytes())
    digest.update(LINKER_SCRIPT.read_bytes())
    return digest.hexdigest()


def _needs_knob_process(pipeline: Pipeline) -> bool:
    """Whether `pipeline`'s LLVM knobs differ from this process's: it runs in a knob process."""
    return pipeline.knobs != process_knobs()


def function_sections(ir: str) -> str:
    """The front end's IR with each function definition in a section of its own, ``.text.<name>``,
    as clang's -ffunction-sections gives them (the SDK driver's default above -O0, FACTS.md §9),
    so that the link's --gc-sections drops the functions nothing calls: a support header's unused
    helpers (PrIM's counter_start/stop) leave IRAM and the histogram, as in an SDK build. llvmlite
    cannot set the target machine's FunctionSections (0.50 has neither the option nor a section
    setter), hence the IR text. A definition that names its own section keeps it; functions the
    pass pipeline creates later (outlined loops, specialised clones) land in .text, kept while
    anything calls them."""
    return _DEFINE.sub(lambda m: f'{m[1]} section ".text.{m[2]}"{m[3]}', ir)


def diagnostics(stderr: str) -> str:
    """zig cc's stderr without zig's own noise: the clang diagnostics a user should see."""
    return "\n".join(line for line in stderr.splitlines() if _ZIG_NOISE not in line).strip()


def frontend_flags(level: Sequence[str] = (), flags: Sequence[str] = (), *, warnings: bool = False) -> list[str]:
    """`zig cc` flags of every proxy front-end run: the rv32 target and a freestanding DPU build,
    the optimisation `level` flags, cnmtune's UPMEM headers, then `flags` (-D, -I, -W..., in
    order, so they override cnmtune's); warnings are silenced unless `warnings`."""
    # clang keeps a -Wno-error=NAME a warning even under a later -Werror, so SDK_WARNINGS are left
    # out when the last of -Werror / -Wno-error in `flags` is -Werror: errors, as with the SDK's
    # clang; but -w silences them there, and only a warning (not a default error) is silenced by -w
    werror = "-w" not in flags and next(
        (f == "-Werror" for f in reversed(flags) if f in ("-Werror", "-Wno-error")), False)
    dropped = {*(("-w",) if warnings else ()), *(SDK_WARNINGS if werror else ())}
    return [*(f for f in FRONTEND_FLAGS if f not in dropped), *level, f"-I{INCLUDE_DIR}", *flags]


class ProxyToolchain(Toolchain):
    """rv32i/ilp32 proxy of the DPU: no hardware multiply, divide or float, DPU memory map."""

    kind = "proxy"

    def __init__(self, cache: BuildCache | None = None, codegen_level: int = 2):
        # Code generation runs at -O2 by default, as in a real `dpu-upmem-dpurte-clang -O2`
        # build (PrIM's), so that the O2 pipeline reproduces the default build. L2P linked its
        # optimised IR with no -O flag, presumably -O0 code generation: codegen_level=0.
        if codegen_level not in (0, 1, 2, 3):
            raise ValueError("codegen_level must be 0..3")
        self.cache = cache or BuildCache()
        self.codegen_level = codegen_level
        self._target_machine = None
        self._runtime: list[Path] | None = None
        # a front end that clang refused, by its cache key: the same sources and flags fail the same
        # way, so the other pipelines of a build (a tune's hundreds) report it without running zig again
        self._failed_frontends: dict[str, str] = {}  # key -> clang's diagnostics

    @property
    def identity(self) -> str:
        return f"proxy-rv32i-clang{zig.clang_version()}-llvm{'.'.join(map(str, llvm.llvm_version_info))}" \
               f"-llvmlite{llvmlite.__version__}-cg{self.codegen_level}-{IR_TAG}-{SECTIONS_TAG}-{CODEGEN_TAG}"

    @property
    def llvm_version(self) -> str:
        """LLVM version of the in-process optimiser and code generator."""
        return ".".join(map(str, llvm.llvm_version_info))

    def target_machine(self) -> llvm.TargetMachine:
        """The rv32i target machine (ilp32, static relocation) used for passes and codegen."""
        if self._target_machine is None:
            self._target_machine = rv32_target_machine(self.codegen_level)
        return self._target_machine

    def compile(self, variant: Variant, kernel_digest: str | None = None) -> Binary:
        """The variant's ELF: the cached one, or its objects (cached) linked once per distinct set of
        objects and link parameters; pipelines that give the same objects share one link."""
        start = time.perf_counter()
        kernel_digest = kernel_digest or variant.kernel.digest()  # once: every stage sees the same sources
        variant_key = content_key(self.identity, _dpu_tree_digest(), kernel_digest,
                                  *variant.define_flags(), variant.pipeline.text)
        alias = self.cache.get("variant", variant_key, ".link")  # the link key of the variant's objects
        elf_path = self.cache.path("elf", alias.decode(), ".elf") if alias else None
        cached = elf_path is not None and elf_path.is_file()
        if not cached:
            objects = self.objects(variant, kernel_digest)
            link_key = content_key(self.identity, _dpu_tree_digest(), *(o.read_bytes() for o in objects),
                                   str(variant.nr_tasklets), str(variant.stack_size))
            elf_path = self.cache.path("elf", link_key, ".elf")
            if not elf_path.is_file():
                self.link(objects, elf_path, variant.nr_tasklets, variant.stack_size, variant.label)
                self.cache.added(elf_path)
            self.cache.put("variant", variant_key, ".link", link_key.encode())
        memory = read_memory_use(elf_path)
        check_capacity(memory, variant.label)
        elf_hash = hashlib.sha256(elf_path.read_bytes()).hexdigest()
        return Binary(variant, elf_path, elf_hash, self.identity, memory, time.perf_counter() - start, cached)

    def frontend_args(self, source: Path, output: Path, flags: Sequence[str] = (), *,
                      warnings: bool = False) -> list[str]:
        """Stage 1's `zig cc` command line: C -> LLVM IR before any pass (IR_FLAGS); `flags` are the
        build's -D/-I/... (a variant's include directories and defines)."""
        return ["cc", *frontend_flags(IR_FLAGS, flags, warnings=warnings), "-S", "-emit-llvm", str(source),
                "-o", str(output)]

    def frontend(self, variant: Variant, source: Path, kernel_digest: str | None = None) -> str:
        """Stage 1: LLVM IR of one source of the variant before any pass (IR_FLAGS), each function
        in its own section (``function_sections``; cached by the kernel's digest, `kernel_digest`
        where the caller has it). A source that does not compile is a CompileError with clang's
        diagnostics; where clang refused the sources (an error at a line of a file), the same
        sources and flags fail again at once, without running zig."""
        flags = [*(f"-I{d}" for d in variant.kernel.include_dirs), *variant.define_flags()]
        key = content_key(self.identity, _dpu_tree_digest(), kernel_digest or variant.kernel.digest(),
                          str(source.relative_to(variant.kernel.root)), *frontend_flags(IR_FLAGS, flags))
        if (hit := self.cache.get("ir", key, ".ll")) is not None:
            return hit.decode()
        if (failed := self._failed_frontends.get(key)) is not None:
            raise CompileError(f"{variant.label}: {source.name} does not compile", failed)
        with tempfile.TemporaryDirectory(prefix="cnmtune-cc-") as tmp:
            out = Path(tmp) / "out.ll"
            result = zig.run(self.frontend_args(source, out, flags))
            if result.returncode != 0:
                found = diagnostics(result.stderr)
                if _SOURCE_ERROR.search(found):
                    self._failed_frontends[key] = found
                raise CompileError(f"{variant.label}: {source.name} does not compile", found)
            ir = function_sections(out.read_text())
        self.cache.put("ir", key, ".ll", ir.encode())
        return ir

    def optimize(self, ir: str, pipeline: Pipeline) -> llvm.ModuleRef:
        """Stage 2: parse IR and run `pipeline` on it (llvmlite, in-process; a pipeline with LLVM
        knobs in the process kept for its knob set, cnmtune.passes.knobs)."""
        if _needs_knob_process(pipeline):  # verified there before it was written (optimize_ir)
            return llvm.parse_bitcode(self._knob_bitcode(ir, pipeline))
        return optimize_ir(ir, pipeline, self.target_machine())

    def _knob_bitcode(self, ir: str, pipeline: Pipeline) -> bytes:
        """`pipeline` run on `ir` in the process kept for its knob set: the optimised module's bitcode."""
        return knob_process(pipeline.knobs, self.codegen_level).optimize(ir, pipeline.text)

    def codegen(self, module: llvm.ModuleRef, emit: str = "obj") -> bytes:
        """Stage 3: the optimised module as an rv32i object ('obj'), assembly ('asm'), bitcode
        ('llvm-bc') or textual IR ('llvm-ll')."""
        if emit == "obj":
            return self.target_machine().emit_object(module)
        if emit == "asm":
            return self.target_machine().emit_assembly(module).encode()
        if emit == "llvm-bc":
            return module.as_bitcode()
        if emit == "llvm-ll":
            return str(module).encode()
        raise ValueError(f"unknown output kind {emit!r}; valid: {', '.join(EMITS)}")

    def objects(self, variant: Variant, kernel_digest: str | None = None) -> list[Path]:
        """Stages 1-3 for every source of the variant: its rv32i object files (cached; `kernel_digest`
        as for ``frontend``)."""
        paths = []
        for source in variant.kernel.sources:
            ir = self.frontend(variant, source, kernel_digest)
            key = content_key(self.identity, ir, variant.pipeline.text)
            if _needs_knob_process(variant.pipeline):
                paths.append(self._knob_object(ir, variant.pipeline, key))
                continue
            path = self.cache.path("obj", key, ".o")
            if not path.is_file():
                self.cache.put("obj", key, ".o", self.codegen(self.optimize(ir, variant.pipeline)))
            paths.append(path)
        return paths

    def _knob_object(self, ir: str, pipeline: Pipeline, key: str) -> Path:
        """The object of a pipeline with knobs (`key`: its IR's and its own), kept under the optimised
        module's bitcode: pipelines that optimise to the same module (mostly O2 and O3 with the same
        knobs) share one code generation; the 14 knob pipelines of issue 17 (before runtime unrolling
        at counts 2, 8 and 16 joined them) needed 211 code generations for the 20 suite kernels at
        16 tasklets, not 280. Sound for modules read from bitcode only: the code also depends on the
        order of a module's use lists, which bitcode does not keep, and a module optimised in this
        process has its own order (NW's O3 and O3 with unroll-runtime=1: one bitcode, two codes)."""
        alias = self.cache.get("optimized", key, ".code")  # the key of the optimised module's object
        path = self.cache.path("obj", alias.decode(), ".o") if alias else None
        if path is None or not path.is_file():
            bitcode = self._knob_bitcode(ir, pipeline)
            code_key = content_key(self.identity, "bitcode", bitcode)
            path = self.cache.path("obj", code_key, ".o")
            if not path.is_file():
                self.cache.put("obj", code_key, ".o", self.codegen(llvm.parse_bitcode(bitcode)))
            self.cache.put("optimized", key, ".code", code_key.encode())
        return path

    def runtime_objects(self) -> list[Path]:
        """cnmtune's DPU runtime (crt0, alloc, stdio, string, ...) compiled once at -O2 (looked up
        in the cache once per toolchain, then only checked to be still there)."""
        if self._runtime is not None and all(obj.is_file() for obj in self._runtime):
            return self._runtime
        sources = sorted([*RUNTIME_DIR.glob("*.c"), *RUNTIME_DIR.glob("*.S")])
        key = content_key(self.identity, _dpu_tree_digest())
        objects = [self.cache.path("runtime", key, f"-{s.name}.o") for s in sources]
        for source, obj in zip(sources, objects):
            if obj.is_file():
                continue
            with tempfile.TemporaryDirectory(prefix="cnmtune-rt-") as tmp:
                out = Path(tmp) / "out.o"
                result = zig.run(["cc", *frontend_flags(["-O2"]), "-c", str(source), "-o", str(out)])
                if result.returncode != 0:
                    raise CompileError(f"DPU runtime source {source.name} does not compile", diagnostics(result.stderr))
                self.cache.put("runtime", key, f"-{source.name}.o", out.read_bytes())
        self._runtime = objects
        return objects

    def link_args(self, objects: Sequence[Path], output: Path, nr_tasklets: int, stack_size: int,
                  extra: Sequence[str] = ()) -> list[str]:
        """Stage 4's `zig ld.lld` command line: cnmtune's linker script, the tasklet symbols, the
        objects (then `extra`, e.g. -L/-l), cnmtune's DPU runtime and zig's compiler_rt."""
        # --discard-locals drops assembler temporaries (.L*), as the UPMEM SDK link does;
        # compiler_rt alone would leave ~5,000 of them in .symtab. One linker thread: a link of
        # va took a median 24 ms with lld's thread pool, 21 ms without (2 cores, 2026-11-28); the
        # output is the same bytes, and callers already run a link per core.
        return [
            "ld.lld", "--threads=1", "-m", "elf32lriscv", "-static", "--gc-sections", "--strip-debug",
            "--discard-locals",
            "-T", str(LINKER_SCRIPT), f"--defsym=NR_TASKLETS={nr_tasklets}",
            f"--defsym=STACK_SIZE_DEFAULT={stack_size}", "-o", str(output),
            *map(str, objects), *extra, *map(str, self.runtime_objects()), str(zig.compiler_rt_archive()),
        ]

    def link(self, objects: Sequence[Path], output: Path, nr_tasklets: int, stack_size: int, label: str,
             extra: Sequence[str] = ()) -> None:
        """Stage 4: link objects with cnmtune's DPU runtime into `output` (written atomically), in
        this process by cnmtune's linker where it supports the inputs (the bytes ld.lld writes,
        ``link_in_process``), else, and with `extra` linker arguments (-L, -l, ...), by ld.lld. A
        failed link is a LinkError."""
        image = None if extra else self.link_in_process(objects, nr_tasklets, stack_size)
        if image is None:
            self.link_with_lld(objects, output, nr_tasklets, stack_size, label, extra)
        else:
            atomic_write(output, image)

    def link_in_process(self, objects: Sequence[Path], nr_tasklets: int, stack_size: int) -> bytes | None:
        """The ELF cnmtune's linker makes of `objects` (cnmtune.runtime.toolchain.linker), or None
        where it does not support them: ld.lld links those, and reports their errors."""
        try:
            return linker.link([Path(o).read_bytes() for o in objects], self.runtime_objects(),
                               zig.compiler_rt_archive(), nr_tasklets, stack_size)
        except (linker.Unsupported, NotRelocatable):
            return None

    def link_with_lld(self, objects: Sequence[Path], output: Path, nr_tasklets: int, stack_size: int, label: str,
                      extra: Sequence[str] = ()) -> None:
        """Stage 4 by `zig ld.lld` (``link_args``), whatever the inputs."""
        with tempfile.TemporaryDirectory(prefix="cnmtune-ld-") as tmp:
            out = Path(tmp) / "out.elf"
            result = zig.run(self.link_args(objects, out, nr_tasklets, stack_size, extra))
            if result.returncode != 0:
                raise LinkError(f"{label}: link failed", diagnostics(result.stderr))
            output.parent.mkdir(parents=True, exist_ok=True)
            staged = output.with_name(f".{output.name}.{Path(tmp).name}")
            shutil.move(str(out), staged)
            staged.replace(output)
