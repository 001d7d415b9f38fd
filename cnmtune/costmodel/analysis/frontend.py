"""The decoded-program interface and its two ISA front-ends: the rv32 proxy and the real DPU.

A front-end reads one linked ELF and returns a ``DecodedProgram``: one mnemonic per
instruction, the functions and their regions, and the analyses features need (each function's
CFG and loops, every instruction's loop depth inside its function, the call sites, the ecall
services used). What differs between the ISAs is data on the program: which toolchain and
schema its mnemonics follow, and which regions count against IRAM (on the proxy, zig's soft
arithmetic is reported apart from the 4096-instruction IRAM; on a real DPU all of .text is
IRAM). ``cnmtune.costmodel.analysis.features.features_of`` turns any DecodedProgram into
``Features``.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from cnmtune.costmodel.analysis.buffers import BufferSizes, dpu_buffer_sizes, rv32_buffer_sizes
from cnmtune.costmodel.analysis.calls import CallSite, call_sites, ecall_sites
from cnmtune.costmodel.analysis.cfg import FunctionCfg, instruction_depths, loop_depths
from cnmtune.costmodel.analysis.dpu_facts import dpu_loop_facts
from cnmtune.costmodel.analysis.dpu_program import decode_dpu, dpu_call_sites, dpu_cfgs
from cnmtune.costmodel.analysis.elf import EM_DPU, ElfImage, elf_machine, load_dpu_elf, load_elf, read_source
from cnmtune.costmodel.analysis.lowering import LoweredElf, lowered_elf
from cnmtune.costmodel.analysis.program import KERNEL, REGIONS, RUNTIME, SOFTLIB, Function
from cnmtune.costmodel.analysis.rv32_facts import rv32_loop_facts
from cnmtune.costmodel.analysis.rv32_program import decode_rv32
from cnmtune.costmodel.analysis.schema import DPU_OPS_SCHEMA_VERSION, DPU_SCHEMA_VERSION, SCHEMA_VERSION
from cnmtune.costmodel.analysis.trips import program_factors
from cnmtune.dpu.abi import load_services


@dataclass(frozen=True)
class DecodedProgram:
    """A linked program as the feature extractor sees it, whichever ISA front-end decoded it.

    Per instruction: ``mnemonics``, ``function_of`` (index into ``functions``), ``padding``
    (alignment words, not instructions), ``loop_depth`` (inside its own function) and its loop
    weight inside its function as ``loop_scale * loop_weight ** loop_power``
    (cnmtune.costmodel.analysis.trips).
    ``iram_regions`` are the regions charged against the DPU's IRAM; ``buffers`` the constant
    DMA and ``mem_alloc`` sizes by instruction (cnmtune.costmodel.analysis.buffers).
    """

    image: ElfImage
    toolchain: str
    schema_version: str
    mnemonics: list[str]
    functions: tuple[Function, ...]
    function_of: np.ndarray
    padding: np.ndarray
    regions_known: bool
    iram_regions: tuple[str, ...]
    cfgs: tuple[FunctionCfg, ...]
    loop_depth: np.ndarray
    loop_power: np.ndarray
    loop_scale: np.ndarray
    call_sites: tuple[CallSite, ...]
    ecalls: dict[str, int]
    buffers: BufferSizes

    @property
    def region_of(self) -> np.ndarray:
        """The index into REGIONS of every instruction's region."""
        codes = np.array([REGIONS.index(f.region) for f in self.functions], dtype=np.int8)
        return codes[self.function_of]


def rv32_frontend(image: ElfImage, ecall_header: Path | None = None) -> DecodedProgram:
    """Decode a linked rv32 proxy ELF; ``ecall_header`` names its ecall services (default: the
    DPU runtime's cnm_ecall.h)."""
    program = decode_rv32(image)
    depth, cfgs = loop_depths(program)
    power, scale = program_factors(rv32_loop_facts(program, cfgs), program.functions, cfgs)
    services = load_services(ecall_header)
    ecalls = dict(Counter(s.service for s in ecall_sites(program, cfgs, services)))
    sites = call_sites(program, cfgs)
    return DecodedProgram(image=image, toolchain="proxy", schema_version=SCHEMA_VERSION,
                          mnemonics=program.mnemonics, functions=program.functions,
                          function_of=program.function_of, padding=program.padding,
                          regions_known=program.regions_known, iram_regions=(KERNEL, RUNTIME), cfgs=cfgs,
                          loop_depth=depth, loop_power=power, loop_scale=scale, call_sites=tuple(sites),
                          ecalls=ecalls, buffers=rv32_buffer_sizes(program, cfgs, sites))


def dpu_frontend(image: ElfImage, shorthands: bool = True) -> DecodedProgram:
    """Decode a real UPMEM DPU ELF with cnmtune's own decoder (its self-checks run first).

    ``shorthands`` counts ``move``, ``jeq``, ``jump``, ... as llvm-objdump writes them; False
    counts each as the operation it encodes (``or``, ``sub``, ``call``, ...). DPU code has no
    ecalls: system services are instructions (``stop``, ``boot``, ``acquire``, ``ldma``, ...).
    """
    program = decode_dpu(image, shorthands)
    cfgs = dpu_cfgs(program)
    depth = instruction_depths(cfgs, program.functions)
    power, scale = program_factors(dpu_loop_facts(program, cfgs), program.functions, cfgs)
    sites = dpu_call_sites(program)
    return DecodedProgram(image=image, toolchain="upmem",
                          schema_version=DPU_SCHEMA_VERSION if shorthands else DPU_OPS_SCHEMA_VERSION,
                          mnemonics=program.mnemonics, functions=program.functions,
                          function_of=program.function_of, padding=program.padding,
                          regions_known=True, iram_regions=(KERNEL, RUNTIME, SOFTLIB), cfgs=cfgs,
                          loop_depth=depth, loop_power=power, loop_scale=scale, call_sites=tuple(sites),
                          ecalls={}, buffers=dpu_buffer_sizes(program, cfgs, sites))


def lowered_frontend(lowered: LoweredElf) -> DecodedProgram:
    """A proxy ELF (as ``lowered_elf`` gives it) as the DPU code the UPMEM compiler would emit for
    it (the lowering model), in the schema of real DPU ELFs (``DPU_SCHEMA_VERSION``), so one
    model scores proxy and SDK binaries.

    Each rv32i word becomes the DPU instructions it lowers to (none where a neighbour absorbs
    it; ``add+lsl_add`` is two), keeping its function, loop depth and call site. IRAM is kernel
    + runtime as on the proxy: zig's soft arithmetic is not the SDK's, so it stays apart.
    Services are runtime calls, as in the proxy schema, but for those the SDK inlines
    (``mram_read``, ``mram_write``, ``me``: ``ldma``, ``sdma``, ``move`` in the histogram), which
    are no calls; there are no ecall counts.
    """
    program, depth, cfgs, rv32_sites, low = (lowered.program, lowered.depth, lowered.cfgs, lowered.sites,
                                             lowered.lowering)
    power, scale = program_factors(rv32_loop_facts(program, cfgs), program.functions, cfgs)
    counts = low.slots.astype(np.int64)
    start = np.concatenate(([0], np.cumsum(counts)))  # rv32i word -> its first DPU instruction
    mnemonics = low.program_instructions()
    functions = tuple(replace(f, first=int(start[f.first]), count=int(start[f.first + f.count] - start[f.first]))
                      for f in program.functions)
    sites = tuple(replace(site, index=int(start[site.index])) for site in rv32_sites if not low.inlined(site.index))
    return DecodedProgram(image=lowered.image, toolchain="proxy", schema_version=DPU_SCHEMA_VERSION,
                          mnemonics=mnemonics, functions=functions,
                          function_of=np.repeat(program.function_of, counts),
                          padding=np.zeros(len(mnemonics), dtype=bool), regions_known=program.regions_known,
                          iram_regions=(KERNEL, RUNTIME), cfgs=cfgs, loop_depth=np.repeat(depth, counts),
                          loop_power=np.repeat(power, counts), loop_scale=np.repeat(scale, counts),
                          call_sites=sites, ecalls={},
                          buffers=rv32_buffer_sizes(program, cfgs, rv32_sites, lowered.sizes).moved(start))


def decode(source: str | Path | bytes, *, ecall_header: Path | None = None, name: str | None = None,
           shorthands: bool = True, lowered: bool = False) -> DecodedProgram:
    """Decode a linked proxy ELF or a real DPU ELF (a path or its bytes) with its front-end;
    ``lowered`` reads a proxy ELF as the DPU code it lowers to (``lowered_frontend``)."""
    data, label = read_source(source, name)
    if elf_machine(data) == EM_DPU:
        return dpu_frontend(load_dpu_elf(data, label), shorthands)
    if lowered:
        return lowered_frontend(lowered_elf(data, label))
    return rv32_frontend(load_elf(data, label), ecall_header)
