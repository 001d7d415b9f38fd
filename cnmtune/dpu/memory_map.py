"""The DPU memory map and capacities the proxy target reproduces (UPMEM DPU v1A).

Sources: UPMEM SDK dpu.lds and dpu_chip_description.c, SDK docs (shared/upmem/FACTS.md §2-3).
"""

from __future__ import annotations

from pathlib import Path

IRAM_BASE = 0x80000000
IRAM_CAPACITY_INSTRUCTIONS = 4096  # v1A; 3968 on v1B
WRAM_BASE = 0x0
WRAM_SIZE = 64 * 1024
MRAM_BASE = 0x08000000
MRAM_SIZE = 64 * 1024 * 1024
ATOMIC_BASE = 0xF0000000
ATOMIC_BITS = 256
MAX_TASKLETS = 24
DEFAULT_STACK_SIZE = 1024  # bytes per tasklet, the UPMEM driver's STACK_SIZE_DEFAULT

DPU_DIR = Path(__file__).parent
INCLUDE_DIR = DPU_DIR / "include"
RUNTIME_DIR = DPU_DIR / "runtime"
LINKER_SCRIPT = DPU_DIR / "dpu.ld"
