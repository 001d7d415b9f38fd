"""A linked proxy ELF as the simulator loads it: memory contents, symbols, functions, accounting.

Which instructions are issue slots: kernel code and cnmtune's runtime run natively on a DPU
too, so each of their rv32i instructions is charged the DPU instructions the UPMEM compiler
would emit for it (``DpuSlots`` from the DPU lowering model, cnmtune.dpu.slots: 0 where a
neighbour absorbs it, 2 for an index-induction step, 1 mostly). Routines that DpuConfig prices
by table (soft multiply/divide/float, and the service wrappers that stand for single DPU
instructions) are charged at their entry and their rv32i bodies are not counted.

Priced integer multiply/divide helpers of compiler_rt (``NATIVE_OPS``) are executed natively by
the interpreter (see interpreter.py, NativeOp), which leaves every slot and routine count as it
is. ``NATIVE_ROUTINES = False`` (or ``decode(config, native=False)``) decodes programs that
interpret them instruction by instruction instead, e.g. to compare the two.
"""

from __future__ import annotations

import bisect
import functools
import hashlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from elftools.common.exceptions import ELFError
from elftools.elf.elffile import ELFFile

from cnmtune.dpu.memory_map import IRAM_BASE, MRAM_BASE, MRAM_SIZE, WRAM_SIZE
from cnmtune.dpu.slots import DpuSlots, slot_model_identity, slots_of
from cnmtune.errors import ElfError
from cnmtune.runtime.sim.config import DpuConfig
from cnmtune.runtime.sim.routines import NativeOp
from cnmtune.runtime.sim.program import DecodedProgram, decode_program

# compiler_rt routines the interpreter can execute natively when they are table-charged.
NATIVE_OPS: dict[str, NativeOp] = {
    "__mulsi3": NativeOp.MUL32, "__udivsi3": NativeOp.UDIV32, "__umodsi3": NativeOp.UMOD32,
    "__divsi3": NativeOp.DIV32, "__modsi3": NativeOp.MOD32, "__muldi3": NativeOp.MUL64,
    "__udivdi3": NativeOp.UDIV64, "__umoddi3": NativeOp.UMOD64, "__divdi3": NativeOp.DIV64,
    "__moddi3": NativeOp.MOD64,
}
# Default of ProgramImage.decode's `native`, read at each call: False makes newly decoded
# programs interpret every routine (same slots and timing; only slower, more raw instructions).
NATIVE_ROUTINES = True


@dataclass(frozen=True)
class Function:
    """A function symbol of .text."""

    name: str
    address: int
    size: int


PRINT_ROUTINES = ("printf", "vprintf", "puts", "putchar")  # runtime/stdio.c: every print service call is in one of them


@dataclass(frozen=True, eq=False)  # identity hash: images are cached per file content
class ProgramImage:
    """Everything the simulator needs from one ELF (shared by every DPU that loads it)."""

    path: Path
    sha256: str
    entry: int
    text: bytes
    wram_init: bytes
    mram_init: tuple[tuple[int, bytes], ...]
    symbols: dict[str, int]
    symbol_sizes: dict[str, int]
    functions: tuple[Function, ...]
    nr_tasklets: int
    stack_size: int
    stacks_start: int
    dpu_slots: DpuSlots

    @classmethod
    def load(cls, path: str | Path) -> "ProgramImage":
        """Read an ELF produced by the proxy toolchain (cached per file content)."""
        data = Path(path).read_bytes()
        return _load(Path(path), hashlib.sha256(data).hexdigest(), data, slot_model_identity())

    def function_at(self, pc: int) -> str:
        """Name of the function containing `pc` ('?' outside every function)."""
        starts = [f.address for f in self.functions]
        k = bisect.bisect_right(starts, pc) - 1
        if k >= 0 and pc < self.functions[k].address + max(self.functions[k].size, 4):
            return self.functions[k].name
        return "?"

    def decode(self, config: DpuConfig, native: bool | None = None) -> tuple[DecodedProgram, tuple[str, ...]]:
        """Pre-decoded program with per-instruction accounting under `config`, and its routine names.

        native: execute the priced NATIVE_OPS routines natively (default: NATIVE_ROUTINES).
        """
        return _decode(self, _table_signature(config), NATIVE_ROUTINES if native is None else bool(native))

    def stack_top(self, tasklet: int) -> int:
        """Where `tasklet`'s stack starts (the proxy's stacks grow down from there): tasklet t owns
        [stacks_start + t * stack_size, stacks_start + (t + 1) * stack_size) (cnmtune/dpu/dpu.ld)."""
        return self.stacks_start + (tasklet + 1) * self.stack_size

    def symbol(self, name: str) -> int:
        """Address of a symbol; KeyError if absent."""
        return self.symbols[name]

    @property
    def prints(self) -> bool:
        """Whether the program links a print routine of the runtime (printf, vprintf, puts, putchar)."""
        return any(name in self.symbols for name in PRINT_ROUTINES)


def _table_signature(config: DpuConfig) -> tuple[tuple[str, int], ...]:
    return tuple(sorted((c.name, int(c.kind)) for c in config.routine_costs))


@functools.lru_cache(maxsize=64)
def _decode(image: ProgramImage, table: tuple[tuple[str, int], ...],
            native: bool = True) -> tuple[DecodedProgram, tuple[str, ...]]:
    priced = dict(table)
    count = len(image.text) // 4
    charge = np.array(image.dpu_slots.weights[:count], dtype=np.int8)
    routine = np.full(count, -1, dtype=np.int16)
    names: list[str] = []
    for fn in image.functions:
        if fn.name not in priced:
            continue
        first = (fn.address - IRAM_BASE) // 4
        last = first + max(fn.size // 4, 1)
        charge[first:last] = 0
        routine[first] = len(names)
        names.append(fn.name)
    kinds = np.array([priced[name] for name in names], dtype=np.int8)
    natives = np.array([NATIVE_OPS.get(name, 0) if native else 0 for name in names], dtype=np.int8)
    program = decode_program(image.text, IRAM_BASE, charge=charge, routine=routine, routine_kind=kinds,
                             routine_native=natives)
    return program, tuple(names)


@functools.lru_cache(maxsize=32)
def _load(path: Path, sha256: str, data: bytes, slot_model: str) -> ProgramImage:
    import io

    try:
        elf = ELFFile(io.BytesIO(data))
        text_section = elf.get_section_by_name(".text")
        symtab = elf.get_section_by_name(".symtab")
        if text_section is None or symtab is None or elf["e_machine"] != "EM_RISCV":
            raise ElfError(f"{path}: not a cnmtune proxy DPU program (needs RISC-V .text and .symtab)")
        wram = bytearray(WRAM_SIZE)
        mram: list[tuple[int, bytes]] = []
        for section in elf.iter_sections():
            addr, size = section["sh_addr"], section["sh_size"]
            if not section["sh_flags"] & 0x2 or size == 0 or section["sh_type"] == "SHT_NOBITS":
                continue
            if addr < WRAM_SIZE:
                if addr + size > WRAM_SIZE:
                    raise ElfError(f"{path}: section {section.name} runs past the 64 KiB WRAM")
                wram[addr:addr + size] = section.data()
            elif MRAM_BASE <= addr < MRAM_BASE + MRAM_SIZE:
                mram.append((addr - MRAM_BASE, section.data()))
        symbols, sizes, functions = {}, {}, {}
        for sym in symtab.iter_symbols():
            if not sym.name:
                continue
            symbols.setdefault(sym.name, sym["st_value"])
            sizes.setdefault(sym.name, sym["st_size"])
            if sym["st_info"]["type"] == "STT_FUNC":
                name = sym.name.rsplit(".", 1)[-1]  # compiler_rt.mulXi3.__mulsi3 -> __mulsi3
                functions.setdefault((sym["st_value"], name), Function(name, sym["st_value"], sym["st_size"]))
        by_address: dict[int, Function] = {}
        for (address, name), fn in sorted(functions.items()):
            kept = by_address.get(address)
            if kept is None or (kept.name.startswith("compiler_rt") and not name.startswith("compiler_rt")):
                by_address[address] = fn
        text = text_section.data()
    except ELFError as exc:
        raise ElfError(f"{path}: corrupt ELF: {exc}") from exc
    return ProgramImage(
        path=path, sha256=sha256, entry=elf["e_entry"], text=text, wram_init=bytes(wram),
        mram_init=tuple(mram), symbols=symbols, symbol_sizes=sizes,
        functions=tuple(sorted(by_address.values(), key=lambda f: f.address)),
        nr_tasklets=symbols.get("NR_TASKLETS", symbols.get("__cnm_nr_tasklets", 1)),
        stack_size=symbols.get("STACK_SIZE_DEFAULT", symbols.get("__cnm_stack_size", 1024)),
        stacks_start=symbols["__sys_stacks_start"], dpu_slots=slots_of(data, str(path)),
    )
