"""A stand-in for C's rand() as PrIM's hosts call it after srand(seed), shared by the suite.

glibc's rand() returns integers in 0..RAND_MAX (2^31 - 1). The values here come from a seeded
numpy generator over that same range: the range (and so each value's bit length, which the
DPU's multiply and soft-float routines are sensitive to) is PrIM's, the exact libc sequence
is not.
"""

import numpy as np

RAND_MAX = (1 << 31) - 1


def c_rand(seed: int, count: int, dtype=np.int64) -> np.ndarray:
    """`count` values in 0..RAND_MAX converted to `dtype` as C's `(T) rand()` does (wrapping
    for narrower integers, rounding for floats)."""
    values = np.random.default_rng(seed).integers(0, RAND_MAX, count, dtype=np.int64, endpoint=True)
    return values.astype(dtype)
