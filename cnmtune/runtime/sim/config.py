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
LINK_FIELDS = frozenset({"host_to_dpu_Bps", "dpu_to_host_Bps", "chip_to_dpu_Bps", "chip_to_host_Bps",
                         "rank_to_dpu_Bps", "rank_to_host_Bps", "broadcast_Bps", "transfer_latency_s",
                         "transfer_per_dpu_s", "dpus_per_chip", "dpus_per_rank"})
# Version of the rules that turn a transfer log into seconds (SimDevice.transfer_seconds): part of
# DpuConfig.link_hash, so a change of the rules is a change of the link model
LINK_RULES = "bandwidth-by-dpus-1"


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
    host_to_dpu_Bps: float = 0.33e9
    dpu_to_host_Bps: float = 0.12e9
    chip_to_dpu_Bps: float = 6.68e9 / 8  # a chip's share of the rank (no published figure: fitted)
    chip_to_host_Bps: float = 4.74e9 / 8
    rank_to_dpu_Bps: float = 6.68e9
    rank_to_host_Bps: float = 4.74e9
    broadcast_Bps: float = 16.88e9
    transfer_latency_s: float = 20e-6
    transfer_per_dpu_s: float = 0.0  # host cost per DPU addressed by one transfer call (fitted)
    dpus_per_chip: int = 8
    dpus_per_rank: int = 64
    routine_costs: tuple[RoutineCost, ...] = field(default=DEFAULT_ROUTINE_COSTS)

    def __post_init__(self) -> None:
        if self.revolver_period < 1 or self.frequency_hz <= 0 or self.dma_beta < 0 \
                or not 0 <= self.wram_dma_share < 1:
            raise ValueError("DpuConfig: frequency > 0, revolver_period >= 1, dma_beta >= 0, "
                             "0 <= wram_dma_share < 1")

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
