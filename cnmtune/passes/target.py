"""The rv32i target machine that pass pipelines run for and the proxy toolchain emits code with.

It lives beside the passes, not in the toolchain, so that a process which only optimises (the
knob process, cnmtune.passes.knob_server) starts without importing the toolchain.
"""

from __future__ import annotations

import functools

import llvmlite.binding as llvm

TRIPLE = "riscv32-unknown-elf"

# The pre-RA machine scheduler runs bottom-up, which keeps register pressure low, not in LLVM's
# default bidirectional mode, which also hides load latency. A DPU has no latency to hide (a
# tasklet issues at most every 11 cycles, so every result is ready: shared/upmem/FACTS.md §2),
# and on rv32 the latency heuristic hoisted all 256 loads of PrIM SCAN's unrolled add() over
# 128 int64 ahead of their adds and spilled them: a 1,040-byte frame (the DPU's stack is 1 KiB)
# and 1,860 instructions against 1,032 bottom-up (16-byte frame). Over the kernel suite's O2/O3
# builds the kernel instructions fall from 29,183 to 28,802; with no scheduler at all, 30,300.
CODEGEN_OPTIONS: tuple[str, ...] = ("-misched-prera-direction=bottomup",)
CODEGEN_TAG = "schedbu"  # names CODEGEN_OPTIONS in toolchain identities


@functools.lru_cache(maxsize=1)
def initialise_targets() -> llvm.Target:
    """LLVM's targets and code generation options, set up once per process: the rv32 target."""
    llvm.initialize_all_targets()
    llvm.initialize_all_asmprinters()
    for option in CODEGEN_OPTIONS:
        llvm.set_option("cnmtune", option)
    return llvm.Target.from_triple(TRIPLE)


def rv32_target_machine(codegen_level: int) -> llvm.TargetMachine:
    """A new rv32i/ilp32 target machine (static relocation, small code model) at -O`codegen_level`
    (one per user: a target machine is not shared between threads)."""
    return initialise_targets().create_target_machine(
        cpu="generic-rv32", features="", opt=codegen_level, reloc="static", codemodel="small", abiname="ilp32",
    )  # small = medlow: direct calls and lui/addi addresses, not llvmlite's constant pools
