"""DpuConfig: every timing constant of the simulated DPU and its host link, in one frozen value.

Sources for the defaults (shared/upmem/FACTS.md): 350 MHz, revolver period 11, 14 pipeline
stages (UPMEM SDK, uPIMulator defaults); MRAM DMA latency alpha + beta * bytes with alpha ~77
cycles (read) / ~61 (write) and beta 0.5 cycle/B (PrIM section 3). Routine costs: the DPU has
no 32-bit multiply or divide and no FPU, so __mulsi3 runs one mul_step per significant bit of
the smaller operand and the divisions one div_step per quotient bit (UPMEM SDK mul32.c,
div32.c); the 64-bit and floating-point costs are the instructions per element implied by
PrIM's arithmetic-throughput figures (the ADD ones derived from its raw profiles, the others
UNCONFIRMED). Routine costs are not fitted.

`DpuConfig()` holds these literature values; `DpuConfig.calibrated()` replaces the constants
fitted on real UPMEM times (calibrated.py FIELDS, written by benchmarks/calibrate_sim.py) and is
what the simulator uses unless told otherwise.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field, fields, replace

from cnmtune.dpu.slots import slot_model_identity
from cnmtune.errors import CnmtuneError
from cnmtune.runtime.sim.routines import RoutineKind


@dataclass(frozen=True)
class RoutineCost:
    """Issue slots a DPU spends in one call of a runtime routine: base + per_param * param.

    `param` is measured by the interpreter at the routine's entry according to `kind`
    (significant bits of the smaller multiplicand, quotient bits of a division, or none).
    """

    name: str
    kind: RoutineKind
    base: float
    per_param: float = 0.0


def _c(name: str, base: float, kind: RoutineKind = RoutineKind.NONE, per_param: float = 0.0) -> RoutineCost:
    return RoutineCost(name, kind, base, per_param)


def _group(names: tuple[str, ...], base: float, kind: RoutineKind = RoutineKind.NONE,
           per_param: float = 0.0) -> tuple[RoutineCost, ...]:
    return tuple(_c(name, base, kind, per_param) for name in names)


DEFAULT_ROUTINE_COSTS: tuple[RoutineCost, ...] = (
    # 32-bit integer (DPU_CODEGEN.md §3, the SDK's syslib): __mulsi3 is N+6 instructions, N =
    # max(1, bit length of the smaller unsigned operand), the caller's call making N+7 (C/D);
    # __udiv32 about 6 + one div_step per quotient bit (C listing, D count), __div32 about 8 more
    # for the signs (C: 7-9)
    _c("__mulsi3", 6, RoutineKind.MUL32, 1.0),
    *_group(("__udivsi3", "__umodsi3"), 6, RoutineKind.UDIV32, 1.0),
    *_group(("__divsi3", "__modsi3"), 14, RoutineKind.SDIV32, 1.0),
    # 64-bit integer: byte partial products, "in the magnitude of 150 instructions" (mul64.c
    # comment, C) / a 64-step division ladder
    _c("__muldi3", 150),
    *_group(("__udivdi3", "__umoddi3"), 40, RoutineKind.UDIV64, 3.0),
    *_group(("__divdi3", "__moddi3"), 48, RoutineKind.SDIV64, 3.0),
    *_group(("__ashldi3", "__lshrdi3", "__ashrdi3"), 8),
    # soft float: ADD from PrIM's raw profiles (FLOAT 71, DOUBLE 105 DPU instructions per element,
    # DPU_CODEGEN.md §4, D) less the ~7 / ~8.5 of the loop around the call; MUL and DIV from the
    # PrIM paper's MOPS (FLOAT MUL ~1.91, DIV ~0.34; DOUBLE MUL ~0.53, DIV ~0.16; UNCONFIRMED)
    *_group(("__addsf3", "__subsf3"), 64),
    _c("__mulsf3", 178),
    _c("__divsf3", 1020),
    *_group(("__cmpsf2", "__eqsf2", "__nesf2", "__ltsf2", "__lesf2", "__gtsf2", "__gesf2",
             "__unordsf2"), 20),
    *_group(("__floatsisf", "__floatunsisf", "__fixsfsi", "__fixunssfsi"), 30),
    *_group(("__floatdisf", "__floatundisf", "__fixsfdi", "__fixunssfdi"), 60),
    *_group(("__adddf3", "__subdf3"), 96),
    _c("__muldf3", 650),
    _c("__divdf3", 2180),
    *_group(("__cmpdf2", "__eqdf2", "__nedf2", "__ltdf2", "__ledf2", "__gtdf2", "__gedf2",
             "__unorddf2"), 30),
    *_group(("__floatsidf", "__floatunsidf", "__fixdfsi", "__fixunsdfsi", "__extendsfdf2",
             "__truncdfsf2"), 40),
    *_group(("__floatdidf", "__floatundidf", "__fixdfdi", "__fixunsdfdi"), 70),
    # runtime services: one instruction or a short inline sequence on a DPU; the kernel's
    # call instruction is already counted, so these charge the rest of the DPU sequence. The
    # lowering makes a call to me, mram_read or mram_write the whole inline sequence the SDK
    # emits (move d, id; ldma/sdma and the length's arithmetic): nothing is left to charge.
    *_group(("me", "whoami", "mram_read", "mram_write"), 0),
    _c("halt", 1),
    *_group(("__cnm_atomic_bit_acquire", "__cnm_atomic_bit_release", "__cnm_atomic_bit_try_acquire",
             "mutex_lock", "mutex_unlock", "mutex_trylock"), 2),
    *_group(("barrier_wait", "sem_take", "sem_give"), 15),
    *_group(("handshake_notify", "handshake_wait_for"), 10),
    *_group(("perfcounter_get", "perfcounter_config"), 4),
)


# The host link's constants: they price host transfers (runtime/sim/device.py) and nothing a DPU
# executes, so a run's kernel time does not depend on them (DpuConfig.hash leaves them out)
LINK_FIELDS = frozenset({"xfer_call_s", "xfer_mram_read_s", "xfer_mram_per_dpu_s", "xfer_wram_s_per_B",
                         "xfer_to_s_per_B", "xfer_to_rank_exponent", "xfer_from_row_s_per_B",
                         "xfer_from_shared_s_per_B", "xfer_host_cached_fraction", "xfer_host_cache_bytes",
                         "dpus_per_rank"})
# Version of the rules that turn a transfer log into seconds (device.call_seconds): part of
# DpuConfig.link_hash, so a change of the rules is a change of the link model
LINK_RULES = "sdk-calls-2"


@dataclass(frozen=True)
class DpuConfig:
    """Timing model of one DPU and of the host link; re-time a trace by changing this value."""

    frequency_hz: float = 350e6
    revolver_period: int = 11
    pipeline_depth: int = 14
    dma_read_alpha: float = 77.0
    dma_write_alpha: float = 61.0
    dma_beta: float = 0.5
    dma_engine_overhead: float = 0.0
    # share of the pipeline's issue slots the DMA engine takes while it transfers: its WRAM side
    # moves 1 / dma_beta = 2 B per cycle through the 8-byte WRAM port the pipeline's loads and
    # stores use, one port cycle in 4 (derived, U: no source measures the contention itself)
    wram_dma_share: float = 0.25
    mram_direct_access_bytes: int = 8
    launch_overhead_s: float = 20e-6
    # Host transfers (device.transfer_seconds; issue 41). Literature values: the fixed and WRAM
    # costs are the calibration machine's fit (calibrated.py, F = fitted), the byte costs the ones
    # that reproduce PrIM's published CPU-DPU bandwidths (D = derived from PrIM Fig. 10's 0.33 /
    # 0.12 GB/s at 1 DPU and 6.68 / 4.74 / 16.88 GB/s at 64, values UNCONFIRMED: FACTS.md 5.4)
    xfer_call_s: float = 46.5e-6  # F: every host call (set walk, transfer matrix, thread hand-off)
    xfer_mram_read_s: float = 77.9e-6  # F: extra per MRAM read call (the SDK flushes the lines first)
    xfer_mram_per_dpu_s: float = 0.16e-6  # F: per DPU of an MRAM call (MRAM mux taken per DPU pair)
    xfer_wram_s_per_B: float = 69e-9  # F: per byte per DPU to or from WRAM (control interface, DPU by DPU)
    # D: per byte per DPU written to MRAM, x (DPUs of the rank) ** xfer_to_rank_exponent x host share
    # (host memory, transposition, channel): 3.03 ns/B is 0.33 GB/s on 1 DPU, and 64 ** 0.277 x
    # 3.03 = 9.59 ns/B per DPU is 6.68 GB/s on 64 (a power of 1 would saturate the rank's bandwidth)
    xfer_to_s_per_B: float = 3.03e-9
    xfer_to_rank_exponent: float = 0.277
    xfer_from_row_s_per_B: float = 8.25e-9  # D: per byte per DPU read from MRAM (load-latency bound)
    xfer_from_shared_s_per_B: float = 0.082e-9  # D: x DPUs of the rank, reading
    # D: host share left for a buffer read from the host cache: 64 / 16.88 GB/s = 3.79 ns/B per DPU
    # for PrIM's broadcast to 64 DPUs, 0.395 x 9.59
    xfer_host_cached_fraction: float = 0.395
    xfer_host_cache_bytes: float = 6.2e6  # F: host footprint where per-DPU buffers leave the cache
    dpus_per_rank: int = 64
    routine_costs: tuple[RoutineCost, ...] = field(default=DEFAULT_ROUTINE_COSTS)

    def __post_init__(self) -> None:
        if self.revolver_period < 1 or self.frequency_hz <= 0 or self.dma_beta < 0 \
                or not 0 <= self.wram_dma_share < 1 or not 0 <= self.xfer_host_cached_fraction <= 1 \
                or self.xfer_host_cache_bytes <= 0 or self.xfer_to_rank_exponent <= 0 or self.dpus_per_rank < 1:
            raise ValueError("DpuConfig: frequency > 0, revolver_period >= 1, dma_beta >= 0, "
                             "0 <= wram_dma_share < 1, 0 <= xfer_host_cached_fraction <= 1, "
                             "xfer_host_cache_bytes > 0, xfer_to_rank_exponent > 0, dpus_per_rank >= 1")

    @property
    def hash(self) -> str:
        """Stable short id of what a kernel's cycles and seconds depend on: every constant but the
        host link's (LINK_FIELDS), and the DPU slot model that prices instructions (16 hex digits
        of SHA-256). Stored runs are keyed by it, so refitting the link model keeps them."""
        return _digest(self, (f.name for f in fields(self) if f.name not in LINK_FIELDS),
                       f"slots={slot_model_identity()}")

    @property
    def link_hash(self) -> str:
        """Stable short id of what a run's host transfer time depends on: the host link's
        constants and the version of the rules that price transfers (LINK_RULES)."""
        return _digest(self, sorted(LINK_FIELDS), f"rules={LINK_RULES}")

    @property
    def full_hash(self) -> str:
        """Stable short id of every constant (kernel and link): names a design point."""
        return hashlib.sha256(f"{self.hash};{self.link_hash}".encode()).hexdigest()[:16]

    def routine_cost(self, name: str) -> RoutineCost | None:
        """The cost entry of a routine charged by table, or None if it runs natively."""
        return self._by_name.get(name)

    @property
    def _by_name(self) -> dict[str, RoutineCost]:
        cache = self.__dict__.get("_routine_index")
        if cache is None:
            cache = {cost.name: cost for cost in self.routine_costs}
            object.__setattr__(self, "_routine_index", cache)
        return cache

    @classmethod
    def calibrated(cls) -> "DpuConfig":
        """The literature values with the constants fitted by benchmarks/calibrate_sim.py applied."""
        from cnmtune.runtime.sim import calibrated

        return cls(**calibrated.FIELDS)

    @classmethod
    def named(cls, name: str) -> "DpuConfig":
        """A named configuration: 'calibrated' (the default everywhere) or 'literature'."""
        try:
            return NAMED_CONFIGS[name](cls)
        except KeyError:
            raise CnmtuneError(f"unknown simulator config {name!r}; valid: {', '.join(NAMED_CONFIGS)}") from None

    def with_(self, **changes) -> "DpuConfig":
        """A copy with some constants changed (sweeps, calibration)."""
        return replace(self, **changes)


def _digest(config: DpuConfig, names, suffix: str) -> str:
    text = ";".join(f"{name}={getattr(config, name)!r}" for name in names)
    return hashlib.sha256(f"{text};{suffix}".encode()).hexdigest()[:16]


# The configurations users name (--sim-config): the calibrated constants, or the literature values alone.
NAMED_CONFIGS: dict[str, Callable[[type[DpuConfig]], DpuConfig]] = {
    "calibrated": lambda cls: cls.calibrated(),
    "literature": lambda cls: cls(),
}
