"""The L2P network: normalised inputs -> residual MLP -> log(runtime) and/or log(speedup).

As in the L2P paper: 12 hidden layers of width 256, each Linear -> BatchNorm -> ReLU ->
Dropout(0.5), with residual connections. Input normalisation is a layer of the model (fitted
mean and std buffers), so a saved state dict or an exported ONNX graph needs nothing else.

Beyond the paper, two fixed input layers (cnmtune.costmodel.learn.prior), both switchable in
``L2PConfig``: ``log_inputs`` takes log1p of the count columns, ``prior`` appends a static
analytical cycle estimate to the inputs. They have no parameters and are part of the exported
graph, so the input columns of a model do not change.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np
import torch
from torch import nn

from cnmtune.costmodel.learn.prior import PRIOR_COLUMNS, AnalyticalPrior, LogCounts
from cnmtune.costmodel.learn.samples import TARGETS

#: Blocks frozen by transfer learning (the first half of the default 12).
TRANSFER_FROZEN = 6


@dataclass(frozen=True)
class L2PConfig:
    """Hyperparameters of the network (defaults: the L2P paper's)."""

    depth: int = 12
    width: int = 256
    dropout: float = 0.5
    residual: bool = True
    targets: tuple[str, ...] = TARGETS
    #: log1p of the count columns inside the network (not in the paper; see prior.LogCounts)
    log_inputs: bool = False
    #: static cycle estimate appended to the inputs (not in the paper; see prior.AnalyticalPrior)
    prior: bool = False
    #: the prior's DMA term at the kernel's constant DMA size instead of 256 bytes (prior.AnalyticalPrior)
    block_prior: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "targets", tuple(self.targets))
        if not self.targets or len(set(self.targets)) != len(self.targets) \
                or not set(self.targets) <= set(TARGETS):
            raise ValueError(f"targets must be distinct names from {TARGETS}, got {self.targets}")
        if self.depth < 0 or self.width < 1 or not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"invalid L2P config: depth {self.depth}, width {self.width}, "
                             f"dropout {self.dropout}")

    @property
    def target_index(self) -> list[int]:
        """Columns of a SampleSet's ``y`` that this model predicts, in output order."""
        return [TARGETS.index(t) for t in self.targets]

    def to_dict(self) -> dict:
        """JSON-safe form (checkpoint side-car)."""
        data = asdict(self)
        data["targets"] = list(self.targets)
        return data

    @classmethod
    def from_dict(cls, data: dict) -> L2PConfig:
        """Inverse of ``to_dict``; a record written before an option existed gets it off."""
        return cls(**{"log_inputs": False, "prior": False, "block_prior": False, **data})


class Standardize(nn.Module):
    """(x - mean) / std with buffers fitted on the training inputs."""

    def __init__(self, n_inputs: int):
        super().__init__()
        self.register_buffer("mean", torch.zeros(n_inputs))
        self.register_buffer("std", torch.ones(n_inputs))

    def fit(self, X: np.ndarray) -> None:
        """Set mean and std from training inputs; a constant column gets std = inf (it is ignored).

        The network cannot learn anything from a column that never varies in training: its
        first-layer weights keep their random initial values. Mapping it to 0 keeps a kernel
        that does use that feature (transfer) from feeding it through those random weights.
        """
        data = np.asarray(X, dtype=np.float64)
        std = data.std(axis=0)
        std[std < 1e-12] = np.inf
        self.mean.copy_(torch.from_numpy(data.mean(axis=0)))
        self.std.copy_(torch.from_numpy(std))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return (x - self.mean) / self.std


class Dense(nn.Module):
    """Linear -> BatchNorm1d -> ReLU -> Dropout; ``norm`` is what ONNX export folds away."""

    def __init__(self, n_in: int, n_out: int, dropout: float):
        super().__init__()
        self.linear = nn.Linear(n_in, n_out)
        self.norm: nn.Module = nn.BatchNorm1d(n_out)
        self.act = nn.ReLU()
        self.drop = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.drop(self.act(self.norm(self.linear(x))))


class L2PModel(nn.Module):
    """The L2P MLP over ``n_inputs`` columns; outputs the log targets of ``config.targets``.

    ``columns`` (the input column names) configure the fixed input layers; without them the
    layers assume the input contract's layout, and a loaded state dict brings their buffers.
    """

    def __init__(self, n_inputs: int, config: L2PConfig = L2PConfig(),
                 columns: tuple[str, ...] | None = None):
        super().__init__()
        self.n_inputs = n_inputs
        self.config = config
        self.frozen = -1  # no part frozen; see freeze_first
        self.fixed_statistics = False  # see freeze_first
        self.dropout_off = False
        self.log_counts = LogCounts(n_inputs) if config.log_inputs else None
        self.prior = AnalyticalPrior(n_inputs, config.block_prior) if config.prior else None
        n_features = n_inputs + (len(PRIOR_COLUMNS) if config.prior else 0)
        self.normalize = Standardize(n_features)
        self.input = Dense(n_features, config.width, 0.0)
        self.blocks = nn.ModuleList(Dense(config.width, config.width, config.dropout)
                                    for _ in range(config.depth))
        self.head = nn.Linear(config.width, len(config.targets))
        if columns is not None:
            self.configure(columns)

    def configure(self, columns: tuple[str, ...]) -> None:
        """Set the fixed input layers from the names of the input columns."""
        if len(columns) != self.n_inputs:
            raise ValueError(f"{len(columns)} column names for a model of {self.n_inputs} inputs")
        if self.log_counts is not None:
            self.log_counts.configure(columns)
        if self.prior is not None:
            self.prior.configure(columns)

    def features(self, x: torch.Tensor) -> torch.Tensor:
        """The fixed input layers: what ``normalize`` standardises."""
        out = self.log_counts(x) if self.log_counts is not None else x
        if self.prior is not None:
            out = torch.cat([out, self.prior(x)], dim=1)
        return out

    def fit_normalizer(self, X: np.ndarray) -> None:
        """Fit the standardisation on training inputs (after the fixed input layers)."""
        with torch.no_grad():
            self.normalize.fit(self.features(torch.from_numpy(np.asarray(X, dtype=np.float32))).numpy())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.finish(self.embed(x))

    def embed(self, x: torch.Tensor, blocks: int = 0) -> torch.Tensor:
        """The hidden state after the input layers and the first ``blocks`` blocks."""
        return self._through(self.input(self.normalize(self.features(x))), self.blocks[:blocks])

    def finish(self, h: torch.Tensor, blocks: int = 0) -> torch.Tensor:
        """The output from ``embed(x, blocks)``: the blocks after the first ``blocks``, then the head."""
        return self.head(self._through(h, self.blocks[blocks:]))

    def _through(self, h: torch.Tensor, blocks: nn.ModuleList) -> torch.Tensor:
        for block in blocks:
            h = h + block(h) if self.config.residual else block(h)
        return h

    def frozen_modules(self) -> list[nn.Module]:
        """The normalisation, the input layer and the first ``frozen`` blocks (empty if none)."""
        if self.frozen < 0:
            return []
        return [self.normalize, self.input, *self.blocks[:self.frozen]]

    def freeze_first(self, k: int, *, statistics: bool = False, dropout: bool = True) -> L2PModel:
        """Freeze normalisation, input layer and the first ``k`` hidden blocks (transfer learning).

        Frozen parts get no gradient and stay in eval mode under ``train()``: their BatchNorm
        statistics are not updated by the new kernel's batches and their dropout is off.
        ``statistics`` also keeps the running statistics of every other BatchNorm fixed (their
        scale and shift still train): a fine-tuning batch of a few samples cannot estimate
        them. ``dropout=False`` switches dropout off in the trained blocks too.
        """
        if not 0 <= k <= len(self.blocks):
            raise ValueError(f"can freeze 0..{len(self.blocks)} blocks, not {k}")
        for parameter in self.parameters():
            parameter.requires_grad_(True)
        self.frozen = k
        self.fixed_statistics = statistics
        self.dropout_off = not dropout
        for module in self.frozen_modules():
            module.requires_grad_(False)
        return self.train(self.training)

    def train(self, mode: bool = True) -> L2PModel:
        super().train(mode)
        for module in self.frozen_modules():
            module.eval()
        if mode and (self.fixed_statistics or self.dropout_off):
            for module in self.modules():
                if (self.fixed_statistics and isinstance(module, nn.BatchNorm1d)) or \
                        (self.dropout_off and isinstance(module, nn.Dropout)):
                    module.eval()
        return self
