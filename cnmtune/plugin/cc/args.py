"""cnmtune-cc's command line: clang-style options parsed into an Invocation, usage and notices."""

from __future__ import annotations

import shlex
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from cnmtune.errors import CnmtuneError

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
  -W..., -w, -pedantic   warnings, shown on stderr; as with the UPMEM SDK's clang, int-conversion,
                        implicit-function-declaration, implicit-int and incompatible-(function-)
                        pointer-types are warnings unless -Werror or -Werror=NAME makes them errors
  -std=, -f..., -x c|assembler-with-cpp, -emit-llvm, -g (no effect)
  -MD -MMD -MF FILE -MT T -MQ T -MP, -M -MM
                        dependency files for make
  -L DIR, -l LIB, -Wl,OPT, -Xlinker OPT
                        link step
  -v, --version, --help
environment:
  CNMTUNE_TOOLCHAIN=proxy|upmem   toolchain (default proxy; upmem needs the UPMEM SDK)
  CNMTUNE_PIPELINE=P              use pipeline P for every C source (no cache lookup)
  CNMTUNE_TUNING_CACHE=0          ignore the tuning cache
  CNMTUNE_TUNE=1                  tune a kernel source on a cache miss (with the shipped cost
                                  model, or CNMTUNE_MODEL=path.onnx), with
                                  CNMTUNE_TUNE_PIPELINES (50), CNMTUNE_TUNE_SIZE (small),
                                  CNMTUNE_TUNE_DPUS (one count; 64 or the most the size
                                  allows), CNMTUNE_TUNE_TOP_K (5 runs a round),
                                  CNMTUNE_TUNE_ROUNDS (2),
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


class _Args:
    """The arguments, one at a time; an option's value is glued (-Ifoo) or the next word (-I foo)."""

    def __init__(self, args: list[str]):
        self.args, self.i = args, -1

    def __iter__(self) -> Iterator[str]:
        while self.i + 1 < len(self.args):
            self.i += 1
            yield self.args[self.i]

    def value(self, flag: str, arg: str) -> str:
        """The value of `flag` as given in `arg` (or in the next word)."""
        if len(arg) > len(flag):
            return arg[len(flag):]
        self.i += 1
        if self.i >= len(self.args):
            raise UsageError(f"argument to '{flag}' is missing (expected 1 value)")
        return self.args[self.i]


def parse_args(argv: list[str]) -> Invocation:
    """Parse clang-style arguments into an Invocation; UsageError for anything unsupported."""
    inv = Invocation()
    modes: set[str] = set()
    args = _Args(_expand_response_files(list(argv)))
    for arg in args:
        if arg in ("-c", "-S", "-E"):
            modes.add(arg)
        elif not any(handle(inv, arg, args) for handle in _HANDLERS):
            if arg.startswith("-") and arg != "-":
                raise UsageError(f"unsupported option '{arg}' (see {PROG} --help)")
            _add_input(inv, arg)
    if "-E" in modes or inv.deps.preprocess:
        inv.mode = "preprocess"
    elif "-S" in modes:
        inv.mode = "assemble"
    elif "-c" in modes:
        inv.mode = "compile"
    return inv


def _preprocessor_option(inv: Invocation, arg: str, args: _Args) -> bool:
    if arg == "-o" or (arg.startswith("-o") and not arg.startswith("-objc")):
        inv.output = args.value("-o", arg)
    elif arg.startswith("-D"):
        text = args.value("-D", arg)
        name, sep, val = text.partition("=")
        if not name.isidentifier():
            raise UsageError(f"malformed define '-D{text}': use -D NAME or -D NAME=VALUE")
        inv.defines[name] = val if sep else None
        inv.pp_flags.append(f"-D{text}")
    elif arg.startswith("-U"):
        name = args.value("-U", arg)
        inv.defines.pop(name, None)
        inv.pp_flags.append(f"-U{name}")
    elif arg.startswith("-I"):
        directory = args.value("-I", arg)
        inv.include_dirs.append(directory)
        inv.pp_flags.append(f"-I{directory}")
    elif arg in ("-iquote", "-isystem", "-idirafter", "-include", "-imacros"):
        operand = args.value(arg, arg)
        if arg == "-iquote":
            inv.include_dirs.append(operand)
        inv.pp_flags += [arg, operand]
    else:
        return False
    return True


def _level_and_dependency_option(inv: Invocation, arg: str, args: _Args) -> bool:
    if arg.startswith("-O"):
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
        inv.deps.file = args.value("-MF", arg)
    elif arg.startswith(("-MT", "-MQ")):
        inv.deps.targets.append((arg[:3], args.value(arg[:3], arg)))
    else:
        return False
    return True


def _link_option(inv: Invocation, arg: str, args: _Args) -> bool:
    if arg.startswith("-Wl,"):
        inv.link_flags.append(arg)
        inv.ld_args += [a for a in arg[4:].split(",") if a]
    elif arg == "-Xlinker":
        operand = args.value(arg, arg)
        inv.link_flags += [arg, operand]
        inv.ld_args.append(operand)
    elif arg.startswith(("-L", "-l")):
        flag = arg[:2]
        option = f"{flag}{args.value(flag, arg)}"
        inv.link_flags.append(option)
        inv.ld_args.append(option)
    else:
        return False
    return True


def _compiler_option(inv: Invocation, arg: str, args: _Args) -> bool:
    if arg.startswith("-x"):
        language = args.value("-x", arg)
        if language not in ("c", "assembler", "assembler-with-cpp", "none"):
            raise UsageError(f"language '{language}' is not supported: DPU kernels are C (or assembly)")
        inv.language = None if language == "none" else language
    elif arg == "-emit-llvm":
        inv.emit_llvm = True
    elif arg == "-Xclang":
        inv.cc_flags += [arg, args.value(arg, arg)]
    elif arg in _SILENT:
        pass
    elif arg.startswith(("-W", "-f", "-std=")) or arg in ("-w", "-pedantic", "-pedantic-errors", "-ansi"):
        inv.cc_flags.append(arg)
    elif arg in _IGNORED:
        notice(f"ignoring {arg}: {_IGNORED[arg]}")
    elif arg in ("-target", "--target") or arg.startswith(("--target=", "-march=", "-mcpu=", "-mtune=", "-m")):
        shown = f"{arg} {args.value(arg, arg)}" if arg in ("-target", "--target") else arg
        notice(f"ignoring {shown}: {_TARGET_NOTE}")
    else:
        return False
    return True


def _action_option(inv: Invocation, arg: str, args: _Args) -> bool:
    if arg == "-v":
        inv.verbose = True
    elif arg in ("--version", "-version"):
        inv.action = "version"
    elif arg in ("--help", "-help", "-h"):
        inv.action = "help"
    elif arg in ("-dumpversion", "-dumpmachine"):
        inv.action = arg[1:]
    else:
        return False
    return True


# in this order: -Wl, belongs to the linker before -W... reaches the compiler
_HANDLERS: tuple[Callable[[Invocation, str, _Args], bool], ...] = (
    _preprocessor_option, _level_and_dependency_option, _link_option, _compiler_option, _action_option)


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
