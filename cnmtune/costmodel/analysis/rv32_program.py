"""The rv32 proxy front-end: .text decoded (capstone names what the base ISA does not), attributed to
functions and regions.

Regions come from the linker script's boundary symbols ``__cnm_text_{runtime,kernel,softlib}_
{start,end}``: runtime (crt0 and the DPU runtime C), kernel (the user's code) and softlib
(compiler_rt's soft multiply/divide/float). A function belongs to the region holding its first
instruction; code outside the three ranges counts as runtime. Without the symbols (a foreign
RISC-V ELF) every function counts as kernel and ``regions_known`` is False.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

import capstone
import numpy as np

from cnmtune.costmodel.analysis.elf import ElfImage, constant_word
from cnmtune.costmodel.analysis.program import KERNEL, REGIONS, RUNTIME, Function, text_functions
from cnmtune.costmodel.analysis.rv32_isa import OP_AUIPC, OP_LUI, Fields, base_mnemonics, decode_fields
from cnmtune.errors import ElfError

_local = threading.local()


def _capstone() -> capstone.Cs:
    # Capstone handles are not thread safe; one per thread, created once.
    md = getattr(_local, "md", None)
    if md is None:
        # CS_MODE_RISCV32 without CS_MODE_RISCVC: compressed instructions are not decoded.
        md = _local.md = capstone.Cs(capstone.CS_ARCH_RISCV, capstone.CS_MODE_RISCV32)
    return md


@dataclass(frozen=True)
class Program:
    """The decoded .text: one entry per 4-byte instruction word, plus its functions."""

    name: str
    text_address: int
    words: np.ndarray
    fields: Fields
    mnemonics: list[str]
    functions: tuple[Function, ...]
    function_of: np.ndarray
    padding: np.ndarray
    regions_known: bool
    constant_data: tuple[tuple[int, bytes], ...] = ()

    def address(self, index: int) -> int:
        """The address of instruction ``index``."""
        return self.text_address + 4 * index

    def index(self, address: int) -> int | None:
        """The instruction index at ``address``, or None outside .text or misaligned."""
        offset = address - self.text_address
        if offset % 4 or not 0 <= offset < 4 * len(self.words):
            return None
        return offset // 4

    def constant_word(self, address: int) -> int | None:
        """The word of read-only data at address ``address`` (None if there is none)."""
        return constant_word(self.constant_data, address)

    def function_at(self, index: int) -> Function:
        """The function holding instruction ``index``."""
        return self.functions[int(self.function_of[index])]

    def jalr_target(self, index: int) -> int | None:
        """The target of the ``jalr`` at ``index`` when the instruction before it, in the same
        function, set its base register: ``auipc`` (pc-relative) or ``lui`` (absolute)."""
        f, prev = self.fields, index - 1
        if prev < 0 or self.function_of[prev] != self.function_of[index]:
            return None
        if f.rd[prev] != f.rs1[index] or f.rs1[index] == 0:
            return None
        if f.opcode[prev] == OP_AUIPC:
            return (self.address(prev) + f.imm_u[prev] + f.imm_i[index]) & 0xFFFFFFFF
        if f.opcode[prev] == OP_LUI:
            return (f.imm_u[prev] + f.imm_i[index]) & 0xFFFFFFFF
        return None


def region_bounds(image: ElfImage) -> dict[str, tuple[int, int]] | None:
    """The [start, end) address range of each code region, or None without the symbols."""
    bounds = {}
    for region in REGIONS:
        start = image.symbol(f"__cnm_text_{region}_start")
        end = image.symbol(f"__cnm_text_{region}_end")
        if start is None or end is None:
            return None
        bounds[region] = (start, end)
    return bounds


def decode_rv32(image: ElfImage) -> Program:
    """Decode every word of .text and attribute it to a function and a region."""
    words = np.frombuffer(image.text, dtype="<u4")
    n = len(words)
    bounds = region_bounds(image)
    functions, _, function_of, covered = text_functions(image, n, lambda _, address: _region(address, bounds))
    fields = decode_fields(words)
    mnemonics, padding = _decode(image, words, covered, functions, function_of, base_mnemonics(fields))
    return Program(name=image.name, text_address=image.text_address, words=words, fields=fields,
                   mnemonics=mnemonics, functions=functions, function_of=function_of, padding=padding,
                   regions_known=bounds is not None,
                   constant_data=image.constant_data)


def _region(address: int, bounds: dict[str, tuple[int, int]] | None) -> str:
    if bounds is None:
        return KERNEL
    for region, (start, end) in bounds.items():
        if start <= address < end:
            return region
    return RUNTIME


def _decode(image: ElfImage, words: np.ndarray, covered: np.ndarray, functions: tuple[Function, ...],
            function_of: np.ndarray, base: list[str | None]) -> tuple[list[str], np.ndarray]:
    """Every word's mnemonic: its `base` one, else capstone's (a word is 4 bytes: rv32i without
    compressed instructions, so each decodes on its own); a zero word outside functions is
    alignment padding ('')."""
    md = _capstone()
    code, base_address = image.text, image.text_address
    mnemonics = list(base)
    padding = np.zeros(len(words), dtype=bool)
    for index, name in enumerate(base):
        if name is not None:
            continue
        offset = 4 * index
        decoded = [m for _, _, m, _ in md.disasm_lite(code[offset:offset + 4], base_address + offset)]
        if decoded:
            mnemonics[index] = decoded[0]
            continue
        word = int(words[index])
        if word != 0 or covered[index]:
            where = functions[int(function_of[index])].name
            raise ElfError(
                f"{image.name}: undecodable instruction word 0x{word:08x} at "
                f"0x{base_address + offset:08x} (in {where}); the proxy decoder reads rv32i "
                "4-byte instructions")
        padding[index] = True
        mnemonics[index] = ""
    return mnemonics, padding
