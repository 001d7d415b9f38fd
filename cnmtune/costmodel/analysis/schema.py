"""The feature schema: the ordered names of a feature vector, its version and its hash.

Column families (``<m>`` a mnemonic, ``<f>`` a callee):

- ``op:<m>``     kernel opcode histogram (static count)
- ``wop:<m>``    kernel histogram weighted by loop trip counts: an instruction counts the
                 product of the factors of the loops holding it, a loop's factor its constant
                 trip count, ``loop_weight / k`` when it runs to a runtime bound unrolled k
                 times, else ``loop_weight`` (cnmtune.costmodel.analysis.trips): a static
                 estimate of its dynamic frequency
- ``call:<f>``   calls from kernel code to runtime/softlib routine f (``RUNTIME_ROUTINES``)
- ``wcall:<f>``  the same, loop-weighted
- scalars        sizes, footprints, loops, configuration (``SCALARS``)

There is no ecall family: kernels contain no ecall (llvmlite, which generates kernel code, has
no RISC-V assembler), so every DPU service a kernel uses (``me``, ``mram_read``,
``barrier_wait``, ...) is a call to the runtime function wrapping it and lands in ``call:``.

Real UPMEM DPU ELFs (e_machine 245) have their own schema, ``dpu_schema()``: the same
families over the DPU vocabulary. ``op``/``wop`` list every mnemonic the decoder can emit
(cnmtune.costmodel.analysis.dpu_isa: as llvm-objdump writes them, version ``dpu-7``, or with the
shorthands counted as the operation they encode, ``dpu-7-ops``); ``call``/``wcall`` the
runtime routines plus the SDK's ``__div32``/``__udiv32``; the scalars of the proxy schema
except ``text_instructions``, which equals ``iram_instructions`` on a real DPU (its soft
arithmetic lives in IRAM). Regions come from function names (cnmtune.costmodel.analysis.dpu_program).
A proxy ELF read in this schema is the DPU code it lowers to (cnmtune.costmodel.analysis.lowering):
its ``mram_read``, ``mram_write`` and ``me`` are the instructions the SDK inlines (``ldma``,
``sdma``, ``move``), not calls.

Every family ends with an ``other`` column that collects whatever the schema does not list,
so projecting features onto a schema never drops counts. The hash is the first 16 hex digits
(64 bits) of sha256 over the version, the loop weight and the names, one per line.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from dataclasses import dataclass
from functools import cached_property, lru_cache

from cnmtune.costmodel.analysis.dpu_isa import encoding_table
from cnmtune.costmodel.analysis.rv32_isa import RV32I_MNEMONICS
from cnmtune.errors import SchemaMismatch

#: proxy-6: a loop's trip count read from its exit test (a compare in a block with an edge out of
#: the loop, not a branch inside its body) against a bound the loop may recompute from a register
#: it does not write; inductions also a counter an unrolled loop steps once per copy of its body,
#: and a register shifted by a constant (``d >>= 1``) (cnmtune.costmodel.analysis.trips); stack
#: slots followed over each function's CFG, so a counter the loop's header loads and a latch laid
#: out elsewhere stores is an induction (cnmtune.costmodel.analysis.stack_slots).
#: proxy-5: trip counts also of loops whose counter lives in a stack slot (-O0; stack_slots).
#: proxy-4: the weighted families weighted by trip counts (proxy-3: ``loop_weight ** depth``).
#: proxy-3: no ecall families, runtime services as call columns, iram_instructions = kernel +
#: runtime (the IRAM charge) and text_instructions = all of .text; proxy-2 plus the constant
#: block sizes dma_bytes and alloc_bytes.
SCHEMA_VERSION = "proxy-6"
DEFAULT_LOOP_WEIGHT = 10.0
OTHER = "other"

#: Runtime and compiler_rt routines that get a call column of their own, in a fixed order.
RUNTIME_ROUTINES: tuple[str, ...] = (
    # 32/64-bit integer multiply, divide, shift
    "__mulsi3", "__divsi3", "__udivsi3", "__modsi3", "__umodsi3",
    "__muldi3", "__divdi3", "__udivdi3", "__moddi3", "__umoddi3",
    "__ashldi3", "__lshrdi3", "__ashrdi3", "__clzsi2", "__ctzsi2", "__popcountsi2",
    # single and double precision arithmetic
    "__addsf3", "__subsf3", "__mulsf3", "__divsf3", "__negsf2",
    "__adddf3", "__subdf3", "__muldf3", "__divdf3", "__negdf2",
    # comparisons (zig's compiler_rt defines eq/ne/lt/le as aliases of __cmp*f2)
    "__cmpsf2", "__eqsf2", "__nesf2", "__ltsf2", "__lesf2", "__gtsf2", "__gesf2", "__unordsf2",
    "__cmpdf2", "__eqdf2", "__nedf2", "__ltdf2", "__ledf2", "__gtdf2", "__gedf2", "__unorddf2",
    # conversions
    "__floatsisf", "__floatunsisf", "__floatdisf", "__floatundisf",
    "__fixsfsi", "__fixunssfsi", "__fixsfdi", "__fixunssfdi",
    "__floatsidf", "__floatunsidf", "__floatdidf", "__floatundidf",
    "__fixdfsi", "__fixunsdfsi", "__fixdfdi", "__fixunsdfdi",
    "__extendsfdf2", "__truncdfsf2",
    # DPU runtime, tasklets (defs.h: services.c, stack.c)
    "me", "whoami", "halt", "check_stack",
    # DPU runtime, MRAM transfers (mram.h: services.c; mram_unaligned.h: mram_unaligned.c)
    "mram_read", "mram_write", "mram_read_unaligned", "mram_write_unaligned",
    # DPU runtime, synchronisation (barrier.h, mutex.h, sem.h, handshake.h, atomic_bit.h:
    # services.c)
    "barrier_wait", "mutex_lock", "mutex_trylock", "mutex_unlock", "sem_take", "sem_give",
    "handshake_notify", "handshake_wait_for",
    "__cnm_atomic_bit_acquire", "__cnm_atomic_bit_release", "__cnm_atomic_bit_try_acquire",
    # DPU runtime, performance counter (perfcounter.h: services.c)
    "perfcounter_config", "perfcounter_get",
    # DPU runtime, WRAM allocators (alloc.h, fsb_allocator.h: alloc.c)
    "mem_alloc", "mem_reset", "fsb_alloc", "fsb_get", "fsb_free",
    # C library, string.h (string.c)
    "memcpy", "memmove", "memset", "memcmp", "memchr", "strlen", "strnlen", "strcmp",
    "strncmp", "strcpy", "strncpy", "strcat", "strncat", "strchr", "strrchr", "strstr",
    # C library, stdio.h (stdio.c)
    "printf", "vprintf", "puts", "putchar",
    # C library, stdlib.h and assert.h (stdlib.c)
    "atoi", "atol", "strtol", "strtoul", "abort", "__cnm_assert_fail",
)

#: Scalar columns, each an attribute of Features of the same name (None counts as 0).
#: iram_instructions = kernel + runtime (the IRAM charge); text_instructions adds softlib;
#: dma_bytes / alloc_bytes: the kernel's constant block sizes (cnmtune.costmodel.analysis.buffers).
SCALARS: tuple[str, ...] = (
    "iram_instructions", "iram_kernel_instructions", "iram_runtime_instructions",
    "iram_softlib_instructions", "text_instructions", "kernel_functions", "loops",
    "max_loop_depth", "internal_calls", "indirect_calls", "wram_static_bytes",
    "wram_data_bytes", "wram_host_bytes", "wram_stack_bytes", "mram_static_bytes",
    "nr_tasklets", "stack_size", "dma_bytes", "alloc_bytes",
)


@dataclass(frozen=True)
class FeatureSchema:
    """The ordered column names of a feature vector, with the version they follow."""

    names: tuple[str, ...]
    version: str = SCHEMA_VERSION
    loop_weight: float = DEFAULT_LOOP_WEIGHT

    def __post_init__(self) -> None:
        object.__setattr__(self, "names", tuple(self.names))
        object.__setattr__(self, "loop_weight", float(self.loop_weight))
        duplicates = [n for n, c in Counter(self.names).items() if c > 1]
        if duplicates:
            raise ValueError(f"feature schema {self.version}: duplicate names {duplicates[:5]}")
        families = {n.partition(":")[0] for n in self.names if ":" in n}
        missing = sorted(f"{f}:{OTHER}" for f in families if f"{f}:{OTHER}" not in self.names)
        if missing:
            # Without the family's catch-all column, counts the schema does not list would vanish.
            raise ValueError(f"feature schema {self.version}: missing {', '.join(missing)}")

    def __len__(self) -> int:
        return len(self.names)

    @cached_property
    def hash(self) -> str:
        """First 16 hex digits of sha256(version, loop weight, names), one per line."""
        text = "\n".join((self.version, repr(self.loop_weight), *self.names))
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def to_dict(self) -> dict:
        """JSON-safe form, e.g. for a model's metadata."""
        return {"version": self.version, "loop_weight": self.loop_weight,
                "names": list(self.names), "hash": self.hash}

    @classmethod
    def from_dict(cls, data: dict) -> FeatureSchema:
        """Inverse of ``to_dict`` (the stored hash is not trusted; it is recomputed)."""
        return cls(tuple(data["names"]), data["version"], data["loop_weight"])


@lru_cache(maxsize=8)
def default_schema(loop_weight: float = DEFAULT_LOOP_WEIGHT) -> FeatureSchema:
    """The proxy target's schema: op, wop, call, wcall (each with its ``other``), scalars."""
    names: list[str] = []
    for family, keys in (("op", RV32I_MNEMONICS), ("wop", RV32I_MNEMONICS),
                         ("call", RUNTIME_ROUTINES), ("wcall", RUNTIME_ROUTINES)):
        names.extend(f"{family}:{key}" for key in (*keys, OTHER))
    names.extend(SCALARS)
    return FeatureSchema(tuple(names), SCHEMA_VERSION, loop_weight)


#: Real DPU ELFs: mnemonics as objdump writes them, or shorthands as their operation; dpu-7 is
#: dpu-6 with proxy-6's trip counts (exit tests, several-step and shift inductions, stack slots
#: over the CFG); dpu-6 is dpu-4 with proxy ELFs lowered in the SDK's vocabulary
#: (lowering-sdk-vocabulary-1: move, jz/jnz, the swapped compares, neg, lsr_add; mram_read,
#: mram_write and me() inline as ldma, sdma and move, so a proxy ELF has no call columns for
#: them, as an SDK ELF has none) and
#: without the functions nothing calls (the proxy links with function sections); dpu-5 named a
#: trip-count rule that was tried and not adopted (data/MODEL.md), so its exports' hash is not
#: reused. dpu-4 is dpu-3 with stack-slot inductions (cnmtune.costmodel.analysis.stack_slots);
#: dpu-3 is dpu-2 with the weighted families weighted by trip counts; dpu-2 is dpu-1 plus the
#: constant block sizes dma_bytes and alloc_bytes.
DPU_SCHEMA_VERSION = "dpu-7"
DPU_OPS_SCHEMA_VERSION = "dpu-7-ops"
#: The DPU call vocabulary: the runtime routines plus the SDK's 32-bit division entry points.
DPU_RUNTIME_ROUTINES: tuple[str, ...] = (*RUNTIME_ROUTINES, "__div32", "__udiv32")
DPU_SCALARS: tuple[str, ...] = tuple(s for s in SCALARS if s != "text_instructions")


@lru_cache(maxsize=8)
def dpu_schema(loop_weight: float = DEFAULT_LOOP_WEIGHT, shorthands: bool = True) -> FeatureSchema:
    """The schema of real DPU ELFs: op, wop, call, wcall over the DPU vocabulary, scalars (built
    once per process and arguments: every compile asks for it)."""
    mnemonics = encoding_table().mnemonics(shorthands)
    names: list[str] = []
    for family, keys in (("op", mnemonics), ("wop", mnemonics),
                         ("call", DPU_RUNTIME_ROUTINES), ("wcall", DPU_RUNTIME_ROUTINES)):
        names.extend(f"{family}:{key}" for key in (*keys, OTHER))
    names.extend(DPU_SCALARS)
    version = DPU_SCHEMA_VERSION if shorthands else DPU_OPS_SCHEMA_VERSION
    return FeatureSchema(tuple(names), version, loop_weight)


def model_schema(loop_weight: float = DEFAULT_LOOP_WEIGHT) -> FeatureSchema:
    """The schema the cost model reads (dataset columns, the shipped model's inputs): the DPU
    schema, so one model scores proxy binaries (as the DPU code they lower to) and SDK binaries."""
    return dpu_schema(loop_weight)


def schema_for(version: str, loop_weight: float = DEFAULT_LOOP_WEIGHT) -> FeatureSchema:
    """The built-in schema of a version (``Features.schema_version``): proxy or DPU."""
    if version == SCHEMA_VERSION:
        return default_schema(loop_weight)
    if version in (DPU_SCHEMA_VERSION, DPU_OPS_SCHEMA_VERSION):
        return dpu_schema(loop_weight, shorthands=version == DPU_SCHEMA_VERSION)
    raise SchemaMismatch(f"no built-in feature schema has version {version!r}")
