"""Static features of a linked ELF: what the cost model reads instead of running it.

``extract_features(path)`` decodes the ELF with its ISA front-end (cnmtune.costmodel.analysis.
frontend: the rv32 proxy, or a real UPMEM DPU ELF, e_machine 245, with cnmtune's own decoder)
and ``features_of(program)`` computes, the same way for both ISAs, the opcode histograms per
region (kernel, runtime, softlib), the loop-weighted kernel histogram from each function's CFG
and the inlined weights of kernel-to-kernel calls (cnmtune.costmodel.analysis.callgraph), the
calls to routines outside the kernel counted by name (kernels reach every DPU service through a
runtime function: ecalls occur only inside the runtime), and the WRAM/MRAM footprints.
``Features.vector(schema)`` projects the result onto a FeatureSchema: proxy features follow
``default_schema()``, DPU features ``dpu_schema()``.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from dataclasses import asdict, dataclass, fields
from functools import lru_cache
from pathlib import Path

import numpy as np

from cnmtune.costmodel.analysis.callgraph import inlined_weights
from cnmtune.costmodel.analysis.footprint import Footprint, footprint
from cnmtune.costmodel.analysis.frontend import DecodedProgram, decode
from cnmtune.costmodel.analysis.program import KERNEL, REGIONS, RUNTIME, SOFTLIB
from cnmtune.costmodel.analysis.schema import DEFAULT_LOOP_WEIGHT, OTHER, SCALARS, FeatureSchema
from cnmtune.errors import SchemaMismatch

_FAMILY_FIELD = {"op": "kernel_histogram", "wop": "weighted_kernel_histogram",
                 "call": "kernel_calls", "wcall": "weighted_kernel_calls"}
_FOOTPRINT_FIELDS = frozenset(f.name for f in fields(Footprint))


@dataclass(frozen=True)
class FunctionInfo:
    """One function: where it is, its size in instructions, its region and its loops."""

    name: str
    address: int
    instructions: int
    region: str
    loops: int
    max_loop_depth: int


@dataclass(frozen=True)
class Features:
    """Static features of one ELF (treat the dicts as read-only).

    Histograms map a mnemonic (see cnmtune.costmodel.analysis.rv32_isa) to a count. Call dicts map a callee
    outside the kernel region (all callees when ``regions_known`` is False) to its call sites:
    ``kernel_calls`` counts sites in kernel code, ``total_calls`` sites anywhere.
    ``total_ecalls`` maps an ecall service to its sites anywhere (informational, not in the
    schema: ecalls occur only inside runtime functions, so a kernel's use of a service is the
    kernel_calls count of the runtime function wrapping it). ``weighted_*`` count each kernel
    instruction or site ``loop_weight ** depth``, with the depth of kernel call sites leading
    to its function added (see cnmtune.costmodel.analysis.callgraph). ``internal_calls``/
    ``indirect_calls`` are kernel sites calling kernel functions / through an unknown register.

    Instruction counts exclude alignment padding (zero words outside functions).
    ``iram_instructions`` is what the toolchain charges against the DPU's 4096-instruction
    IRAM: kernel + runtime, soft arithmetic excluded (cnmtune.runtime.toolchain.layout).
    ``text_instructions`` is all of .text: kernel + runtime + softlib. Without region symbols
    (a foreign ELF) everything is kernel and the two are equal.

    ``loops`` counts the natural loops of kernel functions; ``max_loop_depth`` is the deepest
    kernel instruction, caller depth included. ``functions`` list every function's own loops.
    ``dma_bytes`` is the largest constant DMA size in kernel code and ``alloc_bytes`` the sum of
    its constant ``mem_alloc`` sizes (cnmtune.costmodel.analysis.buffers): the block-size
    parameters a histogram does not see.
    ``footprint`` holds the static WRAM/MRAM use and the tasklet configuration; ``to_dict``
    writes its fields in place, as scalars beside the others.
    """

    name: str
    elf_sha256: str
    machine: str
    toolchain: str
    schema_version: str
    regions_known: bool
    loop_weight: float
    histogram: dict[str, int]
    kernel_histogram: dict[str, int]
    runtime_histogram: dict[str, int]
    softlib_histogram: dict[str, int]
    weighted_kernel_histogram: dict[str, float]
    kernel_calls: dict[str, int]
    total_calls: dict[str, int]
    weighted_kernel_calls: dict[str, float]
    total_ecalls: dict[str, int]
    internal_calls: int
    indirect_calls: int
    functions: tuple[FunctionInfo, ...]
    iram_instructions: int
    text_instructions: int
    iram_kernel_instructions: int
    iram_runtime_instructions: int
    iram_softlib_instructions: int
    kernel_functions: int
    loops: int
    max_loop_depth: int
    dma_bytes: int
    alloc_bytes: int
    footprint: Footprint

    def to_dict(self) -> dict:
        """JSON-safe form (plain dicts, lists, numbers, strings, None), the footprint flattened."""
        out: dict = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name == "footprint":
                out.update(asdict(value))
            elif f.name == "functions":
                out[f.name] = [vars(fn).copy() for fn in value]
            else:
                out[f.name] = dict(value) if isinstance(value, dict) else value
        return out

    @classmethod
    def from_dict(cls, data: dict) -> Features:
        """Inverse of ``to_dict``."""
        values = {k: v for k, v in data.items() if k not in _FOOTPRINT_FIELDS}
        values["footprint"] = Footprint(**{k: data[k] for k in _FOOTPRINT_FIELDS})
        values["functions"] = tuple(FunctionInfo(**fn) for fn in data["functions"])
        return cls(**values)

    def scalar(self, name: str) -> int | float | None:
        """The scalar feature ``name`` (one of schema.SCALARS), wherever it is kept."""
        return getattr(self.footprint if name in _FOOTPRINT_FIELDS else self, name)

    def vector(self, schema: FeatureSchema) -> np.ndarray:
        """The features as a float32 vector ordered like ``schema.names``."""
        if (schema.version.startswith("dpu") or self.schema_version.startswith("dpu")) \
                and schema.version != self.schema_version:
            raise SchemaMismatch(f"{self.name}: {self.schema_version} features do not fit "
                                 f"schema {schema.version} ({schema.hash})")
        if self.loop_weight != schema.loop_weight and any(
                n.startswith(("wop:", "wcall:")) for n in schema.names):
            raise SchemaMismatch(
                f"{self.name}: features weighted with loop weight {self.loop_weight}, schema "
                f"{schema.version} ({schema.hash}) expects {schema.loop_weight}")
        families, scalars, unknown = _columns(schema)
        if unknown is not None:
            raise SchemaMismatch(f"{self.name}: schema {schema.version} ({schema.hash}) "
                                 f"asks for unknown feature '{unknown}'")
        out = np.zeros(len(schema), dtype=np.float32)
        for family, (listed, other) in families.items():
            rest = 0  # what the schema does not list: the family's catch-all column
            for key, value in getattr(self, _FAMILY_FIELD[family]).items():
                if (j := listed.get(key)) is None:
                    rest += value
                else:
                    out[j] = value
            out[other] = rest
        for name, j in scalars:
            out[j] = self.scalar(name) or 0
        return out


@lru_cache(maxsize=8)
def _columns(schema: FeatureSchema) -> tuple[dict[str, tuple[dict[str, int], int]], tuple[tuple[str, int], ...],
                                            str | None]:
    """Where ``Features.vector`` puts each feature of `schema` (once per schema, not per vector):
    per family the column of each listed key and of its catch-all, the scalar columns, and the
    first name no feature has (None: every name is known)."""
    families: dict[str, tuple[dict[str, int], int]] = {}
    scalars, unknown = [], None
    for j, name in enumerate(schema.names):
        family, sep, key = name.partition(":")
        if sep and family in _FAMILY_FIELD:
            listed, other = families.get(family, ({}, -1))
            if key == OTHER:
                other = j
            else:
                listed[key] = j
            families[family] = listed, other
        elif not sep and name in SCALARS:
            scalars.append((name, j))
        elif unknown is None:
            unknown = name
    return families, tuple(scalars), unknown


def extract_features(source: str | Path | bytes, *, loop_weight: float = DEFAULT_LOOP_WEIGHT,
                     ecall_header: Path | None = None, name: str | None = None,
                     shorthands: bool = True, lowered: bool = False) -> Features:
    """Read the static features of a linked proxy ELF or a real DPU ELF (a path or its bytes).

    ``ecall_header`` is the service table naming ``total_ecalls`` of a proxy ELF (default: the
    DPU runtime's cnm_ecall.h). ``shorthands`` (DPU ELFs only) counts ``move``, ``jeq``,
    ``jump``, ... as objdump writes them; False counts the operation each encodes. ``lowered``
    (proxy ELFs) gives the features of the DPU code the ELF lowers to, in the DPU schema.
    """
    program = decode(source, ecall_header=ecall_header, name=name, shorthands=shorthands, lowered=lowered)
    return features_of(program, loop_weight=loop_weight)


def model_features(source: str | Path | bytes, *, loop_weight: float = DEFAULT_LOOP_WEIGHT,
                   name: str | None = None) -> Features:
    """The features the cost model reads, in ``model_schema()``: a proxy ELF's lowered DPU code,
    a real DPU ELF's own instructions."""
    return extract_features(source, loop_weight=loop_weight, name=name, lowered=True)


def features_of(program: DecodedProgram, *, loop_weight: float = DEFAULT_LOOP_WEIGHT) -> Features:
    """The features of a decoded program, computed the same way for every ISA front-end."""
    weights, depth = inlined_weights(program, list(program.call_sites), loop_weight)
    live = ~program.padding
    region = program.region_of
    masks = {r: live & (region == k) for k, r in enumerate(REGIONS)}
    kernel = masks[KERNEL]
    histogram = _histogrammer(program.mnemonics)

    def internal(site) -> bool:
        return program.regions_known and site.callee_function is not None \
            and program.functions[site.callee_function].region == KERNEL

    kernel_calls, total_calls, weighted_calls = Counter(), Counter(), {}
    for site in program.call_sites:
        if site.callee is None or internal(site):
            continue
        total_calls[site.callee] += 1
        if kernel[site.index]:
            kernel_calls[site.callee] += 1
            weighted_calls[site.callee] = weighted_calls.get(site.callee, 0.0) + float(weights[site.index])
    infos = tuple(FunctionInfo(f.name, f.address, int(live[f.first:f.first + f.count].sum()),
                               f.region, c.loops, c.max_depth)
                  for f, c in zip(program.functions, program.cfgs))
    image = program.image
    return Features(
        name=image.name, elf_sha256=hashlib.sha256(image.data).hexdigest(), machine=image.machine,
        toolchain=program.toolchain, schema_version=program.schema_version,
        regions_known=program.regions_known, loop_weight=float(loop_weight),
        histogram=histogram(live), kernel_histogram=histogram(kernel),
        runtime_histogram=histogram(masks[RUNTIME]), softlib_histogram=histogram(masks[SOFTLIB]),
        weighted_kernel_histogram=histogram(kernel, weights),
        kernel_calls=dict(kernel_calls), total_calls=dict(total_calls), weighted_kernel_calls=weighted_calls,
        total_ecalls=dict(program.ecalls),
        internal_calls=sum(1 for s in program.call_sites if internal(s) and kernel[s.index]),
        indirect_calls=sum(1 for s in program.call_sites if s.callee is None and kernel[s.index]),
        functions=infos,
        iram_instructions=int(sum(masks[r] for r in program.iram_regions).sum()),
        text_instructions=int(live.sum()),
        iram_kernel_instructions=int(kernel.sum()),
        iram_runtime_instructions=int(masks[RUNTIME].sum()),
        iram_softlib_instructions=int(masks[SOFTLIB].sum()),
        kernel_functions=sum(1 for i in infos if i.region == KERNEL),
        loops=sum(i.loops for i in infos if i.region == KERNEL),
        max_loop_depth=int(depth[kernel].max(initial=0)),
        dma_bytes=max((v for i, v in program.buffers.dma.items() if kernel[i]), default=0),
        alloc_bytes=sum(v for i, v in program.buffers.alloc.items() if kernel[i]),
        footprint=footprint(image))


def _histogrammer(mnemonics: list[str]):
    """histogram(mask, weights=None) -> {mnemonic: count (or summed weight)} over ``mnemonics``."""
    index: dict[str, int] = {}
    ids = np.fromiter((index.setdefault(m, len(index)) for m in mnemonics), dtype=np.intp,
                      count=len(mnemonics))
    vocabulary = list(index)

    def histogram(mask: np.ndarray, w: np.ndarray | None = None) -> dict:
        counts = np.bincount(ids[mask], weights=None if w is None else w[mask], minlength=len(vocabulary))
        cast = int if w is None else float
        return {vocabulary[k]: cast(c) for k, c in enumerate(counts.tolist()) if c}

    return histogram
