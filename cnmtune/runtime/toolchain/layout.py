"""Reading a linked proxy ELF's memory use and enforcing the DPU's IRAM and WRAM capacities.

IRAM rule: the kernel's and cnmtune's DPU runtime's instructions, as the DPU instructions the
UPMEM compiler would emit for them (the DPU lowering model, cnmtune.dpu.slots), count against
the 4096-instruction IRAM. The soft-arithmetic routines come from zig's compiler_rt, which is
larger than UPMEM's hand-written DPU routines (e.g. its __udivsi3 is ~115 rv32i instructions
against a 32-step div_step ladder on the DPU), so they are counted separately and reported,
never charged: a kernel is not rejected for routines a real DPU would hold in fewer words.
"""

from __future__ import annotations

from pathlib import Path

from cnmtune.dpu.elf_tables import symbol_values
from cnmtune.dpu.memory_map import IRAM_CAPACITY_INSTRUCTIONS, MRAM_BASE, WRAM_SIZE
from cnmtune.dpu.slots import slots_of
from cnmtune.errors import ElfError, IramOverflow, WramOverflow
from cnmtune.runtime.toolchain.base import MemoryUse

_REQUIRED = (
    "__cnm_text_runtime_start", "__cnm_text_runtime_end", "__cnm_text_kernel_start",
    "__cnm_text_kernel_end", "__cnm_text_softlib_start", "__cnm_text_softlib_end",
    "__sys_host_start", "__sys_host_end", "__sys_stacks_start", "__sys_stacks_end",
    "__sys_heap_pointer_reset", "__sys_used_mram_end",
)


def read_memory_use(elf_path: Path) -> MemoryUse:
    """Measure IRAM, WRAM and MRAM use from the linker's boundary symbols."""
    try:
        data = Path(elf_path).read_bytes()
    except OSError as exc:
        raise ElfError(f"{elf_path}: cannot read linked program: {exc}") from exc
    values = symbol_values(data, str(elf_path))
    symbols = {name: values[name] for name in _REQUIRED if name in values}
    missing = [name for name in _REQUIRED if name not in symbols]
    if missing:
        raise ElfError(f"{elf_path}: not linked with cnmtune's DPU linker script (missing {missing[0]})")
    s = symbols
    host = s["__sys_host_end"] - s["__sys_host_start"]
    stacks = s["__sys_stacks_end"] - s["__sys_stacks_start"]
    return MemoryUse(
        runtime_instructions=(s["__cnm_text_runtime_end"] - s["__cnm_text_runtime_start"]) // 4,
        kernel_instructions=(s["__cnm_text_kernel_end"] - s["__cnm_text_kernel_start"]) // 4,
        softlib_instructions=(s["__cnm_text_softlib_end"] - s["__cnm_text_softlib_start"]) // 4,
        wram_data_bytes=s["__sys_heap_pointer_reset"] - host - stacks,
        wram_host_bytes=host,
        wram_stack_bytes=stacks,
        mram_static_bytes=s["__sys_used_mram_end"] - MRAM_BASE,
        iram_dpu_instructions=slots_of(data, str(elf_path)).iram_instructions,
    )


def check_capacity(memory: MemoryUse, label: str) -> None:
    """Raise IramOverflow or WramOverflow, naming the variant and the breakdown."""
    if memory.iram_dpu_instructions > IRAM_CAPACITY_INSTRUCTIONS:
        raise IramOverflow(
            f"{label}: IRAM overflow: {memory.iram_dpu_instructions} DPU instructions (lowered from kernel "
            f"{memory.kernel_instructions} + runtime {memory.runtime_instructions} rv32i instructions) exceed "
            f"the DPU's {IRAM_CAPACITY_INSTRUCTIONS}; soft-arithmetic routines ({memory.softlib_instructions}) "
            "not counted"
        )
    if memory.wram_static_bytes > WRAM_SIZE:
        raise WramOverflow(
            f"{label}: WRAM overflow: {memory.wram_static_bytes} B (globals {memory.wram_data_bytes} + "
            f"__host {memory.wram_host_bytes} + stacks {memory.wram_stack_bytes}) exceed the DPU's {WRAM_SIZE} B"
        )
