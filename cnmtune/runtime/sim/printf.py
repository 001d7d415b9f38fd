"""Formatting a DPU printf on the host, from the format string and the va_list in WRAM.

As on UPMEM, the DPU does not format: it hands over the format and its raw arguments and the
host renders them. The va_list is riscv32 ilp32's: a pointer to consecutive 4-byte argument
slots; 8-byte arguments (long long, double) start at an 8-aligned address.
"""

from __future__ import annotations

import re
import struct

import numpy as np

_SPEC = re.compile(rb"%([-+ #0]*)(\*|\d+)?(?:\.(\*|\d+))?(hh|h|ll|l|j|z|t|L)?([diouxXcspfFeEgGaA%])")


class _Args:
    def __init__(self, wram: np.ndarray, address: int):
        self.wram, self.address = wram, address

    def word(self) -> int:
        value = int.from_bytes(bytes(self.wram[self.address:self.address + 4]), "little")
        self.address += 4
        return value

    def dword(self) -> int:
        self.address = (self.address + 7) & ~7
        low, high = self.word(), self.word()
        return low | (high << 32)


def c_string(wram: np.ndarray, address: int, limit: int = 4096) -> str:
    """The NUL-terminated string at `address` in WRAM (at most `limit` bytes)."""
    end = min(len(wram), address + limit)
    raw = bytes(wram[address:end])
    return raw.split(b"\0", 1)[0].decode("latin-1")


def format_printf(wram: np.ndarray, fmt_address: int, va_address: int) -> str:
    """Render printf(format, ...) exactly as C would for the supported conversions."""
    fmt = c_string(wram, fmt_address).encode("latin-1")
    args = _Args(wram, va_address)
    out, pos = [], 0
    for match in _SPEC.finditer(fmt):
        out.append(fmt[pos:match.start()].decode("latin-1"))
        pos = match.end()
        flags, width, precision, length, conv = match.groups()
        if conv == b"%":
            out.append("%")
            continue
        width = args.word() if width == b"*" else width
        precision = args.word() if precision == b"*" else precision
        wide = length in (b"ll", b"j") or (conv in b"fFeEgGaA")
        value = args.dword() if wide else args.word()
        spec = "%" + flags.decode() + (str(int(width)) if width else "") + (
            "." + str(int(precision)) if precision is not None else "")
        out.append(_render(spec, conv.decode(), value, length, wram))
    out.append(fmt[pos:].decode("latin-1"))
    return "".join(out)


def _render(spec: str, conv: str, value: int, length: bytes | None, wram: np.ndarray) -> str:
    bits = 64 if length in (b"ll", b"j") else 32
    if conv in "di":
        signed = value - (1 << bits) if value >> (bits - 1) else value
        return (spec + "d") % signed
    if conv in "ouxX":
        return (spec + conv) % (value & ((1 << bits) - 1))
    if conv == "c":
        return (spec + "c") % chr(value & 0xFF)
    if conv == "s":
        return (spec + "s") % c_string(wram, value)
    if conv == "p":
        return f"0x{value:x}"
    number = struct.unpack("<d", value.to_bytes(8, "little"))[0]
    return (spec + (conv if conv in "fFeEgG" else "e")) % number  # %a: shown as %e
