"""Fixed (non-trainable) input layers of the L2P network: log of counts and an analytical prior.

Both are functions of the model's input columns only, so they live inside the network and the
exported ONNX graph: the input contract (schema features + configuration columns) stays the same.

``LogCounts``: ``log1p`` of every count column (opcode, call and scalar features), the
configuration columns (already log2) pass through. Loop-weighted counts span 0 .. 10^6 and
more; in log space a doubled loop body is a constant shift, which a standardised MLP input
can use, where a raw count is dominated by its largest values.

``AnalyticalPrior``: a static cycle estimate in the style of a roofline, from the loop-weighted
histogram (``wop:*``, ``wcall:*``) and the configuration, as three log-domain columns:

- compute: issue slots S = sum of loop-weighted instructions (one slot each) + loop-weighted
  runtime-routine calls x their DPU cost in slots; each of T tasklets runs 1/T of the work of
  a DPU that holds 1/D of the problem, and one tasklet issues at most every max(T, 11) cycles
  (the revolver pipeline): cycles = S * N / (D * T) * max(T, 11).
- DMA: loop-weighted DMA transfers x (alpha + beta * B) cycles with an assumed
  B = 256-byte transfer, serialised on the DPU's one DMA engine: cycles = that * N / D. A
  transfer is an ``ldma``/``sdma`` in the DPU schema (an SDK ELF's, and a lowered proxy ELF's
  inline mram_read/mram_write) or a call of mram_read/mram_write in the proxy schema. With
  ``block_size`` (a model option, off for models trained before it) B is the kernel's constant
  DMA size (the ``dma_bytes`` feature; 256 where none is constant) and the transfers count
  256 / B times: a streaming loop moving the same bytes in B-byte blocks runs 256 / B times as
  many iterations as with 256-byte ones, so the per-byte cost is alpha / B + beta.
- total: log(compute + DMA).

S, the DMA cost and the problem size N are static proxies (the loop weight stands in for trip
counts, B for the real transfer size): the network learns the correction. The costs below are
the literature starting values of the DPU timing model (shared/upmem/FACTS.md, UPMEM SDK
mul32.c/div32.c, PrIM), copied here because the cost model does not import the simulator.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
from torch import nn

from cnmtune.costmodel.learn.samples import CONFIG_COLUMNS

#: The DPU revolver pipeline: one tasklet issues at most every this many cycles.
REVOLVER_PERIOD = 11
#: MRAM DMA cost alpha + beta * bytes, cycles (read, write) and cycles per byte.
DMA_READ_ALPHA, DMA_WRITE_ALPHA, DMA_BETA = 77.0, 61.0, 0.5
#: Bytes assumed per mram_read / mram_write call (static code does not know the size).
DMA_ASSUMED_BYTES = 256
#: The input column holding the kernel's constant DMA size in bytes (0: none is constant).
DMA_BYTES_COLUMN = "dma_bytes"
#: Names of the prior's output columns (the extra inputs of the network's first layer).
PRIOR_COLUMNS: tuple[str, ...] = ("prior:log_compute", "prior:log_dma", "prior:log_total")

_MUL32, _DIV32 = 4 + 16, 6 + 32           # base + one step per (average 16) bit / quotient bit
_SDIV32 = 10 + 32
#: The columns that count DMA transfers from MRAM (to MRAM): the DPU's instructions, the proxy's
#: calls (the _unaligned forms are calls in both).
_DMA_READS = frozenset({"wop:ldma", "wcall:mram_read", "wcall:mram_read_unaligned"})
_DMA_WRITES = frozenset({"wop:sdma", "wcall:mram_write", "wcall:mram_write_unaligned"})
#: Issue slots of one call of a runtime routine beyond the call instruction itself (none for
#: mram_read, mram_write and me: the DPU's instruction is the call's; DpuConfig's routine costs).
ROUTINE_SLOTS: dict[str, float] = {
    "__mulsi3": _MUL32, "__udivsi3": _DIV32, "__umodsi3": _DIV32, "__divsi3": _SDIV32, "__modsi3": _SDIV32,
    "__muldi3": 125, "__udivdi3": 40 + 3 * 64, "__umoddi3": 40 + 3 * 64, "__divdi3": 48 + 3 * 64,
    "__moddi3": 48 + 3 * 64, "__ashldi3": 8, "__lshrdi3": 8, "__ashrdi3": 8,
    "__addsf3": 65, "__subsf3": 65, "__mulsf3": 178, "__divsf3": 1020,
    **dict.fromkeys(("__cmpsf2", "__eqsf2", "__nesf2", "__ltsf2", "__lesf2", "__gtsf2", "__gesf2",
                     "__unordsf2"), 20),
    **dict.fromkeys(("__floatsisf", "__floatunsisf", "__fixsfsi", "__fixunssfsi"), 30),
    **dict.fromkeys(("__floatdisf", "__floatundisf", "__fixsfdi", "__fixunssfdi"), 60),
    "__adddf3": 100, "__subdf3": 100, "__muldf3": 650, "__divdf3": 2180,
    **dict.fromkeys(("__cmpdf2", "__eqdf2", "__nedf2", "__ltdf2", "__ledf2", "__gtdf2", "__gedf2",
                     "__unorddf2"), 30),
    **dict.fromkeys(("__floatsidf", "__floatunsidf", "__fixdfsi", "__fixunsdfsi", "__extendsfdf2",
                     "__truncdfsf2"), 40),
    **dict.fromkeys(("__floatdidf", "__floatundidf", "__fixdfdi", "__fixunsdfdi"), 70),
    "halt": 1,
    **dict.fromkeys(("mutex_lock", "mutex_unlock", "mutex_trylock", "__cnm_atomic_bit_acquire",
                     "__cnm_atomic_bit_release", "__cnm_atomic_bit_try_acquire"), 2),
    **dict.fromkeys(("barrier_wait", "sem_take", "sem_give"), 15),
    **dict.fromkeys(("handshake_notify", "handshake_wait_for"), 10),
    **dict.fromkeys(("perfcounter_get", "perfcounter_config"), 4),
    # C library loops: a guess of one 64-byte buffer per call (their code is not in the kernel's
    # histogram); printf is slow everywhere
    **dict.fromkeys(("memcpy", "memmove", "memset", "memcmp"), 64), "printf": 500, "puts": 100,
}

_LN2 = math.log(2.0)


def count_mask(columns: Sequence[str]) -> torch.Tensor:
    """1.0 for the columns ``LogCounts`` takes the log of (all but ``cfg:*``), else 0.0."""
    return torch.tensor([0.0 if c.startswith("cfg:") else 1.0 for c in columns])


class LogCounts(nn.Module):
    """``log1p(max(x, 0))`` on count columns, identity on the configuration columns."""

    def __init__(self, n_inputs: int, n_config: int = len(CONFIG_COLUMNS)):
        super().__init__()
        # Default: the input contract puts the configuration columns last; configure() reads names.
        mask = torch.ones(n_inputs)
        mask[n_inputs - n_config:] = 0.0
        self.register_buffer("mask", mask)

    def configure(self, columns: Sequence[str]) -> None:
        """Set the mask from the input column names."""
        self.mask.copy_(count_mask(columns))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.mask * torch.log1p(torch.relu(x)) + (1.0 - self.mask) * x


def prior_weights(columns: Sequence[str], block_size: bool = False) -> torch.Tensor:
    """The ``[columns, 6]`` matrix (7 with ``block_size``) whose product with an input row gives,
    in order: compute slots, DMA reads, DMA writes (all loop-weighted), log2 DPUs,
    log2 tasklets, log2 processed size (and the constant DMA size)."""
    weights = torch.zeros(len(columns), 7 if block_size else 6)
    index = {name: i for i, name in enumerate(columns)}
    if block_size:
        if DMA_BYTES_COLUMN not in index:
            raise ValueError(f"the block-size prior needs input column {DMA_BYTES_COLUMN}")
        weights[index[DMA_BYTES_COLUMN], 6] = 1.0
    for name, i in index.items():
        family, _, key = name.partition(":")
        if family == "wop":
            weights[i, 0] = 1.0
        elif family == "wcall":
            weights[i, 0] = ROUTINE_SLOTS.get(key, 0.0)
        if name in _DMA_READS:
            weights[i, 1] = 1.0
        elif name in _DMA_WRITES:
            weights[i, 2] = 1.0
    for j, name in enumerate(("cfg:log2_dpus", "cfg:log2_tasklets", "cfg:log2_processed_size"), start=3):
        if name not in index:
            raise ValueError(f"the analytical prior needs input column {name}")
        weights[index[name], j] = 1.0
    return weights


class AnalyticalPrior(nn.Module):
    """Static log-cycle estimates (compute, DMA, total) from raw input rows; no parameters."""

    def __init__(self, n_inputs: int, block_size: bool = False):
        super().__init__()
        self.block_size = block_size
        self.register_buffer("weights", torch.zeros(n_inputs, 7 if block_size else 6))

    def configure(self, columns: Sequence[str]) -> None:
        """Set the weights from the input column names (see ``prior_weights``)."""
        self.weights.copy_(prior_weights(columns, self.block_size))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        z = x @ self.weights
        slots, reads, writes = torch.relu(z[:, 0]) + 1.0, torch.relu(z[:, 1]), torch.relu(z[:, 2])
        log2_dpus, log2_tasklets, log2_size = z[:, 3], z[:, 4], z[:, 5]
        tasklets = torch.exp(log2_tasklets * _LN2)
        revolver = torch.log(torch.clamp(tasklets, min=float(REVOLVER_PERIOD)))
        log_compute = torch.log(slots) + _LN2 * (log2_size - log2_dpus - log2_tasklets) + revolver
        block = torch.full_like(reads, float(DMA_ASSUMED_BYTES))
        if self.block_size:
            block = torch.where(z[:, 6] > 0, z[:, 6], block)
            reads, writes = reads * (DMA_ASSUMED_BYTES / block), writes * (DMA_ASSUMED_BYTES / block)
        dma = reads * (DMA_READ_ALPHA + DMA_BETA * block) + writes * (DMA_WRITE_ALPHA + DMA_BETA * block)
        log_dma = torch.log1p(dma) + _LN2 * (log2_size - log2_dpus)
        # log(exp(a) + exp(b)) without logaddexp (not in the TorchScript ONNX exporter)
        high = torch.maximum(log_compute, log_dma)
        log_total = high + torch.log1p(torch.exp(-torch.abs(log_compute - log_dma)))
        return torch.stack([log_compute, log_dma, log_total], dim=1)
