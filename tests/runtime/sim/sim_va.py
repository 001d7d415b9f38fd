"""A minimal one-tasklet host for the interpreter tests: ELF loading and the va workload.

Services only what a one-tasklet va run needs (ME, BOOT, LOCK/ACQUIRE/RELEASE for mem_alloc's
heap lock, MRAM_READ/WRITE as numpy copies, BARRIER_WAIT as a no-op, STOP). It is a test
harness, not the simulator's scheduler.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass

import numpy as np
from elftools.elf.constants import SH_FLAGS
from elftools.elf.elffile import ELFFile

from cnmtune.dpu.memory_map import INCLUDE_DIR, IRAM_BASE, MRAM_BASE, MRAM_SIZE, WRAM_SIZE
from cnmtune.runtime.sim.interpreter import DpuState, EventKind, Interpreter
from cnmtune.runtime.sim.program import decode_program

ECALL = {name: int(n) for name, n in re.findall(r"#define\s+CNM_ECALL_([A-Z0-9_]+)\s+(\d+)",
                                                (INCLUDE_DIR / "cnm_ecall.h").read_text())}


@dataclass
class LoadedElf:
    """A DPU ELF loaded into a fresh DpuState, with its symbols and interpreter."""

    state: DpuState
    interpreter: Interpreter
    symbols: dict[str, int]
    entry: int


def load_elf(path, mram_bytes: int = 0) -> LoadedElf:
    """Decode .text and copy every allocatable WRAM/MRAM section (NOBITS stay zero)."""
    with open(path, "rb") as handle:
        elf = ELFFile(handle)
        symbols = {s.name: s["st_value"] for s in elf.get_section_by_name(".symtab").iter_symbols()}
        text = elf.get_section_by_name(".text")
        program = decode_program(text.data(), text["sh_addr"])
        state = DpuState(program.n_routines, mram_bytes)
        for section in elf.iter_sections():
            addr, size = section["sh_addr"], section["sh_size"]
            if not section["sh_flags"] & SH_FLAGS.SHF_ALLOC or section["sh_type"] == "SHT_NOBITS":
                continue
            if addr < WRAM_SIZE:
                state.wram[addr: addr + size] = np.frombuffer(section.data(), np.uint8)
            elif MRAM_BASE <= addr < MRAM_BASE + MRAM_SIZE and size:
                state.grow_mram(addr - MRAM_BASE + size)
                state.mram[addr - MRAM_BASE: addr - MRAM_BASE + size] = np.frombuffer(section.data(), np.uint8)
            else:
                assert addr == IRAM_BASE or size == 0 or section.name == ".atomic", section.name
        entry = elf["e_entry"]
    return LoadedElf(state, Interpreter(program), symbols, entry)


def _dma(state: DpuState, mram_addr: int, wram_addr: int, size: int, to_wram: bool) -> None:
    m, w = (mram_addr & (MRAM_SIZE - 1)) & ~7, wram_addr & ~7  # DMA rules: low 26 bits, align down
    state.grow_mram(m + size)
    if to_wram:
        state.wram[w: w + size] = state.mram[m: m + size]
    else:
        state.mram[m: m + size] = state.wram[w: w + size]


def run_one_tasklet(loaded: LoadedElf, budget: int = 1 << 40) -> dict:
    """Boot tasklet 0 at the entry and service its ecalls until STOP; return the totals."""
    state, sym = loaded.state, loaded.symbols
    state.pcs[0] = loaded.entry
    stack_top = sym["__sys_stacks_start"] + sym["__cnm_stack_size"]
    state.stack_deepest[0] = stack_top
    regs, totals, locks = state.regs[0], {"slots": 0, "instructions": 0, "events": 0, "seconds": 0.0}, set()
    while True:
        start = time.perf_counter()
        event = loaded.interpreter.run(0, state, budget)
        totals["seconds"] += time.perf_counter() - start
        totals["slots"] += event.slots
        totals["instructions"] += event.instructions
        totals["events"] += 1
        if event.kind == EventKind.MRAM_GROW:
            state.grow_mram(event.address - MRAM_BASE + 8)
            continue
        assert event.kind == EventKind.ECALL, event
        service, a0, a1, a2 = int(regs[17]), int(regs[10]), int(regs[11]), int(regs[12])
        if service == ECALL["STOP"]:
            totals["exit_code"] = a0
            return totals
        if service == ECALL["ME"]:
            regs[10] = 0
        elif service in (ECALL["ACQUIRE"], ECALL["LOCK"]):
            regs[10] = int((a0 & 0xFF) in locks)
            locks.add(a0 & 0xFF)
        elif service == ECALL["RELEASE"]:
            locks.discard(a0 & 0xFF)
        elif service in (ECALL["MRAM_READ"], ECALL["MRAM_WRITE"]):
            read = service == ECALL["MRAM_READ"]
            _dma(state, a0 if read else a1, a1 if read else a0, a2, read)
        elif service not in (ECALL["BOOT"], ECALL["BARRIER_WAIT"]):
            raise AssertionError(f"unexpected service {service} at {event.pc:#x}")
        state.pcs[0] += 4


def setup_va(loaded: LoadedElf, elements: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Write DPU_INPUT_ARGUMENTS and int32 arrays A, B to the MRAM heap; return (A, B)."""
    rng = np.random.default_rng(seed)
    a = rng.integers(-2 ** 31, 2 ** 31, elements, dtype=np.int64).astype(np.int32)
    b = rng.integers(-2 ** 31, 2 ** 31, elements, dtype=np.int64).astype(np.int32)
    size = 4 * elements
    transfer = (size + 7) & ~7
    heap = loaded.symbols["__sys_used_mram_end"] - MRAM_BASE
    state = loaded.state
    state.grow_mram(heap + 2 * transfer)
    state.mram[heap: heap + size] = a.view(np.uint8)
    state.mram[heap + transfer: heap + transfer + size] = b.view(np.uint8)
    args = np.array([size, transfer, 0, 0], np.uint32).view(np.uint8)
    where = loaded.symbols["DPU_INPUT_ARGUMENTS"]
    state.wram[where: where + 16] = args
    return a, b


def va_result(loaded: LoadedElf, elements: int) -> np.ndarray:
    """B as the kernel left it."""
    size = 4 * elements
    heap = loaded.symbols["__sys_used_mram_end"] - MRAM_BASE + ((size + 7) & ~7)
    return loaded.state.mram[heap: heap + size].view(np.int32)
