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
as cnmtune's ProxyToolchain does (zig's clang's IR before any pass -> the pipeline in-process
with llvmlite -> rv32i code generation at -O2 -> ld.lld with cnmtune's linker script and DPU
runtime); ``upmem`` drives the UPMEM SDK (its clang -emit-llvm, its opt with the pipeline, its
clang for code generation and the link). As with the SDK, NR_TASKLETS and STACK_SIZE_DEFAULT
are -D flags of the link step too (they size the tasklet stacks).

Exit codes: 0 success, 1 the code does not compile or link (the compiler's diagnostics are
printed as they are), 2 a usage or configuration error (one line).
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

from cnmtune.errors import CnmtuneError, CompileError
from cnmtune.plugin.cc.args import PROG, TOOLCHAINS, USAGE, BuildFailed, Input, Invocation, UsageError, parse_args
from cnmtune.plugin.cc.drivers import ProxyDriver, UpmemDriver, publish_file
from cnmtune.plugin.process_exit import skip_exit_collections


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
    from cnmtune.runtime.toolchain.base import tasklet_config

    tasklet_config(inv.defines)  # a bad NR_TASKLETS or STACK_SIZE_DEFAULT is an error before any work
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
            publish_file(produced, depfile)


def main(argv: list[str] | None = None) -> None:
    """Console-script entry: run the driver, exit 0, 1 (does not compile or link) or 2 (usage)."""
    skip_exit_collections()
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
