"""Toolchains: compile a kernel Variant into a linked DPU program (Binary)."""

from cnmtune.runtime.toolchain.base import Binary, MemoryUse, Toolchain, Variant
from cnmtune.runtime.toolchain.cache import BuildCache
from cnmtune.runtime.toolchain.proxy import ProxyToolchain
from cnmtune.runtime.toolchain.upmem import UpmemToolchain

__all__ = ["Binary", "BuildCache", "MemoryUse", "ProxyToolchain", "Toolchain", "UpmemToolchain", "Variant"]
