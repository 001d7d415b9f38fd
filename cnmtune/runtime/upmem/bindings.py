"""The UPMEM SDK's own Python bindings (module `dpu`, class DpuSet) as a host library.

DpuSet (SDK dpu/driver.py): `DpuSet(nr_dpus=..., profile=...)` allocates, `.load(path)` loads,
`.copy(dst, src, size=None, offset=0)` copies host <-> DPU (a str on the DPU side; one
bytearray, or a list of one bytearray per DPU for a parallel push), `.exec()` launches
synchronously, `.dpus()` lists one-DPU sets, `.log(stream)` reads a DPU's log, `.free()`.
The bindings want writable host buffers, so data is copied into bytearrays first.
"""

from __future__ import annotations

import importlib
import time
from types import ModuleType

from cnmtune.errors import DeviceError, ToolchainMissing
from cnmtune.runtime.upmem.host import HostLibrary


def find_bindings() -> tuple[ModuleType | None, str]:
    """The SDK's `dpu` module, or None and why it is unusable."""
    try:
        module = importlib.import_module("dpu")
    except ImportError as exc:
        return None, f"the UPMEM SDK's Python module `dpu` is not importable ({exc})"
    if not hasattr(module, "DpuSet"):
        where = getattr(module, "__file__", None) or ", ".join(getattr(module, "__path__", [])) or "?"
        return None, f"the module `dpu` found at {where} is not the UPMEM SDK's (no DpuSet)"
    return module, ""


def import_bindings() -> ModuleType:
    """The SDK's `dpu` module; ToolchainMissing (saying how to fix it) if it is unusable."""
    module, problem = find_bindings()
    if module is None:
        raise ToolchainMissing(f"{problem}; put the SDK's bindings on PYTHONPATH (an SDK 2025.1 install keeps them in "
                               "<sdk>/local/lib/python3.10/dist-packages) after `source /path/to/upmem-sdk/upmem_env.sh`, "
                               "or use cnmtune's C host harness (implementation='harness': a C compiler and the SDK's "
                               "dpu-pkg-config)")
    return module


class _TextSink:
    """A stream the bindings can write a DPU log into (str or bytes)."""

    def __init__(self) -> None:
        self.parts: list[str] = []

    def write(self, data) -> int:
        self.parts.append(data.decode(errors="replace") if isinstance(data, (bytes, bytearray)) else str(data))
        return len(data)

    def flush(self) -> None:
        pass


class BindingsHost(HostLibrary):
    """One DpuSet of the SDK's Python bindings."""

    name = "python"

    def __init__(self, module: ModuleType | None = None):
        self.module = module or import_bindings()
        self.dpu_set = None
        self.dpus: list = []

    def _sdk(self, call: str, fn, *args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except Exception as exc:  # the bindings raise DpuError (and ctypes errors): all are the SDK's word
            raise DeviceError(f"UPMEM host library: {call} failed: {exc}") from exc

    def _timed(self, call: str, fn, *args, **kwargs) -> int:
        start = time.perf_counter_ns()
        self._sdk(call, fn, *args, **kwargs)
        return time.perf_counter_ns() - start

    def alloc(self, nr_dpus: int, profile: str) -> int:
        self.dpu_set = self._sdk("dpu_alloc", self.module.DpuSet, nr_dpus=nr_dpus, profile=profile)
        self.dpus = list(self._sdk("dpu_alloc", self.dpu_set.dpus))
        return len(self.dpus)

    def load(self, elf_path: str) -> None:
        self._sdk("dpu_load", self.dpu_set.load, str(elf_path))

    def copy_to(self, dpu: int, symbol: str, offset: int, data: bytes) -> int:
        return self._timed("dpu_copy_to", self.dpus[dpu].copy, symbol, bytearray(data), offset=offset)

    def copy_from(self, dpu: int, symbol: str, offset: int, nbytes: int) -> tuple[bytes, int]:
        buffer = bytearray(nbytes)
        ns = self._timed("dpu_copy_from", self.dpus[dpu].copy, buffer, symbol, offset=offset)
        return bytes(buffer), ns

    def push_to(self, symbol: str, offset: int, buffers: list[bytes]) -> int:
        return self._timed("dpu_push_xfer(DPU_XFER_TO_DPU)", self.dpu_set.copy, symbol,
                           [bytearray(b) for b in buffers], offset=offset)

    def push_from(self, symbol: str, offset: int, size: int) -> tuple[list[bytes], int]:
        buffers = [bytearray(size) for _ in self.dpus]
        ns = self._timed("dpu_push_xfer(DPU_XFER_FROM_DPU)", self.dpu_set.copy, buffers, symbol, offset=offset)
        return [bytes(b) for b in buffers], ns

    def broadcast(self, symbol: str, offset: int, data: bytes) -> int:
        return self._timed("dpu_broadcast_to", self.dpu_set.copy, symbol, bytearray(data), offset=offset)

    def launch(self, cycles_symbol: str | None) -> tuple[int, tuple[int, ...]]:
        ns = self._timed("dpu_launch", self.dpu_set.exec)  # PrIM's kernel time: wall clock around the launch
        if not cycles_symbol:
            return ns, ()
        counters, _ = self.push_from(cycles_symbol, 0, 8)
        return ns, tuple(int.from_bytes(c, "little") for c in counters)

    def log(self, dpu: int) -> str:
        sink = _TextSink()
        self._sdk("dpu_log_read", self.dpus[dpu].log, sink)
        return "".join(sink.parts)

    def close(self) -> None:
        if self.dpu_set is not None:
            dpu_set, self.dpu_set = self.dpu_set, None
            self._sdk("dpu_free", dpu_set.free)
