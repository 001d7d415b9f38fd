"""Training and transfer fine-tuning of the L2P network.

Training: Adam on the MSE of the log targets, minibatches, early stopping on the validation
loss with a patience, and the best epoch's weights restored. Everything random is seeded
(initial weights and dropout via ``torch.manual_seed``, minibatch order via a numpy Generator),
so two runs with the same seed and thread count give identical weights.

Fine-tuning (transfer to a new kernel, as in L2P): freeze the normalisation, the input layer
and the first 6 blocks of a trained model and train the rest on a seeded random 1 % of the new
kernel's samples (at least a minimum count) for a fixed number of epochs, then measure on the
remaining samples. The tuned blocks train their weights but, by default, keep their BatchNorm
running statistics and run without dropout. There is no validation split: 1 % of a kernel is
tens to a few hundred samples; holding part of them out for early stopping leaves less to
learn from and, at the low end, stops on the noise of a handful of points. A fixed epoch count is deterministic, and the
frozen half of the network is what limits overfitting.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np
import torch
from torch.nn import functional as F

from cnmtune.costmodel.learn.adam import Adam, Plateau, cosine_rates
from cnmtune.costmodel.learn.model import TRANSFER_FROZEN, L2PConfig, L2PModel
from cnmtune.costmodel.learn.prediction import Prediction, evaluate
from cnmtune.costmodel.learn.recipe import FINETUNE_EPOCHS, FINETUNE_LR
from cnmtune.costmodel.learn.samples import SampleSet
from cnmtune.errors import CnmtuneError, SchemaMismatch


@dataclass(frozen=True)
class TrainResult:
    """A trained model (best epoch's weights, eval mode) and its learning curves."""

    model: L2PModel
    train_losses: list[float]
    val_losses: list[float]
    best_epoch: int
    seconds: float


@dataclass(frozen=True)
class FinetuneResult:
    """A fine-tuned copy of a model, what it was tuned on and its metrics on the rest."""

    model: L2PModel
    train_losses: list[float]
    tuned_on: SampleSet
    evaluated_on: SampleSet
    metrics: dict[str, dict[str, float]]
    seconds: float


@contextmanager
def torch_threads(count: int | None) -> Iterator[None]:
    """torch runs on `count` threads inside the block (None: as it was), then as before."""
    previous = torch.get_num_threads()
    if count is not None:
        torch.set_num_threads(count)
    try:
        yield
    finally:
        torch.set_num_threads(previous)


def predict(model: L2PModel, X: np.ndarray, batch_size: int = 4096) -> Prediction:
    """The model's prediction for inputs ``X`` (eval mode, no gradients)."""
    model.eval()
    with torch.no_grad():
        chunks = [model(torch.from_numpy(np.ascontiguousarray(X[i:i + batch_size], dtype=np.float32)))
                  for i in range(0, len(X), batch_size)]
    out = torch.cat(chunks).numpy() if chunks else np.zeros((0, len(model.config.targets)), np.float32)
    return Prediction(out, model.config.targets)


def _targets(model: L2PModel, samples: SampleSet) -> torch.Tensor:
    return torch.from_numpy(np.ascontiguousarray(samples.y[:, model.config.target_index]))


def _mse(predicted: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """Mean squared error over the known targets: a NaN target (not measured) does not count."""
    known = torch.isfinite(target)
    if bool(known.all()):
        return F.mse_loss(predicted, target)
    return F.mse_loss(predicted[known], target[known])


def _loss(model: L2PModel, samples: SampleSet) -> float:
    predicted = torch.from_numpy(predict(model, samples.X).log_targets)
    return float(_mse(predicted, _targets(model, samples)))


def _epoch(forward: Callable[[torch.Tensor], torch.Tensor], X: torch.Tensor, y: torch.Tensor,
           optimizer: Adam, batch_size: int, rng: np.random.Generator) -> float:
    """One pass over the rows of ``X`` (targets ``y``) through ``forward`` in a seeded random
    order (the caller puts the model in training mode); returns the mean training loss."""
    order = torch.from_numpy(rng.permutation(len(X)))
    total, seen = 0.0, 0
    for start in range(0, len(X), batch_size):
        rows = order[start:start + batch_size]
        if len(rows) < 2:  # BatchNorm cannot train on one sample
            continue
        optimizer.zero_grad()
        loss = _mse(forward(X[rows]), y[rows])
        loss.backward()
        optimizer.step()
        total, seen = total + loss.item() * len(rows), seen + len(rows)
    return total / seen if seen else float("nan")


def _optimizer(model: L2PModel, lr: float, weight_decay: float) -> Adam:
    return Adam([p for p in model.parameters() if p.requires_grad], lr=lr, weight_decay=weight_decay)


def train(config: L2PConfig, train_set: SampleSet, val_set: SampleSet, *, epochs: int = 500,
          patience: int = 20, batch_size: int = 256, lr: float = 1e-3, weight_decay: float = 0.0,
          seed: int = 0, threads: int | None = None, lr_patience: int | None = None,
          lr_factor: float = 0.5, min_lr: float = 1e-5,
          on_epoch: Callable[[int, float, float], None] | None = None) -> TrainResult:
    """Train a new L2P model with early stopping on ``val_set``; returns the best epoch's model.

    With ``lr_patience`` the learning rate is multiplied by ``lr_factor`` (down to ``min_lr``)
    after that many epochs without a better validation loss (reduce on plateau).
    ``on_epoch(epoch, train_loss, val_loss)`` is called after every epoch (progress display).
    """
    if epochs < 1:
        raise CnmtuneError(f"epochs must be at least 1, got {epochs}")
    if len(train_set) < 2 or len(val_set) < 1:
        raise CnmtuneError(f"training needs at least 2 training and 1 validation sample(s), got "
                           f"{len(train_set)} and {len(val_set)}")
    if train_set.columns != val_set.columns:
        raise CnmtuneError("training and validation samples have different input columns")
    start = time.perf_counter()
    with torch_threads(threads):
        torch.manual_seed(seed)
        rng = np.random.default_rng(seed)
        model = L2PModel(train_set.X.shape[1], config, columns=train_set.columns)
        model.fit_normalizer(train_set.X)
        optimizer = _optimizer(model, lr, weight_decay)
        scheduler = None if lr_patience is None else Plateau(optimizer, lr_factor, lr_patience, min_lr)
        train_losses: list[float] = []
        val_losses: list[float] = []
        stop = EarlyStopping(model, patience)
        X, y = torch.from_numpy(train_set.X), _targets(model, train_set)
        for epoch in range(epochs):
            model.train()  # the validation loss left it in eval mode
            train_losses.append(_epoch(model, X, y, optimizer, batch_size, rng))
            val_losses.append(_loss(model, val_set))
            if scheduler is not None:
                scheduler.step(val_losses[-1])
            if on_epoch is not None:
                on_epoch(epoch, train_losses[-1], val_losses[-1])
            if stop.after(epoch, val_losses[-1]):
                break
        stop.restore_best()
    return TrainResult(model.eval(), train_losses, val_losses, stop.best_epoch, time.perf_counter() - start)


class EarlyStopping:
    """Early stopping on a validation loss: keeps the best epoch's weights of `model` and says when
    `patience` epochs have passed without a better loss."""

    def __init__(self, model: torch.nn.Module, patience: int):
        self.model, self.patience = model, patience
        self.best, self.best_epoch, self._state = float("inf"), -1, None

    def after(self, epoch: int, val_loss: float) -> bool:
        """Note the epoch's validation loss; True when training should stop."""
        if val_loss < self.best:
            self.best, self.best_epoch = val_loss, epoch
            self._state = {k: v.detach().clone() for k, v in self.model.state_dict().items()}
            return False
        return epoch - self.best_epoch >= self.patience

    def restore_best(self) -> None:
        """Load the best epoch's weights back into the model (if any epoch ran)."""
        if self._state is not None:
            self.model.load_state_dict(self._state)


def finetune(model: L2PModel, samples: SampleSet, fraction: float = 0.01, freeze: int = TRANSFER_FROZEN,
             seed: int = 0, *, epochs: int = FINETUNE_EPOCHS, minimum: int = 8, batch_size: int = 256,
             lr: float = 1e-3, weight_decay: float = 0.0, threads: int | None = None,
             k: int = 10, fixed_statistics: bool = True, dropout: bool = False) -> FinetuneResult:
    """Fine-tune a copy of ``model`` on a random ``fraction`` (at least ``minimum``) of ``samples``.

    The first ``freeze`` blocks (with normalisation and input layer) stay fixed; training runs
    for ``epochs`` epochs; metrics (per kernel, top-``k``) are measured on the other samples.
    By default every BatchNorm keeps its running statistics and dropout is off while tuning
    (``fixed_statistics``, ``dropout``; see ``L2PModel.freeze_first``): with 16 samples, BatchNorm
    statistics re-estimated from the tuning batch cost 4x the transfer error on the reference
    dataset (MODEL.md).
    """
    start = time.perf_counter()
    tuned_on, rest = samples.fraction_split(fraction, seed, minimum)
    tuned, losses = finetune_on(model, tuned_on, freeze, seed, epochs=epochs, batch_size=batch_size, lr=lr,
                                weight_decay=weight_decay, threads=threads, fixed_statistics=fixed_statistics,
                                dropout=dropout)
    with torch_threads(threads):
        metrics = evaluate(rest, predict(tuned, rest.X), k)
    return FinetuneResult(tuned, losses, tuned_on, rest, metrics, time.perf_counter() - start)


def finetune_on(model: L2PModel, samples: SampleSet, freeze: int = TRANSFER_FROZEN, seed: int = 0, *,
                epochs: int = FINETUNE_EPOCHS, batch_size: int = 256, lr: float = FINETUNE_LR,
                weight_decay: float = 0.0,
                threads: int | None = None, fixed_statistics: bool = True,
                dropout: bool = False) -> tuple[L2PModel, list[float]]:
    """Fine-tune a copy of ``model`` on all of ``samples`` as ``finetune`` does; (model in eval
    mode, training loss per epoch). A NaN target (e.g. a speedup without its baseline run) is
    left out of the loss. The learning rate falls from ``lr`` to 0 over the epochs (cosine):
    a tuning set of one minibatch at a constant rate ends wherever Adam's late oscillation is
    (MODEL.md: mlp's 1 % at 6 % error after 1,000 epochs, 1.3 % after 100)."""
    if samples.X.shape[1] != model.n_inputs:
        raise SchemaMismatch(f"fine-tuning samples have {samples.X.shape[1]} input columns, "
                             f"the model expects {model.n_inputs}")
    if len(samples) < 2:
        raise CnmtuneError(f"fine-tuning needs at least 2 samples (BatchNorm), got {len(samples)}")
    with torch_threads(threads):
        torch.manual_seed(seed)
        rng = np.random.default_rng(seed)
        tuned = copy.deepcopy(model).freeze_first(freeze, statistics=fixed_statistics, dropout=dropout)
        optimizer = _optimizer(tuned, lr, weight_decay)
        # the frozen layers run in eval mode and learn nothing: their output is the same every
        # epoch, computed once; the epochs train the rest on it
        with torch.no_grad():
            hidden = tuned.embed(torch.from_numpy(samples.X), freeze)
        y = _targets(tuned, samples)
        tuned.train()
        losses = []
        for rate in cosine_rates(lr, epochs):
            optimizer.lr = rate
            losses.append(_epoch(lambda h: tuned.finish(h, freeze), hidden, y, optimizer, batch_size, rng))
    return tuned.eval(), losses
