"""UpmemDevice: the Device API on the UPMEM SDK, on hardware or on the SDK's functional simulator.

Profiles (FACTS.md §10): `backend=hw` (real DPUs, libdpuhw) and `backend=simulator` (the SDK's
functional simulator, libdpufsim: results are exact, its times are not those of a DPU). The
SDK is reached through its Python bindings when `import dpu` works, else through cnmtune's C
host harness (harness.py); neither falling back to cnmtune's own simulator. Times are host
wall clock as PrIM measures them: kernel time around the synchronous dpu_launch, transfer
time around each copy, push or broadcast. `times` is filled as SimDevice fills it.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from dataclasses import dataclass

from cnmtune.errors import DeviceError, ToolchainMissing
from cnmtune.runtime.device import Buffer, Device, as_bytes
from cnmtune.runtime.toolchain.cache import BuildCache
from cnmtune.runtime.upmem.bindings import BindingsHost, find_bindings, import_bindings
from cnmtune.runtime.upmem.harness import HarnessHost, build_harness
from cnmtune.runtime.upmem.host import HostLibrary
from cnmtune.runtime.upmem.sdk import UpmemSdk

PROFILES: dict[str, str] = {"simulator": "backend=simulator", "hw": "backend=hw"}
DEVICE_KINDS: dict[str, str] = {"simulator": "upmem-sim", "hw": "upmem-hw"}
IMPLEMENTATIONS = ("auto", "python", "harness")


@dataclass(frozen=True)
class UpmemLaunch:
    """One launch: host wall-clock seconds and the per-DPU counters read after it (if asked for)."""

    kernel_s: float
    counters: tuple[int, ...]


class UpmemDevice(Device):
    """A set of UPMEM DPUs (or SDK-simulated DPUs) with one program loaded."""

    def __init__(self, nr_dpus: int, backend: str = "simulator", *, sdk: UpmemSdk | None = None,
                 sdk_dir: str | os.PathLike | None = None, implementation: str = "auto",
                 harness: Sequence[str] | None = None, extra_profile: str = "",
                 cycles_symbol: str | None = None, cache: BuildCache | None = None,
                 timeout_s: float | None = None):
        """`harness` runs that command as the host harness instead of building cnmtune's (any
        program speaking protocol.py, e.g. a wrapper that runs the harness on the UPMEM server);
        `cycles_symbol` names a u64 the kernel keeps per DPU, read back after every launch."""
        super().__init__(nr_dpus)
        if backend not in PROFILES:
            raise DeviceError(f"unknown UPMEM backend {backend!r}; valid: {', '.join(PROFILES)}")
        if implementation not in IMPLEMENTATIONS:
            raise DeviceError(f"unknown host-library implementation {implementation!r}; "
                              f"valid: {', '.join(IMPLEMENTATIONS)}")
        self.backend = backend
        self.kind = DEVICE_KINDS[backend]
        self.profile = PROFILES[backend] + (f",{extra_profile}" if extra_profile else "")
        self.cycles_symbol = cycles_symbol
        self.launches: list[UpmemLaunch] = []
        self.elf_path: str | None = None
        self.host: HostLibrary | None = None
        host = self._open_host(sdk, sdk_dir, implementation, harness, cache, timeout_s)
        try:
            allocated = host.alloc(nr_dpus, self.profile)
            if allocated != nr_dpus:
                raise DeviceError(f"asked the UPMEM SDK for {nr_dpus} DPUs with profile {self.profile!r}, "
                                  f"got {allocated}")
        except BaseException:
            host.close()
            raise
        self.host = host

    @staticmethod
    def _open_host(sdk, sdk_dir, implementation, harness, cache, timeout_s) -> HostLibrary:
        if harness is not None:
            return HarnessHost(harness, timeout_s=timeout_s)
        if implementation == "python":
            return BindingsHost(import_bindings())
        problem = ""
        if implementation == "auto":
            module, problem = find_bindings()
            if module is not None:
                return BindingsHost(module)
        try:
            found = sdk if sdk is not None else UpmemSdk.find(sdk_dir)
            command, env = build_harness(found, cache)
        except ToolchainMissing as exc:
            if not problem:
                raise
            # auto: say why neither way of reaching the SDK's host library works
            raise ToolchainMissing(f"UPMEM host library unavailable: {problem}, and for cnmtune's C host harness: "
                                   f"{exc}") from exc
        return HarnessHost([str(command)], env=env, timeout_s=timeout_s)

    @property
    def config_hash(self) -> str:
        """Stable short id of the device configuration (kind, profile, host library)."""
        text = f"{self.kind};{self.profile};{self.host.name if self.host else ''}"
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def _host(self) -> HostLibrary:
        if self.host is None:
            raise DeviceError("the UPMEM device is closed")
        return self.host

    def _loaded(self) -> HostLibrary:
        host = self._host()
        if self.elf_path is None:
            raise DeviceError("no program loaded: call load() first")
        return host

    # ------------------------------------------------------------ program
    def load(self, elf_path) -> None:
        self._host().load(str(elf_path))
        self.elf_path = str(elf_path)

    # ------------------------------------------------------------ transfers
    def copy_to(self, dpu: int, symbol: str, data: Buffer, offset: int = 0) -> None:
        self._check_dpu(dpu)
        raw = as_bytes(data)
        self._to_dpu(self._loaded().copy_to(dpu, symbol, offset, raw), len(raw))

    def copy_from(self, dpu: int, symbol: str, nbytes: int, offset: int = 0) -> bytes:
        self._check_dpu(dpu)
        data, ns = self._loaded().copy_from(dpu, symbol, offset, nbytes)
        self._from_dpu(ns, nbytes)
        return data

    def push_to(self, symbol: str, buffers: list[Buffer], offset: int = 0) -> None:
        raw = self._check_buffers(buffers)
        self._to_dpu(self._loaded().push_to(symbol, offset, raw), len(raw[0]) * self.nr_dpus)

    def push_from(self, symbol: str, nbytes: int, offset: int = 0) -> list[bytes]:
        data, ns = self._loaded().push_from(symbol, offset, nbytes)
        self._from_dpu(ns, nbytes * self.nr_dpus)
        return data

    def broadcast(self, symbol: str, data: Buffer, offset: int = 0) -> None:
        raw = as_bytes(data)
        self._to_dpu(self._loaded().broadcast(symbol, offset, raw), len(raw) * self.nr_dpus)

    def _to_dpu(self, ns: int, nbytes: int) -> None:
        self._account_transfer(True, ns / 1e9, nbytes)

    def _from_dpu(self, ns: int, nbytes: int) -> None:
        self._account_transfer(False, ns / 1e9, nbytes)

    # ------------------------------------------------------------ execution
    def launch(self) -> None:
        ns, counters = self._loaded().launch(self.cycles_symbol)
        kernel_s = ns / 1e9
        self.launches.append(UpmemLaunch(kernel_s, counters))
        self.times.kernel_s += kernel_s
        self.times.kernel_per_launch_s.append(kernel_s)
        self.times.launches += 1

    def log(self, dpu: int) -> str:
        self._check_dpu(dpu)
        return self._loaded().log(dpu)

    # ------------------------------------------------------------ lifetime
    def close(self) -> None:
        """Free the DPUs and stop the host harness (if one runs); idempotent."""
        host, self.host = self.host, None
        if host is not None:
            host.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # interpreter shutdown: nothing left to report to
            pass
