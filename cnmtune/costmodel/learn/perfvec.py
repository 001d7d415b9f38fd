"""PerfVec for DPUs: separable program and design representations, trained on exact re-timings.

After PerfVec (Li et al.): a program's representation is the sum of its blocks' representations,
each weighted by its execution count (perfvec_blocks.py says what a block is); a design's
representation comes from its design vector (the DpuConfig constants the DPU timeline reads,
runtime/sim/design_space.TIMELINE_PARAMETERS); the predicted DPU cycles are their dot product.
Both encoders end in a softplus, so every representation is non-negative and the dot product a
positive number of cycles. Training minimises the squared error of log cycles (a relative
error), on every (program, design) pair with an exact re-timing.

Only cycles are learned: the clock, the launch overhead and the host transfers turn them into
seconds in closed form (cycles / frequency, + overhead per launch, the transfer log priced by
runtime/sim/device.transfer_times_under), which is exact and costs microseconds per design point.

The design vector is normalised inside the model: each parameter mapped to [-1, 1] over its
design-space range, on a log scale where the space samples it so (design_space.normalised), so
the exported graph takes the constants in DpuConfig units.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from cnmtune.costmodel.learn.adam import Adam
from cnmtune.costmodel.learn.metrics import kendall_tau, mape
from cnmtune.costmodel.learn.perfvec_blocks import BLOCK_FEATURES, ProgramBlocks
from cnmtune.costmodel.learn.training import EarlyStopping, torch_threads
from cnmtune.errors import CnmtuneError
from cnmtune.runtime.sim.design_space import TIMELINE_PARAMETERS, DesignParameter

__all__ = ["PerfVecConfig", "PerfVecData", "PerfVecModel", "PerfVecResult", "accuracy", "predict_log_cycles",
           "train_perfvec"]


@dataclass(frozen=True)
class PerfVecConfig:
    """Hyperparameters: representation size, encoder width and depth (hidden layers)."""

    dim: int = 64
    width: int = 128
    depth: int = 2

    def __post_init__(self) -> None:
        if self.dim < 1 or self.width < 1 or self.depth < 0:
            raise ValueError(f"invalid PerfVec config: dim {self.dim}, width {self.width}, depth {self.depth}")

    def to_dict(self) -> dict:
        """JSON-safe form (model metadata)."""
        return asdict(self)


@dataclass(frozen=True)
class PerfVecData:
    """Training data: programs (a name, the kernel, its blocks), design vectors (DpuConfig units,
    TIMELINE_PARAMETERS order) and the exact cycles of every pair (NaN where a design cannot
    re-time a program)."""

    names: tuple[str, ...]
    kernels: tuple[str, ...]
    programs: tuple[ProgramBlocks, ...]
    designs: np.ndarray
    cycles: np.ndarray

    def __post_init__(self) -> None:
        if not len(self.names) == len(self.kernels) == len(self.programs) or self.cycles.shape != (len(self.programs), len(self.designs)) \
                or self.designs.shape[1:] != (len(TIMELINE_PARAMETERS),):
            raise ValueError(f"PerfVecData: {len(self.names)} names, {len(self.programs)} programs, designs "
                             f"{self.designs.shape} and cycles {self.cycles.shape} do not agree")

    def take(self, programs, designs) -> PerfVecData:
        """The data of some programs (indices) on some designs (indices)."""
        programs, designs = np.asarray(programs, dtype=np.int64), np.asarray(designs, dtype=np.int64)
        return PerfVecData(tuple(self.names[i] for i in programs), tuple(self.kernels[i] for i in programs),
                           tuple(self.programs[i] for i in programs), self.designs[designs],
                           self.cycles[np.ix_(programs, designs)])

    @property
    def data_hash(self) -> str:
        """sha256 of the blocks, designs and cycles (the model's training data identity)."""
        digest = hashlib.sha256()
        for name, program in zip(self.names, self.programs):
            digest.update(name.encode())
            digest.update(np.ascontiguousarray(program.features).tobytes())
            digest.update(np.ascontiguousarray(program.weights).tobytes())
        digest.update(np.ascontiguousarray(self.designs).tobytes())
        digest.update(np.ascontiguousarray(self.cycles).tobytes())
        return digest.hexdigest()


class DesignNormalise(nn.Module):
    """Design vectors (DpuConfig units) -> [-1, 1] per parameter over its range (log where sampled so)."""

    def __init__(self, space: tuple[DesignParameter, ...] = TIMELINE_PARAMETERS):
        super().__init__()
        log = torch.tensor([p.log for p in space])
        low = torch.tensor([np.log(p.low) if p.log else p.low for p in space], dtype=torch.float32)
        high = torch.tensor([np.log(p.high) if p.log else p.high for p in space], dtype=torch.float32)
        self.register_buffer("log", log)
        self.register_buffer("low", low)
        self.register_buffer("span", high - low)

    def forward(self, designs: torch.Tensor) -> torch.Tensor:
        # log only where sampled so (a linear column may be 0, whose log is never taken)
        scaled = torch.where(self.log, torch.log(torch.where(self.log, designs, torch.ones_like(designs))), designs)
        return 2 * (scaled - self.low) / self.span - 1


def _mlp(n_in: int, config: PerfVecConfig) -> nn.Sequential:
    layers: list[nn.Module] = []
    width = n_in
    for _ in range(config.depth):
        layers += [nn.Linear(width, config.width), nn.ReLU()]
        width = config.width
    layers += [nn.Linear(width, config.dim), nn.Softplus()]
    return nn.Sequential(*layers)


class PerfVecModel(nn.Module):
    """The block encoder, the design encoder, and their dot product (log cycles)."""

    def __init__(self, config: PerfVecConfig = PerfVecConfig()):
        super().__init__()
        self.config = config
        self.block_encoder = _mlp(len(BLOCK_FEATURES), config)
        self.design_encoder = nn.Sequential(DesignNormalise(), _mlp(len(TIMELINE_PARAMETERS), config))

    def blocks(self, features: torch.Tensor) -> torch.Tensor:
        """Representations of blocks [B, features] -> [B, dim]."""
        return self.block_encoder(features)

    def program(self, features: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
        """A program's representation [1, dim]: its blocks' representations weighted by their counts."""
        return weights.reshape(1, -1) @ self.blocks(features)

    def designs(self, vectors: torch.Tensor) -> torch.Tensor:
        """Representations of design vectors [N, parameters] -> [N, dim]."""
        return self.design_encoder(vectors)

    def forward(self, programs: torch.Tensor, vectors: torch.Tensor) -> torch.Tensor:
        """Log cycles [P, N] of programs [P, dim] on designs [N, parameters]."""
        return torch.log(programs @ self.designs(vectors).T)


@dataclass(frozen=True)
class PerfVecResult:
    """A trained model (best epoch, eval mode), its learning curves and the validation designs."""

    model: PerfVecModel
    train_losses: list[float]
    val_losses: list[float]
    best_epoch: int
    val_designs: np.ndarray
    seconds: float


class _Programs:
    """Every program's blocks as one tensor, summed into program representations per step."""

    def __init__(self, programs: tuple[ProgramBlocks, ...]):
        self.features = torch.from_numpy(np.concatenate([p.features for p in programs]).astype(np.float32))
        self.weights = torch.from_numpy(np.concatenate([p.weights for p in programs]).astype(np.float32))
        self.index = torch.from_numpy(np.repeat(np.arange(len(programs)), [len(p) for p in programs]))
        self.count = len(programs)

    def represent(self, model: PerfVecModel) -> torch.Tensor:
        reps = model.blocks(self.features) * self.weights[:, None]
        return torch.zeros(self.count, model.config.dim).index_add_(0, self.index, reps)


def _loss(model: PerfVecModel, programs: _Programs, designs: torch.Tensor, log_cycles: torch.Tensor) -> torch.Tensor:
    predicted = model(programs.represent(model), designs)
    known = torch.isfinite(log_cycles)
    return F.mse_loss(predicted[known], log_cycles[known])


def train_perfvec(data: PerfVecData, config: PerfVecConfig = PerfVecConfig(), *, epochs: int = 400,
                  patience: int = 40, design_batch: int = 32, lr: float = 2e-3, val_fraction: float = 0.1,
                  seed: int = 0, threads: int | None = None,
                  on_epoch: Callable[[int, float, float], None] | None = None) -> PerfVecResult:
    """Train on `data` with early stopping on a seeded `val_fraction` of its designs.

    An epoch passes over the training designs in minibatches of `design_batch`, each step on every
    program (its blocks encoded once per step). ``on_epoch(epoch, train_loss, val_loss)`` reports
    progress. Seeded: two runs with the same seed and thread count give the same weights."""
    n = len(data.designs)
    validation = max(1, round(val_fraction * n))
    if epochs < 1 or n - validation < 1 or not np.isfinite(data.cycles).any():
        raise CnmtuneError(f"PerfVec training needs epochs >= 1 and at least 2 designs with re-timed cycles "
                           f"(got {epochs} epochs, {n} designs)")
    if (data.cycles[np.isfinite(data.cycles)] <= 0).any():
        raise CnmtuneError("PerfVec training data holds a non-positive cycle count")
    start = time.perf_counter()
    with torch_threads(threads):
        torch.manual_seed(seed)
        rng = np.random.default_rng(seed)
        order = rng.permutation(n)
        val_idx, train_idx = np.sort(order[:validation]), order[validation:]
        if not np.isfinite(data.cycles[:, val_idx]).any():
            raise CnmtuneError(f"none of the {validation} validation design(s) re-times any program exactly; "
                               "give more designs")
        model = PerfVecModel(config)
        programs = _Programs(data.programs)
        vectors = torch.from_numpy(data.designs.astype(np.float32))
        targets = torch.from_numpy(np.log(data.cycles).astype(np.float32))
        optimizer = Adam(model.parameters(), lr=lr)
        train_losses, val_losses = [], []
        stop = EarlyStopping(model, patience)
        for epoch in range(epochs):
            model.train()
            total = 0.0
            batches = np.array_split(rng.permutation(train_idx), max(1, -(-len(train_idx) // design_batch)))
            for batch in batches:
                columns = torch.from_numpy(batch)
                optimizer.zero_grad()
                loss = _loss(model, programs, vectors[columns], targets[:, columns])
                loss.backward()
                optimizer.step()
                total += loss.item() * len(batch)
            train_losses.append(total / len(train_idx))
            model.eval()
            with torch.no_grad():
                columns = torch.from_numpy(val_idx)
                val_losses.append(float(_loss(model, programs, vectors[columns], targets[:, columns])))
            if on_epoch is not None:
                on_epoch(epoch, train_losses[-1], val_losses[-1])
            if stop.after(epoch, val_losses[-1]):
                break
        stop.restore_best()
    return PerfVecResult(model.eval(), train_losses, val_losses, stop.best_epoch, val_idx,
                         time.perf_counter() - start)


def predict_log_cycles(model: PerfVecModel, data: PerfVecData) -> np.ndarray:
    """The model's log cycles of every program on every design of `data` [programs, designs]."""
    model.eval()
    with torch.no_grad():
        programs = _Programs(data.programs).represent(model)
        return model(programs, torch.from_numpy(data.designs.astype(np.float32))).numpy().astype(np.float64)


def accuracy(cycles: np.ndarray, log_predicted: np.ndarray) -> dict:
    """MAPE (percent) over every pair with exact cycles, and Kendall's tau over the designs of each
    program (its median: does the model order a program's designs as re-timing does?)."""
    known = np.isfinite(cycles)
    predicted = np.exp(log_predicted)
    taus = [kendall_tau(c[k], p[k]) for c, p, k in zip(cycles, predicted, known) if k.sum() >= 2]
    taus = [t for t in taus if np.isfinite(t)]
    return {"mape": mape(cycles[known], predicted[known]), "median_tau": float(np.median(taus)) if taus else
            float("nan"), "pairs": int(known.sum()), "programs": len(cycles)}
