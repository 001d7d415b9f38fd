"""The rv32i target machine that pass pipelines run for and the proxy toolchain emits code with.

It lives beside the passes, not in the toolchain, so that a process which only optimises (the
knob process, cnmtune.passes.knob_server) starts without importing the toolchain.
"""

from __future__ import annotations

import functools

import llvmlite.binding as llvm

TRIPLE = "riscv32-unknown-elf"


@functools.lru_cache(maxsize=1)
def _target() -> llvm.Target:
    llvm.initialize_all_targets()
    llvm.initialize_all_asmprinters()
    return llvm.Target.from_triple(TRIPLE)


def rv32_target_machine(codegen_level: int) -> llvm.TargetMachine:
    """A new rv32i/ilp32 target machine (static relocation, small code model) at -O`codegen_level`
    (one per user: a target machine is not shared between threads)."""
    return _target().create_target_machine(
        cpu="generic-rv32", features="", opt=codegen_level, reloc="static", codemodel="small", abiname="ilp32",
    )  # small = medlow: direct calls and lui/addi addresses, not llvmlite's constant pools
