"""Static features of a real UPMEM DPU ELF, with the same meaning as the proxy's.

``extract_dpu_features`` decodes .text with cnmtune's own DPU decoder (no SDK needed; the
self-checks of cnmtune.costmodel.analysis.dpu_program run first), then fills ``Features`` like the proxy
path does: histograms per region (kernel, runtime, softlib by function name), loop-weighted
kernel histogram from each function's CFG (jumps and conditional branches inside it) and the
inlined weights of kernel-to-kernel calls, direct calls counted by callee name, footprints
from the SDK linker script's symbols and sections. On a real DPU all of .text is IRAM, soft
arithmetic included, so ``iram_instructions`` equals ``text_instructions``. DPU code has no
ecalls (system services are instructions: ``stop``, ``boot``, ``acquire``, ``ldma``, ...), so
``total_ecalls`` is empty. Project with ``dpu_schema()`` (cnmtune.costmodel.analysis.schema).
"""

from __future__ import annotations

import hashlib
from collections import Counter
from pathlib import Path

import numpy as np

from cnmtune.costmodel.analysis.callgraph import inlined_weights
from cnmtune.costmodel.analysis.rv32_program import KERNEL, REGIONS, RUNTIME, SOFTLIB
from cnmtune.costmodel.analysis.dpu_program import decode_dpu, dpu_call_sites, dpu_cfgs
from cnmtune.costmodel.analysis.elf import load_dpu_elf
from cnmtune.costmodel.analysis.features import Features, FunctionInfo
from cnmtune.costmodel.analysis.footprint import footprint
from cnmtune.costmodel.analysis.schema import (DEFAULT_LOOP_WEIGHT, DPU_OPS_SCHEMA_VERSION,
                                      DPU_SCHEMA_VERSION)


def extract_dpu_features(source: str | Path | bytes, *,
                         loop_weight: float = DEFAULT_LOOP_WEIGHT, shorthands: bool = True,
                         name: str | None = None) -> Features:
    """Read the static features of a real DPU ELF (a path or its bytes).

    ``shorthands`` counts ``move``, ``jeq``, ``jump``, ... as llvm-objdump writes them; False
    counts each as the operation it encodes (``or``, ``sub``, ``call``, ...).
    """
    image = load_dpu_elf(source, name)
    program = decode_dpu(image, shorthands)
    cfgs = dpu_cfgs(program)
    local_depth = np.concatenate([c.instruction_depths(f.count)
                                  for c, f in zip(cfgs, program.functions)])
    sites = dpu_call_sites(program)
    weights, depth = inlined_weights(program, sites, local_depth, loop_weight)
    region = np.array([REGIONS.index(f.region) for f in program.functions],
                      dtype=np.int8)[program.function_of]
    live = ~program.padding
    masks = {r: live & (region == k) for k, r in enumerate(REGIONS)}
    kernel = masks[KERNEL]
    index: dict[str, int] = {}
    ids = np.fromiter((index.setdefault(m, len(index)) for m in program.mnemonics),
                      dtype=np.intp, count=len(program.mnemonics))
    vocabulary = list(index)

    def histogram(mask: np.ndarray, w: np.ndarray | None = None) -> dict:
        counts = np.bincount(ids[mask], weights=None if w is None else w[mask],
                             minlength=len(vocabulary))
        cast = int if w is None else float
        return {vocabulary[k]: cast(c) for k, c in enumerate(counts.tolist()) if c}

    def internal(site) -> bool:
        return site.callee_function is not None \
            and program.functions[site.callee_function].region == KERNEL

    kernel_calls, total_calls, weighted_calls = Counter(), Counter(), {}
    for site in sites:
        if site.callee is None or internal(site):
            continue
        total_calls[site.callee] += 1
        if kernel[site.index]:
            kernel_calls[site.callee] += 1
            weighted_calls[site.callee] = weighted_calls.get(site.callee, 0.0) \
                + float(weights[site.index])
    infos = tuple(FunctionInfo(f.name, f.address, int(live[f.first:f.first + f.count].sum()),
                               f.region, c.loops, c.max_depth)
                  for f, c in zip(program.functions, cfgs))
    mem = footprint(image)
    text = int(live.sum())
    return Features(
        name=image.name, elf_sha256=hashlib.sha256(image.data).hexdigest(), machine="dpu",
        toolchain="upmem",
        schema_version=DPU_SCHEMA_VERSION if shorthands else DPU_OPS_SCHEMA_VERSION,
        regions_known=True, loop_weight=float(loop_weight),
        histogram=histogram(live), kernel_histogram=histogram(kernel),
        runtime_histogram=histogram(masks[RUNTIME]), softlib_histogram=histogram(masks[SOFTLIB]),
        weighted_kernel_histogram=histogram(kernel, weights),
        kernel_calls=dict(kernel_calls), total_calls=dict(total_calls),
        weighted_kernel_calls=weighted_calls, total_ecalls={},
        internal_calls=sum(1 for s in sites if internal(s) and kernel[s.index]),
        indirect_calls=sum(1 for s in sites if s.callee is None and kernel[s.index]),
        functions=infos, iram_instructions=text, text_instructions=text,
        iram_kernel_instructions=int(kernel.sum()),
        iram_runtime_instructions=int(masks[RUNTIME].sum()),
        iram_softlib_instructions=int(masks[SOFTLIB].sum()),
        kernel_functions=sum(1 for i in infos if i.region == KERNEL),
        loops=sum(i.loops for i in infos if i.region == KERNEL),
        max_loop_depth=int(depth[kernel].max(initial=0)),
        wram_static_bytes=mem.wram_static_bytes, wram_data_bytes=mem.wram_data_bytes,
        wram_host_bytes=mem.wram_host_bytes, wram_stack_bytes=mem.wram_stack_bytes,
        mram_static_bytes=mem.mram_static_bytes, nr_tasklets=mem.nr_tasklets,
        stack_size=mem.stack_size)
