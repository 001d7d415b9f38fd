"""cnmtune-cc: a drop-in C compiler driver for DPU kernels, with the tuning cache.

``make CC=cnmtune-cc`` or ``-DCMAKE_C_COMPILER=cnmtune-cc``: the usual clang arguments (-c, -S,
-E, -o, -I, -D, -U, -O, -std, -W, -f, -MD/-MMD/-MF/-MT/-MQ/-MP, -L, -l, -Wl) compile DPU
sources to objects and link objects into a DPU program. For each C source the pass pipeline is
  1. ``$CNMTUNE_PIPELINE`` when set (an explicit experiment),
  2. else the pipeline ``cnmtune tune`` recorded in the tuning cache for this (source + local
     headers, defines) on this toolchain (``cnmtune.plugin.tune.cache``),
  3. else, with ``CNMTUNE_TUNE=1`` and a source inside a kernel directory (KERNEL/dpu/*.c next to
     KERNEL/workload.py), the result of tuning it now (recorded for the next build),
  4. else the -O level given (-O2 without one), with a one-line notice.
The chosen pipeline replaces the -O level; each step says what it did in one line on stderr.

Toolchains (``$CNMTUNE_TOOLCHAIN``): ``proxy`` (default) builds the rv32i proxy of the DPU exactly
as cnmtune's ProxyToolchain does (zig's clang at -O0 without optnone -> the pipeline in-process
with llvmlite -> rv32i code generation at -O2 -> ld.lld with cnmtune's linker script and DPU
runtime); ``upmem`` drives the UPMEM SDK (its clang -emit-llvm, its opt with the pipeline, its
clang for code generation and the link). As with the SDK, NR_TASKLETS and STACK_SIZE_DEFAULT
are -D flags of the link step too (they size the tasklet stacks).

Exit codes: 0 success, 1 the code does not compile or link (the compiler's diagnostics are
printed as they are), 2 a usage or configuration error (one line).
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from cnmtune.errors import CnmtuneError, CompileError

PROG = "cnmtune-cc"
C_SUFFIXES = (".c", ".i")
ASM_SUFFIXES = (".S", ".s", ".sx")
LINK_SUFFIXES = (".o", ".obj", ".a")
LEVEL_OF = {"0": "O0", "1": "O1", "2": "O2", "3": "O3", "4": "O3", "s": "Os", "z": "Oz", "": "O1", "g": "O1",
            "fast": "O3"}
DEFAULT_LEVEL = "O2"
TOOLCHAINS = ("proxy", "upmem")
# accepted and ignored without a word: they do not apply to a static, single-target DPU program
_SILENT = {"-pipe", "-static", "-fPIC", "-fpic", "-fPIE", "-fpie", "-fno-PIC", "-fno-pic", "-fno-PIE",
           "-fno-pie", "-pie", "-no-pie", "-static-pie", "-fno-plt"}
# accepted and ignored with a notice
_IGNORED = {"-pthread": "there are no POSIX threads on a DPU (tasklets are set by NR_TASKLETS)",
            "-rdynamic": "a DPU program has no dynamic symbol table",
            "-s": "the DPU program's symbols are needed to load and run it"}
_TARGET_NOTE = "the target is fixed by the toolchain (CNMTUNE_TOOLCHAIN)"

USAGE = f"""usage: {PROG} [options] file...

A C compiler driver for UPMEM DPU kernels that applies tuned pass pipelines (see `cnmtune tune`).
  -c / -S / -E          compile to an object / to assembly / preprocess only (default: link)
  -o FILE               output file (default: NAME.o with -c, a.out when linking)
  -I DIR, -iquote DIR, -isystem DIR, -include FILE
  -D NAME[=VALUE], -U NAME
                        preprocessor; -DNR_TASKLETS=n (and -DSTACK_SIZE_DEFAULT=b) also at link time
  -O0 -O1 -O2 -O3 -Os -Oz
                        pipeline when the tuning cache has none (default -O2)
  -std=, -W..., -w, -f..., -pedantic, -x c|assembler-with-cpp, -emit-llvm, -g (no effect)
  -MD -MMD -MF FILE -MT T -MQ T -MP, -M -MM
                        dependency files for make
  -L DIR, -l LIB, -Wl,OPT, -Xlinker OPT
                        link step
  -v, --version, --help
environment:
  CNMTUNE_TOOLCHAIN=proxy|upmem   toolchain (default proxy; upmem needs the UPMEM SDK)
  CNMTUNE_PIPELINE=P              use pipeline P for every C source (no cache lookup)
  CNMTUNE_TUNING_CACHE=0          ignore the tuning cache
  CNMTUNE_TUNE=1                  tune a kernel source on a cache miss (needs a cost model:
                                  CNMTUNE_MODEL=path.onnx unless cnmtune ships one), with
                                  CNMTUNE_TUNE_PIPELINES (50), CNMTUNE_TUNE_SIZE (small),
                                  CNMTUNE_TUNE_DPUS (1,2,4,8,16), CNMTUNE_TUNE_TOP_K (5),
                                  CNMTUNE_TUNE_SEED (0), CNMTUNE_TUNE_WORKERS (all cores)
  CNMTUNE_CACHE_DIR               where the tuning cache and the build cache live
"""


class UsageError(CnmtuneError):
    """A command line cnmtune-cc does not accept (exit code 2)."""


class BuildFailed(Exception):
    """The code does not compile or link: the diagnostics are printed as they are (exit code 1)."""

    def __init__(self, diagnostics: str):
        super().__init__(diagnostics)
        self.diagnostics = diagnostics


def notice(message: str) -> None:
    """One line on stderr, prefixed with the driver's name."""
    print(f"{PROG}: {message}", file=sys.stderr, flush=True)


# -- the command line --------------------------------------------------------------------------


@dataclass
class DepOptions:
    """-MD / -MMD and friends."""

    mode: str | None = None  # "MD" or "MMD": a .d file next to the output, as a side effect
    preprocess: str | None = None  # "M" or "MM": the dependencies are the output
    file: str | None = None
    targets: list[tuple[str, str]] = field(default_factory=list)  # ("-MT" | "-MQ", target)
    phony: bool = False


@dataclass(frozen=True)
class Input:
    """A file on the command line: a C source, an assembly source, or an object or archive."""

    path: str
    kind: str  # "c" | "asm" | "link"


@dataclass
class Invocation:
    """A parsed command line."""

    mode: str = "link"  # link | compile (-c) | assemble (-S) | preprocess (-E, -M, -MM)
    inputs: list[Input] = field(default_factory=list)  # files in command-line order
    output: str | None = None
    level: str | None = None
    defines: dict[str, str | None] = field(default_factory=dict)
    pp_flags: list[str] = field(default_factory=list)  # -D -U -I -iquote -isystem -include ..., in order
    include_dirs: list[str] = field(default_factory=list)  # -I and -iquote: local headers of the key
    cc_flags: list[str] = field(default_factory=list)  # -std -W -f -pedantic ...: the front end only
    link_flags: list[str] = field(default_factory=list)  # as given: -L -l -Wl, -Xlinker
    ld_args: list[str] = field(default_factory=list)  # the same for ld.lld itself
    language: str | None = None
    emit_llvm: bool = False
    verbose: bool = False
    deps: DepOptions = field(default_factory=DepOptions)
    action: str | None = None  # version | help | dumpversion | dumpmachine

    @property
    def sources(self) -> list[Input]:
        """The C and assembly sources, in order."""
        return [i for i in self.inputs if i.kind != "link"]


def _expand_response_files(args: list[str]) -> list[str]:
    out: list[str] = []
    for arg in args:
        if arg.startswith("@") and len(arg) > 1:
            try:
                out.extend(_expand_response_files(shlex.split(Path(arg[1:]).read_text())))
            except OSError as exc:
                raise UsageError(f"cannot read response file {arg[1:]}: {exc.strerror}") from exc
        else:
            out.append(arg)
    return out


def parse_args(argv: list[str]) -> Invocation:
    """Parse clang-style arguments into an Invocation; UsageError for anything unsupported."""
    args = _expand_response_files(list(argv))
    inv = Invocation()
    modes: set[str] = set()
    i = 0

    def value(flag: str, arg: str) -> str:
        """The argument of `flag`: glued (-Ifoo) or the next word (-I foo)."""
        nonlocal i
        if len(arg) > len(flag):
            return arg[len(flag):]
        i += 1
        if i >= len(args):
            raise UsageError(f"argument to '{flag}' is missing (expected 1 value)")
        return args[i]

    while i < len(args):
        arg = args[i]
        if arg in ("-c", "-S", "-E"):
            modes.add(arg)
        elif arg == "-o" or (arg.startswith("-o") and not arg.startswith("-objc")):
            inv.output = value("-o", arg)
        elif arg.startswith("-D"):
            text = value("-D", arg)
            name, sep, val = text.partition("=")
            if not name.isidentifier():
                raise UsageError(f"malformed define '-D{text}': use -D NAME or -D NAME=VALUE")
            inv.defines[name] = val if sep else None
            inv.pp_flags.append(f"-D{text}")
        elif arg.startswith("-U"):
            name = value("-U", arg)
            inv.defines.pop(name, None)
            inv.pp_flags.append(f"-U{name}")
        elif arg.startswith("-I"):
            directory = value("-I", arg)
            inv.include_dirs.append(directory)
            inv.pp_flags.append(f"-I{directory}")
        elif arg in ("-iquote", "-isystem", "-idirafter", "-include", "-imacros"):
            operand = value(arg, arg)
            if arg == "-iquote":
                inv.include_dirs.append(operand)
            inv.pp_flags += [arg, operand]
        elif arg.startswith("-O"):
            level = arg[2:]
            if level not in LEVEL_OF:
                raise UsageError(f"invalid optimisation level '{arg}': use -O0, -O1, -O2, -O3, -Os or -Oz")
            inv.level = LEVEL_OF[level]
            if level == "fast":
                inv.cc_flags.append("-ffast-math")
        elif arg.startswith("-g"):
            pass  # debug information does not reach a DPU program (the link strips it)
        elif arg in ("-MD", "-MMD"):
            inv.deps.mode = arg[1:]
        elif arg in ("-M", "-MM"):
            inv.deps.preprocess = arg[1:]
        elif arg == "-MP":
            inv.deps.phony = True
        elif arg.startswith("-MF"):
            inv.deps.file = value("-MF", arg)
        elif arg.startswith(("-MT", "-MQ")):
            inv.deps.targets.append((arg[:3], value(arg[:3], arg)))
        elif arg.startswith("-Wl,"):
            inv.link_flags.append(arg)
            inv.ld_args += [a for a in arg[4:].split(",") if a]
        elif arg == "-Xlinker":
            operand = value(arg, arg)
            inv.link_flags += [arg, operand]
            inv.ld_args.append(operand)
        elif arg.startswith("-L"):
            directory = value("-L", arg)
            inv.link_flags.append(f"-L{directory}")
            inv.ld_args.append(f"-L{directory}")
        elif arg.startswith("-l"):
            library = value("-l", arg)
            inv.link_flags.append(f"-l{library}")
            inv.ld_args.append(f"-l{library}")
        elif arg.startswith("-x"):
            language = value("-x", arg)
            if language not in ("c", "assembler", "assembler-with-cpp", "none"):
                raise UsageError(f"language '{language}' is not supported: DPU kernels are C (or assembly)")
            inv.language = None if language == "none" else language
        elif arg == "-emit-llvm":
            inv.emit_llvm = True
        elif arg == "-Xclang":
            inv.cc_flags += [arg, value(arg, arg)]
        elif arg.startswith(("-W", "-f", "-std=")) or arg in ("-w", "-pedantic", "-pedantic-errors", "-ansi"):
            if arg in _SILENT:
                pass
            else:
                inv.cc_flags.append(arg)
        elif arg in _SILENT:
            pass
        elif arg in _IGNORED:
            notice(f"ignoring {arg}: {_IGNORED[arg]}")
        elif arg in ("-target", "--target") or arg.startswith(("--target=", "-march=", "-mcpu=", "-mtune=", "-m")):
            shown = f"{arg} {value(arg, arg)}" if arg in ("-target", "--target") else arg
            notice(f"ignoring {shown}: {_TARGET_NOTE}")
        elif arg == "-v":
            inv.verbose = True
        elif arg in ("--version", "-version"):
            inv.action = "version"
        elif arg in ("--help", "-help", "-h"):
            inv.action = "help"
        elif arg in ("-dumpversion", "-dumpmachine"):
            inv.action = arg[1:]
        elif arg.startswith("-") and arg != "-":
            raise UsageError(f"unsupported option '{arg}' (see {PROG} --help)")
        else:
            _add_input(inv, arg)
        i += 1
    if "-E" in modes or inv.deps.preprocess:
        inv.mode = "preprocess"
    elif "-S" in modes:
        inv.mode = "assemble"
    elif "-c" in modes:
        inv.mode = "compile"
    return inv


def _add_input(inv: Invocation, arg: str) -> None:
    if arg == "-":
        raise UsageError("reading a source from standard input is not supported")
    suffix = Path(arg).suffix
    if inv.language == "c" or (inv.language is None and suffix in C_SUFFIXES):
        kind = "c"
    elif inv.language is not None or suffix in ASM_SUFFIXES:
        kind = "asm"
    elif suffix in LINK_SUFFIXES or (suffix == "" and Path(arg).is_file()):
        kind = "link"
    else:
        raise UsageError(f"{arg}: unsupported input file (C sources .c, assembly .S/.s, objects .o, archives .a)")
    if not Path(arg).is_file():
        raise UsageError(f"no such file or directory: '{arg}'")
    inv.inputs.append(Input(arg, kind))


# -- pipeline choice -------------------------------------------------------------------------


def _tasklets(inv: Invocation) -> tuple[int, int]:
    """NR_TASKLETS and STACK_SIZE_DEFAULT from the -D flags (1 and 1024 when absent)."""
    from cnmtune.dpu.memory_map import DEFAULT_STACK_SIZE, MAX_TASKLETS

    def number(name: str, default: int) -> int:
        text = inv.defines.get(name)
        if text is None:
            return default
        try:
            return int(text, 0)
        except ValueError:
            raise UsageError(f"-D{name}={text}: {name} must be an integer") from None

    tasklets = number("NR_TASKLETS", 1)
    if not 1 <= tasklets <= MAX_TASKLETS:
        raise UsageError(f"-DNR_TASKLETS={tasklets}: a DPU runs 1..{MAX_TASKLETS} tasklets")
    stack = number("STACK_SIZE_DEFAULT", DEFAULT_STACK_SIZE)
    if stack <= 0 or stack % 8:
        raise UsageError(f"-DSTACK_SIZE_DEFAULT={stack}: the stack size must be a positive multiple of 8")
    return tasklets, stack


def _env_flag(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in ("1", "yes", "true", "on")


def choose_pipeline(inv: Invocation, source: str, toolchain: str):
    """The Pipeline for one C source (see the module docstring), with its one-line notice."""
    from cnmtune.passes import Pipeline

    if text := os.environ.get("CNMTUNE_PIPELINE", "").strip():
        pipeline = Pipeline.parse(text)
        notice(f"{source}: pipeline {pipeline.text} (CNMTUNE_PIPELINE)")
        return pipeline
    fallback = inv.level or DEFAULT_LEVEL
    if os.environ.get("CNMTUNE_TUNING_CACHE", "").strip().lower() in ("0", "no", "off", "false"):
        return Pipeline.parse(fallback)
    from cnmtune.plugin.tune.cache import TuningCache, key_for

    cache = TuningCache()
    keys = [key_for(source, inv.defines, kind, inv.include_dirs)
            for kind in ((toolchain, "proxy") if toolchain != "proxy" else (toolchain,))]
    for key in keys:
        try:
            entry = cache.lookup(key)
        except CnmtuneError as exc:
            notice(f"warning: {exc}; compiling without it")
            break
        if entry is not None:
            return _tuned(source, entry, key.toolchain != toolchain, "cache")
    if _env_flag("CNMTUNE_TUNE"):
        entry = tune_now(source, keys[-1], cache, fallback)
        if entry is not None:
            return _tuned(source, entry, toolchain != "proxy", "tuned now")
    else:
        notice(f"{source}: no tuned pipeline in the tuning cache for ({keys[0].describe()}); using {fallback} "
               f"(tune with `cnmtune tune KERNEL`, or build with CNMTUNE_TUNE=1)")
    return Pipeline.parse(fallback)


def _tuned(source: str, entry, on_proxy: bool, how: str):
    from cnmtune.passes import Pipeline

    pipeline = Pipeline.parse(entry.pipeline)
    where = ", tuned on the proxy toolchain" if on_proxy else ""
    notice(f"{source}: tuned pipeline {pipeline.text} ({how}{where})")
    return pipeline


def tune_now(source: str, key, cache, fallback: str = DEFAULT_LEVEL):
    """Tune the kernel `source` belongs to on the proxy toolchain and record the result; the
    entry for `key`, or None (with a notice naming `fallback`) when this source cannot be tuned."""
    from cnmtune.dpu.memory_map import DEFAULT_STACK_SIZE
    from cnmtune.plugin.tune.cache import canonical_defines, kernel_dir_of, record_tune
    from cnmtune.runtime.kernel import Kernel

    root = kernel_dir_of(source)
    if root is None:
        notice(f"{source}: cannot tune a source without a workload (KERNEL/dpu/*.c next to KERNEL/workload.py); "
               f"using {fallback}")
        return None
    kernel = Kernel.load(root)
    tasklets = int(dict(key.defines)["NR_TASKLETS"])
    defaults = canonical_defines({"NR_TASKLETS": tasklets, "STACK_SIZE_DEFAULT": DEFAULT_STACK_SIZE}, kernel.workload)
    if key.defines != defaults:
        differ = sorted(set(key.defines) - set(defaults))
        shown = " ".join(f"{k}={v}" for k, v in differ)
        notice(f"{source}: cannot tune with defines other than {kernel.name}'s defaults ({shown}): the tuner builds "
               f"the workload's defaults; using {fallback}")
        return None
    from cnmtune.errors import ModelError
    from cnmtune.plugin.tune.tuner import TuneSpec, default_model_path, tune
    from cnmtune.runtime.executor import make_executor
    from cnmtune.runtime.toolchain import ProxyToolchain

    model = Path(os.environ["CNMTUNE_MODEL"]) if os.environ.get("CNMTUNE_MODEL") else default_model_path()
    if not model.is_file():
        raise ModelError(f"no cost model at {model}: set CNMTUNE_MODEL=path/to/model.onnx to tune "
                         f"(see `cnmtune model train`)")
    env = os.environ.get
    try:
        size = env("CNMTUNE_TUNE_SIZE", "small")
        spec = TuneSpec(kernel=str(root), size=int(size) if size.isdigit() else size,
                        pipelines=int(env("CNMTUNE_TUNE_PIPELINES", "50")), seed=int(env("CNMTUNE_TUNE_SEED", "0")),
                        dpus=tuple(int(x) for x in env("CNMTUNE_TUNE_DPUS", "1,2,4,8,16").split(",") if x.strip()),
                        tasklets=(tasklets,), top_k=int(env("CNMTUNE_TUNE_TOP_K", "5")), model=str(model))
        workers = int(env("CNMTUNE_TUNE_WORKERS")) if env("CNMTUNE_TUNE_WORKERS") else None
    except ValueError as exc:
        raise UsageError(f"bad CNMTUNE_TUNE_* setting: {exc}") from None
    notice(f"{source}: tuning {kernel.name} ({spec.pipelines} pipelines, size {spec.size}, "
           f"NR_TASKLETS={tasklets}, top {spec.top_k}); the result is cached for later builds")
    with make_executor(workers) as executor:
        report = tune(spec, executor, None)
    if report.chosen is None:
        notice(f"{source}: tuning {kernel.name} found no verified variant; using {fallback}")
        return None
    record_tune(cache, kernel, spec, report, ProxyToolchain().identity)
    entry = cache.lookup(key)
    if entry is None:
        notice(f"{source}: the tune of {kernel.name} does not match this compile (its include directories?); "
               f"using {fallback}")
    return entry


# -- the proxy toolchain ------------------------------------------------------------------------


def _frontend_base() -> list[str]:
    from cnmtune.dpu.memory_map import INCLUDE_DIR
    from cnmtune.runtime.toolchain.proxy import FRONTEND_FLAGS

    # ProxyToolchain's front end, with the warnings left on: a driver shows the user's warnings
    return [*(f for f in FRONTEND_FLAGS if f != "-w"), f"-I{INCLUDE_DIR}"]


def _zig(args: list[str], verbose: bool):
    from cnmtune.runtime.toolchain import zig

    if verbose:
        print(" ".join(shlex.quote(a) for a in [str(zig.zig_executable()), *args]), file=sys.stderr)
    return zig.run(args)


def _report_warnings(stderr: str) -> None:
    from cnmtune.runtime.toolchain.proxy import diagnostics

    if text := diagnostics(stderr):
        print(text, file=sys.stderr)


class ProxyDriver:
    """Compiles and links like cnmtune's ProxyToolchain, one source or object at a time."""

    kind = "proxy"

    def __init__(self, inv: Invocation):
        self.inv = inv
        self._toolchain = None

    @property
    def toolchain(self):
        if self._toolchain is None:
            from cnmtune.runtime.toolchain import ProxyToolchain

            self._toolchain = ProxyToolchain()
        return self._toolchain

    def _run(self, args: list[str]) -> str:
        from cnmtune.runtime.toolchain.proxy import diagnostics

        result = _zig(args, self.inv.verbose)
        if result.returncode != 0:
            raise BuildFailed(diagnostics(result.stderr) or f"zig {args[0]} failed (exit code {result.returncode})")
        return result.stderr

    def preprocess(self, source: str, output: str | None, dep_args: list[str]) -> None:
        inv = self.inv
        args = ["cc", *_frontend_base(), *inv.pp_flags, *inv.cc_flags, *dep_args, source]
        if inv.deps.preprocess is None:
            args.insert(1, "-E")
        if output:
            args += ["-o", output]
        result = _zig(args, inv.verbose)
        from cnmtune.runtime.toolchain.proxy import diagnostics

        if result.returncode != 0:
            raise BuildFailed(diagnostics(result.stderr))
        sys.stdout.write(result.stdout)
        _report_warnings(result.stderr)

    def depfile(self, source: str, target_file: Path, dep_args: list[str]) -> None:
        """Write the make dependency file of `source` (zig cc takes -MD only without -o, so the
        dependencies are listed by a preprocessor-only run)."""
        inv = self.inv
        self._run(["cc", *_frontend_base(), *inv.pp_flags, *inv.cc_flags, *dep_args, "-MF", str(target_file),
                   source])

    def compile(self, source: str, kind: str, output: Path, emit: str) -> None:
        """Compile one source into `output`; emit is 'obj', 'asm', 'llvm-bc' or 'llvm-ll'."""
        inv = self.inv
        with tempfile.TemporaryDirectory(prefix="cnmtune-cc-") as tmp:
            if kind == "asm":
                out = Path(tmp) / "out.o"
                args = ["cc", *_frontend_base(), "-O2", *inv.pp_flags, *inv.cc_flags,
                        *(["-x", inv.language] if inv.language else []), "-S" if emit == "asm" else "-c",
                        source, "-o", str(out)]
                _report_warnings(self._run(args))
                _publish_file(out, output)
                return
            ll = Path(tmp) / "out.ll"
            args = ["cc", *_frontend_base(), "-O0", "-Xclang", "-disable-O0-optnone", *inv.pp_flags, *inv.cc_flags,
                    *(["-x", "c"] if inv.language == "c" else []), "-S", "-emit-llvm", source, "-o", str(ll)]
            _report_warnings(self._run(args))
            ir = ll.read_text()
        pipeline = choose_pipeline(inv, source, self.kind)
        if inv.verbose:
            print(f"{PROG}: llvmlite: pipeline {pipeline.text}, rv32i code generation at -O{self.toolchain.codegen_level}",
                  file=sys.stderr)
        import llvmlite.binding as llvm

        from cnmtune.passes import apply_pipeline

        machine = self.toolchain.target_machine()
        try:
            module = llvm.parse_assembly(ir)
            apply_pipeline(module, pipeline, machine)
            module.verify()
        except RuntimeError as exc:  # LLVM itself failed on this IR and pipeline
            raise BuildFailed(f"{PROG}: error: {source}: LLVM failed with pipeline {pipeline.text}: {exc}") from None
        if emit == "obj":
            data = machine.emit_object(module)
        elif emit == "asm":
            data = machine.emit_assembly(module).encode()
        elif emit == "llvm-bc":
            data = module.as_bitcode()
        else:
            data = str(module).encode()
        _publish_bytes(data, output)

    def link(self, objects: list[Path], output: Path) -> None:
        from cnmtune.runtime.toolchain.layout import check_capacity, read_memory_use
        from cnmtune.runtime.toolchain.proxy import link_args

        tasklets, stack = _tasklets(self.inv)
        with tempfile.TemporaryDirectory(prefix="cnmtune-cc-ld-") as tmp:
            out = Path(tmp) / "out.elf"
            self._run(link_args(objects, self.toolchain.runtime_objects(), tasklets, stack, out, self.inv.ld_args))
            try:
                check_capacity(read_memory_use(out), str(output))
            except CnmtuneError as exc:
                raise BuildFailed(f"{PROG}: error: {exc}") from None
            out.chmod(0o755)
            _publish_file(out, output)


# -- the UPMEM SDK ----------------------------------------------------------------------------


class UpmemDriver:
    """The UPMEM SDK's clang and opt, as cnmtune's UpmemToolchain drives them (per source)."""

    kind = "upmem"

    def __init__(self, inv: Invocation):
        from cnmtune.errors import ToolchainMissing
        from cnmtune.runtime.upmem.sdk import UpmemSdk

        self.inv = inv
        try:
            self.sdk = UpmemSdk.find()
            self.clang = str(self.sdk.clang)
        except ToolchainMissing as exc:
            raise ToolchainMissing(f"the UPMEM toolchain is not available (CNMTUNE_TOOLCHAIN=upmem): {exc}") from None
        self._opt = None

    @property
    def opt(self):
        if self._opt is None:
            from cnmtune.runtime.toolchain.opt import OptTool

            self._opt = OptTool.probe(self.sdk.opt)
        return self._opt

    def _run(self, args: list[str]) -> str:
        from cnmtune.errors import ToolchainMissing

        if self.inv.verbose:
            print(" ".join(shlex.quote(a) for a in args), file=sys.stderr)
        try:
            proc = subprocess.run(args, capture_output=True, text=True)
        except OSError as exc:
            raise ToolchainMissing(f"cannot run {args[0]}: {exc}") from exc
        if proc.returncode != 0:
            raise BuildFailed((proc.stderr or proc.stdout).strip()
                              or f"{Path(args[0]).name} failed (exit code {proc.returncode})")
        return proc.stderr

    def preprocess(self, source: str, output: str | None, dep_args: list[str]) -> None:
        inv = self.inv
        args = [self.clang, *inv.pp_flags, *inv.cc_flags, *dep_args, source, *(["-o", output] if output else [])]
        if inv.deps.preprocess is None:
            args.insert(1, "-E")
        if inv.verbose:
            print(" ".join(shlex.quote(a) for a in args), file=sys.stderr)
        proc = subprocess.run(args, capture_output=True, text=True)
        if proc.returncode != 0:
            raise BuildFailed(proc.stderr.strip())
        sys.stdout.write(proc.stdout)
        if proc.stderr.strip():
            print(proc.stderr.strip(), file=sys.stderr)

    def depfile(self, source: str, target_file: Path, dep_args: list[str]) -> None:
        inv = self.inv
        self._run([self.clang, *inv.pp_flags, *inv.cc_flags, *dep_args, "-MF", str(target_file), source])

    def compile(self, source: str, kind: str, output: Path, emit: str) -> None:
        inv = self.inv
        cg = ["-O2", "-Xclang", "-disable-llvm-passes"]  # UpmemToolchain's code generation
        with tempfile.TemporaryDirectory(prefix="cnmtune-cc-upmem-") as tmp:
            out = Path(tmp) / "out"
            if kind == "asm":
                _report(self._run([self.clang, *inv.pp_flags, *inv.cc_flags, "-S" if emit == "asm" else "-c",
                                   source, "-o", str(out)]))
                _publish_file(out, output)
                return
            bitcode = Path(tmp) / "out.bc"
            _report(self._run([self.clang, "-O0", "-Xclang", "-disable-O0-optnone", "-emit-llvm", "-c",
                               *inv.pp_flags, *inv.cc_flags, source, "-o", str(bitcode)]))
            pipeline = choose_pipeline(inv, source, self.kind)
            opt_args = self.opt.pipeline_args(pipeline)
            if opt_args:
                optimized = Path(tmp) / "opt.bc"
                self._run([str(self.opt.path), *opt_args, str(bitcode), "-o", str(optimized)])
                bitcode = optimized
            if emit == "llvm-bc":
                _publish_file(bitcode, output)
                return
            flags = {"obj": ["-c"], "asm": ["-S"], "llvm-ll": ["-S", "-emit-llvm"]}[emit]
            self._run([self.clang, *cg, *flags, str(bitcode), "-o", str(out)])
            _publish_file(out, output)

    def link(self, objects: list[Path], output: Path) -> None:
        tasklets, stack = _tasklets(self.inv)
        with tempfile.TemporaryDirectory(prefix="cnmtune-cc-upmem-ld-") as tmp:
            out = Path(tmp) / "out.elf"
            self._run([self.clang, f"-DNR_TASKLETS={tasklets}", f"-DSTACK_SIZE_DEFAULT={stack}",
                       *map(str, objects), *self.inv.link_flags, "-o", str(out)])
            _publish_file(out, output)


def _report(stderr: str) -> None:
    if stderr.strip():
        print(stderr.strip(), file=sys.stderr)


# -- outputs ---------------------------------------------------------------------------------


def _publish_bytes(data: bytes, output: Path) -> None:
    from cnmtune.atomic import atomic_write

    atomic_write(output, data)


def _publish_file(produced: Path, output: Path) -> None:
    """Move a finished tool output into place by a rename (no half-written output)."""
    output.parent.mkdir(parents=True, exist_ok=True)
    staged = output.with_name(f".{output.name}.{os.getpid()}.tmp")
    try:
        shutil.move(str(produced), staged)
        staged.replace(output)
    except BaseException:
        staged.unlink(missing_ok=True)
        raise


def _default_output(source: str, emit: str) -> Path:
    suffix = {"obj": ".o", "asm": ".s", "llvm-bc": ".bc", "llvm-ll": ".ll"}[emit]
    return Path(Path(source).stem + suffix)


def _dep_args(inv: Invocation, default_target: str) -> list[str]:
    deps = inv.deps
    args = [f"-{deps.preprocess or ('M' if deps.mode == 'MD' else 'MM')}"]
    targets = deps.targets or [("-MT", default_target)]
    for flag, target in targets:
        args += [flag, target]
    if deps.phony:
        args.append("-MP")
    return args


def _depfile_path(inv: Invocation, output: Path) -> Path:
    if inv.deps.file:
        return Path(inv.deps.file)
    return output.with_suffix(".d")


# -- main ------------------------------------------------------------------------------------


def _version(kind: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        own = version("cnmtune")
    except PackageNotFoundError:
        own = "unknown"
    if kind == "upmem":
        return f"{PROG} (cnmtune {own}) driving the UPMEM SDK (dpu-upmem-dpurte-clang)\nTarget: dpu-upmem-dpurte"
    from cnmtune.runtime.toolchain import zig

    return (f"{PROG} (cnmtune {own}) on zig clang version {zig.clang_version()}\n"
            f"Target: riscv32-unknown-elf (rv32i/ilp32 proxy of the UPMEM DPU)")


def build(inv: Invocation) -> None:
    """Carry out a parsed command line."""
    kind = os.environ.get("CNMTUNE_TOOLCHAIN", "proxy").strip() or "proxy"
    if kind not in TOOLCHAINS:
        raise UsageError(f"CNMTUNE_TOOLCHAIN={kind}: unknown toolchain; choose proxy or upmem")
    if inv.action == "help":
        sys.stdout.write(USAGE)
        return
    if inv.action in ("version", "dumpversion", "dumpmachine"):
        text = _version(kind)
        if inv.action == "dumpversion":
            text = text.split("clang version ")[-1].split()[0] if kind == "proxy" else "unknown"
        elif inv.action == "dumpmachine":
            text = "riscv32-unknown-elf" if kind == "proxy" else "dpu-upmem-dpurte"
        print(text)
        return
    if not inv.inputs:
        if inv.verbose:
            print(_version(kind), file=sys.stderr)
            return
        raise UsageError("no input files")
    _tasklets(inv)  # a bad NR_TASKLETS or STACK_SIZE_DEFAULT is a usage error before any work
    driver = UpmemDriver(inv) if kind == "upmem" else ProxyDriver(inv)
    if inv.mode == "preprocess":
        if len(inv.sources) != 1:
            raise UsageError("-E, -M and -MM take exactly one source")
        source = inv.sources[0].path
        dep = _dep_args(inv, Path(source).stem + ".o") if inv.deps.preprocess else []
        if inv.deps.file and inv.deps.preprocess:
            dep += ["-MF", inv.deps.file]
        driver.preprocess(source, inv.output, dep)
        return
    if inv.mode in ("compile", "assemble"):
        emit = ("llvm-ll" if inv.emit_llvm else "asm") if inv.mode == "assemble" else \
            ("llvm-bc" if inv.emit_llvm else "obj")
        if not inv.sources:
            raise UsageError("nothing to compile: -c and -S take C or assembly sources")
        if inv.output and len(inv.sources) > 1:
            raise UsageError("cannot specify -o when generating multiple output files")
        for source in inv.sources:
            output = Path(inv.output) if inv.output else _default_output(source.path, emit)
            _compile_one(driver, inv, source, output, emit)
        return
    if inv.deps.mode and len(inv.sources) > 1 and inv.deps.file:
        raise UsageError("-MF with more than one source")
    output = Path(inv.output or "a.out")
    with tempfile.TemporaryDirectory(prefix="cnmtune-cc-objs-") as tmp:
        objects: list[Path] = []
        for index, item in enumerate(inv.inputs):
            if item.kind == "link":
                objects.append(Path(item.path))
                continue
            obj = Path(tmp) / f"{index}-{Path(item.path).stem}.o"
            # as clang: the dependencies of NAME.c go to NAME.d (or -MF) with the target NAME.o
            _compile_one(driver, inv, item, obj, "obj", dep_output=Path(Path(item.path).stem + ".o"))
            objects.append(obj)
        driver.link(objects, output)


def _compile_one(driver, inv: Invocation, source: Input, output: Path, emit: str,
                 dep_output: Path | None = None) -> None:
    driver.compile(source.path, source.kind, output, emit)
    if inv.deps.mode:
        named = dep_output or output
        depfile = _depfile_path(inv, named)
        with tempfile.TemporaryDirectory(prefix="cnmtune-cc-dep-") as tmp:
            produced = Path(tmp) / "out.d"
            driver.depfile(source.path, produced, _dep_args(inv, str(named)))
            _publish_file(produced, depfile)


def main(argv: list[str] | None = None) -> None:
    """Console-script entry: run the driver, exit 0, 1 (does not compile or link) or 2 (usage)."""
    args = sys.argv[1:] if argv is None else argv
    try:
        build(parse_args(args))
    except BuildFailed as exc:
        if exc.diagnostics:
            print(exc.diagnostics, file=sys.stderr)
        sys.exit(1)
    except CompileError as exc:
        print(exc.diagnostics or f"{PROG}: error: {exc}", file=sys.stderr)
        sys.exit(1)
    except CnmtuneError as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        sys.exit(exc.exit_code)
    except OSError as exc:  # an output that cannot be written, a tool that cannot be run
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        sys.exit(1)
    except KeyboardInterrupt:
        sys.exit(130)
    sys.exit(0)


if __name__ == "__main__":
    main()
