"""Enumerating pipelines: the standard levels and seeded random pass sequences."""

from __future__ import annotations

import random

from cnmtune.passes.pipeline import LEVELS, Pipeline
from cnmtune.passes.vocabulary import NAMES


def standard_levels() -> list[Pipeline]:
    """The six standard optimisation levels O0, O1, O2, O3, Os, Oz."""
    return [Pipeline(level=level) for level in LEVELS]


def random_pipeline(length: int, seed: int) -> Pipeline:
    """A pass sequence of `length` passes drawn uniformly with replacement (L2P-style), seeded."""
    if length < 1:
        raise ValueError("a random pipeline needs at least one pass")
    rng = random.Random(seed)
    return Pipeline(passes=tuple(rng.choice(NAMES) for _ in range(length)))
