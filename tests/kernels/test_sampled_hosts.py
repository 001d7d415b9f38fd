"""Every kernel's host program on the sampled device (the dataset generator's and the tuner's
screening runs from 16 DPUs on): the unsampled DPUs read back zeros, and a host must still finish
its gathering steps, at the workload's own defines and at each tuned define's smallest and largest
choice. A host that raises there fails every sampled run of its kernel (uni did: its overlap
test found two zero results equal and placed DPU outputs at negative offsets)."""

from __future__ import annotations

import pytest

from cnmtune.errors import KernelError
from cnmtune.plugin.dataset.generate import define_settings
from cnmtune.runtime.registry import expand_kernels, find_kernel
from cnmtune.runtime.target import SampledSimTarget
from cnmtune.runtime.toolchain import Variant

DPUS = 64  # one rank: most of them unsampled
CASES = [(name, settings) for name in expand_kernels(["prim", "pim-ml"])
         for settings in define_settings(find_kernel(name).workload, 3)]


@pytest.mark.parametrize("name, defines", CASES, ids=lambda case: str(case) if isinstance(case, str) else
                         ",".join(f"{k}={v}" for k, v in case.items()) or "default")
def test_a_host_finishes_with_zeros_from_unsampled_dpus(name, defines, toolchain):
    kernel = find_kernel(name)
    workload = kernel.workload
    size = workload.preset("small")
    params = {"iterations": 2} if "iterations" in workload.params else {}
    for tasklets in (workload.nr_tasklets, 12, 8, 4):  # a large block fits WRAM with fewer tasklets
        try:
            workload(size, DPUS, tasklets, defines, **params)
            break
        except KernelError as exc:  # e.g. a size that does not spread over 64 DPUs
            refusal = exc
    else:
        pytest.skip(f"{name} refuses {DPUS} DPUs here: {refusal}")
    result = SampledSimTarget().run(Variant.of(kernel, "O2", tasklets, defines), DPUS, size, params=params)
    assert result.kernel_s > 0 and not result.verified
