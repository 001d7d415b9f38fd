"""cnmtune-cc: the drop-in compiler driver for Makefiles and CMake (arrives with the autotuner)."""

from __future__ import annotations

import sys

MESSAGE = (
    "cnmtune-cc: not yet available. The tuning-cache driver arrives with the autotuner "
    "(issue 7); until then compile a kernel directory with "
    "`cnmtune compile KERNEL_DIR --pipeline P --tasklets N -o OUT.elf`."
)


def main() -> None:
    """Say that the driver is not available yet and how to compile meanwhile (exit code 2)."""
    print(MESSAGE, file=sys.stderr)
    sys.exit(2)
