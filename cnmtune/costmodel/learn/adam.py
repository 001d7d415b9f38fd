"""Adam and its learning-rate schedules, without torch.optim.

torch.optim imports torch._dynamo on an optimizer's first step: 1-2.3 s of CPU, in a tune while
its compile workers hold both cores (its first fine-tuning). This Adam (Kingma and Ba, 2015:
bias-corrected first and second moments, L2 weight decay added to the gradient) does the same
arithmetic as ``torch.optim.Adam(..., foreach=True)`` on the CPU, operation for operation, so it
gives the same weights bit for bit (tests/costmodel/learn/test_adam.py holds it to torch's);
so do the two schedules, ``cosine_rates`` (CosineAnnealingLR) and ``Plateau``
(ReduceLROnPlateau), down to the order of their floating-point operations.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator

import torch


class Adam:
    """Adam over `params` (those without a gradient at a step are left alone, as torch does);
    ``lr`` may be changed between steps (the schedules below)."""

    def __init__(self, params: Iterable[torch.Tensor], lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0.0):
        self.params = list(params)
        self.lr, self.betas, self.eps, self.weight_decay = lr, betas, eps, weight_decay
        self._moments: dict[int, tuple[torch.Tensor, torch.Tensor, torch.Tensor]] = {}  # index -> step, m, v

    def zero_grad(self) -> None:
        """Drop every parameter's gradient (the next backward pass sets them anew)."""
        for p in self.params:
            p.grad = None

    @torch.no_grad()
    def step(self) -> None:
        """One Adam update of every parameter that has a gradient."""
        live = [i for i, p in enumerate(self.params) if p.grad is not None]
        if not live:
            return
        for i in live:
            if i not in self._moments:  # the step count is a float32 tensor, as in torch's state
                p = self.params[i]
                self._moments[i] = (torch.tensor(0.0), torch.zeros_like(p, memory_format=torch.preserve_format),
                                    torch.zeros_like(p, memory_format=torch.preserve_format))
        params = [self.params[i] for i in live]
        grads = [p.grad for p in params]
        steps, means, squares = (list(t) for t in zip(*(self._moments[i] for i in live)))
        beta1, beta2 = self.betas
        torch._foreach_add_(steps, torch.tensor(1.0), alpha=1.0)
        if self.weight_decay != 0:
            grads = torch._foreach_add(grads, params, alpha=self.weight_decay)
        torch._foreach_lerp_(means, grads, 1 - beta1)
        torch._foreach_mul_(squares, beta2)
        torch._foreach_addcmul_(squares, grads, grads, 1 - beta2)
        corrections1 = [1 - beta1 ** s.item() for s in steps]
        corrections2 = [1 - beta2 ** s.item() for s in steps]
        denominators = torch._foreach_sqrt(squares)
        torch._foreach_div_(denominators, [c ** 0.5 for c in corrections2])
        torch._foreach_add_(denominators, self.eps)
        torch._foreach_addcdiv_(params, means, denominators, [(self.lr / c) * -1 for c in corrections1])


def cosine_rates(lr: float, epochs: int) -> Iterator[float]:
    """The learning rate of each of `epochs` epochs falling from `lr` towards 0 on a half cosine,
    each from the last by the ratio of successive cosine terms (as torch's CosineAnnealingLR steps)."""
    rate = lr
    for epoch in range(epochs):
        if epoch:
            rate = (1 + math.cos(math.pi * epoch / epochs)) / (1 + math.cos(math.pi * (epoch - 1) / epochs)) * rate
        yield rate


class Plateau:
    """Reduce `optimizer`'s learning rate by `factor` (not below `min_lr`) once the loss given to
    ``step`` has not improved on its best by a relative 1e-4 for more than `patience` epochs."""

    THRESHOLD = 1e-4  # relative improvement that counts as better
    EPS = 1e-8  # a smaller reduction is not made

    def __init__(self, optimizer: Adam, factor: float = 0.1, patience: int = 10, min_lr: float = 0.0):
        if factor >= 1.0:
            raise ValueError("the reduction factor must be below 1")
        self.optimizer, self.factor, self.patience, self.min_lr = optimizer, factor, patience, min_lr
        self.best, self.bad_epochs = math.inf, 0

    def step(self, loss: float) -> None:
        """Note one epoch's loss; reduce the rate after too many epochs without a better one."""
        if loss < self.best * (1.0 - self.THRESHOLD):
            self.best, self.bad_epochs = loss, 0
        else:
            self.bad_epochs += 1
        if self.bad_epochs > self.patience:
            reduced = max(self.optimizer.lr * self.factor, self.min_lr)
            if self.optimizer.lr - reduced > self.EPS:
                self.optimizer.lr = reduced
            self.bad_epochs = 0
