"""The UPMEM SDK's host API (dpu.h) on cnmtune's simulator: a C library, its server, its build.

A host program written for the SDK links include/ + libdpu.c (build.host_environment builds them
and the dpu-pkg-config / dpu-upmem-dpurte-clang shims a Makefile calls); every DPU set it
allocates is served by one simulator process (server.py) over protocol.py, and reports its
simulated times (report.py).
"""

from cnmtune.runtime.hostapi.build import host_environment

__all__ = ["host_environment"]
