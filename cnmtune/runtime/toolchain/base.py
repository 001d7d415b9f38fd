"""What every toolchain takes and gives: a Variant in, a Binary out."""

from __future__ import annotations

import abc
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from cnmtune.dpu.memory_map import DEFAULT_STACK_SIZE, MAX_TASKLETS
from cnmtune.errors import KernelError
from cnmtune.passes import Pipeline
from cnmtune.runtime.kernel import Kernel
from cnmtune.runtime.workload import DefineValue, check_tasklets, define_text
from cnmtune.wording import counted

TASKLETS_DEFINE, STACK_DEFINE = "NR_TASKLETS", "STACK_SIZE_DEFAULT"


def tasklet_defines(nr_tasklets: int, stack_size: int) -> list[str]:
    """The -D flags that size a DPU program's tasklets, at its compile and (SDK) link."""
    return [f"-D{TASKLETS_DEFINE}={nr_tasklets}", f"-D{STACK_DEFINE}={stack_size}"]


def tasklet_config(defines: Mapping[str, DefineValue], nr_tasklets: int = 1) -> tuple[int, int]:
    """(NR_TASKLETS, STACK_SIZE_DEFAULT) of a build from its -D values, `nr_tasklets` and 1024 when
    not defined; they size the tasklets at compile and at link, so every build (Variant,
    cnmtune-cc) reads them here. A defined value that is not a valid count or size is a KernelError."""

    def number(name: str, default: int) -> int:
        if name not in defines:
            return default
        value = defines[name]
        try:
            return value if isinstance(value, int) else int(value, 0)
        except (TypeError, ValueError):
            raise KernelError(f"-D{name}={'' if value is None else value}: {name} must be an integer") from None

    tasklets = number(TASKLETS_DEFINE, nr_tasklets)
    if TASKLETS_DEFINE in defines and not 1 <= tasklets <= MAX_TASKLETS:
        raise KernelError(f"-D{TASKLETS_DEFINE}={tasklets}: a DPU runs 1..{MAX_TASKLETS} tasklets")
    stack = number(STACK_DEFINE, DEFAULT_STACK_SIZE)
    if stack <= 0 or stack % 8:
        raise KernelError(f"-D{STACK_DEFINE}={stack}: the stack size must be a positive multiple of 8")
    return tasklets, stack


@dataclass(frozen=True)
class Variant:
    """One compile of a kernel: pass pipeline, tasklet count, preprocessor defines and the tasklets'
    stack size (a STACK_SIZE_DEFAULT define sets it: it sizes the stacks at link time, so it is
    kept apart from the compile-only defines)."""

    kernel: Kernel
    pipeline: Pipeline
    nr_tasklets: int
    defines: tuple[tuple[str, DefineValue], ...] = ()
    stack_size: int = DEFAULT_STACK_SIZE

    def __post_init__(self) -> None:
        check_tasklets(self.nr_tasklets)
        defines = dict(self.defines)
        if STACK_DEFINE in defines:
            _, stack = tasklet_config({STACK_DEFINE: defines.pop(STACK_DEFINE)})
            object.__setattr__(self, "stack_size", stack)
        object.__setattr__(self, "defines", tuple(sorted(defines.items())))

    @classmethod
    def of(cls, kernel: Kernel, pipeline: Pipeline | str = "O2", nr_tasklets: int | None = None,
           defines: dict[str, DefineValue] | None = None) -> "Variant":
        """Build a variant, filling defaults (tasklets, defines) from the kernel's workload."""
        if isinstance(pipeline, str):
            pipeline = Pipeline.parse(pipeline)
        tasklets = kernel.workload.nr_tasklets if nr_tasklets is None else nr_tasklets
        resolved = kernel.workload.resolve_defines(defines)
        return cls(kernel, pipeline, tasklets, tuple(resolved.items()))

    def define_flags(self) -> list[str]:
        """The -D flags for the front end, NR_TASKLETS and STACK_SIZE_DEFAULT included."""
        flags = tasklet_defines(self.nr_tasklets, self.stack_size)
        for key, value in self.defines:
            flags.append(f"-D{key}" if value is None else f"-D{key}={value}")
        return flags

    @property
    def label(self) -> str:
        """Human-readable name used in every error and table: 'va[O2, 16 tasklets, BL=10]'."""
        stack = ((STACK_DEFINE, self.stack_size),) if self.stack_size != DEFAULT_STACK_SIZE else ()
        shown = ", ".join(define_text(k, v) for k, v in (*self.defines, *stack))
        extra = f", {shown}" if shown else ""
        return f"{self.kernel.name}[{self.pipeline.text}, {counted(self.nr_tasklets, 'tasklet')}{extra}]"


@dataclass(frozen=True)
class MemoryUse:
    """Static IRAM and WRAM use of a linked program, as the IRAM/WRAM checks count it."""

    runtime_instructions: int
    kernel_instructions: int
    softlib_instructions: int
    wram_data_bytes: int
    wram_host_bytes: int
    wram_stack_bytes: int
    mram_static_bytes: int
    iram_dpu_instructions: int  # what the IRAM rule counts: kernel + runtime lowered to DPU code

    @property
    def iram_instructions(self) -> int:
        """rv32i instructions of the code IRAM holds: kernel + cnmtune runtime (soft-arith excluded)."""
        return self.runtime_instructions + self.kernel_instructions

    @property
    def wram_static_bytes(self) -> int:
        """Globals + __host variables + all tasklet stacks."""
        return self.wram_data_bytes + self.wram_host_bytes + self.wram_stack_bytes


@dataclass(frozen=True)
class Binary:
    """A linked DPU program and what it took to make it."""

    variant: Variant
    elf_path: Path
    elf_hash: str
    toolchain: str
    memory: MemoryUse
    seconds: float
    cached: bool = field(default=False, compare=False)


class Toolchain(abc.ABC):
    """Compiles a Variant into a Binary (the builder role of the tuning loop)."""

    kind: str = ""

    @property
    @abc.abstractmethod
    def identity(self) -> str:
        """Kind, tool versions and options: everything that changes the emitted code."""

    @abc.abstractmethod
    def compile(self, variant: Variant, kernel_digest: str | None = None) -> Binary:
        """Compile and link `variant`; raise CompileError, LinkError, IramOverflow or WramOverflow.
        `kernel_digest` is ``variant.kernel.digest()`` where the caller has it (a batch of one
        kernel's variants hashes its sources once)."""
