"""Everything that builds and runs DPU programs: kernels, toolchains (and later devices)."""

from cnmtune.runtime.kernel import Kernel
from cnmtune.runtime.workload import Workload

__all__ = ["Kernel", "Workload"]
