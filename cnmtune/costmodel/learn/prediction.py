"""A cost model's prediction (runtime seconds, speedups) and its evaluation against samples."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from cnmtune.costmodel.learn.metrics import kernel_report
from cnmtune.costmodel.learn.samples import TARGETS, SampleSet


@dataclass(frozen=True, eq=False)
class Prediction:
    """The log outputs of a model for a batch, by target name."""

    log_targets: np.ndarray  # float [n, len(targets)]
    targets: tuple[str, ...] = TARGETS

    def _exp(self, target: str) -> np.ndarray | None:
        if target not in self.targets:
            return None
        return np.exp(self.log_targets[:, self.targets.index(target)].astype(np.float64))

    @property
    def runtime_s(self) -> np.ndarray | None:
        """Predicted kernel seconds, or None for a model without a runtime output."""
        return self._exp("runtime")

    @property
    def speedup(self) -> np.ndarray | None:
        """Predicted speedup over the O0 1-DPU 1-tasklet baseline, or None without that output."""
        return self._exp("speedup")


def evaluate(samples: SampleSet, prediction: Prediction, k: int = 10) -> dict[str, dict[str, float]]:
    """Per-kernel accuracy and top-k metrics of a prediction for ``samples`` (see kernel_report)."""
    return _report(samples.kernels, samples, prediction, k)


def evaluate_by_config(samples: SampleSet, prediction: Prediction, k: int = 10) -> dict[str, dict[str, float]]:
    """The same metrics per configuration group ('D4 T16': DPUs, tasklets) over all kernels; the
    ranking metrics then judge the order of the pipelines of one kernel at one configuration."""
    configs = list(zip(samples.dpus.tolist(), samples.tasklets.tolist()))
    label = "D{} T{}".format
    labels = np.array([label(*c) for c in configs])
    groups = [(kernel, size, c) for (kernel, size), c in zip(samples.groups, configs)]
    report = _report(labels, samples, prediction, k, groups)
    return {key: report[key] for key in [*(label(*c) for c in sorted(set(configs))), "all"]}


def evaluate_by_size(samples: SampleSet, prediction: Prediction, k: int = 10) -> dict[str, dict[str, float]]:
    """The same metrics per ranking group ('va@4096': kernel, size): accuracy at each problem size,
    the ranking of every variant (pipeline, defines, DPUs, tasklets) of a kernel at one size."""
    labels = np.array([f"{kernel}@{size}" for kernel, size in samples.groups])
    report = _report(labels, samples, prediction, k)
    order = [f"{kernel}@{size}" for kernel, size in sorted(set(samples.groups))]
    return {key: report[key] for key in [*order, "all"]}


def _report(keys: np.ndarray, samples: SampleSet, prediction: Prediction, k: int,
            groups: list | None = None) -> dict[str, dict[str, float]]:
    if len(prediction.log_targets) != len(samples):
        raise ValueError(f"{len(prediction.log_targets)} predictions for {len(samples)} samples")
    true = np.exp(samples.y.astype(np.float64))
    return kernel_report(keys, samples.groups if groups is None else groups, true[:, TARGETS.index("runtime")],
                         true[:, TARGETS.index("speedup")], prediction.runtime_s, prediction.speedup, k)
