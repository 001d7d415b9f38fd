"""The error types of cnmtune, one per cause a user can trigger.

Every error carries a one-line message that names the cause (and the variant, where there
is one). The `cnmtune` command line prints that line and exits 2 for a UsageError (the command
line cannot run as written) and 1 for any other (the work it asked for failed); cnmtune-cc exits
with the error's ``exit_code``.
"""

from __future__ import annotations


class CnmtuneError(Exception):
    """Base of every error a user can cause; the CLI turns it into one line and an exit code."""

    exit_code = 2  # cnmtune-cc's exit code; `cnmtune` exits 1, or 2 for a UsageError


class UsageError(CnmtuneError):
    """A command line that cannot run as written: a malformed value, a value the kernel does not
    accept, options that do not go together. Nothing ran; `cnmtune` exits 2."""


class PipelineError(CnmtuneError):
    """A pass pipeline text that cannot be parsed or names an unknown pass."""


class KernelError(CnmtuneError):
    """A kernel directory that is missing, empty or has a broken workload.py."""


class ToolchainMissing(CnmtuneError):
    """A toolchain that cnmtune needs is not installed or not usable."""


class CompileError(CnmtuneError):
    """The C front end rejected the source; carries the compiler's diagnostics."""

    def __init__(self, message: str, diagnostics: str = ""):
        super().__init__(message)
        self.diagnostics = diagnostics

    def __str__(self) -> str:
        head = super().__str__()
        return f"{head}\n{self.diagnostics.rstrip()}" if self.diagnostics else head


class LinkError(CompileError):
    """The linker rejected the objects (undefined symbol, bad linker script input)."""


class IramOverflow(CnmtuneError):
    """The program needs more instructions than a DPU's IRAM holds."""


class WramOverflow(CnmtuneError):
    """Globals, __host variables and tasklet stacks do not fit a DPU's WRAM."""


class ElfError(CnmtuneError):
    """A file that is not a usable ELF for cnmtune (not ELF, truncated, corrupt)."""


class UnsupportedMachine(ElfError):
    """An ELF for a machine cnmtune cannot read (or cannot read yet)."""


class NotAnElf(ElfError):
    """A file that is not an ELF at all (wrong magic bytes)."""


class TruncatedElf(ElfError):
    """An ELF whose headers, sections or symbols run past the end of the file or are corrupt."""


class DpuDecodeError(ElfError):
    """A real DPU ELF whose code fails one of the decoder's self-checks (unknown or ambiguous
    word, call or branch target, bootstrap); names the check, the address and the function."""

    def __init__(self, message: str, check: str = "", address: int | None = None,
                 function: str | None = None):
        super().__init__(message)
        self.check, self.address, self.function = check, address, function

    def __reduce__(self):
        # Keep the details when the error crosses a process boundary (dataset executors).
        return type(self), (self.args[0], self.check, self.address, self.function)


class SchemaMismatch(CnmtuneError):
    """Features, a vector or a model made for another feature schema."""


class SimFault(CnmtuneError):
    """A DPU program fault in the simulator; the message names DPU, tasklet, pc, function and address."""


class DmaError(SimFault):
    """An mram_read/mram_write that breaks the DMA rules (size, alignment, bounds)."""


class Deadlock(SimFault):
    """Every live tasklet of a DPU is blocked on synchronisation."""


class SimTimeout(SimFault):
    """A DPU ran past its instruction budget (an infinite loop, or a budget set too low)."""


class VerificationError(CnmtuneError):
    """A workload's DPU result differs from its host reference."""


class DeviceError(CnmtuneError):
    """Misuse of the Device API (unknown symbol, unequal parallel sizes, no program loaded)."""


class StoreError(CnmtuneError):
    """A dataset store that cannot be opened, written or exported."""


class FeatureError(CnmtuneError):
    """A feature matrix the cost model cannot use (NaN or infinite values)."""


class ModelError(CnmtuneError):
    """A cost-model file that is missing, corrupt, not ONNX, or not exported by cnmtune."""


class TraceStoreError(CnmtuneError):
    """A stored trace set that is missing, incomplete, corrupt or recorded for another variant."""


class InvalidRetime(CnmtuneError):
    """Re-timing a trace under a DpuConfig would not be exact (timing-dependent execution)."""


class SweepError(UsageError):
    """A design sweep that cannot run as asked (unknown parameter, bad value or cost expression)."""


class OffloadError(CnmtuneError):
    """An offload decision that cannot be made as asked (no feasible configuration, bad size grid)."""


class OutputError(CnmtuneError):
    """An output file that cannot be written where asked (its directory does not exist, a directory
    in its place, no permission)."""


class MissingExtra(CnmtuneError):
    """An optional dependency is not installed; the message names the extra that brings it."""
