"""One way of reaching the UPMEM host library: the SDK's Python bindings or cnmtune's C harness.

UpmemDevice keeps the Device API's bookkeeping (checks, times, launch records) and leaves the
SDK calls to one of these. Every method returns the host wall-clock nanoseconds of the SDK
call it made, so both ways time transfers and launches the same way.
"""

from __future__ import annotations

import abc


class HostLibrary(abc.ABC):
    """The UPMEM host API calls UpmemDevice needs, one DPU set per instance."""

    name: str = ""

    @abc.abstractmethod
    def alloc(self, nr_dpus: int, profile: str) -> int:
        """dpu_alloc with a profile ("backend=simulator"); the number of DPUs allocated."""

    @abc.abstractmethod
    def load(self, elf_path: str) -> None:
        """dpu_load into every DPU of the set."""

    @abc.abstractmethod
    def copy_to(self, dpu: int, symbol: str, offset: int, data: bytes) -> int:
        """dpu_copy_to on one DPU; nanoseconds."""

    @abc.abstractmethod
    def copy_from(self, dpu: int, symbol: str, offset: int, nbytes: int) -> tuple[bytes, int]:
        """dpu_copy_from on one DPU; the bytes and nanoseconds."""

    @abc.abstractmethod
    def push_to(self, symbol: str, offset: int, buffers: list[bytes]) -> int:
        """dpu_prepare_xfer per DPU + dpu_push_xfer(DPU_XFER_TO_DPU); nanoseconds."""

    @abc.abstractmethod
    def push_from(self, symbol: str, offset: int, size: int) -> tuple[list[bytes], int]:
        """dpu_prepare_xfer per DPU + dpu_push_xfer(DPU_XFER_FROM_DPU); the buffers and nanoseconds."""

    @abc.abstractmethod
    def broadcast(self, symbol: str, offset: int, data: bytes) -> int:
        """dpu_broadcast_to; nanoseconds."""

    @abc.abstractmethod
    def launch(self, cycles_symbol: str | None) -> tuple[int, tuple[int, ...]]:
        """dpu_launch(DPU_SYNCHRONOUS); nanoseconds and, with a symbol, one u64 counter per DPU."""

    @abc.abstractmethod
    def log(self, dpu: int) -> str:
        """dpu_log_read of one DPU."""

    @abc.abstractmethod
    def close(self) -> None:
        """Free the DPUs (dpu_free) and release the library."""
