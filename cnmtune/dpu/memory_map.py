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
# The DMA engine decodes only the low 26 bits of an MRAM address, the byte offset in the 64 MiB
# bank: 0x0800a140 and 0xa140 reach the same byte. Sources: the SDK loader maps `.mram` by
# `addr & ~0x08000000` (shared/upmem/FACTS.md §3); uPIMulator's ldma/sdma mask the address register
# with the MRAM width (golang/uPIMulator/src/simulator/dpu/logic/logic.go, ExecuteLdmaDmaRri);
# PrIM's BFS hands 0-based MRAM heap offsets to mram_read and verifies on UPMEM hardware.
MRAM_OFFSET_MASK = MRAM_SIZE - 1
ATOMIC_BASE = 0xF0000000
ATOMIC_BITS = 256
MAX_TASKLETS = 24
DEFAULT_STACK_SIZE = 1024  # bytes per tasklet, the UPMEM driver's STACK_SIZE_DEFAULT

DPU_DIR = Path(__file__).parent
INCLUDE_DIR = DPU_DIR / "include"
RUNTIME_DIR = DPU_DIR / "runtime"
LINKER_SCRIPT = DPU_DIR / "dpu.ld"
