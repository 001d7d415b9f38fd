"""Enumerating pipelines: the standard levels, levels with LLVM knobs, seeded random pass sequences.

Two sampling schemes, both uniform over the pass vocabulary with replacement:
- L2P-style: every sequence has the same length (`random_pipeline(length, seed)`);
- CompilerGym-style: the length is itself drawn uniformly from [min_length, max_length].
`pipeline_set` returns a de-duplicated list (by canonical text) of the requested size, the way
L2P builds its 1,004 configurations: the levels O0..O3 plus 1,000 unique random sequences.
"""

from __future__ import annotations

import random

from cnmtune.passes.pipeline import LEVELS, Pipeline
from cnmtune.passes.vocabulary import NAMES

L2P_LEVELS: tuple[str, ...] = ("O0", "O1", "O2", "O3")


def standard_levels() -> list[Pipeline]:
    """The six standard optimisation levels O0, O1, O2, O3, Os, Oz."""
    return [Pipeline(level=level) for level in LEVELS]


def knob_pipelines() -> list[Pipeline]:
    """O2 and O3 with each unroll count from 1 (no unrolling) to 16, with runtime unrolling at
    LLVM's own count, and with each count above 1 and runtime unrolling together: the loop overhead
    that unrolling removes is half of a DPU loop's instructions (DPU_CODEGEN.md §4), and a DPU
    loop over a block or a DPU's share has a trip count known only at run time, which only runtime
    unrolling unrolls (red at its default size on 64 DPUs: 3.1 % faster with count 16 and runtime
    unrolling than with either alone)."""
    knob_sets = [*((("unroll-count", count),) for count in (1, 2, 4, 8, 16)), (("unroll-runtime", 1),),
                 *((("unroll-count", count), ("unroll-runtime", 1)) for count in (4, 2, 8, 16))]
    return [Pipeline(level=level, knobs=knobs) for level in ("O2", "O3") for knobs in knob_sets]


def random_pipeline(length: int, seed: int) -> Pipeline:
    """A pass sequence of `length` passes drawn uniformly with replacement (L2P-style), seeded."""
    if length < 1:
        raise ValueError("a random pipeline needs at least one pass")
    rng = random.Random(seed)
    return Pipeline(passes=tuple(rng.choice(NAMES) for _ in range(length)))


def pipeline_set(count: int, seed: int = 0, length: int | None = 10, min_length: int = 1,
                 max_length: int = 40, levels: tuple[str, ...] = L2P_LEVELS) -> list[Pipeline]:
    """`levels` followed by unique random sequences, `count` pipelines in all, reproducible.

    With `length` set every sequence has that many passes (L2P); with `length=None` each
    length is drawn uniformly from [min_length, max_length] (CompilerGym-style).
    """
    if length is None and not 1 <= min_length <= max_length:
        raise ValueError("need 1 <= min_length <= max_length")
    chosen = [Pipeline(level=level) for level in levels][:count]
    seen = {p.text for p in chosen}
    rng = random.Random(seed)
    attempts = 0
    while len(chosen) < count:
        attempts += 1
        if attempts > 100 * count:
            raise ValueError(f"cannot draw {count} distinct pipelines with these lengths")
        size = length if length is not None else rng.randint(min_length, max_length)
        pipeline = Pipeline(passes=tuple(rng.choice(NAMES) for _ in range(size)))
        if pipeline.text not in seen:
            seen.add(pipeline.text)
            chosen.append(pipeline)
    return chosen
